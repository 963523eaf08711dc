"""``inductor-device-options demo``: the steps, in order, and the verdict.

Each step prints what it did and checks it; a step's checks live in the module named for
them (build_checks, control, other_patchers, distributed_checks).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

from ..sample import DEVICE_NAME, SAMPLE_DIR_ENV, SampleDevice, runtime_registered_modules, setup
from .build_checks import check_build, check_result, check_shim_call, show_options
from .cache_dir import buildable_cache_dir
from .compiler_commands import Flags, record_compiler_commands, rendered_flags
from .control import check_fails_without_options
from .inductor_env import fresh_inductor_cache, inductor_cache_base
from .models import Workload, make_workload
from .other_patchers import check_other_patchers
from .report import Report

STEP_COUNT = 6


def run_demo(
    out: TextIO = sys.stdout, cache_dir: str | os.PathLike[str] | None = None, ranks: int = 0
) -> int:
    """Run the demo, printing to ``out``; 0 when every check passed, 1 otherwise.

    ``cache_dir`` is where the sample backend is built (default: the sample's
    cache under ``$XDG_CACHE_HOME``). Inductor compiles in a fresh directory: a
    temporary one, removed at the end, unless ``TORCHINDUCTOR_CACHE_DIR`` is set,
    in which case a new directory inside it is used and kept. ``ranks`` > 0 adds a
    step: the distributed job on that many ranks, sharing that directory.
    """
    report = Report(out, STEP_COUNT + (1 if ranks else 0))
    report.say(f'inductor-device-options demo: the sample PrivateUse1 device "{DEVICE_NAME}"', 0)
    try:
        _run_steps(report, cache_dir, ranks)
    except Exception as error:  # report, do not hide, what stopped the demo
        report.say(traceback.format_exc())
        report.check("the demo ran to the end", False, f"{type(error).__name__}: {error}")
    total = report.passed + len(report.failed)
    if report.failed:
        report.say(f"\n{len(report.failed)} of {total} checks FAILED:", 0)
        for description in report.failed:
            report.say(f"- {description}", 2)
        return 1
    report.say(f"\nAll {total} checks passed.", 0)
    return 0


def _run_steps(report: Report, cache_dir: str | os.PathLike[str] | None, ranks: int) -> None:
    # Read first: torch sets the variable to its default once it looks the directory up.
    user_inductor_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with inductor_cache_base(user_inductor_cache) as cache_base:
        _run_steps_in(
            report, cache_dir, cache_base, kept=user_inductor_cache is not None, ranks=ranks
        )


def _run_steps_in(
    report: Report,
    cache_dir: str | os.PathLike[str] | None,
    cache_base: str,
    kept: bool,
    ranks: int,
) -> None:
    with report.step("Build and register the sample backend"):
        device = _build_and_register(report, cache_dir)
    if device is None:
        return
    with report.step(f'C++ options Inductor gets for "{DEVICE_NAME}"'):
        added = show_options(report)
    marks = rendered_flags(added)
    workload = make_workload()
    inductor_cache = _compile_steps(report, workload, marks, cache_base, kept)

    control = f"Control: the cpp_wrapper compile with torch's own options for {DEVICE_NAME}"
    with report.step(control):
        check_fails_without_options(report, workload.model, workload.inputs, cache_base)

    with report.step("Other backends assign Inductor's function after the sample registered"):
        check_other_patchers(
            report, workload.model, workload.inputs, workload.expected, marks, cache_base
        )

    if ranks:
        from .distributed_checks import check_distributed_job

        with report.step(f"A distributed job: torchrun --standalone --nproc_per_node={ranks}"):
            check_distributed_job(report, device, ranks, inductor_cache)


def _build_and_register(
    report: Report, cache_dir: str | os.PathLike[str] | None
) -> SampleDevice | None:
    """Set the sample device up, here and in every process that imports torch after this
    one; None when the cache dir cannot work (the failed check says why)."""
    buildable, problem = buildable_cache_dir(cache_dir)
    if problem is not None:
        report.check("the cache dir can be passed to g++", False, problem)
        return None
    device = setup(buildable)
    report.say(f"backend and runtime built under {device.cache_dir}")
    report.say(f"runtime library: {device.runtime_library}")
    # Inductor may compile in child processes (TORCHINDUCTOR_FX_COMPILE_MODE=subprocess):
    # torch's backend autoload sets the device up there too, from this variable.
    os.environ[SAMPLE_DIR_ENV] = str(device.cache_dir)
    mode = os.environ.get("TORCHINDUCTOR_FX_COMPILE_MODE", "normal")
    report.say(f"Inductor compile mode: {mode} (TORCHINDUCTOR_FX_COMPILE_MODE)")
    from torch._inductor import compile_fx

    if not hasattr(compile_fx, "fx_compile_mode"):
        report.say("(this torch has no compile modes: Inductor compiles in this process)")
    return device


def _compile_steps(
    report: Report, workload: Workload, marks: list[Flags], cache_base: str, kept: bool
) -> Path:
    """The cpp_wrapper and AOTInductor steps, in a new Inductor cache; returns that cache."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    with fresh_inductor_cache(cache_base):
        inductor_cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        where = "kept" if kept else "temporary, removed at the end"
        report.say(f"\nInductor cache: {inductor_cache} ({where})", 0)
        compiler = get_cpp_compiler()
        with report.step('torch.compile(model, options={"cpp_wrapper": True}), with an nn.Linear'):
            _cpp_wrapper_step(report, compiler, workload, marks)
        with report.step("AOTInductor: aoti_compile_and_package, then aoti_load_package"):
            _aoti_step(report, compiler, workload, marks, inductor_cache)
    return inductor_cache


def _cpp_wrapper_step(
    report: Report, compiler: str, workload: Workload, marks: list[Flags]
) -> None:
    import torch

    torch._dynamo.reset()
    with record_compiler_commands(compiler) as commands:
        modules_before = runtime_registered_modules()
        compiled = torch.compile(workload.linear_model, options={"cpp_wrapper": True})
        result = compiled(*workload.inputs)
    check_build(report, commands, marks, modules_before)
    check_shim_call(report, commands, "addmm_out")
    check_result(report, result, workload.linear_expected)


def _aoti_step(
    report: Report, compiler: str, workload: Workload, marks: list[Flags], inductor_cache: Path
) -> None:
    import torch

    with record_compiler_commands(compiler) as commands:
        exported = torch.export.export(workload.model, workload.inputs)
        package = torch._inductor.aoti_compile_and_package(
            exported, package_path=str(inductor_cache / f"{DEVICE_NAME}_demo.pt2")
        )
        modules_before = runtime_registered_modules()
        loaded = torch._inductor.aoti_load_package(package)
        result = loaded(*workload.inputs)
    report.say(f"package: {package}")
    check_build(report, commands, marks, modules_before)
    check_result(report, result, workload.expected)
