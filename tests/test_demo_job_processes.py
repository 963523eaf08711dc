"""Finding and stopping what is left of a distributed job: real processes, real signals.

The processes here stand in for a job's (they sleep, carrying the job marker in their
environment, in sessions of their own or reparented to init): what is tested is how they
are found and that nothing else is touched, which does not depend on what they run.
tests/e2e/test_distributed.py runs real torchrun jobs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from support import SHARED_DIR_ENV, TESTS_DIR, process_alive, pythonpath_with

from inductor_device_options._demo.distributed import JOB_ENV, stop_job_processes

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
# A test run of its own, with this suite's conftest.py, on one xdist worker.
INNER_PYTEST = ("-p", "conftest", "-p", "no:cacheprovider", "-n", "1")


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts, killed after it whatever happened."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait()


def test_a_sweep_kills_the_job_and_spares_itself_its_ancestors_and_other_runs(
    started: list[subprocess.Popen[bytes]],
) -> None:
    session, job, own_job = (f"sweep-test-{uuid.uuid4().hex}" for _ in range(3))
    # What runs while a sweep for ``session``'s jobs runs, and whether the sweep kills it.
    table: dict[str, tuple[Mapping[str, str], bool]] = {
        "a process of one of its jobs": ({SHARED_DIR_ENV: session, JOB_ENV: job}, True),
        "a process of the session, not of a job (pytest)": ({SHARED_DIR_ENV: session}, False),
        "a job of another session": ({SHARED_DIR_ENV: f"{session}-other", JOB_ENV: job}, False),
        "a process of the job the sweep runs in": (
            {SHARED_DIR_ENV: session, JOB_ENV: own_job},
            False,
        ),
    }
    processes = {}
    for name, (environment, _) in table.items():
        processes[name] = subprocess.Popen(SLEEP, env=dict(os.environ, **environment))
        started.append(processes[name])

    # The sweeping process runs in ``own_job``, under a shell of the session's ``job``.
    sweep = textwrap.dedent(f"""
        from inductor_device_options._demo.distributed import stop_job_processes
        stopped = stop_job_processes(environment={{{SHARED_DIR_ENV!r}: {session!r}}})
        print(*sorted(process.pid for process in stopped))
        """)
    finished = subprocess.run(
        ["sh", "-c", f'{JOB_ENV}={own_job} "$0" -c "$1"; exit $?', sys.executable, sweep],
        env=dict(os.environ, **{SHARED_DIR_ENV: session, JOB_ENV: job}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    killed = {int(pid) for pid in finished.stdout.split()}
    assert killed == {processes[name].pid for name, (_, kills) in table.items() if kills}
    for name, (_, kills) in table.items():
        if kills:
            assert processes[name].wait(timeout=10) == -signal.SIGKILL, name
        else:
            assert processes[name].poll() is None, name


# How the pytest process that started a job ends, in a pytest run of its own: the test
# passes and leaves the job running; its xdist worker is killed (as xdist kills a worker it
# tears down) or terminated in the middle of the test.
ENDINGS = {
    "the test passes": "",
    "the worker is killed": "os.kill(os.getpid(), signal.SIGKILL)",
    "the worker is terminated": "os.kill(os.getpid(), signal.SIGTERM)",
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_no_process_of_a_job_outlives_the_test_run(tmp_path: Path, ending: str) -> None:
    job = f"sweep-test-{uuid.uuid4().hex}"
    pid_file = tmp_path / "job.pids"
    # A job as torchrun leaves it: a process in a session of its own, and an orphan that
    # init adopted (a compile worker whose rank is gone). Neither holds pytest's pipes.
    (tmp_path / "leave_an_orphan.py").write_text(
        textwrap.dedent(f"""
        import subprocess
        orphan = subprocess.Popen({SLEEP!r}, start_new_session=True, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(orphan.pid)
        """)
    )
    (tmp_path / "test_leaves_a_job.py").write_text(
        textwrap.dedent(f"""
        import os, signal, subprocess, sys

        def test_leaves_a_job_running():
            env = dict(os.environ, {JOB_ENV}={job!r})
            quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
            launcher = subprocess.Popen({SLEEP!r}, env=env, start_new_session=True, **quiet)
            orphan = subprocess.run(
                [sys.executable, {str(tmp_path / "leave_an_orphan.py")!r}],
                env=env, capture_output=True, text=True, check=True,
            ).stdout.strip()
            with open({str(pid_file)!r}, "w") as file:
                file.write(f"{{launcher.pid}} {{orphan}}")
            {ENDINGS[ending]}
        """)
    )
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "INDUCTOR_DEVICE_OPTIONS_TESTS_"))
    }
    env["PYTHONPATH"] = pythonpath_with(TESTS_DIR)
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "pytest", *INNER_PYTEST, f"--rootdir={tmp_path}", str(tmp_path)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = f"{finished.stdout}\n{finished.stderr}"
        pids = [int(pid) for pid in pid_file.read_text().split()]
        assert len(pids) == 2, output
        assert [pid for pid in pids if process_alive(pid)] == [], output
        assert "leftover processes of distributed jobs" in finished.stderr, output
        # pytest itself ran to its end: the sweep spared its controller and its worker.
        assert finished.returncode == (0 if ending == "the test passes" else 1), output
        assert ("1 passed" if ending == "the test passes" else "1 failed") in finished.stdout
    finally:
        stop_job_processes(job)  # whatever the run left, if the assertions failed
