"""Session set-up shared by every test module.

Inductor writes large files (a precompiled header is ~150 MB): the whole session
points TORCHINDUCTOR_CACHE_DIR and TMPDIR at one temporary directory and removes it.
Each pytest-xdist worker has a directory of its own, inside the controller's.

No process of a distributed job outlives the test run. The runner stops its jobs itself
(sample/distributed.py), but a pytest process can die in the middle of one: pytest-xdist
kills a worker it tears down, a signal ends it. So at its end (unconfigure, exit, SIGTERM)
each pytest process kills what is left of the jobs started under it: a worker, those it
started itself (another worker may still run its own); the controller, after its workers,
those of the whole session. A job's processes are found by the job marker and by these
variables in their environment, never by a process tree: pytest's own processes carry no
job marker, and processes of other test runs carry another session directory.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from matrix_legs import in_leg, missing_leg_modules
from support import SHARED_DIR_ENV, TESTS_PROCESS_ENV
from vec_isa_site.sitecustomize import install as trust_vec_isa_in_this_process

from inductor_device_options._demo.distributed import stop_job_processes

_session_dir: str | None = None
_config: pytest.Config | None = None
_jobs_started_under: dict[str, str] = {}  # the environment that marks this process's jobs


#: Inductor's vector-ISA probes, trusted to the CPU's flags: torch 2.13 and later
#: (``config.cpp.vec_isa_ok``, read from the environment when ``torch._inductor.config`` is
#: imported, after this) otherwise compile and load a probe in every fresh cache directory,
#: about 7 s per compiling process here. torch 2.6 reads no such variable: the sitecustomize
#: in VEC_ISA_SITE, last on PYTHONPATH, sets the value in every process (this one too).
#: Every test's process and those it starts inherit both; the tests of the probes call
#: ``VecISA.check_build`` themselves (tests/test_hook_removed_cflags.py).
VEC_ISA_ENV = "TORCHINDUCTOR_VEC_ISA_OK"
VEC_ISA_SITE = Path(__file__).resolve().parent / "vec_isa_site"


def pytest_configure(config: pytest.Config) -> None:
    global _session_dir, _config
    _config = config
    os.environ.setdefault(VEC_ISA_ENV, "1")
    # Once: an xdist worker inherits the controller's PYTHONPATH with it already there.
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if str(VEC_ISA_SITE) not in entries:
        os.environ["PYTHONPATH"] = os.pathsep.join([*entries, str(VEC_ISA_SITE)])
    trust_vec_isa_in_this_process()
    config.addinivalue_line("markers", "leg: run by CI's matrix legs (tests/matrix_legs.py)")
    if missing := missing_leg_modules():
        raise pytest.UsageError(f"tests/matrix_legs.py names no test module: {missing}")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    parent = os.environ.get(SHARED_DIR_ENV) if worker else None
    _session_dir = tempfile.mkdtemp(prefix="inductor-device-options-tests-", dir=parent)
    if parent is None:
        os.environ[SHARED_DIR_ENV] = _session_dir
    os.makedirs(os.path.join(_session_dir, "tmp"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_session_dir, "inductor-cache")
    os.environ["TMPDIR"] = os.path.join(_session_dir, "tmp")
    tempfile.tempdir = None  # recompute from TMPDIR

    os.environ[TESTS_PROCESS_ENV] = uuid.uuid4().hex
    scope = TESTS_PROCESS_ENV if worker else SHARED_DIR_ENV
    _jobs_started_under[scope] = os.environ[scope]
    atexit.register(_stop_leftover_jobs)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _stop_leftover_jobs_and_die)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if in_leg(item.path):
            item.add_marker(pytest.mark.leg)


def pytest_unconfigure(config: pytest.Config) -> None:
    _stop_leftover_jobs()
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)


def _stop_leftover_jobs() -> None:
    if not _jobs_started_under:
        return
    stopped = stop_job_processes(environment=_jobs_started_under)
    if not stopped:
        return
    # Said on the real stderr, even in the middle of a test (a worker terminated).
    capture = _config.pluginmanager.getplugin("capturemanager") if _config else None
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(
            f"tests/conftest.py: killed {len(stopped)} leftover processes of distributed jobs:",
            *(f"  {process.pid}: {' '.join(process.argv)[:200]}" for process in stopped),
            sep="\n",
            file=sys.stderr,
        )


def _stop_leftover_jobs_and_die(signum: int, frame: FrameType | None) -> None:
    _stop_leftover_jobs()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Registrations made by a test, through either door, and the devices it guaranteed,
    are removed after it."""
    import sys

    from inductor_device_options import testing

    def torch_registry() -> dict[str, object] | None:
        module = sys.modules.get("torch._inductor.cpp_builder")
        registry = getattr(module, "_cpp_device_options_registry", None)
        return registry if isinstance(registry, dict) else None

    saved_torch = dict(torch_registry() or {})
    yield
    testing.reset()
    registry = torch_registry()
    if registry is not None:
        registry.clear()
        registry.update(saved_torch)
