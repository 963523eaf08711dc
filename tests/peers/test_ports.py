"""Issue 48's ports: two backends of real shape, each written twice (tests/peers/ports/):

* ``npu_shaped``: torch_npu's patches (its wholesale ``get_cpp_torch_device_options``,
  ``get_system``, the optimisation flags, the wrapper header, the cache-key details,
  ``aot_load``, the fallback ops, the ``DEVICE_TO_ATEN`` entry) on the sample device;
* ``openreg_shaped``: an openreg-derived C++ backend (regdev, with its own AOTI runner and C
  shims): its legacy options wrapper, ``DEVICE_TO_ATEN`` entry and ``aot_load``.

One version patches torch as those backends do, the other uses the package's doors. Each runs
in its own interpreter (port_worker.py; patches are global and irreversible) with its own
Inductor cache and TMPDIR; both compile one model with cpp_wrapper and with AOTInductor.

Checked: the door version writes nothing in torch but what torch's registration APIs write
(``ALLOWED``), and the detector finds exactly the patch version's patches; both versions give
the same device builds (g++ command lines) and generated C++, and outputs equal to eager; on
torch 2.15 the ``DEVICE_TO_ATEN`` patch breaks and the door version works.

``DOORS_PENDING`` names the issue-48 door modules still stubs (``_hook/*.py``): an assertion
that depends on one says so when it fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builds import _WRAPPER, LOG_ENV
from support import TESTS_DIR, pythonpath_with, shared_test_dir

import inductor_device_options

PORTS_DIR = Path(__file__).resolve().parent / "ports"
REGDEV_DIR = Path(__file__).resolve().parent / "regdev"
HOOK_DIR = Path(inductor_device_options.__file__).parent / "_hook"
BACKENDS = ("npu_shaped", "openreg_shaped")
VERSIONS = ("patch", "door")
#: Where each backend's extension and SDK are built: the test run's shared builds, which the
#: e2e tests (the sample device, tests/e2e/conftest.py) and test_regdev.py build too, each
#: once a run (both builders are idempotent and safe for processes running at once).
SHARED_BUILDS = {"npu_shaped": "sampledev", "openreg_shaped": "regdev/build"}
DOOR_MODULES = ("removed_cflags", "shim_ops", "device_headers", "cache_key_details", "aot_load")


def _doors_pending() -> list[str]:
    return [name for name in DOOR_MODULES if '"""Stub."""' in (HOOK_DIR / f"{name}.py").read_text()]


DOORS_PENDING = _doors_pending()

#: What torch's own registration APIs write while a backend sets its device up, and why each
#: is allowed ("<namespace>.<name>" or "<namespace>.<name>[key]" as torch_writes names it;
#: DEVICE stands for the device).
ALLOWED = {
    "torch.DEVICE": "torch._register_device_module sets the device module",
    "torch.utils.backend_registration._privateuse1_backend_name": (
        "torch.utils.rename_privateuse1_backend keeps the name (and renames it in C++)"
    ),
    "torch._dynamo.device_interface.device_interfaces['DEVICE']": ("register_interface_for_device"),
    "torch._inductor.codegen.common.device_op_overrides_dict['DEVICE']": (
        "register_device_op_overrides"
    ),
    "torch._inductor.codegen.common.device_codegens['DEVICE']": "register_backend_for_device",
    # With the upstream registry in torch (native mode), the package registers through it.
    "torch._inductor.cpp_builder._cpp_device_options_registry['DEVICE']": (
        "cpp_builder.register_cpp_device_options"
    ),
}
#: Namespaces and containers torch's registration APIs write whole.
ALLOWED_PREFIXES = {
    # rename_privateuse1_backend renames PrivateUse1 in torch's pybind enums (C++).
    "torch._C._autograd.DeviceType.": "rename_privateuse1_backend",
    "torch._C._profiler.ProfilerActivity.": "rename_privateuse1_backend",
    # register_interface_for_device first fills torch's registry of its own devices.
    "torch._dynamo.device_interface.device_interfaces[": "register_interface_for_device",
    "torch._dynamo.device_interface._device_initialized": "register_interface_for_device",
    # cpp_extension.load -> torch.ops.load_library records the library it loaded.
    "torch.ops.loaded_libraries[": "torch.ops.load_library",
    # Calling an op of the extension (torch.ops.regdev.register_aoti_runner()): torch.ops
    # makes the op namespace on first use, and TorchScript records its ops as builtins.
    "torch.ops._dir[": "torch.ops.<namespace> (first use)",
    "torch.jit._builtins._builtin_table[": "torch.ops.<namespace> (first use)",
}
#: register_backend_for_device (2.13+) keys these dicts by the device, in each module that
#: imported them.
ALLOWED_ENTRIES = ("custom_backend_passes", "custom_backend_codegen_configs")


def _allowed(name: str, device: str) -> bool:
    if name.replace(device, "DEVICE") in ALLOWED or name.startswith(tuple(ALLOWED_PREFIXES)):
        return True
    if any(f".{entry}['{device}']" in name for entry in ALLOWED_ENTRIES):
        return True
    # generate_methods_for_privateuse1_backend: Tensor.is_<device>, Module.<device>,
    # TypedStorage/UntypedStorage/PackedSequence methods, all named after the device.
    attribute = name.rpartition(".")[2]
    return device in attribute and "[" not in attribute


def _env(build_dir: Path) -> dict[str, str]:
    return {
        "PORTS_BUILD_DIR": str(build_dir),
        "PYTHONPATH": pythonpath_with(
            PORTS_DIR, REGDEV_DIR, TESTS_DIR, Path(inductor_device_options.__file__).parents[1]
        ),
    }


def _worker(*args: str) -> list[str]:
    return [sys.executable, str(PORTS_DIR / "port_worker.py"), *args]


def _run(backend: str, version: str, root: Path, build_dir: Path) -> subprocess.Popen[str]:
    (root / "bin").mkdir(parents=True)
    (root / "tmp").mkdir()
    real = shutil.which("g++")
    assert real is not None
    wrapper = root / "bin" / "g++"
    wrapper.write_text(
        _WRAPPER.format(log_env=LOG_ENV, tool="g++", path="", real=shlex.quote(real))
    )
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        **_env(build_dir),
        "CXX": str(wrapper),
        LOG_ENV: str(root / "tool.log"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "cache"),
        "TMPDIR": str(root / "tmp"),
    }
    return subprocess.Popen(
        _worker(backend, version, str(root)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture(scope="module", params=BACKENDS)
def ports(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    backend = request.param
    base = tmp_path_factory.mktemp(backend)
    build_dir = shared_test_dir() / SHARED_BUILDS[backend]
    # The backend's extension (and SDK), built once; then both versions at once.
    built = subprocess.run(
        _worker("build", backend, str(build_dir)),
        env={**os.environ, **_env(build_dir)},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    workers = {version: _run(backend, version, base / version, build_dir) for version in VERSIONS}
    try:
        for version, worker in workers.items():
            output, _ = worker.communicate(timeout=1800)
            assert worker.returncode == 0, f"{version}:\n{output}"
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    results = {}
    for version in VERSIONS:
        result = json.loads((base / version / "result.json").read_text())
        result["root"] = str(base / version)
        results[version] = result
    return results


#: What the package adds to every build it serves (``_options/freshness.py``): the SDK
#: identity definition, so that Inductor never reuses a kernel built against another SDK.
#: The patch version is not served by the package and has none: the one difference kept out.
IDENTITY_DEFINITION = re.compile(r"(-D ?)?INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=[0-9a-f]+ ?")


def _normalised(text: str, root: str) -> str:
    """``text`` without what differs between two processes: the worker's dir, gcc's and
    Python's temporary names, cache hashes (and the cache's two-letter dirs), the package's
    SDK identity definition."""
    text = text.replace(os.path.realpath(root), "<ROOT>").replace(root, "<ROOT>")
    text = IDENTITY_DEFINITION.sub("", text)
    text = re.sub(r"cc[A-Za-z0-9]{6}\.(o|res|s|ld)\b", r"ccTEMP.\1", text)
    text = re.sub(r"/tmp[a-z0-9_]{8}/", "/tmpTEMP/", text)
    text = re.sub(r"/cache/[a-z0-9]{2}/", "/cache/<H2>/", text)
    return re.sub(r"\b[a-z0-9]{20,}\b", "<HASH>", text)


def _device_builds(result: dict[str, Any]) -> list[list[str]]:
    """The g++ calls made with the device's options (its macro is on the line)."""
    return [
        [_normalised(word, result["root"]) for word in _without_identity(call["argv"])]
        for call in result["calls"]
        if call["tool"] == "g++" and any(result["macro"] in word for word in call["argv"])
    ]


