"""doctor checks what Inductor meets at build time and at run time: the headers its generated
code includes, headers that shadow one another, and a real load of a built module.

Each test writes a small SDK to disk: ``include/acme/acme.h``, ``lib/libacme_rt.so`` (built
by gcc) and, where the SDK is complete, the headers Inductor's generated code includes for
the device (``torch/csrc/inductor/{cpp_wrapper,aoti_include}/<device>.h``, torch 2.6's
``aoti_torch/generated/c_shim_<device>.h``), which stop with ``#error`` unless the provider
defines ``USE_ACME``. doctor runs for real: torch's ``CppBuilder`` and g++ build the
probes, a fresh python loads them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import released_torch_npu
import torch
from support import (
    AOT_CHECKS,
    DOCTOR_CHECKS,
    aoti_device_header,
    assert_quoted,
    cpp_wrapper_device_header,
    creating_needs_op_overrides,
    shared_test_dir,
    torch_writes_cmake,
)
from test_hook_coexistence import synthetic_cann as minimal_cann
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.cpu_device_op_overrides import CpuDeviceOpOverrides

import inductor_device_options as ido
from inductor_device_options import _cli as cli
from inductor_device_options import ascend
from inductor_device_options._diagnose import inductor_headers as _inductor_headers
from inductor_device_options._diagnose import module_load as _module_load
from inductor_device_options._diagnose import shim_checks as _shim_checks
from inductor_device_options._diagnose.aoti_weights import refusing_runtime_header
from inductor_device_options._diagnose.checks import Check
from inductor_device_options._diagnose.doctor import run_doctor
from inductor_device_options._diagnose.overrides_checks import kernels_declared
from inductor_device_options._diagnose.provider_loading import parse_provider_spec
from inductor_device_options._hook.sources import found_source
from inductor_device_options._lookup import resolve
from inductor_device_options._lookup.registry import describe_callable

pytestmark = pytest.mark.usefixtures("clean_registry")

CHECK_NAMES = list(DOCTOR_CHECKS)
# The C++ project's verdict for a complete SDK: torch 2.6 writes no CMake project.
AOT_PROJECT = "pass" if torch_writes_cmake() else "skip"
#: What doctor cannot check of a device whose backend registered no codegen (these devices).
NO_BACKEND = dict.fromkeys(("device_asked", "overrides", "c_shim"), "skip")
INDUCTOR_HEADER = """\
#pragma once
// What Inductor's generated code includes for {device} ({kind}).
#ifndef USE_ACME
#error "USE_ACME is not defined: the acme C++ device options did not reach the compiler"
#endif
#include <acme/acme.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
// The C shim the generated code calls for extern kernels on the device.
extern "C" {{
{shim}
}}
"""
#: The C shim's declarations, by extern kernel.
SHIM = {
    "mm": "AOTITorchError aoti_torch_{device}_mm_out("
    "AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);",
    "addmm": "AOTITorchError aoti_torch_{device}_addmm_out(AtenTensorHandle, AtenTensorHandle, "
    "AtenTensorHandle, AtenTensorHandle, double, double);",
    "bmm": "AOTITorchError aoti_torch_{device}_bmm_out("
    "AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);",
}


def write_inductor_headers(
    include: Path, device: str, kernels: tuple[str, ...] = tuple(SHIM)
) -> None:
    """Every header an Inductor of 2.6 to 2.15 includes for ``device``, under ``include``,
    declaring the C shim functions of ``kernels``."""
    shim = "\n".join(SHIM[kernel].format(device=device) for kernel in kernels)
    for kind, header in inductor_headers_for(device).items():
        path = include / header
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(INDUCTOR_HEADER.format(device=device, kind=kind, shim=shim))


class Sdk(NamedTuple):
    root: Path
    include: Path  # acme/acme.h
    inductor_include: Path  # the headers Inductor includes for each device
    lib: Path  # libacme_rt.so

    def runpath(self) -> str:
        """The runpath ldflag, as inductor_device_options.runpath() gives it."""
        return f"Wl,-rpath,{os.path.realpath(self.lib)}"


def torch_asks_the_wrapper_class() -> bool:
    """Inductor asks the wrapper codegen class for the device's include (2.10 on); torch
    2.6 writes ``c_shim_<device>.h`` itself."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    return any(
        hasattr(CppWrapperCpu, method)
        for method in ("get_device_include_path_jit", "get_device_include_path")
    )


def inductor_headers_for(device: str) -> dict[str, str]:
    """Every header an Inductor of 2.6 to 2.15 includes for ``device``, by kind."""
    return {
        "cpp_wrapper": f"torch/csrc/inductor/cpp_wrapper/{device}.h",
        "aoti_include": f"torch/csrc/inductor/aoti_include/{device}.h",
        "c_shim (torch 2.6)": f"torch/csrc/inductor/aoti_torch/generated/c_shim_{device}.h",
    }


def write_sdk(root: Path, devices: tuple[str, ...]) -> Sdk:
    sdk = Sdk(root, root / "include", root / "inductor-include", root / "lib")
    (sdk.include / "acme").mkdir(parents=True)
    (sdk.include / "acme" / "acme.h").write_text(
        '#pragma once\nextern "C" int acme_version(void);\n'
    )
    for device in devices:
        write_inductor_headers(sdk.inductor_include, device)
    sdk.lib.mkdir()
    source = root / "acme_rt.c"
    source.write_text("int acme_version(void) { return 1; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(source), "-o", str(sdk.lib / "libacme_rt.so")], check=True
    )
    return sdk


DEVICES = ("acme", "acmeaot", "acmeshadow", "acmedeclared", "acmeasked")


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Sdk:
    return write_sdk(tmp_path_factory.mktemp("acme-sdk"), DEVICES)


Provider = Callable[[str, bool, bool], ido.CppDeviceOptions]


def provider(
    sdk: Sdk,
    *,
    inductor_headers: bool = True,
    runpath: bool = False,
    macro: bool = True,
    include_dirs_first: tuple[Path, ...] = (),
) -> Provider:
    """The Quickstart's provider for the SDK: USE_ACME, its include dir, its lib dir and
    acme_rt; with the dir of Inductor's headers, a runpath, stale include dirs first."""

    def cpp_device_options(
        device_type: str, aot_mode: bool, compile_only: bool
    ) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        if macro:
            options.definitions.append("USE_ACME")
        options.include_dirs.extend(str(path) for path in include_dirs_first)
        options.include_dirs.append(str(sdk.include))
        if inductor_headers:
            options.include_dirs.append(str(sdk.inductor_include))
        options.libraries_dirs.append(str(sdk.lib))
        options.libraries.append("acme_rt")
        if runpath:
            options.ldflags.append(sdk.runpath())
        return options

    return cpp_device_options


