"""``doctor DEVICE --compile``: a real Inductor compile on the device judges the static checks.

The real runs use the sample device, set up in every process by torch's backend autoload
(``INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR``), the doctor's fresh Python included. They share a
``TORCHINDUCTOR_CACHE_DIR`` of their own: each compiles another graph or with other options,
so each runs the compiler, and the CPU feature probes are compiled once. The judging of
cases that are costly to set up (a codegen that reports another device, an option that
never reaches g++, a device without an AOTI runner) is tested on recorded results here, and
for real with the openreg-shaped backend of tests/peers (a failed compile too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import AOT_CHECKS, DOCTOR_CHECKS, assert_quoted, shared_test_dir, torch_writes_cmake

import inductor_device_options as ido
from inductor_device_options._diagnose import real_compile as _doctor_compile
from inductor_device_options._diagnose.aoti_weights import refusing_runtime_header
from inductor_device_options._diagnose.checks import Check
from inductor_device_options._diagnose.raised_in import raised_in
from inductor_device_options.sample import RUNTIME_LIBRARY, SAMPLE_DIR_ENV, SDK_INCLUDE_DIR

pytestmark = pytest.mark.usefixtures("clean_registry")

COMPILE_CHECKS = ["compile_run", "builds_asked", "options_reached"]
# A model of the user's, as `--model MODULE:FUNCTION` takes it.
USER_MODELS = """\
import torch


def small_linear():
    layer = torch.nn.Linear(8, 4).requires_grad_(False).to("sampledev")
    return layer, (torch.randn(3, 8).to("sampledev"),)