def _without_identity(argv: list[str]) -> list[str]:
    words: list[str] = []
    for word in argv:
        if IDENTITY_DEFINITION.fullmatch(word):
            if not word.startswith("-D") and words and words[-1] == "-D":
                words.pop()
            continue
        words.append(word)
    return words


def _pending_note(*doors: str) -> str:
    pending = [door for door in doors if door in DOORS_PENDING]
    return f" (door not landed yet: {', '.join(pending)})" if pending else ""


def _backend(ports: dict[str, dict[str, Any]]) -> str:
    return str(ports["patch"]["backend"])


def test_detector_finds_exactly_the_patches(ports: dict[str, dict[str, Any]]) -> None:
    patch = ports["patch"]
    written = [name for name in patch["setup_writes"] if not _allowed(name, patch["device"])]
    assert written == patch["patched_names"]


def test_door_version_writes_nothing_in_torch(ports: dict[str, dict[str, Any]]) -> None:
    door, patch = ports["door"], ports["patch"]
    assert [name for name in door["setup_writes"] if not _allowed(name, door["device"])] == []
    # Compiling writes torch's own state (caches, counters) in both versions alike: what
    # the door version's compile writes beyond the patch version's is the doors' doing.
    door_only = _shapes(door["compile_writes"]) - _shapes(patch["compile_writes"])
    assert sorted(door_only) == [], _pending_note(*DOOR_MODULES)