def doctor(device: str, callback: object, work: Path, aot_mode: bool = False) -> dict[str, Check]:
    """doctor's checks for ``device`` served by ``callback`` (a registration), in-process."""
    work.mkdir(parents=True, exist_ok=True)
    with ido.testing.registered_cpp_device_options(device, callback):  # type: ignore[arg-type]
        checks = run_doctor(found_source(device), aot_mode, work)
    assert [check.name for check in checks] == CHECK_NAMES + (list(AOT_CHECKS) if aot_mode else [])
    for check in checks:
        assert bool(check.problems) == (check.status in ("fail", "warn")), check
    return {check.name: check for check in checks}


def statuses(checks: dict[str, Check]) -> dict[str, str]:
    return {name: check.status for name, check in checks.items()}


def all_pass(checks: dict[str, Check]) -> bool:
    """Every check passes; which device type the builds ask for, the overrides and the C
    shim may be unknown (skipped, saying why) where no backend registered a wrapper codegen
    or DeviceOpOverrides for the device, as for these test devices (with --aot, the builds
    ask for the device whatever its backend)."""
    found = statuses(checks)
    for name in ("device_asked", "overrides", "c_shim"):
        if found.pop(name) == "skip":
            assert "registered for" in checks[name].summary, checks[name]
    # With --aot: the model runner is said not to be checked without --compile, the weights
    # of a PrivateUse1 device are warned of where torch refuses them, and torch 2.6 writes
    # no C++ project to build.
    assert found.pop("aoti_runner", "skip") == "skip"
    assert found.pop("aoti_weights", "pass") in ("pass", "warn")
    # write_sdk's libacme_rt.so has no SONAME: a warning with --aot.
    assert found.pop("library_sonames", "pass") in ("pass", "warn")
    assert found.pop("cmake_project", AOT_PROJECT) == AOT_PROJECT
    return set(found.values()) == {"pass"}


# --- the headers Inductor includes --------------------------------------------------------


@pytest.mark.parametrize("aot_mode", [False, True], ids=["cpp_wrapper", "aot"])
def test_a_missing_inductor_header_fails_naming_it_the_dirs_searched_and_the_fix(
    sdk: Sdk, tmp_path: Path, aot_mode: bool
) -> None:
    checks = doctor("acme", provider(sdk, inductor_headers=False), tmp_path, aot_mode)
    expected = aoti_device_header("acme") if aot_mode else cpp_wrapper_device_header("acme")
    if torch_asks_the_wrapper_class():
        kind = "aoti_include" if aot_mode else "cpp_wrapper"
        assert expected == f"torch/csrc/inductor/{kind}/acme.h"
    check = checks["headers"]
    assert check.status == "fail"
    [problem] = check.problems
    assert f"`#include <{expected}>`" in problem.cause
    assert "torch's default" in problem.cause
    assert f"-I {sdk.include}" in problem.details
    assert f"-I {torch.utils.cpp_extension.include_paths()[0]}" in problem.details
    assert f"ship {expected} in the device SDK" in problem.fix
    assert str(sdk.include / expected) in problem.fix
    # The probe itself builds: only what the generated code includes is missing.
    assert checks["probe_build"].status == "pass"


