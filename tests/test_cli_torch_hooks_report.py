"""list, show and doctor say which of torch 2.15's out-of-tree hooks the running torch has,
which the package provides and which it leaves out; doctor warns about what a backend
defines that the running torch never calls, and registers a PrivateUse1 device through its
``_inductor_backend_init`` as a compile does before it looks the device up.

The backends are real: ``DeviceOpOverrides`` and ``CppWrapperCpu`` subclasses registered
with torch's own registries, removed after each test. Renaming PrivateUse1 cannot be
undone, so the ``_inductor_backend_init`` device lives in a process of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from support import DOCTOR_CHECKS, NATIVE, pythonpath_with
from torch._inductor.codegen import common
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

import inductor_device_options as ido
from inductor_device_options import _cli as cli
from inductor_device_options._diagnose.checks import Check, Context
from inductor_device_options._diagnose.torch_hook_checks import check_torch_hooks
from inductor_device_options._hook.sources import found_source
from inductor_device_options._hook.torch_hooks import (
    device_include_path_names,
    uses_gpu_cpp_wrapper_instead,
)
from inductor_device_options.introspection import TorchHook, torch_hooks

pytestmark = pytest.mark.usefixtures("clean_registry")

DEVICE = "hooksdev"
TORCH_2_15 = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 15)
TORCH_ASKS_GPU_WRAPPER = hasattr(common.DeviceOpOverrides, "uses_gpu_cpp_wrapper")
INCLUDE_METHODS = (
    "get_device_include_path_jit",
    "get_device_include_path_aot",
    "get_device_include_path",
)
#: What the running torch's CppWrapperCpu calls for the device's header.
CALLED_INCLUDE_METHODS = {name for name in INCLUDE_METHODS if hasattr(CppWrapperCpu, name)}


def hooks_json() -> list[dict[str, str]]:
    return [hook._asdict() for hook in torch_hooks()]


def torch_hooks_check(tmp_path: Path) -> Check:
    """doctor's ``torch_hooks`` check of DEVICE, served by a registration."""
    ido.register_cpp_device_options(DEVICE, ido.default_cpp_device_options)
    return check_torch_hooks(Context(found_source(DEVICE), False, tmp_path))


# --- list, show and doctor name the hooks ----------------------------------------------------


def test_torch_hooks_is_public_and_covers_torch_2_15_s_hooks() -> None:
    hooks = torch_hooks()
    assert all(isinstance(hook, TorchHook) for hook in hooks)
    assert [hook.name for hook in hooks] == [
        "DeviceInterface.get_cpp_device_options",
        "DeviceOpOverrides.aten_device_type",
        "_inductor_backend_init",
        "DeviceInterface.get_cache_system_info",
        "DeviceOpOverrides.uses_gpu_cpp_wrapper",
        "DeviceInterface.is_gpu",
        "DeviceInterface.exposes_streams",
        "DeviceInterface.get_multi_processor_count",
        "DeviceInterface.is_triton_capable",
        "CppWrapperCpu.get_device_include_path_jit/_aot",
    ]
    statuses = {hook.name: hook.status for hook in hooks}
    assert statuses["_inductor_backend_init"] == ("native" if TORCH_2_15 else "provided")
    for name in list(statuses)[3:-1]:  # every torch: native in 2.15, provided before
        assert statuses[name] == ("native" if TORCH_ASKS_GPU_WRAPPER else "provided"), name


