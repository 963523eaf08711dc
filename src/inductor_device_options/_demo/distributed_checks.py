"""The demo's distributed step: run the sample's torchrun job and check, rank by rank, the
options its Inductor got and the modules it ran."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from .. import default_cpp_device_options
from ..sample import DEVICE_MACRO, DEVICE_NAME, RUNTIME_LIBRARY_FILE, SampleDevice
from .compiler_commands import CompilerCommand, Flags, added_options, rendered_flags
from .distributed import JobResult, RankReport, built_by, run_job
from .elf import read_dynamic_section
from .report import Report, shorten


def check_distributed_job(
    report: Report, device: SampleDevice, ranks: int, inductor_cache: Path
) -> None:
    """Run the sample's torchrun job and show, rank by rank, what it saw."""
    report.say(
        "each rank runs _demo/distributed_job.py, which imports only torch: the device and its\n"
        "options come from torch's backend autoload; the ranks share the Inductor cache above"
    )
    job = run_job(device, ranks, inductor_cache)
    report.say(f"$ {shlex.join(job.command)}")
    report.say(f"exit code {job.returncode} after {job.seconds:.1f} s")
    if not report.check("torchrun ran the job to the end", job.returncode == 0):
        report.say("\n".join(job.output.splitlines()[-30:]), indent=6)
    report.check(
        f"every rank reported ({ranks})",
        [rank.rank for rank in job.reports] == list(range(ranks)),
        f"ranks {', '.join(str(rank.rank) for rank in job.reports) or 'none'}",
    )
    for rank in job.reports:
        _check_rank(report, rank, job)


def _check_rank(report: Report, rank: RankReport, job: JobResult) -> None:
    """What one rank's Inductor got, what it computed, and the modules it ran."""
    name = f"rank {rank.rank}"
    report.say(
        f"\n{name} (pid {rank.pid}, compile mode {rank.compile_mode or '?'}), "
        f"compiled in {rank.compile_seconds:.1f} s",
        indent=2,
    )
    if rank.error is not None:
        report.say(rank.error)
    defaults = default_cpp_device_options(DEVICE_NAME)
    flags = rendered_flags(added_options(rank.device_options, defaults))
    report.say(f"options its Inductor got, beyond torch's: {' '.join(map(shlex.join, flags))}")
    rank_pids = {each.pid for each in job.reports}
    ran = [c for c in job.commands if c.rank == rank.rank and any(map(c.has, flags))]
    in_child = sum(1 for c in ran if c.pid not in rank_pids)
    report.say(
        f"compiler runs with {DEVICE_NAME} flags: {len(ran)}"
        + (f", {in_child} of them in its compile subprocesses" if in_child else "")
    )
    report.check(
        f"{name}: its Inductor gets the {DEVICE_NAME} options (from torch's backend autoload)",
        DEVICE_MACRO in rank.device_options.definitions,
    )
    report.check(
        f"{name}: result on {DEVICE_NAME} equals eager CPU, the all-reduce adds up",
        rank.result_device.startswith(DEVICE_NAME)
        and rank.max_difference <= 1e-5
        and rank.all_reduce_max_difference <= 1e-5,
        f"{rank.result_device or 'no result'}; max |difference| {rank.max_difference:.2e},"
        f" after all-reduce {rank.all_reduce_max_difference:.2e}",
    )
    problems: list[str] = []
    for module in rank.loaded_modules:
        problems += _module_problems(report, module, flags, job.commands, rank_pids)
    report.check(
        f"{name}: every module it runs was built in this job with its {DEVICE_NAME} options"
        f" and links {RUNTIME_LIBRARY_FILE}",
        bool(rank.loaded_modules) and not problems,
        "; ".join(problems) if rank.loaded_modules else "it runs no compiled module",
    )


def _module_problems(
    report: Report,
    module: Path,
    flags: list[Flags],
    commands: Sequence[CompilerCommand],
    rank_pids: set[int],
) -> list[str]:
    """Show who built a module a rank runs; what is wrong with it (nothing: [])."""
    command = built_by(module, commands)
    if command is None:
        report.say(f"runs {module.name}: not built in this job")
        return [f"{module.name} was not built in this job"]
    builder = (
        f"rank {command.rank}"
        if command.pid in rank_pids
        else f"a compile subprocess of rank {command.rank}"
    )
    needed = read_dynamic_section(module).needed
    missing = [" ".join(flag) for flag in flags if not command.has(flag)]
    report.say(
        f"runs {shorten(module.name, 40)}: built by {builder} (pid {command.pid}), "
        f"{'with every' if not missing else 'WITHOUT some'} {DEVICE_NAME} flag; "
        f"NEEDED {', '.join(n for n in needed if DEVICE_NAME in n) or '-'}"
    )
    problems = [f"{module.name} built without {flag}" for flag in missing]
    if RUNTIME_LIBRARY_FILE not in needed:
        problems.append(f"{module.name} does not link {RUNTIME_LIBRARY_FILE}")
    return problems