"""


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doctor-compile-cache")


def doctor_compile(cache: Path, *args: str, cwd: Path | None = None) -> dict[str, object]:
    env = {
        **os.environ,
        SAMPLE_DIR_ENV: str(shared_test_dir() / "sampledev"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache),
    }
    command = ["doctor", "sampledev", "--compile", "--json", *args]
    finished = subprocess.run(
        [sys.executable, "-m", "inductor_device_options", *command],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert finished.stdout, finished.stderr
    document: dict[str, object] = json.loads(finished.stdout)
    assert finished.returncode == document["exit_code"], finished.stderr
    return document


def by_name(document: dict[str, object]) -> dict[str, dict[str, object]]:
    checks: list[dict[str, object]] = document["checks"]  # type: ignore[assignment]
    return {str(check["name"]): check for check in checks}


def test_the_sample_device_compiles_with_cpp_wrapper(compile_cache: Path, tmp_path: Path) -> None:
    (tmp_path / "user_models.py").write_text(USER_MODELS)
    document = doctor_compile(compile_cache, "--model", "user_models:small_linear", cwd=tmp_path)
    checks = by_name(document)
    assert list(checks) == [*DOCTOR_CHECKS, *COMPILE_CHECKS, "linear_model", "user_model"]
    assert {name: check["status"] for name, check in checks.items()} == dict.fromkeys(
        checks, "pass"
    ), json.dumps(document, indent=1)
    assert document["exit_code"] == 0
    assert str(checks["compile_run"]["summary"]).startswith(
        "torch.compile(cpp_wrapper=True) built and ran x * 2 + 1 on sampledev in "
    )
    assert " for 'sampledev' (aot_mode=False): " in str(checks["builds_asked"]["summary"])
    reached = str(checks["options_reached"]["summary"])
    assert f"include dirs: {SDK_INCLUDE_DIR}" in reached
    assert f"libraries: {RUNTIME_LIBRARY}" in reached
    assert str(checks["linear_model"]["summary"]).startswith(
        "torch.compile(cpp_wrapper=True) built and ran a Linear with and without bias and a bmm "
        "on sampledev in "
    )
    assert str(checks["user_model"]["summary"]).startswith(
        "torch.compile(cpp_wrapper=True) built and ran your model user_models:small_linear on "
    )
    # The titles docs/guides/troubleshooting.md quotes.
    titles = [str(check["title"]) for check in checks.values()]
    assert_quoted("a real compile on the device", titles)
    assert_quoted("the compile asked for the device", titles)
    assert_quoted("the options reach g++", titles)
    assert_quoted("a model with weights and extern kernels", titles)
    assert_quoted("your model compiles and runs", titles)


def test_the_sample_device_compiles_loads_and_runs_with_aotinductor(compile_cache: Path) -> None:
    """Its model with weights fails where torch refuses the weights in the .so (2.13, 2.15),
    and doctor says the way round, which it tried."""
    document = doctor_compile(compile_cache, "--aot")
    checks = by_name(document)
    names = [*DOCTOR_CHECKS, *AOT_CHECKS[:3], *COMPILE_CHECKS, "aoti_load", "linear_model"]
    assert list(checks) == names
    refused = refusing_runtime_header() is not None
    expected = dict.fromkeys(checks, "pass")
    expected["cmake_project"] = "pass" if torch_writes_cmake() else "skip"
    expected.update(aoti_weights="warn", linear_model="fail") if refused else None
    assert {name: check["status"] for name, check in checks.items()} == expected, json.dumps(
        document, indent=1
    )
    if refused:
        [problem] = checks["linear_model"]["problems"]  # type: ignore[misc]
        assert str(problem["fix"]).startswith(
            "compile with inductor_configs={'aot_inductor.package_constants_in_so': False}"
        )
        assert_quoted("doctor did so, and the model then loads and runs", [str(problem["fix"])])
    assert "(aot_mode=True)" in str(checks["builds_asked"]["summary"])
    assert f"libraries: {RUNTIME_LIBRARY}" in str(checks["options_reached"]["summary"])
    assert "aoti_load_package loaded it and ran it on sampledev" in str(
        checks["aoti_load"]["summary"]
    )
    assert_quoted("the AOTInductor package loads and runs", [str(checks["aoti_load"]["title"])])


def test_compile_is_refused_with_all() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "inductor_device_options", "doctor", "--all", "--compile"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 2
    assert "argument --compile: not with --all" in finished.stderr


# --- the recording wrapper ------------------------------------------------------------------


def test_a_wrapper_that_calls_through_sees_registrations_made_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the child relies on: the package adopts the wrapper and puts its sources below."""
    from torch._inductor import cpp_builder

    asked: list[tuple[str, list[str]]] = []
    found = cpp_builder.get_cpp_torch_device_options

    def recording(*args: Any, **kwargs: Any) -> Any:
        answer = found(*args, **kwargs)
        asked.append((str(kwargs.get("device_type", args[0] if args else None)), list(answer[0])))
        return answer

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        result.definitions.append("WRAPDEV_SEEN")
        return result

    monkeypatch.setattr(cpp_builder, "get_cpp_torch_device_options", recording)
    with ido.testing.registered_cpp_device_options("wrapdev", options):
        cpp_builder.CppTorchDeviceOptions(device_type="wrapdev")
    [definitions] = [definitions for device, definitions in asked if device == "wrapdev"]
    assert "WRAPDEV_SEEN" in definitions


# --- judging recorded results ---------------------------------------------------------------

OPTIONS = {
    "definitions": ["USE_REGDEV"],
    "include_dirs": ["/opt/regdev/include"],
    "cflags": [],
    "ldflags": [],
    "libraries_dirs": ["/opt/regdev/lib"],
    "libraries": ["regdev_rt"],
    "passthrough_args": [],
}


def recorded(**fields: object) -> dict[str, object]:
    steps = [{"name": "setup", "ok": True, "error": None, "seconds": 0.0}]
    steps.append({"name": "compile", "ok": True, "error": None, "seconds": 3.0})
    result: dict[str, object] = {
        "questions": [],
        "commands": [],
        "steps": steps,
        "options": [{"compile_only": only, "options": OPTIONS} for only in (False, True)],
        "codegen": "regdev_backend.RegdevCppWrapperCodegen",
        "recording": None,
    }
    result.update(fields)
    return result


