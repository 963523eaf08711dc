"""A distributed job on the sample device: ``torchrun`` runs ``distributed_job.py`` on N
ranks that share one Inductor cache; this module launches it and collects what each rank
saw (its report) and the compiler commands every rank and compile subprocess ran."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import CppDeviceOptions
from . import AUTOLOAD_ENV, SampleDevice
from .compiler_commands import CompilerCommand, record_compiler_commands

JOB_SCRIPT = Path(__file__).resolve().with_name("distributed_job.py")


@dataclass(frozen=True)
class RankReport:
    """What one rank wrote about itself (see ``distributed_job.py``)."""

    rank: int
    pid: int
    world_size: int
    error: str | None
    result_device: str
    max_difference: float
    all_reduce_max_difference: float
    compile_seconds: float
    compile_mode: str
    device_options: CppDeviceOptions  # what the rank's Inductor gets for sampledev
    loaded_modules: tuple[Path, ...]  # the shared libraries it runs from the Inductor cache

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> RankReport:
        return cls(
            rank=document["rank"],
            pid=document["pid"],
            world_size=document["world_size"],
            error=document.get("error"),
            result_device=document.get("result_device", ""),
            max_difference=document.get("max_difference", float("inf")),
            all_reduce_max_difference=document.get("all_reduce_max_difference", float("inf")),
            compile_seconds=document.get("compile_seconds", 0.0),
            compile_mode=document.get("compile_mode", ""),
            device_options=CppDeviceOptions(*document.get("device_options", [[]] * 7)),
            loaded_modules=tuple(Path(path) for path in document.get("loaded_modules", [])),
        )


@dataclass(frozen=True)
class JobResult:
    command: tuple[str, ...]
    returncode: int
    output: str  # torchrun's stdout and stderr
    seconds: float
    reports: tuple[RankReport, ...]  # by rank; a rank that wrote nothing is missing
    commands: tuple[CompilerCommand, ...]  # every compiler run, in the ranks and their children


def torchrun_command(ranks: int, *script_and_arguments: str) -> list[str]:
    """``torchrun --standalone --nproc_per_node=N ...``, with the torchrun of this interpreter."""
    torchrun = Path(sys.executable).with_name("torchrun")
    launcher = (
        [str(torchrun)] if torchrun.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    )
    return [*launcher, "--standalone", f"--nproc_per_node={ranks}", *script_and_arguments]


def run_job(
    device: SampleDevice,
    ranks: int,
    inductor_cache_dir: Path,
    *,
    compile_mode: str | None = None,
    hidden_features: int = 32,
    timeout: float = 600,
) -> JobResult:
    """Run the job on ``ranks`` ranks sharing ``inductor_cache_dir``, and collect its results.

    The ranks get the sample device only from torch's backend autoload
    (``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR``); ``compile_mode`` sets their
    ``TORCHINDUCTOR_FX_COMPILE_MODE`` (default: inherited). A model of another
    ``hidden_features`` is another graph: it is compiled, not found in the cache.
    A job still running after ``timeout`` seconds is killed, with every rank.
    """
    from torch._inductor.cpp_builder import get_cpp_compiler

    report_dir = Path(tempfile.mkdtemp(prefix="sampledev-job-reports-"))
    try:
        with record_compiler_commands(get_cpp_compiler()) as commands:
            # Read after the recording started: it names its log in the environment.
            env = dict(os.environ)
            env[AUTOLOAD_ENV] = str(device.cache_dir)
            env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache_dir)
            if compile_mode is not None:
                env["TORCHINDUCTOR_FX_COMPILE_MODE"] = compile_mode
            command = torchrun_command(
                ranks, str(JOB_SCRIPT), str(report_dir), str(hidden_features)
            )
            started = time.perf_counter()
            returncode, output = _run_process_group(command, env, timeout)
            seconds = time.perf_counter() - started
        reports = [
            RankReport.from_json(json.loads(path.read_text()))
            for path in sorted(report_dir.glob("rank-*.json"))
        ]
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)
    return JobResult(
        command=tuple(command),
        returncode=returncode,
        output=output,
        seconds=seconds,
        reports=tuple(sorted(reports, key=lambda report: report.rank)),
        commands=tuple(commands),
    )


def _run_process_group(command: list[str], env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run torchrun; after ``timeout`` seconds, stop it and its ranks.

    torchrun starts each rank in a session of its own and stops them when it gets SIGTERM;
    SIGKILL is for a torchrun that does not stop.
    """
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return process.returncode or -signal.SIGTERM, f"{output}\n[stopped after {timeout:.0f} s]"
    return process.returncode, output


def built_by(module: Path, commands: Sequence[CompilerCommand]) -> CompilerCommand | None:
    """The last logged command that linked ``module``."""
    target = os.path.realpath(module)
    links = [c for c in commands if c.output is not None and os.path.realpath(c.output) == target]
    return links[-1] if links else None
