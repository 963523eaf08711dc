"""A distributed job on the sample device: ``torchrun`` runs ``distributed_job.py`` on N
ranks that share one Inductor cache; this module launches it and collects what each rank
saw (its report) and the compiler commands every rank and compile subprocess ran.

No process of a job outlives :func:`run_job`. torchrun starts each rank in a session of
its own, the ranks start Inductor's compile workers, and a process whose parent dies is
reparented to init: neither torchrun's process group nor a walk of its process tree finds
them all. Their environment does: every process of a job inherits ``$JOB_ENV``, set to
the job's id, and :func:`stop_job_processes` kills every process that carries it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import CppDeviceOptions
from ..sample import SAMPLE_DIR_ENV, SampleDevice
from .compiler_commands import CompilerCommand, record_compiler_commands

JOB_SCRIPT = Path(__file__).resolve().with_name("distributed_job.py")

#: Set to the job's id in the environment of every process of a job, whatever its session
#: or parent: torchrun, the ranks, their compile workers and the compilers they run.
JOB_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_JOB"

#: After torchrun has exited, how long the job's other processes get to exit by themselves
#: (a compile worker sees within a second that its rank is gone) before they are killed.
STRAGGLER_GRACE_SECONDS = 10.0


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
    teardown_deadline_expired: bool  # the rank exited hard, its teardown unfinished

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
            teardown_deadline_expired=document.get("teardown_deadline_expired", False),
        )


@dataclass(frozen=True)
class JobProcess:
    """A live process of a job, as /proc shows it."""

    pid: int
    job: str  # its ``$JOB_ENV``
    argv: tuple[str, ...]


@dataclass(frozen=True)
class JobResult:
    job: str  # the job's id: ``$JOB_ENV`` of its processes
    command: tuple[str, ...]
    returncode: int
    output: str  # torchrun's stdout and stderr
    seconds: float
    timed_out: bool  # still running after the timeout, and killed
    # The processes of the job that the runner killed: all of them after a timeout,
    # otherwise those still running STRAGGLER_GRACE_SECONDS after torchrun exited.
    stopped: tuple[JobProcess, ...]
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
    teardown_timeout: float = 60,
) -> JobResult:
    """Run the job on ``ranks`` ranks sharing ``inductor_cache_dir``, and collect its results.

    The ranks get the sample device only from torch's backend autoload
    (``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR``); ``compile_mode`` sets their
    ``TORCHINDUCTOR_FX_COMPILE_MODE`` (default: inherited). A model of another
    ``hidden_features`` is another graph: it is compiled, not found in the cache.
    A rank still in its teardown ``teardown_timeout`` seconds after it started it exits
    by itself. A job still running after ``timeout`` seconds is killed, every process of
    it; so is the job when this function raises, and whatever of it outlives torchrun.
    """
    from torch._inductor.cpp_builder import get_cpp_compiler

    job = uuid.uuid4().hex
    report_dir = Path(tempfile.mkdtemp(prefix="sampledev-job-reports-"))
    try:
        with record_compiler_commands(get_cpp_compiler()) as commands:
            # Read after the recording started: it names its log in the environment.
            env = dict(os.environ)
            env[SAMPLE_DIR_ENV] = str(device.cache_dir)
            env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache_dir)
            env[JOB_ENV] = job
            if compile_mode is not None:
                env["TORCHINDUCTOR_FX_COMPILE_MODE"] = compile_mode
            command = torchrun_command(
                ranks,
                str(JOB_SCRIPT),
                str(report_dir),
                str(hidden_features),
                f"{teardown_timeout:g}",
            )
            started = time.perf_counter()
            ended = _run_process_group(command, env, job, timeout)
            seconds = time.perf_counter() - started
        reports = [
            RankReport.from_json(json.loads(path.read_text()))
            for path in sorted(report_dir.glob("rank-*.json"))
        ]
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)
    return JobResult(
        job=job,
        command=tuple(command),
        returncode=ended.returncode,
        output=ended.output,
        seconds=seconds,
        timed_out=ended.timed_out,
        stopped=ended.stopped,
        reports=tuple(sorted(reports, key=lambda report: report.rank)),
        commands=tuple(commands),
    )


@dataclass(frozen=True)
class _Ended:
    returncode: int
    output: str
    timed_out: bool
    stopped: tuple[JobProcess, ...]


def _run_process_group(command: list[str], env: dict[str, str], job: str, timeout: float) -> _Ended:
    """Run torchrun for ``job``: when this returns or raises, no process of the job is left.

    After ``timeout`` seconds every process of the job is killed at once: torchrun's own
    clean-up would stop its ranks, but not a compile worker they leave behind, nor ranks
    stuck in a teardown. An exception here (KeyboardInterrupt, for one: pytest-xdist
    interrupts a worker it tears down) kills the job the same way.
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
        stopped = stop_job_processes(job)
        output = _output_after_kill(process)
        note = f"[timeout: still running after {timeout:g} s; killed {len(stopped)} processes]"
        return _Ended(process.returncode, f"{output}\n{note}", True, stopped)
    except BaseException:
        stop_job_processes(job)
        process.kill()
        process.wait()
        raise
    stopped = stop_job_processes(job, grace=STRAGGLER_GRACE_SECONDS)
    return _Ended(process.returncode, output, False, stopped)