def question(device: str, compile_only: bool, aot_mode: bool = False) -> dict[str, object]:
    return {"device_type": device, "aot_mode": aot_mode, "compile_only": compile_only}


def judge(result: dict[str, object], aot_mode: bool = False) -> dict[str, Check]:
    checks = _doctor_compile._Judge("regdev", aot_mode, [], result, None).checks()
    return {check.name: check for check in checks}


def test_builds_that_never_ask_for_the_device_fail_builds_asked() -> None:
    questions = [question("cpu", False), question("cpu", True), question("cpu", False)]
    checks = judge(recorded(questions=questions))
    assert [checks[name].status for name in COMPILE_CHECKS] == ["pass", "fail", "skip"]
    [problem] = checks["builds_asked"].problems
    assert "for 'cpu' 3 times, never for 'regdev' (aot_mode=False)" in problem.cause
    assert "regdev_backend.RegdevCppWrapperCodegen" in problem.cause
    assert "so the provider's options were never consulted" in problem.cause
    assert "regdev_backend.options" not in problem.cause  # named in the header only
    assert "self.device = 'regdev' before super().__init__()" in problem.fix
    assert "torch/csrc/inductor/cpp_wrapper/regdev.h" in problem.fix
    assert_quoted("no build asked for 'DEVICE'", [checks["builds_asked"].summary])
    assert_quoted(
        "while compiling on DEVICE Inductor asked get_cpp_torch_device_options for 'cpu' N "
        "times, never for 'DEVICE' ...",
        [problem.cause],
    )


def test_an_option_missing_from_every_command_fails_options_reached() -> None:
    commands: list[dict[str, Any]] = [
        {
            "argv": ["g++", "isa.cpp", "-I/opt/regdev/include", "-o", "isa.so"],
            "device_build": False,
        },
        {"argv": ["g++", "a.cpp", "-D", "USE_REGDEV", "-c", "-o", "a.o"], "device_build": True},
        {
            "argv": ["g++", "a.o", "-shared", "-L/opt/regdev/lib", "-lregdev_rt", "-o", "a.so"],
            "device_build": True,
        },
    ]
    result = recorded(questions=[question("regdev", True), question("regdev", False)])
    checks = judge({**result, "commands": commands})
    check = checks["options_reached"]
    assert (check.status, check.summary) == ("fail", "1 of 3 never reached g++")
    assert check.problems[0].cause.endswith("has them: -I/opt/regdev/include")
    assert_quoted("N of M never reached g++", [check.summary])
    assert_quoted(
        "Inductor got these options for 'DEVICE', but no compiler command of the compile (...) "
        "has them: ...",
        [check.problems[0].cause],
    )
    commands[1]["argv"].append("-I/opt/regdev/include")
    assert judge({**result, "commands": commands})["options_reached"].status == "pass"


def test_a_device_without_an_aoti_runner_fails_aoti_load() -> None:
    error = {
        "type": "RuntimeError",
        "message": "Unsupported device key found: regdev",  # torch's own words
        "lines": [],
    }
    result = recorded(questions=[question("regdev", False, aot_mode=True)])
    result["steps"].append({"name": "load", "ok": False, "error": error, "seconds": 0.1})  # type: ignore[attr-defined]
    check = judge(result, aot_mode=True)["aoti_load"]
    assert check.status == "fail"
    assert "torch::inductor::RegisterAOTIModelRunner" in check.problems[0].fix
    assert_quoted("... Unsupported device key found: DEVICE", [check.problems[0].cause])


def test_a_compile_that_raises_fails_compile_run() -> None:
    error = {"type": "CppCompileError", "message": "C++ compile error\n\nCommand: ...", "lines": []}
    result = recorded()
    result["steps"][1] = {"name": "compile", "ok": False, "error": error, "seconds": 1.0}  # type: ignore[index]
    check = judge(result)["compile_run"]
    assert (check.status, check.summary) == ("fail", "compiling x * 2 + 1 raised CppCompileError")
    [problem] = check.problems
    assert problem.cause.endswith("raised CppCompileError: C++ compile error")
    assert_quoted(
        "compiling x * 2 + 1 on DEVICE (cpp_wrapper) in a fresh python raised ...", [problem.cause]
    )


