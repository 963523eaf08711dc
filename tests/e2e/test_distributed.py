"""A real distributed job: ``torchrun --standalone --nproc_per_node=2``, gloo on the CPU.

Each rank runs ``_demo/distributed_job.py``, a user script that imports only torch: the
sample device and its C++ options reach the rank through torch's backend autoload. The
ranks share one Inductor cache, the session's, as ranks on one node do. What each rank
saw comes from the rank itself (its report) and from the compiler commands that every
rank and compile subprocess ran (logged by the sample's autoload, with their $RANK).

No process of a job survives it: not after a job that ends by itself, not after a rank
stuck in its teardown, not after a job that the runner kills at its timeout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import process_alive, torch_has_compile_subprocess, torch_precompiles_cpp_headers

from inductor_device_options import default_cpp_device_options
from inductor_device_options._demo.compiler_commands import added_options, rendered_flags
from inductor_device_options._demo.distributed import (
    JOB_SCRIPT,
    JobProcess,
    JobResult,
    built_by,
    job_processes,
    run_job,
)
from inductor_device_options._demo.distributed_job import STALL_TEARDOWN_ENV
from inductor_device_options._demo.elf import read_dynamic_section
from inductor_device_options._options.identity import IDENTITY_DEFINITION
from inductor_device_options.sample import (
    DEVICE_MACRO,
    DEVICE_NAME,
    RUNTIME_LIBRARY,
    RUNTIME_LIBRARY_FILE,
    SDK_INCLUDE_DIR,
    SampleDevice,
)

RANKS = 2
# A model of its own per job: each job compiles it, rather than loading a module that an
# earlier job left in the shared cache, so that its compiler commands can be seen.
HIDDEN_FEATURES = {"normal": 24, "subprocess": 40}
# The jobs whose rank 1 hangs in its teardown share theirs: the first compiles it (in
# compile subprocesses, which its hard exit orphans), the second finds it in the cache.
STALLED_HIDDEN_FEATURES = 56


def role_in(job: JobResult, process: JobProcess) -> str:
    """What ``process`` is in ``job``, read off its command line."""
    if process.argv[-len(job.command) :] == job.command:  # after the interpreter, if any
        return "torchrun"
    if str(JOB_SCRIPT) in process.argv:
        return "rank"
    return "child of a rank"


def assert_no_process_of_the_job_survives(job: JobResult) -> None:
    """None is left with the job's marker, and none of the processes it is known to have
    had (its ranks, the processes that ran its compilers, those the runner killed) runs."""
    assert job_processes(job.job) == (), job.output
    known = {report.pid for report in job.reports}
    known |= {command.pid for command in job.commands}
    known |= {process.pid for process in job.stopped}
    assert sorted(pid for pid in known if process_alive(pid)) == [], job.output


@pytest.mark.parametrize("compile_mode", ["normal", "subprocess"])
def test_torchrun_job_every_rank_compiles_with_the_sampledev_options(
    sample_build: SampleDevice, compile_mode: str
) -> None:
    shared_cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    job = run_job(
        sample_build,
        RANKS,
        shared_cache,
        compile_mode=compile_mode,
        hidden_features=HIDDEN_FEATURES[compile_mode],
    )
    assert job.returncode == 0, job.output
    assert [report.rank for report in job.reports] == list(range(RANKS)), job.output
    # The job ended by itself: nothing of it outlived torchrun, nothing survives it.
    assert job.stopped == (), job.stopped
    assert_no_process_of_the_job_survives(job)
    rank_pids = {report.pid for report in job.reports}
    # torch 2.6 has no compile subprocess: it compiles in the rank.
    in_subprocess = compile_mode == "subprocess" and torch_has_compile_subprocess()
    torch_defaults = default_cpp_device_options(DEVICE_NAME)

    for report in job.reports:
        assert report.error is None, report.error
        assert (report.world_size, report.compile_mode) == (RANKS, compile_mode)
        # The compiled model ran on the device, matched eager CPU, and the ranks all-reduced.
        assert report.result_device == f"{DEVICE_NAME}:0"
        assert report.max_difference <= 1e-5
        assert report.all_reduce_max_difference <= 1e-5

        # The rank's own Inductor gets the sample's options: from its autoload, since
        # this launcher has none registered (the session fixture unregistered them).
        options = report.device_options
        assert DEVICE_MACRO in options.definitions
        assert str(SDK_INCLUDE_DIR) in options.include_dirs
        assert RUNTIME_LIBRARY in options.libraries
        flags = rendered_flags(added_options(options, torch_defaults))

        # The rank's own compile ran the compiler with them, even when the module it runs
        # was built by the other rank, where Inductor preprocesses its precompiled header in
        # every process that compiles (not torch 2.6: there a rank that finds all its
        # modules in the shared cache runs no compiler). In subprocess mode that process is
        # a child.
        compile_flags = [flag for flag in flags if flag[0] == "-D" or flag[0].startswith("-I")]
        ran = [
            c
            for c in job.commands
            if c.rank == report.rank and all(c.has(flag) for flag in compile_flags)
        ]
        builders = [built_by(module, job.commands) for module in report.loaded_modules]
        built_one = any(c is not None and c.rank == report.rank for c in builders)
        if torch_precompiles_cpp_headers() or built_one:
            assert ran, f"rank {report.rank} ran no compiler command with {compile_flags}"
        in_child = [c for c in ran if c.pid not in rank_pids]
        assert bool(in_child) == (bool(ran) and in_subprocess), [(c.pid, c.stage) for c in ran]

        # Every module the rank runs from the shared cache was built in this job, with
        # every flag of the rank's own options, the SDK identity included: no module
        # built for another SDK, or before the job, was picked up.
        assert report.loaded_modules, f"rank {report.rank} runs no module from {shared_cache}"
        for module in report.loaded_modules:
            assert module.is_relative_to(shared_cache.resolve())
            command = built_by(module, job.commands)
            assert command is not None, f"{module} was not built in this job"
            missing = [flag for flag in flags if not command.has(flag)]
            assert not missing, f"{module} built without {missing}: {command.argv}"
            dynamic = read_dynamic_section(module)
            assert RUNTIME_LIBRARY_FILE in dynamic.needed
            assert str(sample_build.runtime_lib_dir) in dynamic.runpath
            assert command.rank in range(RANKS)
            if in_subprocess:
                assert command.pid not in rank_pids, "built by a rank, not a compile subprocess"
            else:
                assert command.pid in rank_pids

    # One SDK across the job: every rank computed the same SDK identity.
    identities = {
        tuple(d for d in r.device_options.definitions if IDENTITY_DEFINITION in d)
        for r in job.reports
    }
    assert len(identities) == 1 and all(identities), identities


def run_job_stalled_in_teardown(
    device: SampleDevice,
    monkeypatch: pytest.MonkeyPatch,
    *,
    teardown_timeout: float,
    timeout: float,
) -> JobResult:
    """A job whose rank 1 hangs in its teardown (the job script's test-only switch)."""
    monkeypatch.setenv(STALL_TEARDOWN_ENV, "1")
    return run_job(
        device,
        RANKS,
        Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]),
        compile_mode="subprocess",
        hidden_features=STALLED_HIDDEN_FEATURES,
        teardown_timeout=teardown_timeout,
        timeout=timeout,
    )