@pytest.mark.parametrize("aot_mode", [False, True], ids=["cpp_wrapper", "aot"])
@pytest.mark.parametrize("loader_path", ["LD_LIBRARY_PATH", "runpath"])
def test_the_complete_sdk_passes_every_check(
    sdk: Sdk,
    tmp_path: Path,
    aot_mode: bool,
    loader_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if loader_path == "LD_LIBRARY_PATH":
        monkeypatch.setenv("LD_LIBRARY_PATH", str(sdk.lib))
    else:
        monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    device = "acmeaot" if aot_mode else "acme"
    checks = doctor(device, provider(sdk, runpath=loader_path == "runpath"), tmp_path, aot_mode)
    assert all_pass(checks), statuses(checks)
    expected = aoti_device_header(device) if aot_mode else cpp_wrapper_device_header(device)
    inductor_include = os.path.realpath(sdk.inductor_include)
    assert checks["headers"].summary.startswith(f"{expected} in {inductor_include} (")
    assert checks["probe_load"].summary == (
        "in a fresh python that imported torch: libacme_rt.so "
        f"({os.path.realpath(sdk.lib / 'libacme_rt.so')})"
    )


def test_a_header_that_needs_a_macro_the_options_lack_fails_with_the_error(
    sdk: Sdk, tmp_path: Path
) -> None:
    """Found, but it stops with #error: preprocessing is a real include."""
    checks = doctor("acme", provider(sdk, macro=False, runpath=True), tmp_path)
    check = checks["headers"]
    assert check.status == "fail"
    [problem] = check.problems
    assert "could not include what Inductor's generated code includes" in problem.cause
    assert any("#error" in line and "USE_ACME is not defined" in line for line in problem.details)
    assert checks["probe_load"].status == "pass"


def test_headers_a_provider_declares_are_the_ones_checked(sdk: Sdk, tmp_path: Path) -> None:
    """A backend whose wrapper codegen class is not registered in doctor's process (it
    cannot be imported there) says through its provider what that class includes."""
    declared = provider(sdk, runpath=True)
    asked = []

    def inductor_headers(device_type: str, aot_mode: bool) -> list[str]:
        asked.append((device_type, aot_mode))
        return ["acme/acme.h", inductor_headers_for(device_type)["cpp_wrapper"]]

    declared.inductor_headers = inductor_headers  # type: ignore[attr-defined]
    checks = doctor("acmedeclared", declared, tmp_path / "declared")
    assert asked == [("acmedeclared", False)]
    assert all_pass(checks), statuses(checks)
    assert "(inductor_headers of " in checks["headers"].summary

    def missing_headers(device_type: str, aot_mode: bool) -> list[str]:
        return ["acme/runtime/stream.h"]

    declared.inductor_headers = missing_headers  # type: ignore[attr-defined]
    [problem] = doctor("acmedeclared", declared, tmp_path / "missing")["headers"].problems
    assert "`#include <acme/runtime/stream.h>` (inductor_headers of " in problem.cause

    def broken(device_type: str, aot_mode: bool) -> list[str]:
        raise KeyError(device_type)

    declared.inductor_headers = broken  # type: ignore[attr-defined]
    check = doctor("acmedeclared", declared, tmp_path / "broken")["headers"]
    assert (check.status, check.summary) == ("fail", "the provider's declaration failed")
    assert "raised KeyError: 'acmedeclared'" in check.problems[0].cause


MANY_MISSING = [f"acme/inductor/runtime/header_{index}.h" for index in range(10)]


def test_a_report_names_the_provider_once_and_many_missing_headers_under_one_fix(
    sdk: Sdk, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider missing 10 of the headers Inductor's generated code includes: the text
    report names it once, in its header (146 lines and its description 21 times before),
    and the 10 headers are one cause that lists them, with one fix: 40 lines at most."""
    many = provider(sdk, runpath=True)
    many.__qualname__ = "AcmeAcceleratorBackend.inductor_integration.cpp_device_options"
    many.inductor_headers = lambda device_type, aot_mode: MANY_MISSING  # type: ignore[attr-defined]
    description = describe_callable(many)
    monkeypatch.setenv("NO_COLOR", "1")
    with ido.testing.registered_cpp_device_options("acmemany", many):
        assert cli.main(["doctor", "acmemany"]) == cli.EXIT_FAILED
    report = capsys.readouterr().out
    lines = report.splitlines()
    assert report.count(description) == 1
    assert f"options from registration: {description}" in lines
    assert "FAIL  Inductor's device headers found: 10 of 10 not found" in lines, report
    start = lines.index("FAIL  Inductor's device headers found: 10 of 10 not found")
    end = next(i for i, line in enumerate(lines) if i > start and line[:4] in ("PASS", "WARN"))
    block = lines[start + 1 : end]
    [fix] = [line for line in block if line.lstrip().startswith("fix:")]
    assert fix.startswith("      fix:   ship them in the device SDK, in an include dir the")
    assert sum(line.lstrip().startswith("cause:") for line in block) == 1
    listed = block[1 : block.index(fix)]
    assert listed == [f"             - {header}" for header in MANY_MISSING]
    [own] = [line for line in block if "'s own: " in line]  # g++'s dirs, one line
    assert own.count(", /") >= 1
    assert len(lines) <= 40, report


#: Where doctor's own code is: a source it finds there (not through a lookup it makes) is
#: found for the report and the checks.
DOCTOR_CODE = tuple(
    f"inductor_device_options.{room}" for room in ("_cli", "_diagnose", "introspection")
)
#: What stands between doctor's code and the lookup order (``find_source``) when it finds a
#: source: serve.loaded_source was one, before doctor found each source once.
FINDING = ("source_of", "loaded_source", "found_source")


@pytest.mark.parametrize("args", [["acme"], ["--all"]], ids=["device", "all"])
def test_doctor_finds_each_device_s_source_once_for_its_report_and_its_checks(
    sdk: Sdk,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    """The record shown and the provider the checks call come from one finding per device
    (three before: the report's, the unknown-device test's or --all's list, and the
    provider's). The lookups doctor makes through Inductor's function find it as Inductor
    does: they are not counted."""
    found: list[str] = []
    find_source = resolve.find_source

    def counting(device_type: str, *arguments: Any, **keywords: Any) -> object:
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_code.co_name in FINDING:
            frame = frame.f_back
        if str(frame.f_globals.get("__name__")).startswith(DOCTOR_CODE):
            found.append(device_type)
        return find_source(device_type, *arguments, **keywords)

    monkeypatch.setattr(resolve, "find_source", counting)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(sdk.lib))
    with ido.testing.registered_cpp_device_options("acme", provider(sdk)):
        exit_code = cli.main(["doctor", *args, "--json"])
    document = json.loads(capsys.readouterr().out)
    results = document["devices"] if args == ["--all"] else [document]
    checked = {result["device_type"]: result for result in results}
    acme = {check["name"]: check["status"] for check in checked["acme"]["checks"]}
    assert exit_code == 0 and acme["options"] == acme["probe_load"] == "pass", document
    assert checked["acme"]["source"]["source"] == "registration"
    assert Counter(found) == dict.fromkeys(checked, 1)


def test_many_missing_dirs_and_libraries_are_one_cause_each_with_one_fix(
    sdk: Sdk, tmp_path: Path
) -> None:
    def missing(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = provider(sdk, runpath=True)(device_type, aot_mode, compile_only)
        options.include_dirs.extend(str(tmp_path / name) for name in ("no-inc-1", "no-inc-2"))
        options.libraries.extend(["acme_gone_1", "acme_gone_2"])
        return options

    checks = doctor("acme", missing, tmp_path / "work")
    [dirs] = checks["include_dirs"].problems
    assert dirs.instances == tuple(
        f"include dir {tmp_path / name} does not exist" for name in ("no-inc-1", "no-inc-2")
    )
    assert dirs.fix == "install the device SDK or fix its provider"
    [libraries] = checks["libraries"].problems
    assert libraries.cause.startswith("2 libraries not found in ")
    assert libraries.instances == ("libacme_gone_1.so", "libacme_gone_2.so")
    assert libraries.fix == "install the device SDK or fix its provider"


class _AcmeWrapper:
    """Stands for a backend's C++ wrapper codegen class: only its include methods."""

    @staticmethod
    def get_device_include_path_jit(device: str) -> str:
        return f"#include <acme/inductor/{device}_wrapper.h>"

    @staticmethod
    def get_device_include_path_aot(device: str) -> str:
        return f"#include <acme/inductor/{device}_model.h>\n#include <acme/acme.h>"

    @staticmethod
    def get_device_include_path(device: str) -> str:  # torch 2.10-2.12's single method
        from torch._inductor.virtualized import V

        return (
            _AcmeWrapper.get_device_include_path_aot(device)
            if V.graph.aot_mode
            else (_AcmeWrapper.get_device_include_path_jit(device))
        )


@pytest.fixture
def registered_wrapper() -> Iterator[None]:
    from torch._inductor.codegen import common

    common.register_backend_for_device(
        "acmeclass", object, object, device_cpp_wrapper_codegen=_AcmeWrapper
    )
    yield
    del common.device_codegens["acmeclass"]


@pytest.mark.usefixtures("registered_wrapper")
@pytest.mark.parametrize(
    ("aot_mode", "names"),
    [
        (False, ("acme/inductor/acmeclass_wrapper.h",)),
        (True, ("acme/inductor/acmeclass_model.h", "acme/acme.h")),
    ],
)
def test_the_registered_wrapper_codegen_class_is_asked_first(
    aot_mode: bool, names: tuple[str, ...]
) -> None:
    def declared() -> None: ...

    declared.inductor_headers = lambda device, aot: ["never/asked.h"]  # type: ignore[attr-defined]
    headers = _inductor_headers.device_headers("acmeclass", aot_mode, declared, "declared")
    if not torch_asks_the_wrapper_class():
        # torch 2.6's classes have no include method to ask: the declaration says.
        assert headers.names == ("never/asked.h",)
        return
    assert headers.names == names
    assert headers.origin.startswith("test_diagnose_doctor._AcmeWrapper.get_device_include_path")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("#include <a/b.h>", ("a/b.h",)),
        ('  #  include "x.h"\n#include <y.h>\n', ("x.h", "y.h")),
        ("#include <a.h>\n// #include <commented.h>\n#define X 1\n", ("a.h",)),
        ('#include "/opt/acme/include/abs.h"', ("/opt/acme/include/abs.h",)),
        ("", ()),
    ],
)
def test_included_names_are_read_off_include_lines(text: str, names: tuple[str, ...]) -> None:
    assert _inductor_headers.included_names(text) == names


# --- which device type the builds ask for ---------------------------------------------------


class _OpenregShapedWrapper(CppWrapperCpu):
    """As openreg-derived backends write their codegen: ``device`` left "cpu"."""

    @staticmethod
    def create(*args: object) -> CppWrapperCpu:
        return _OpenregShapedWrapper()


class _ReportingWrapper(CppWrapperCpu):
    """The fix: the codegen reports its device. Its own include method names the SDK's
    header only: what torch's precompile step includes is torch's business."""

    def __init__(self) -> None:
        self.device = "acmeasked"
        super().__init__()

    @staticmethod
    def get_device_include_path_jit(device: str) -> str:
        return "#include <acme/acme.h>"

    get_device_include_path = get_device_include_path_jit  # torch 2.10-2.12's name

    @staticmethod
    def create(*args: object) -> CppWrapperCpu:
        return _ReportingWrapper()


class _HostOverrides(CpuDeviceOpOverrides):
    """A host-memory device's overrides: the CPU's, and the device's ATen type."""

    def aten_device_type(self) -> str:
        return "at::kPrivateUse1"


@pytest.fixture
def asked_backend() -> Iterator[Callable[[type[CppWrapperCpu]], None]]:
    """Registers a backend for "acmeasked" with the given wrapper codegen, as backends do."""
    from torch._inductor.codegen import common
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    def register(codegen: type[CppWrapperCpu], overrides: object = None) -> None:
        common.register_backend_for_device(
            "acmeasked", CppScheduling, PythonWrapperCodegen, codegen
        )
        common.register_device_op_overrides("acmeasked", overrides or _HostOverrides())

    yield register
    common.device_codegens.pop("acmeasked", None)
    common.device_op_overrides_dict.pop("acmeasked", None)


def test_a_codegen_that_reports_cpu_fails_naming_it_the_device_asked_and_the_provider(
    sdk: Sdk, tmp_path: Path, asked_backend: Callable[[type[CppWrapperCpu]], None]
) -> None:
    """The openreg-derived shape: its builds ask for "cpu", the device's options are never
    consulted. Everything else about the device passes: only this check can catch it."""
    asked_backend(_OpenregShapedWrapper)
    callback = provider(sdk, runpath=True)
    checks = doctor("acmeasked", callback, tmp_path)
    check = checks["device_asked"]
    assert (check.status, check.summary) == (
        "fail",
        "cpp_wrapper builds ask for 'cpu', not 'acmeasked'",
    )
    [problem] = check.problems
    codegen = f"{__name__}._OpenregShapedWrapper"
    assert f"{codegen} reports 'cpu' (CppWrapperCpu's default" in problem.cause
    assert "CppTorchDeviceOptions(device_type='cpu')" in problem.cause
    assert "the provider's options for 'acmeasked' are never consulted" in problem.cause
    assert describe_callable(callback) not in problem.cause  # the report's header names it
    assert f"in {codegen}.__init__, set self.device = 'acmeasked'" in problem.fix
    assert "torch/csrc/inductor/cpp_wrapper/acmeasked.h" in problem.fix
    assert [name for name, status in statuses(checks).items() if status == "fail"] == [
        "device_asked"
    ]
    if not torch_asks_the_wrapper_class():  # torch 2.6: the shim of the device reported
        shim = "torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h"
        assert checks["headers"].summary.startswith(f"{shim} in "), checks["headers"]


def test_a_codegen_that_cannot_be_created_fails_as_every_build_would(
    sdk: Sdk, tmp_path: Path, asked_backend: Callable[[type[CppWrapperCpu]], None]
) -> None:
    if not creating_needs_op_overrides():
        pytest.skip(f"torch {torch.__version__} gives DeviceOpOverrides to every device")
    from torch._inductor.codegen import common

    asked_backend(_ReportingWrapper)
    common.device_op_overrides_dict.pop("acmeasked")  # a backend that registered none
    check = doctor("acmeasked", provider(sdk, runpath=True), tmp_path)["device_asked"]
    assert (check.status, check.summary) == (
        "fail",
        f"creating {__name__}._ReportingWrapper raised KeyError",
    )
    [problem] = check.problems
    assert "Inductor creates it the same way for every cpp_wrapper" in problem.cause
    assert "register_device_op_overrides" in problem.fix


@pytest.mark.parametrize("shipped", [True, False], ids=["header shipped", "header missing"])
def test_a_codegen_that_reports_its_device_needs_the_header_torch_precompiles(
    sdk: Sdk,
    tmp_path: Path,
    asked_backend: Callable[[type[CppWrapperCpu]], None],
    shipped: bool,
) -> None:
    """torch's precompile step includes cpp_wrapper/<device>.h whatever the codegen's own
    include method names (here: torch's default, the same header, or none on torch 2.6)."""
    asked_backend(_ReportingWrapper)
    checks = doctor("acmeasked", provider(sdk, runpath=True, inductor_headers=shipped), tmp_path)
    assert checks["device_asked"].status == "pass"
    assert checks["device_asked"].summary.startswith(
        f"cpp_wrapper builds ask for 'acmeasked' ({__name__}._ReportingWrapper reports"
    )
    from torch._inductor import codecache

    header = "torch/csrc/inductor/cpp_wrapper/acmeasked.h"
    if shipped:
        # torch 2.6 calls none of the codegen's include methods: torch_hooks warns there.
        calls_includes = any(
            hasattr(CppWrapperCpu, name)
            for name in ("get_device_include_path_jit", "get_device_include_path")
        )
        assert checks["torch_hooks"].status == ("pass" if calls_includes else "warn"), checks
        assert all_pass({name: c for name, c in checks.items() if name != "torch_hooks"}), checks
        return
    if not hasattr(codecache, "_get_cpp_wrapper_header"):
        pytest.skip(f"torch {torch.__version__} precompiles no header")
    check = checks["headers"]
    assert check.status == "fail"
    [problem] = check.problems
    assert f"`#include <{header}>`" in problem.cause
    assert "torch precompiles it for 'acmeasked' (codecache._get_cpp_wrapper_header)" in (
        problem.cause
    )


# --- what real models meet: the C shim, the overrides, the weights, a legacy door ----------


class _NoKernelTypeOverrides(DeviceOpOverrides):
    """Overrides written from torch's base class, without cpp_kernel_type()."""

    def aten_device_type(self) -> str:
        return "at::kPrivateUse1"


def test_a_c_shim_without_addmm_fails_naming_the_function_and_where_to_declare_it(
    sdk: Sdk, tmp_path: Path, asked_backend: Callable[[type[CppWrapperCpu]], None]
) -> None:
    asked_backend(_ReportingWrapper)
    include = tmp_path / "no-addmm"
    write_inductor_headers(include, "acmeasked", ("mm", "bmm"))
    callback = provider(sdk, runpath=True, inductor_headers=False, include_dirs_first=(include,))
    checks = doctor("acmeasked", callback, tmp_path / "work")
    check = checks["c_shim"]
    function = "aoti_torch_acmeasked_addmm_out"
    assert (check.status, check.summary) == ("fail", f"1 of 3 not declared: {function}")
    [problem] = check.problems
    assert f"calls {function} for a Linear with bias, and nothing it includes declares it" in (
        problem.cause
    )
    assert "aoti_torch_cpu_addmm_out" in problem.fix
    assert [name for name, status in statuses(checks).items() if status == "fail"] == ["c_shim"]
    assert_quoted("N of M not declared: F", [check.summary])
    assert_quoted(
        "Inductor's generated code for 'DEVICE' calls F for ..., and nothing it includes "
        "declares it",
        [problem.cause],
    )
    write_inductor_headers(include, "acmeasked")  # the whole shim
    declared = doctor("acmeasked", callback, tmp_path / "again")["c_shim"]
    assert declared.status == "pass", declared


def test_a_declared_shim_op_the_sdk_does_not_declare_fails_c_shim_naming_it(
    sdk: Sdk, tmp_path: Path, asked_backend: Callable[[type[CppWrapperCpu]], None]
) -> None:
    asked_backend(_ReportingWrapper)
    include = tmp_path / "shims"
    write_inductor_headers(include, "acmeasked")
    callback = provider(sdk, runpath=True, inductor_headers=False, include_dirs_first=(include,))
    callback.aoti_shim_ops = {"aten.histc.default"}  # type: ignore[attr-defined]
    checks = doctor("acmeasked", callback, tmp_path / "work")
    check = checks["c_shim"]
    function = "aoti_torch_acmeasked_histc"
    assert (check.status, check.summary) == ("fail", f"1 of 4 not declared: {function}")
    [problem] = check.problems
    assert f"calls {function} for aten.histc.default, declared in the provider's aoti_shim_ops" in (
        problem.cause
    )
    assert "or remove aten.histc.default from the provider's aoti_shim_ops" in problem.fix
    assert checks["provider_doors"].status in ("pass", "warn")
    header = include / inductor_headers_for("acmeasked")["cpp_wrapper"]
    with header.open("a") as declaring:
        declaring.write(
            f'\nextern "C" AOTITorchError {function}(AtenTensorHandle self, int64_t bins, '
            "double min, double max, AtenTensorHandle* ret0);\n"
        )
    for path in inductor_headers_for("acmeasked").values():
        (include / path).write_text(header.read_text())
    declared = doctor("acmeasked", callback, tmp_path / "again")["c_shim"]
    assert (declared.status, declared.summary.endswith(f"{function} declared")) == ("pass", True)


@pytest.mark.parametrize("aot_mode", [False, True], ids=["cpp_wrapper", "aot"])
def test_overrides_without_cpp_kernel_type_fail_where_aotinductor_asks_it(
    sdk: Sdk,
    tmp_path: Path,
    asked_backend: Callable[..., None],
    aot_mode: bool,
) -> None:
    asked_backend(_ReportingWrapper, _NoKernelTypeOverrides())
    checks = doctor("acmeasked", provider(sdk, runpath=True), tmp_path, aot_mode)
    check = checks["overrides"]
    overrides = f"{__name__}._NoKernelTypeOverrides"
    if not aot_mode or not kernels_declared():  # cpp_wrapper builds, torch 2.6 never ask it
        assert check.status == "pass", check
        assert check.summary.startswith(f"{overrides}: aten_device_type() 'at::kPrivateUse1'")
        return
    assert (check.status, check.summary) == ("fail", f"{overrides}: cpp_kernel_type() raised")
    [problem] = check.problems
    assert problem.cause.startswith(
        f"{overrides}.cpp_kernel_type() raised NotImplementedError, inherited from torch's "
        "DeviceOpOverrides, which does not implement it: torch "
    )
    assert "every AOTInductor build of 'acmeasked' (CppWrapperCpu.codegen_model_kernels" in (
        problem.cause
    )
    assert "CpuDeviceOpOverrides" in problem.fix
    assert_quoted("NAME: METHOD() raised", [check.summary])
    assert_quoted(
        "NAME.METHOD() raised TYPE, inherited from torch's DeviceOpOverrides, which does not "
        "implement it: torch VERSION calls it in every ... build of 'DEVICE' (...)",
        [problem.cause],
    )


def test_a_legacy_wrapper_answering_cpu_with_the_device_s_options_passes_with_a_warning(
    sdk: Sdk,
    tmp_path: Path,
    asked_backend: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The unmigrated openreg-derived setup: the codegen keeps "cpu", and a wrapper of
    Inductor's function answers "cpu" with the device's options. Its builds work."""
    from torch._inductor import cpp_builder

    asked_backend(_OpenregShapedWrapper)
    callback = provider(sdk, runpath=True)
    below = cpp_builder.get_cpp_torch_device_options
    added = (["USE_ACME"], [str(sdk.include), str(sdk.inductor_include)], [], [sdk.runpath()])
    added += ([str(sdk.lib)], ["acme_rt"], [])

    def legacy(device_type: str, aot_mode: bool = False, compile_only: bool = False) -> object:
        answer = below(device_type, aot_mode, compile_only)
        if device_type != "cpu":
            return answer
        return tuple([*values, *more] for values, more in zip(answer, added, strict=True))

    monkeypatch.setattr(cpp_builder, "get_cpp_torch_device_options", legacy)
    checks = doctor("acmeasked", callback, tmp_path)
    check = checks["device_asked"]
    assert (check.status, check.summary) == (
        "warn",
        "cpp_wrapper builds ask for 'cpu', answered with acmeasked's options",
    )
    [problem] = check.problems
    assert f"which {__name__}.{legacy.__qualname__} answers with acmeasked's options" in (
        problem.cause
    )
    assert "every 'cpu' build in the process gets acmeasked's flags too" in problem.cause
    assert problem.fix.startswith("migrate: give 'acmeasked' its options through its own door")
    assert problem.fix.endswith("then stop answering 'cpu'")
    assert [name for name, status in statuses(checks).items() if status == "fail"] == []
    assert_quoted(
        "cpp_wrapper builds ask for 'cpu', answered with DEVICE's options", [check.summary]
    )
    assert_quoted(
        "... the builds work, and every 'cpu' build in the process gets DEVICE's flags too, and "
        "the cache keys they make ...",
        [problem.cause],
    )


def test_aotinductor_weights_in_the_so_are_warned_of_where_torch_refuses_them(
    sdk: Sdk, tmp_path: Path
) -> None:
    from torch._inductor import config

    check = doctor("acmeaot", provider(sdk, runpath=True), tmp_path / "a", True)["aoti_weights"]
    if refusing_runtime_header() is None:  # torch 2.6
        assert check.status == "pass", check
        assert "loads weights packaged in the .so as the model container's device" in (
            check.summary
        )
        return
    assert check.status == "warn", check
    [problem] = check.problems
    assert "fails to load with 'Mixed-device constants are only supported when the " in (
        problem.cause
    )
    assert "'aot_inductor.package_constants_in_so': False" in problem.fix
    assert "user_managed=True" in problem.fix
    assert_quoted(
        "a model with parameters fails to load with its weights in the .so (torch VERSION)",
        [check.summary],
    )
    # config.patch, not monkeypatch: undoing a setattr on a config proxy deletes the setting
    # (torch's config modules hide what is deleted), for every later test in the process.
    with config.patch({"aot_inductor.package_constants_in_so": False}):
        checks = doctor("acmeaot", provider(sdk, runpath=True), tmp_path / "b", True)
    check = checks["aoti_weights"]
    assert check.status == "pass", check


# --- shadowed headers ---------------------------------------------------------------------


def test_a_shadowed_header_warns_with_every_full_path_and_the_one_used(
    sdk: Sdk, tmp_path: Path
) -> None:
    stale = tmp_path / "stale-include"
    (stale / "acme").mkdir(parents=True)
    (stale / "acme" / "acme.h").write_text("#pragma once\n// acme 0.9, a stale copy\n")
    same = tmp_path / "same-include"
    (same / "acme").mkdir(parents=True)
    (same / "acme" / "acme.h").write_bytes((sdk.include / "acme" / "acme.h").read_bytes())
    link = tmp_path / "include-link"
    link.symlink_to(sdk.include)
    callback = provider(sdk, runpath=True, include_dirs_first=(stale, same, link))
    checks = doctor("acmeshadow", callback, tmp_path / "work")
    check = checks["shadowed_headers"]
    assert check.status == "warn"
    [problem] = check.problems
    assert problem.cause.startswith("acme/acme.h is in 3 include dirs, with different contents")
    # The link is the SDK's own dir, listed again: its headers are the same files.
    assert problem.details == (
        f"{stale}/acme/acme.h (used)",
        f"{same}/acme/acme.h (differs)",
        f"{sdk.include}/acme/acme.h (differs)",
    )
    assert {name: status for name, status in statuses(checks).items() if status != "pass"} == {
        **NO_BACKEND,
        "shadowed_headers": "warn",
    }


def test_copies_that_are_the_same_file_or_the_same_content_say_nothing(
    sdk: Sdk, tmp_path: Path
) -> None:
    same = tmp_path / "same-include"
    (same / "acme").mkdir(parents=True)
    (same / "acme" / "acme.h").write_bytes((sdk.include / "acme" / "acme.h").read_bytes())
    link = tmp_path / "include-link"
    link.symlink_to(sdk.include)
    checks = doctor(
        "acmeshadow", provider(sdk, runpath=True, include_dirs_first=(same, link)), tmp_path / "w"
    )
    assert all_pass(checks), statuses(checks)


def test_headers_only_torch_s_own_dirs_share_are_not_reported(tmp_path: Path) -> None:
    torch_include = torch.utils.cpp_extension.include_paths()[0]
    sdk = tmp_path / "sdk"
    (sdk / "c10").mkdir(parents=True)
    (sdk / "c10" / "macros").mkdir()
    (sdk / "c10" / "macros" / "Macros.h").write_text("// an SDK's own copy\n")
    (sdk / "unique.h").write_text("")
    dirs = [torch_include, f"{torch_include}/torch/csrc/api/include", str(sdk)]
    shadowed = _inductor_headers.shadowed_headers(dirs, own=dirs[:2])
    assert [(header.name, header.copies) for header in shadowed] == [
        (
            "c10/macros/Macros.h",
            (f"{torch_include}/c10/macros/Macros.h", f"{sdk}/c10/macros/Macros.h"),
        )
    ]
    assert _inductor_headers.shadowed_headers(dirs[:2], own=dirs[:2]) == []


# --- loading ------------------------------------------------------------------------------


def test_a_library_off_the_loader_s_path_fails_naming_it_how_each_resolved_and_the_fix(
    sdk: Sdk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    checks = doctor("acme", provider(sdk), tmp_path)
    found = statuses(checks)
    assert [name for name, status in found.items() if status != "pass"] == [
        *NO_BACKEND,
        "probe_load",
    ]
    assert {name: found[name] for name in NO_BACKEND} == NO_BACKEND
    check = checks["probe_load"]
    assert check.summary == "libacme_rt.so is not found at run time"
    [problem] = check.problems
    assert "the loader finds no libacme_rt.so" in problem.cause
    assert "libacme_rt.so: cannot open shared object file" in problem.cause
    lib = os.path.realpath(sdk.lib)
    assert f"options.ldflags.append(inductor_device_options.runpath({lib!r}))" in (problem.fix)
    assert f"or run the model with {lib} first on LD_LIBRARY_PATH" in problem.fix
    assert "libacme_rt.so => not found" in problem.details
    # torch's own libraries resolve in the process that imported torch, as for Inductor.
    [libtorch] = [line for line in problem.details if line.startswith("libtorch.so => ")]
    assert "=> /" in libtorch or "(loaded with torch: " in libtorch, libtorch


def test_a_library_that_needs_another_library_not_on_the_path_names_that_one(
    sdk: Sdk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libacme_rt.so is found (a runpath), but libacme_core.so, which it needs, is not."""
    deep = tmp_path / "deep"
    (deep / "lib").mkdir(parents=True)
    (deep / "core").mkdir()
    (deep / "core.c").write_text("int acme_core(void) { return 2; }\n")
    (deep / "rt.c").write_text(
        "int acme_core(void);\nint acme_version(void) { return acme_core(); }\n"
    )
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(deep / "core.c"), "-o", str(deep / "core/libacme_core.so")],
        check=True,
    )
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            str(deep / "rt.c"),
            f"-L{deep / 'core'}",
            "-lacme_core",
            "-o",
            str(deep / "lib/libacme_rt.so"),
        ],
        check=True,
    )
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    deep_sdk = sdk._replace(lib=deep / "lib")
    checks = doctor("acme", provider(deep_sdk, runpath=True), tmp_path / "work")
    [problem] = checks["probe_load"].problems
    assert "the loader finds no libacme_core.so" in problem.cause
    assert problem.fix.startswith("install libacme_core.so, or put the dir that holds it on")
    assert f"libacme_rt.so => {os.path.realpath(deep / 'lib/libacme_rt.so')}" in problem.details
    assert "libacme_core.so => not found" in problem.details