def test_a_compile_that_does_not_finish_is_killed_with_its_process_group(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recording_popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        process: subprocess.Popen[bytes] = popen(*args, **kwargs)  # type: ignore[call-overload]
        started.append(process)
        return process

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    checks = _doctor_compile.compile_checks("regdev", False, None, tmp_path, [], timeout=1)
    assert [check.status for check in checks] == ["fail", "skip", "skip", "skip"]
    assert checks[0].summary == "the compile did not finish in 1 s (killed)"
    [process] = started
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)


def test_an_error_that_says_nothing_is_placed_where_it_was_raised_with_a_fix_for_it() -> None:
    """What an AOTInductor build of overrides without cpp_kernel_type() raises (torch's
    DeviceOpOverrides raises NotImplementedError with no message; Inductor wraps it)."""
    from torch._inductor.codegen.common import DeviceOpOverrides

    class RegdevOverrides(DeviceOpOverrides):
        pass

    def codegen_model_kernels() -> None:
        try:
            RegdevOverrides().cpp_kernel_type()
        except NotImplementedError as error:
            raise RuntimeError(f"NotImplementedError: {error}") from error  # as Inductor wraps

    try:
        codegen_model_kernels()
    except RuntimeError as error:
        place = raised_in(error)
    assert place is not None and place["bare"], place
    error = {"type": "RuntimeError", "message": "NotImplementedError: ", "lines": []}
    result = recorded()
    result["steps"][1] = {  # type: ignore[index]
        "name": "compile",
        "ok": False,
        "error": {**error, "raised_in": place},
        "seconds": 1.0,
    }
    check = judge(result, aot_mode=True)["compile_run"]
    [problem] = check.problems
    owner = f"{__name__}.{RegdevOverrides.__qualname__}"
    assert "raised RuntimeError: NotImplementedError with no message, raised in " in (problem.cause)
    assert "DeviceOpOverrides.cpp_kernel_type (torch/_inductor/codegen/common.py:" in problem.cause
    assert f"which {owner} inherits, called from " in problem.cause
    assert problem.fix.startswith(f"define cpp_kernel_type() on {owner}, returning")
    assert_quoted(
        "TYPE with no message, raised in F (...), which NAME inherits, called from ...",
        [problem.cause],
    )


def linear_model_failed(error: dict[str, object], retried: bool | None) -> dict[str, object]:
    """A recorded AOTInductor run whose model with weights failed, retried or not with its
    weights out of the .so."""
    result = recorded(questions=[question("regdev", False, aot_mode=True)])
    steps: list[dict[str, object]] = result["steps"]  # type: ignore[assignment]
    steps.append({"name": "load", "ok": True, "error": None, "seconds": 0.1})
    steps.append({"name": "linear_model", "ok": False, "error": error, "seconds": 5.0})
    if retried is not None:
        retry = {"type": "RuntimeError", "message": "again", "lines": []}
        entry = {"ok": retried, "error": None if retried else retry, "seconds": 5.0}
        steps.append({"name": "linear_model_unpackaged", **entry})
    return result