def _shapes(names: list[str]) -> set[str]:
    """Names with what differs from process to process (counters, ids, uuids, paths) blanked."""
    return {
        re.sub(r"\[\'/[^\]]*\]", "[<path>]", re.sub(r"[0-9a-f]{8}_[0-9a-f_]+|\d+", "#", name))
        for name in names
    }


def test_both_versions_run_and_equal_eager(ports: dict[str, dict[str, Any]]) -> None:
    for version, result in ports.items():
        assert "error" not in result, f"{version}{_pending_note(*DOOR_MODULES)}:\n{result['error']}"
        for mode in ("cpp_wrapper", "aoti"):
            assert result[mode]["equal"], (version, mode)
            assert result[mode]["device"].startswith(result["device"]), (version, mode)


def test_same_generated_code(ports: dict[str, dict[str, Any]]) -> None:
    patch, door = ports["patch"], ports["door"]
    note = _pending_note("shim_ops", "device_headers")
    assert "error" not in door, door.get("error")
    for mode in ("cpp_wrapper", "aoti"):
        ours = _normalised(door[mode]["code"], door["root"])
        theirs = _normalised(patch[mode]["code"], patch["root"])
        for shim in patch["shims"]:
            assert f"{shim}(" in theirs, (mode, shim)
        assert ours == theirs, f"{mode}{note}"


def test_same_device_builds(ports: dict[str, dict[str, Any]]) -> None:
    patch, door = ports["patch"], ports["door"]
    assert _device_builds(patch), "no device build was logged"
    if _backend(ports) == "npu_shaped":
        assert all("-march=native" not in argv for argv in _device_builds(patch))
    assert _device_builds(door) == _device_builds(patch), _pending_note(
        "removed_cflags", "device_headers"
    )


def test_patches_change_cpu_builds_too(ports: dict[str, dict[str, Any]]) -> None:
    """The patches are global: torch_npu's takes -march=native from cpu's builds, the
    openreg-derived wrapper adds its SDK to them. The doors leave cpu's builds alone."""
    patch, door = ports["patch"], ports["door"]
    patch_cpu = shlex.split(patch["command_lines"]["cpu"])
    door_cpu = shlex.split(door["command_lines"]["cpu"])
    door_device = shlex.split(door["command_lines"][door["device"]])
    if _backend(ports) == "npu_shaped":
        assert "-march=native" not in patch_cpu
        assert "-march=native" in door_cpu
        assert "-march=native" not in door_device, _pending_note("removed_cflags")
    else:
        assert door["macro"] in patch_cpu
        assert door["macro"] not in door_cpu
        assert door["macro"] in door_device


def test_device_to_aten_on_this_torch(ports: dict[str, dict[str, Any]]) -> None:
    """torch 2.15 has no DEVICE_TO_ATEN: torch_npu's write raises, and its overrides, with no
    aten_device_type(), fail the C++ wrapper; the door version's overrides answer. (The
    openreg-derived backend guards its write, and its overrides answer on 2.15.)"""
    from torch._inductor.codegen import cpp_utils

    patch = ports["patch"]
    if hasattr(cpp_utils, "DEVICE_TO_ATEN") or _backend(ports) != "npu_shaped":
        assert patch["failed_patches"] == {}
        assert "first_compile_error" not in patch
        return
    assert patch["failed_patches"] == {
        "DEVICE_TO_ATEN": (
            "AttributeError: module 'torch._inductor.codegen.cpp_utils' has no attribute "
            "'DEVICE_TO_ATEN'"
        )
    }
    assert "does not implement aten_device_type()" in patch["first_compile_error"]
    assert "first_compile_error" not in ports["door"]