def test_list_and_show_print_the_hooks_and_give_them_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["torch_hooks"] == hooks_json()
    assert cli.main(["show", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["torch_hooks"] == hooks_json()
    for command in (["list"], ["show", "cpu"]):
        assert cli.main(command) == 0
        lines = capsys.readouterr().out.splitlines()
        start = lines.index("torch 2.15's hooks:")
        for line, hook in zip(lines[start + 1 :], torch_hooks(), strict=False):
            pattern = rf"  {hook.status} +{re.escape(hook.name)}: {re.escape(hook.detail)}"
            assert re.fullmatch(pattern, line), (command, line)


# --- uses_gpu_cpp_wrapper() -----------------------------------------------------------------


@pytest.fixture
def op_overrides() -> Iterator[Callable[[bool], None]]:
    """Registers DEVICE's DeviceOpOverrides, whose uses_gpu_cpp_wrapper() answers as given."""

    def register(uses_gpu: bool) -> None:
        class GpuWrapperOverrides(common.DeviceOpOverrides):
            def uses_gpu_cpp_wrapper(self) -> bool:
                return uses_gpu

        common.register_device_op_overrides(DEVICE, GpuWrapperOverrides())

    yield register
    common.device_op_overrides_dict.pop(DEVICE, None)


@pytest.mark.skipif(
    TORCH_ASKS_GPU_WRAPPER,
    reason=f"torch {torch.__version__} asks DeviceOpOverrides.uses_gpu_cpp_wrapper() (native)",
)
def test_uses_gpu_cpp_wrapper_true_warns_where_the_backport_is_left_out(
    op_overrides: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch._inductor import graph

    def codegen_with_cpp_wrapper(self: Any) -> Any:  # a backend's own, as torch_npu's
        return graph.GraphLowering.codegen(self)

    monkeypatch.setattr(graph.GraphLowering, "codegen_with_cpp_wrapper", codegen_with_cpp_wrapper)
    [hook] = [hook for hook in torch_hooks() if hook.name.endswith("uses_gpu_cpp_wrapper")]
    assert hook.status == "left out"
    assert hook.detail.startswith(
        "GraphLowering.codegen_with_cpp_wrapper is test_cli_torch_hooks_report."
    )
    op_overrides(True)
    check = torch_hooks_check(tmp_path)
    assert (check.status, check.summary) == (
        "warn",
        f"torch {torch.__version__} never asks uses_gpu_cpp_wrapper()",
    ), check
    [problem] = check.problems
    assert "GpuWrapperOverrides.uses_gpu_cpp_wrapper() returns True" in problem.cause
    assert f"the package's backport is left out: {hook.detail}" in problem.cause
    assert uses_gpu_cpp_wrapper_instead(torch.__version__) in problem.cause
    assert problem.fix.startswith("restore torch's own GraphLowering.codegen_with_cpp_wrapper")


@pytest.mark.parametrize("uses_gpu", [True, False], ids=["true", "false"])
def test_uses_gpu_cpp_wrapper_says_nothing_where_torch_asks_it_or_it_is_false(
    op_overrides: Callable[[bool], None], tmp_path: Path, uses_gpu: bool
) -> None:
    op_overrides(uses_gpu)
    check = torch_hooks_check(tmp_path)
    assert (check.status, check.problems) == ("pass", ()), check


# --- the include methods of the C++ wrapper codegen class -----------------------------------


class JitAotIncludes(CppWrapperCpu):
    """torch 2.13's names for the device's header."""

    @staticmethod
    def get_device_include_path_jit(device: str) -> str:
        return f"#include <{device}/jit.h>"

    @staticmethod
    def get_device_include_path_aot(device: str) -> str:
        return f"#include <{device}/aot.h>"


class OneInclude(CppWrapperCpu):
    """torch 2.10 to 2.12's name for it."""

    @staticmethod
    def get_device_include_path(device: str) -> str:
        return f"#include <{device}/one.h>"


class EveryInclude(JitAotIncludes, OneInclude):
    """Every release's names: some torch calls one of them."""


@pytest.fixture
def wrapper_codegen() -> Iterator[Callable[[type[CppWrapperCpu]], None]]:
    """Registers DEVICE's backend with the given C++ wrapper codegen class."""
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    def register(codegen: type[CppWrapperCpu]) -> None:
        common.register_backend_for_device(DEVICE, CppScheduling, PythonWrapperCodegen, codegen)

    yield register
    common.device_codegens.pop(DEVICE, None)


@pytest.mark.parametrize("codegen", [JitAotIncludes, OneInclude], ids=lambda c: c.__name__)
def test_include_methods_torch_never_calls_warn_naming_what_it_calls(
    wrapper_codegen: Callable[[type[CppWrapperCpu]], None],
    tmp_path: Path,
    codegen: type[CppWrapperCpu],
) -> None:
    defined = {name for name in vars(codegen) if name.startswith("get_device_include_path")}
    if defined & CALLED_INCLUDE_METHODS:
        pytest.skip(f"torch {torch.__version__} calls {sorted(defined)} (native): no warning")
    wrapper_codegen(codegen)
    check = torch_hooks_check(tmp_path)
    assert check.status == "warn", check
    assert check.summary.startswith(f"torch {torch.__version__} never calls get_device_include")
    [problem] = check.problems
    assert f"{__name__}.{codegen.__name__} defines " in problem.cause
    assert all(f"{name}()" in problem.cause for name in defined)
    assert f"never calls: it calls {device_include_path_names()}" in problem.cause
    if "get_device_include_path" in CALLED_INCLUDE_METHODS:
        assert "also define get_device_include_path(device)" in problem.fix
    elif CALLED_INCLUDE_METHODS:
        assert "also define get_device_include_path_jit(device)" in problem.fix


@pytest.mark.parametrize(
    "codegen", [JitAotIncludes, OneInclude, EveryInclude], ids=lambda c: c.__name__
)
def test_include_methods_torch_calls_say_nothing(
    wrapper_codegen: Callable[[type[CppWrapperCpu]], None],
    tmp_path: Path,
    codegen: type[CppWrapperCpu],
) -> None:
    defined = {
        name
        for name in INCLUDE_METHODS
        for base in codegen.__mro__
        if base.__module__ == __name__ and name in vars(base)
    }
    if not defined & CALLED_INCLUDE_METHODS:
        pytest.skip(f"torch {torch.__version__} calls none of {sorted(defined)}: it warns")
    wrapper_codegen(codegen)
    check = torch_hooks_check(tmp_path)
    assert (check.status, check.problems) == ("pass", ()), check
    assert check.summary == f"none that torch {torch.__version__} leaves uncalled"


def test_a_device_without_a_backend_passes_saying_none_is_seen(tmp_path: Path) -> None:
    check = torch_hooks_check(tmp_path)
    assert (check.status, check.summary) == (
        "pass",
        f"none seen: no Inductor backend is registered for {DEVICE!r} in this process",
    )


# --- _inductor_backend_init -----------------------------------------------------------------

BACKEND_INIT_DEVICE = """\
import sys
import types

import torch

import inductor_device_options as ido
from inductor_device_options import _cli as cli

torch.utils.rename_privateuse1_backend("initdev")
module = types.ModuleType("torch.initdev")
torch._register_device_module("initdev", module)
ido.register_cpp_device_options("initdev", ido.default_cpp_device_options)


def failing_init():
    raise RuntimeError("the initdev runtime is not set up")


def backend_init():
    from torch._inductor.codegen import common
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    class InitdevCppWrapper(CppWrapperCpu):
        def __init__(self):
            self.device = "initdev"
            super().__init__()

        @staticmethod
        def create(*args):
            return InitdevCppWrapper()

    common.register_backend_for_device(
        "initdev", CppScheduling, PythonWrapperCodegen, InitdevCppWrapper
    )
    common.register_device_op_overrides("initdev", common.DeviceOpOverrides())


module._inductor_backend_init = failing_init
sys.stdout.write("@@@ failing\\n")
sys.stdout.flush()
cli.main(["doctor", "initdev", "--json"])
module._inductor_backend_init = backend_init
sys.stdout.write("@@@ json\\n")
sys.stdout.flush()
cli.main(["doctor", "initdev", "--json"])  # runs the hook
sys.stdout.write("@@@ text\\n")
sys.stdout.flush()
cli.main(["doctor", "initdev"])  # registered by then: says so all the same
"""


@pytest.fixture(scope="module")
def backend_init_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """doctor of a PrivateUse1 device registered only by its _inductor_backend_init: one
    that raises, then one that registers (JSON), then again once registered (text), in one
    process."""
    script = tmp_path_factory.mktemp("initdev") / "initdev.py"
    script.write_text(BACKEND_INIT_DEVICE)
    finished = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": pythonpath_with(script.parent), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert finished.returncode == 0, f"{finished.stdout}\n{finished.stderr}"
    _, failing, json_run, text = finished.stdout.split("@@@ ")
    return {
        "failing": failing.removeprefix("failing\n"),
        "json": json_run.removeprefix("json\n"),
        "text": text.removeprefix("text\n"),
    }


def checks_of(document: str) -> dict[str, dict[str, Any]]:
    checks = json.loads(document)["checks"]
    assert [check["name"] for check in checks] == list(DOCTOR_CHECKS)
    return {check["name"]: check for check in checks}


def backend_init_status() -> str:
    [hook] = [hook for hook in torch_hooks() if hook.name == "_inductor_backend_init"]
    return hook.status


def test_doctor_registers_the_device_through_its_backend_init_as_a_compile_does(
    backend_init_runs: dict[str, str],
) -> None:
    document = json.loads(backend_init_runs["json"])
    assert document["torch_hooks"] == hooks_json()
    checks = checks_of(backend_init_runs["json"])
    check = checks["torch_hooks"]
    assert check["status"] == "pass", check
    assert check["summary"].startswith(
        "registers with Inductor through torch.initdev._inductor_backend_init "
        f"({backend_init_status()}: "
    )
    # The device's registration is seen: its wrapper codegen is the one asked.
    asked = checks["device_asked"]
    assert asked["status"] == "pass", asked
    assert "InitdevCppWrapper reports 'initdev'" in asked["summary"]


def test_doctor_text_names_the_hooks_and_the_backend_init(
    backend_init_runs: dict[str, str],
) -> None:
    lines = backend_init_runs["text"].splitlines()
    assert "torch 2.15's hooks:" in lines
    status = backend_init_status()
    assert any(
        line.split() == [status, "_inductor_backend_init:", *line.split()[2:]] for line in lines
    )
    assert (
        "PASS  torch 2.15's hooks the backend uses: registers with Inductor through "
        f"torch.initdev._inductor_backend_init ({status}: "
    ) in backend_init_runs["text"]


def test_a_backend_init_that_raises_fails_doctor_as_every_compile_would(
    backend_init_runs: dict[str, str],
) -> None:
    document = json.loads(backend_init_runs["failing"])
    assert (document["ok"], document["exit_code"]) == (False, 1)
    check = checks_of(backend_init_runs["failing"])["torch_hooks"]
    assert (check["status"], check["summary"]) == (
        "fail",
        "torch.initdev._inductor_backend_init raised RuntimeError",
    )
    [problem] = check["problems"]
    assert problem["cause"].startswith("RuntimeError: the initdev runtime is not set up, at ")
    assert problem["fix"] == "fix torch.initdev._inductor_backend_init"
    assert any("_inductor_backend_init raised RuntimeError" in note for note in document["notes"])


# --- is_gpu() of an interface registered after GPU_TYPES was built -------------------------


@pytest.fixture
def gpu_interface() -> Iterator[Callable[[bool], None]]:
    """Registers DEVICE's DeviceInterface, whose is_gpu() answers as given, as backends
    register it: after torch._inductor.utils built GPU_TYPES."""
    from torch._dynamo import device_interface

    def register(gpu: bool) -> None:
        interface = type(
            "LateInterface",
            (device_interface.DeviceInterface,),
            {"is_gpu": staticmethod(lambda: gpu), "__module__": "late_backend"},
        )
        device_interface.register_interface_for_device(DEVICE, interface)

    yield register
    device_interface.device_interfaces.pop(DEVICE, None)


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "no-gpu"])
def test_is_gpu_registered_too_late_warns(
    gpu_interface: Callable[[bool], None], tmp_path: Path, gpu: bool
) -> None:
    gpu_interface(gpu)
    check = torch_hooks_check(tmp_path)
    if not gpu:
        assert (check.status, check.problems) == ("pass", ()), check
        return
    summary = "late_backend.LateInterface.is_gpu() is never asked"
    assert (check.status, check.summary) == ("warn", summary)
    [problem] = check.problems
    assert "GPU_TYPES was built, as torch 2.15 builds it" in problem.cause
    assert f"treats {DEVICE!r} as no GPU" in problem.cause


def test_is_gpu_in_gpu_types_is_no_warning(
    gpu_interface: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch._inductor import utils

    gpu_interface(True)
    monkeypatch.setattr(utils, "GPU_TYPES", [*utils.GPU_TYPES, DEVICE])
    assert torch_hooks_check(tmp_path).status == "pass"


def test_the_torch_hooks_page_gives_this_torchs_status_of_every_hook() -> None:
    """docs/concepts/torch-hooks.md's table by release: the running torch's column, where it
    has one, is what ``list`` reports, hook by hook, and it lists every hook."""
    page = (Path(__file__).parents[1] / "docs" / "concepts" / "torch-hooks.md").read_text()
    section = page.split("## By release", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip(" `") for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]
    header, body = rows[0], rows[1:]
    statuses = {hook.name: hook.status for hook in torch_hooks()}
    assert [row[0] for row in body] == list(statuses)
    release = "torch " + ".".join(torch.__version__.split(".")[:2])
    if release not in header:
        pytest.skip(f"the page has no column for {release}")
    column = header.index(release)
    expected = {row[0]: row[column] for row in body}
    if NATIVE:  # torch with the upstream registry: the page's row says it is left out there
        expected["DeviceInterface.get_cpp_device_options"] = "left out"
    assert expected == statuses