def test_a_rank_stuck_in_its_teardown_exits_at_its_deadline(
    sample_build: SampleDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen under load: every rank wrote its report, rank 1 never left its teardown.
    Here it exits by itself, well before the runner's timeout, and so does the job."""
    job = run_job_stalled_in_teardown(sample_build, monkeypatch, teardown_timeout=5, timeout=300)
    assert not job.timed_out, job.output
    assert job.returncode == 0, job.output
    assert [(report.rank, report.error) for report in job.reports] == [(0, None), (1, None)]
    # Rank 0 may reach its own deadline too, in the exit that follows its teardown.
    assert job.reports[1].teardown_deadline_expired, job.output
    assert "rank 1: teardown not finished after 5 s; exiting" in job.output
    # Its hard exit orphaned its compile subprocesses (torch 2.7+): they are gone too.
    assert_no_process_of_the_job_survives(job)


def test_a_job_past_its_timeout_is_killed_with_every_process(
    sample_build: SampleDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 hangs in its teardown with no deadline that would end it in time: the runner
    kills the job at its timeout, torchrun, ranks and their children, and says so."""
    timeout = 30
    job = run_job_stalled_in_teardown(
        sample_build, monkeypatch, teardown_timeout=3600, timeout=timeout
    )
    assert job.timed_out, job.output
    assert job.returncode != 0
    assert f"[timeout: still running after {timeout} s; killed {len(job.stopped)}" in job.output
    # Not a speed target: the bound that a runner waiting on a hung job would exceed.
    assert job.seconds < timeout + 30
    roles = [role_in(job, process) for process in job.stopped]
    assert {"torchrun", "rank"} <= set(roles), [process.argv for process in job.stopped]
    if len(job.reports) == RANKS:  # the job reached its teardown, where rank 1 hangs
        assert job.reports[1].pid in {process.pid for process in job.stopped}
    assert_no_process_of_the_job_survives(job)