def _output_after_kill(process: subprocess.Popen[str]) -> str:
    """What is left of torchrun's output, once every process of its job was killed."""
    try:
        output, _ = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process outside the job holds the pipe open
        process.kill()
        process.wait()
        return "[output lost: a process outside the job holds torchrun's pipe open]"
    return output


def job_processes(
    job: str | None = None, *, environment: Mapping[str, str] | None = None
) -> tuple[JobProcess, ...]:
    """The live processes of ``job`` (of any job, if None) whose environment also holds
    every variable of ``environment``, with its value.

    Never this process nor an ancestor of it, nor a process of the job that this process
    itself is part of: a sweep cannot kill its own caller.
    """
    spared = _ancestors(os.getpid())
    own_job = os.environ.get(JOB_ENV)
    wanted = dict(environment or {})
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in spared:
            continue
        pid = int(entry.name)
        process_environment = _environment(pid)
        if process_environment is None:
            continue
        marker = process_environment.get(JOB_ENV)
        if marker is None or marker == own_job or job not in (None, marker):
            continue
        if all(process_environment.get(name) == value for name, value in wanted.items()):
            found.append(JobProcess(pid, marker, _argv(pid)))
    return tuple(found)


def stop_job_processes(
    job: str | None = None,
    *,
    environment: Mapping[str, str] | None = None,
    grace: float = 0.0,
    patience: float = 10.0,
) -> tuple[JobProcess, ...]:
    """Kill (SIGKILL) the processes :func:`job_processes` finds, after giving them ``grace``
    seconds to exit by themselves; return those it killed.

    It looks again after each round, since a process can start another between two looks,
    for at most ``patience`` seconds (a process in an uninterruptible sleep dies late).
    """
    alive = _wait_for_exit(lambda: job_processes(job, environment=environment), grace)
    stopped: dict[int, JobProcess] = {}
    give_up = time.monotonic() + patience
    while alive and time.monotonic() < give_up:
        for process in alive:
            _kill(process)
            stopped.setdefault(process.pid, process)
        time.sleep(0.05)
        alive = job_processes(job, environment=environment)
    return tuple(stopped.values())


def _wait_for_exit(
    look: Callable[[], tuple[JobProcess, ...]], seconds: float
) -> tuple[JobProcess, ...]:
    deadline = time.monotonic() + seconds
    alive = look()
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = look()
    return alive


def _kill(process: JobProcess) -> None:
    """SIGKILL ``process`` if the process with its pid is still one of its job: the pid may
    have been reused since /proc was read, and a pidfd pins the process it was opened on."""
    try:
        pidfd: int | None = os.pidfd_open(process.pid)
    except ProcessLookupError:
        return
    except OSError as error:  # no pidfd before Linux 5.3: the pid is checked just before
        if error.errno != errno.ENOSYS:
            raise
        pidfd = None
    try:
        if _job_of(process.pid) != process.job:
            return
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            if pidfd is None:
                os.kill(process.pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _job_of(pid: int) -> str | None:
    environment = _environment(pid)
    return None if environment is None else environment.get(JOB_ENV)


def _environment(pid: int) -> dict[str, str] | None:
    """The environment ``pid`` started with; None for a process that is gone, a zombie
    (its environment reads empty) or one of another user."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            block = file.read()
    except OSError:
        return None
    pairs = (os.fsdecode(item).partition("=") for item in block.split(b"\0") if item)
    return {name: value for name, _, value in pairs} or None


def _argv(pid: int) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return tuple(os.fsdecode(arg) for arg in file.read().split(b"\0") if arg)
    except OSError:
        return ()


def _ancestors(pid: int) -> set[int]:
    """``pid`` and every process above it, up to init."""
    chain = set()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as file:
                # The command name, in parentheses, may hold spaces: fields follow its ")".
                pid = int(file.read().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return chain


def built_by(module: Path, commands: Sequence[CompilerCommand]) -> CompilerCommand | None:
    """The last logged command that linked ``module``."""
    target = os.path.realpath(module)
    links = [c for c in commands if c.output is not None and os.path.realpath(c.output) == target]
    return links[-1] if links else None