def test_the_fresh_python_is_ended_when_nothing_is_loaded() -> None:
    with _module_load.FreshPython() as loader:
        process = loader._process
        assert process is not None and process.poll() is None
    assert process.poll() is not None


def test_the_fresh_python_ends_once_it_has_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor waits for the process to end: once the report is written it ends at once,
    with nothing run at exit (torch's teardown takes 0.6 s). A sitecustomize registers an
    exit handler that would leave a file."""
    site = tmp_path / "site"
    site.mkdir()
    ended = tmp_path / "ended.txt"
    (site / "sitecustomize.py").write_text(
        f"import atexit\natexit.register(lambda: open({str(ended)!r}, 'w').close())\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    with _module_load.FreshPython() as loader:
        result = loader.load(str(Path(torch.__file__).parent / "lib" / "libc10.so"))
    assert result.error is None and any(path.endswith("libc10.so") for path in result.loaded)
    assert not ended.exists()


@pytest.mark.parametrize(
    ("text", "declared"),
    [
        ("void aoti_torch_dev_mm_out(int);", True),
        ("aoti_torch_dev_mm_out(", True),  # at the very start
        ("x = aoti_torch_dev_mm_out  \n (a);", True),  # spaces and a newline before (
        ("void my_aoti_torch_dev_mm_out(int);", False),  # a longer name
        ("void aoti_torch_dev_mm_out2(int);", False),
        ("void xaoti_torch_dev_mm_out(int); void aoti_torch_dev_mm_out(int);", True),
        ("// aoti_torch_dev_mm_out is not declared", False),  # no call form
        ("", False),
    ],
)
def test_a_c_shim_function_is_found_as_a_whole_name_called(text: str, declared: bool) -> None:
    assert _shim_checks._called_as_function("aoti_torch_dev_mm_out", text) is declared


@pytest.mark.parametrize(
    ("message", "library"),
    [
        (
            "libacme_rt.so: cannot open shared object file: No such file or directory",
            "libacme_rt.so",
        ),
        ("/x/probe.so: undefined symbol: acme_version", None),
        ("libc10.so.2: cannot open shared object file: Permission denied", "libc10.so.2"),
    ],
)
def test_the_missing_library_is_read_off_the_loader_s_message(
    message: str, library: str | None
) -> None:
    assert _module_load.missing_library(message) == library


# --- what is the provider's and what is the package's ------------------------------------


def test_an_error_of_the_package_itself_is_an_internal_error_not_the_provider_s(
    sdk: Sdk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of the package cannot be had for real (the known one, paths that are not UTF-8
    in the SDK identity, is fixed): one is injected into the function that finishes a
    provider's options, after the provider has returned."""
    from inductor_device_options import _state
    from inductor_device_options._options import pipeline

    def broken_fresh_options(options: object, own_identity: object = None) -> object:
        raise UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(pipeline, "fresh_options", broken_fresh_options)
    _state.reset()  # finished before: not again
    check = doctor("acme", provider(sdk), tmp_path)["options"]
    assert (check.status, check.summary) == (
        "fail",
        "inductor-device-options failed (internal error UnicodeEncodeError)",
    )
    [problem] = check.problems
    assert problem.cause.startswith(f"inductor-device-options {ido.__version__} raised ")
    assert "raised outside any call of the provider" in problem.cause
    assert f"{__file__}:" in problem.cause and "in broken_fresh_options" in problem.cause
    assert "not of the provider: please report it" in problem.fix
    assert_quoted("inductor-device-options failed (internal error TYPE)", [check.summary])


def test_an_error_raised_by_the_provider_is_the_provider_s(sdk: Sdk, tmp_path: Path) -> None:
    def raising(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        "\udcff".encode()  # the very error the package's own bug raised, here the provider's
        raise AssertionError("unreachable")

    check = doctor("acme", raising, tmp_path)["options"]
    assert check.summary == "the provider raised UnicodeEncodeError"
    assert check.problems[0].fix == "fix the provider"  # the report's header names it


def test_a_verdict_of_the_package_on_the_provider_is_said_to_be_the_package_s(
    sdk: Sdk, tmp_path: Path
) -> None:
    def six_lists(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [], [], [], [], [])

    check = doctor("acme", six_lists, tmp_path)["options"]
    assert check.summary == "inductor-device-options raised InvalidCppDeviceOptionsError"
    [problem] = check.problems
    assert problem.cause.startswith("InvalidCppDeviceOptionsError: ")
    assert (
        "test_diagnose_doctor." in problem.cause and "six_lists" in problem.cause
    )  # the provider named
    assert problem.fix == "fix the provider"


@pytest.mark.parametrize(
    "error", [ascend.CannNotFoundError([("/opt/none", "no such dir")]), KeyError("home")]
)
def test_through_torch_s_door_what_the_callback_raises_is_the_provider_s(
    tmp_path: Path, error: Exception
) -> None:
    """torch's doors are called as torch calls them, unmarked: whatever comes out of the
    callback is its own, a CppDeviceOptionsError (an Ascend error) or not."""
    import torch._inductor.cpp_builder as cpp_builder

    def raising(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        raise error

    cpp_builder.register_cpp_device_options("acmetorch", raising)  # type: ignore[attr-defined]
    try:
        found = found_source("acmetorch")
        assert (found.source.kind, found.source.guaranteed) == ("cpp_builder registration", False)
        [check] = [c for c in run_doctor(found, False, tmp_path) if c.name == "options"]
    finally:
        del cpp_builder._cpp_device_options_registry["acmetorch"]  # type: ignore[attr-defined]
    assert check.summary == f"the provider raised {type(error).__name__}"


# --- devices that already work ------------------------------------------------------------


def test_the_sample_device_passes_every_check() -> None:
    """In the sample's own processes (torch's backend autoload sets it up): its wrapper
    codegen class is asked for the headers, its runpath lets the probe load."""
    env = {**os.environ, "INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR": str(shared_test_dir() / "sampledev")}
    runs = {
        aot: subprocess.Popen(
            [sys.executable, "-m", "inductor_device_options", "doctor", "sampledev", "--json"]
            + (["--aot"] if aot else []),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for aot in (False, True)
    }
    for aot, process in runs.items():
        stdout, stderr = process.communicate(timeout=900)
        assert process.returncode == 0, f"{stdout}\n{stderr}"
        document = json.loads(stdout)
        checks = {check["name"]: check for check in document["checks"]}
        # With --aot, whether torch has a model runner for it is said not to be checked, and
        # the weights in the .so are warned of where torch refuses them.
        weights = "warn" if refusing_runtime_header() else "pass"
        assert [check["status"] for check in checks.values()] == ["pass"] * len(CHECK_NAMES) + (
            ["pass", AOT_PROJECT, weights, "skip"] if aot else []
        )
        assert list(checks)[len(CHECK_NAMES) :] == (list(AOT_CHECKS) if aot else [])
        header = aoti_device_header("sampledev") if aot else cpp_wrapper_device_header("sampledev")
        assert checks["headers"]["summary"].startswith(f"{header} in ")
        if torch_asks_the_wrapper_class():
            assert (
                "SampledevCppWrapperCodegen.get_device_include_path" in checks["headers"]["summary"]
            )
        assert "libsampledev_runtime.so (" in checks["probe_load"]["summary"]


def synthetic_cann(root: Path) -> Path:
    """The least of a CANN toolkit's classic layout torch_npu's wrapper headers include:
    acl/acl.h, runtime/runtime/rt.h (in include/experiment/runtime) and the libraries."""
    home = minimal_cann(root)
    rt = home / "include" / "experiment" / "runtime" / "runtime"
    rt.mkdir(parents=True)
    (rt / "rt.h").write_text("#pragma once\n")
    return home


# torch headers torch_npu 2.14.0's wrapper headers include that older torch lacks.
TORCH_HEADERS_NPU_NEEDS = (
    "torch/csrc/inductor/cpp_wrapper/common.h",
    "torch/csrc/inductor/aoti_runtime/constant_type.h",
)


@pytest.fixture(scope="module")
def torch_npu_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return released_torch_npu.unpack(tmp_path_factory.mktemp("torch_npu_wheel"))


@pytest.mark.parametrize("aot_mode", [False, True], ids=["cpp_wrapper", "aot"])
def test_npu_with_the_released_torch_npu_headers_and_a_synthetic_cann(
    tmp_path: Path, torch_npu_package: Path, monkeypatch: pytest.MonkeyPatch, aot_mode: bool
) -> None:
    """The headers torch_npu 2.14.0's CppWrapperNpu includes, declared by the bundled
    provider, from the wheel itself: found and preprocessed where torch ships what they
    include. The wheel's own acl/acl.h shadows CANN's (vllm-ascend#17059): a warning."""
    cann = synthetic_cann(tmp_path)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))
    monkeypatch.setenv("PYTORCH_NPU_INSTALL_PATH", str(torch_npu_package))
    ascend.clear_cache()
    found = found_source("npu")
    assert found.source.kind == "entry point"
    checks = {check.name: check for check in run_doctor(found, aot_mode, tmp_path / "work")}
    ascend.clear_cache()
    kind = "aoti_include" if aot_mode else "cpp_wrapper"
    torch_include = Path(torch.utils.cpp_extension.include_paths()[0])
    lacking = [name for name in TORCH_HEADERS_NPU_NEEDS if not (torch_include / name).is_file()]
    headers = checks["headers"]
    if lacking:  # torch 2.6: torch_npu 2.14's headers are not for it
        assert headers.status == "fail", headers
        assert any(any(name in line for name in lacking) for line in headers.problems[0].details)
    else:
        assert headers.status == "pass", headers
        assert headers.summary.startswith(
            f"torch_npu/csrc/inductor/{kind}/npu.h and 11 more, in "
            f"{os.path.realpath(torch_npu_package / 'include')} (10), "
        )
        assert "(inductor_headers of the provider)" in headers.summary
    shadowed = checks["shadowed_headers"]
    assert shadowed.status == "warn"
    [problem] = shadowed.problems  # one cause, for one header or listing each
    if problem.instances:
        [acl] = [line for line in problem.instances if line.startswith("acl/acl.h: ")]
    else:
        assert problem.cause.startswith("acl/acl.h is in ")
        acl = "acl/acl.h: " + ", ".join(problem.details)
    used = f"acl/acl.h: {os.path.realpath(torch_npu_package / 'include/acl/acl.h')} (used), "
    assert acl.startswith(used)
    assert f"{os.path.realpath(cann / 'include/acl/acl.h')} (differs)" in acl
    # libtorch_npu.so needs the rest of CANN, which a synthetic one lacks.
    assert checks["probe_load"].status == "fail"
    assert (
        checks["probe_load"]
        .problems[0]
        .fix.endswith("for Ascend: source CANN's set_env.sh, which sets LD_LIBRARY_PATH")
    )


def test_ascend_declares_torch_npu_s_wrapper_headers() -> None:
    """What torch_npu 2.14.0's CppWrapperNpu includes, read off the released wheel: the
    headers of write_header and add_device_include, in order, then the device header."""
    import re
    import zipfile

    with zipfile.ZipFile(released_torch_npu.wheel()) as wheel:
        code = wheel.read("torch_npu/_inductor/codegen/cpp_wrapper_npu.py").decode()
    wrapper = code.split("class CppWrapperNpu", 1)[1]
    included = [
        name.replace("{self.device}", "npu").replace("{device}", "npu")
        for name in re.findall(r"#include <([^>]+)>", wrapper)
        if name != "dlfcn.h"  # a line of the generated code's body, not of its header
    ]
    for aot_mode, kind in [(False, "cpp_wrapper"), (True, "aoti_include")]:
        device_header = f"torch_npu/csrc/inductor/{kind}/npu.h"
        assert device_header in included
        others = [name for name in included if not re.search(r"/(cpp_wrapper|aoti_include)/", name)]
        declared = ascend.cpp_device_options.inductor_headers  # type: ignore[attr-defined]
        assert declared("npu", aot_mode) == [*others, device_header]


# --- the command line's parts -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("acme_backend:options", (None, "acme_backend:options")),
        ("pkg.mod:Class.method", (None, "pkg.mod:Class.method")),
        ("acme=acme_backend:options", ("acme", "acme_backend:options")),
        ("acme:0=acme_backend:options", ("acme", "acme_backend:options")),
    ],
)
def test_provider_specs(text: str, spec: tuple[str | None, str]) -> None:
    assert parse_provider_spec(text) == spec


@pytest.mark.parametrize("text", ["no_colon", ":f", "m:", "=m:f", "not a device=m:f"])
def test_malformed_provider_specs(text: str) -> None:
    with pytest.raises(ValueError):
        parse_provider_spec(text)


def test_run_doctor_output_is_json_serialisable(sdk: Sdk, tmp_path: Path) -> None:
    import dataclasses

    checks = doctor("acme", provider(sdk, runpath=True), tmp_path)
    json.dumps([dataclasses.asdict(check) for check in checks.values()])