def test_weights_the_runtime_refuses_fail_the_model_with_the_way_round_doctor_tried() -> None:
    error = {
        "type": "RuntimeError",
        "message": "create_func_( &container_handle_, ...) API call failed at ...",
        "lines": [],
        # torch 2.13's AOTI runtime says why on stderr, which the fresh Python reads back.
        "output": [
            "Error: Mixed-device constants are only supported when the secondary device is "
            "CPU. Constant 'hidden_weight' was compiled for a non-CPU device."
        ],
    }
    check = judge(linear_model_failed(error, retried=True), aot_mode=True)["linear_model"]
    assert (check.status, check.summary) == (
        "fail",
        "a Linear with and without bias and a bmm raised RuntimeError",
    )
    [problem] = check.problems
    assert "(Error: Mixed-device constants are only supported" in problem.cause
    assert problem.cause.endswith(
        "; with its weights out of the .so, given with load_constants, it loads and runs"
    )
    assert problem.fix.endswith(": doctor did so, and the model then loads and runs")
    assert_quoted("a Linear with and without bias and a bmm raised TYPE", [check.summary])
    assert_quoted("doctor did so, and the model then loads and runs", [problem.fix])
    refused = judge(linear_model_failed(error, retried=False), aot_mode=True)["linear_model"]
    assert "with its weights out of the .so too: RuntimeError: again" in (refused.problems[0].cause)
    assert "doctor did so" not in refused.problems[0].fix


def test_a_c_shim_function_not_declared_is_named_in_the_cause() -> None:
    message = (
        "CppCompileError: C++ compile error\n...\nmodel.cpp:35:33: error: \u2018"
        "aoti_torch_regdev_addmm_out\u2019 was not declared in this scope"
    )
    error = {"type": "torch._inductor.exc.InductorError", "message": message, "lines": []}
    result = recorded(questions=[question("regdev", False)])
    result["steps"].append(  # type: ignore[attr-defined]
        {"name": "linear_model", "ok": False, "error": error, "seconds": 5.0}
    )
    check = judge(result)["linear_model"]
    [problem] = check.problems
    assert problem.cause.endswith(
        "raised torch._inductor.exc.InductorError: CppCompileError: C++ compile error "
        "(aoti_torch_regdev_addmm_out not declared)"
    )
    assert problem.fix.startswith("declare and define aoti_torch_regdev_addmm_out in the ")
    assert_quoted("... raised TYPE: ... (F not declared)", [problem.cause])


def test_builds_that_ask_for_cpu_answered_with_the_device_s_options_pass_with_a_warning() -> None:
    questions = [question("cpu", True), question("cpu", False)]
    door = {
        "asked": "cpu",
        "carried": ["definitions USE_REGDEV", "include_dirs /opt/regdev/include"],
        "answered_by": "regdev_backend.with_regdev",
    }
    commands: list[dict[str, Any]] = [
        {
            "argv": ["g++", "a.cpp", "-DUSE_REGDEV", "-I/opt/regdev/include", "-lregdev_rt"],
            "device_build": True,
        }
    ]
    checks = judge(recorded(questions=questions, legacy_door=door, commands=commands))
    check = checks["builds_asked"]
    assert (check.status, check.summary) == (
        "warn",
        "2 builder questions for 'cpu' (aot_mode=False): 1 compiling, 1 linking, answered with "
        "regdev's options",
    )
    [problem] = check.problems
    assert "which regdev_backend.with_regdev answers with regdev's options" in problem.cause
    assert checks["options_reached"].status == "pass", checks["options_reached"]
    assert_quoted(
        "N builder questions for 'cpu' (aot_mode=False): ..., answered with DEVICE's options",
        [check.summary],
    )


def test_a_model_of_the_user_s_that_cannot_be_imported_fails_saying_how_to_give_it() -> None:
    error = {"type": "ModuleNotFoundError", "message": "No module named 'mine'", "lines": []}
    result = recorded()
    result["steps"].append(  # type: ignore[attr-defined]
        {"name": "user_model", "ok": False, "error": error, "seconds": 0.1}
    )
    judged = _doctor_compile._Judge("regdev", False, [], result, None, "mine:model")
    check = {check.name: check for check in judged.checks()}["user_model"]
    assert (check.status, check.summary) == (
        "fail",
        "your model mine:model raised ModuleNotFoundError",
    )
    assert check.problems[0].fix.startswith("make mine:model importable from the current")
    assert_quoted("your model M:F raised TYPE", [check.summary])
