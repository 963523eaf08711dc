"""Inductor's compile workers and compile subprocesses build with a device's declared options,
even when they start without torch's backend autoload.

torch_npu sets ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` while it imports, around
``AsyncCompile.warm_pool()``: a worker pool started then, or by a parent run with the
variable, imports torch without any backend's autoload, this package's included. The backend
here does the same, and declares its device's provider in an entry point, as a real backend
does. The observation, in the very process Inductor runs its jobs in: a job submitted to the
pool builds a source whose header stops the build without a definition only the device's
options give (``#error``), so it builds only where the package serves the device.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import pythonpath_with, run_python, torch_has_compile_subprocess, write_distribution
from torch._inductor.compile_worker import subproc_pool

# torch 2.6's pool takes no pickler: the package cannot reach its processes that way.
pytestmark = pytest.mark.skipif(
    not hasattr(subproc_pool, "SubprocPickler"), reason="torch 2.6's SubprocPool takes no pickler"
)

PROVIDER = """\
import os
SDK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wdev_sdk")

def options(device_type, aot_mode, compile_only):
    import inductor_device_options as ido
    result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    result.definitions.append("WDEV_DEVICE")
    result.include_dirs.append(os.path.join(SDK, "include"))
    return result
"""

# As torch_npu: autoload off while it imports, the compile worker pool started then.
BACKEND = """\
import os
saved = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
try:
    from torch._inductor.async_compile import AsyncCompile
    AsyncCompile.warm_pool()
finally:
    if saved is None:
        del os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"]
    else:
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = saved
"""

# The job a pool's worker runs (a module of its own: unpickling it must not import the backend).
PROBE = """\
import os, sys
from torch._inductor.compile_worker.subproc_pool import SubprocPickler

class OwnPickler(SubprocPickler):
    pass

def build(out):
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions
    where = os.path.join(out, str(os.getpid()))
    os.makedirs(where, exist_ok=True)
    source = os.path.join(where, "k.cpp")
    with open(source, "w") as f:
        f.write('#include <wdev.h>\\nextern "C" int k(void) { return 1; }\\n')
    try:
        CppBuilder("k", [source], CppTorchDeviceOptions(device_type="wdev"), where).build()
        error = None
    except Exception as e:
        error = str(e)[:2000]
    return {
        "pid": os.getpid(),
        "autoload": os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD"),
        "package": "inductor_device_options" in sys.modules,
        "error": error,
    }
"""

PARENT = """
import json, os, sys
import torch
if os.environ.get("WDEV_IMPORT_PACKAGE"):
    import inductor_device_options  # as a backend that registers with the package does
import wdev_backend, wdev_probe
if sys.argv[1] == "compile_fx":
    from torch._inductor.compile_fx_subproc import _SubprocessFxCompile
    pool = _SubprocessFxCompile.process_pool()
else:
    from torch._inductor.async_compile import AsyncCompile
    pool = AsyncCompile.process_pool()
result = pool.submit(wdev_probe.build, os.environ["WDEV_OUT"]).result(timeout=300)
print(json.dumps({"parent": os.getpid(), **result}))
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The backend's distribution: its entry point declares ``wdev``'s provider."""
    site = tmp_path / "site"
    write_distribution(site, "wdist", "1.0", {"wdev": "wdev_provider:options"})
    (site / "wdev_provider.py").write_text(PROVIDER)
    (site / "wdev_backend.py").write_text(BACKEND)
    (site / "wdev_probe.py").write_text(PROBE)
    include = site / "wdev_sdk" / "include"
    include.mkdir(parents=True)
    (include / "wdev.h").write_text(
        '#pragma once\n#ifndef WDEV_DEVICE\n#error "needs -DWDEV_DEVICE"\n#endif\n'
    )
    return site


def _job_in_pool(site: Path, pool: str, **env: str) -> dict[str, Any]:
    """What the job reports from a worker of ``pool`` (the async compile pool, or
    compile_fx's subprocess), started in a fresh process with ``env``."""
    out = site.parent / "out"
    out.mkdir(exist_ok=True)
    code = f"import sys; sys.argv[1:] = [{pool!r}]\n{PARENT}"
    env = {
        "PYTHONPATH": pythonpath_with(site),
        "WDEV_OUT": str(out),
        "TORCHINDUCTOR_COMPILE_THREADS": "2",
        **env,
    }
    finished = run_python(code, env=env, timeout=600)
    assert finished.returncode == 0, f"{finished.stdout}\n{finished.stderr}"
    reported: dict[str, Any] = json.loads(finished.stdout.splitlines()[-1])
    assert reported["pid"] != reported["parent"]  # the job ran in a worker
    return reported


@pytest.mark.parametrize("start", ["subprocess", "fork"])
def test_the_compile_worker_pool_builds_with_the_device_s_options(site: Path, start: str) -> None:
    """subprocess: the pool's sidecar starts while the backend turns autoload off, and gets
    the package through the pool's pickler. fork: the workers are forks of the parent, which
    has the package."""
    reported = _job_in_pool(site, "async_compile", TORCHINDUCTOR_WORKER_START=start)
    if start == "subprocess":
        assert reported["autoload"] == "0"  # started while the backend imported
    assert reported["package"]
    assert reported["error"] is None


@pytest.mark.skipif(not torch_has_compile_subprocess(), reason="no compile subprocess")
@pytest.mark.parametrize("autoload", ["on", "off in the parent"])
def test_the_compile_subprocess_builds_with_the_device_s_options(site: Path, autoload: str) -> None:
    """TORCHINDUCTOR_FX_COMPILE_MODE=subprocess compiles in a child of a pool that starts at
    the first compile: with the parent's environment then. With autoload on there, the
    child's autoload imports the package; with it off, the pool's pickler does."""
    env = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "WDEV_IMPORT_PACKAGE": "1"}
    reported = _job_in_pool(site, "compile_fx", **(env if autoload != "on" else {}))
    assert reported["autoload"] == ("0" if autoload != "on" else None)
    assert reported["package"]
    assert reported["error"] is None


POOLS = """
import os, sys
import torch
from torch._inductor.compile_worker.subproc_pool import SubprocPool
import wdev_probe

pools = []
try:
    pools.append(SubprocPool(1))
    pools.append(SubprocPool(1, wdev_probe.OwnPickler()))
    os.environ["TORCH_CUSTOM_PYTHONPATH"] = os.pathsep.join(sys.path)
    pools.append(SubprocPool(1))
    print([type(pool.pickler).__name__ for pool in pools])
finally:
    for pool in pools:
        pool.shutdown()
"""


def test_only_a_pool_made_without_a_pickler_that_finds_the_package_gets_the_package_s(
    site: Path,
) -> None:
    """A pickler given by the caller stays; so does torch's where the sidecar's path is
    torch's custom one, which may not hold the package."""
    finished = run_python(POOLS, env={"PYTHONPATH": pythonpath_with(site)}, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == [
        "['CompileWorkerPickler', 'OwnPickler', 'SubprocPickler']"
    ]


def test_without_the_package_the_worker_builds_with_torch_s_defaults(site: Path) -> None:
    """The job needs the package: a pool whose processes never import it (autoload off, the
    package never imported in the parent) fails the build on the header's ``#error``."""
    reported = _job_in_pool(
        site, "async_compile", TORCHINDUCTOR_WORKER_START="fork", TORCH_DEVICE_BACKEND_AUTOLOAD="0"
    )
    assert not reported["package"]
    assert reported["error"] is not None and "C++ compile error" in reported["error"]


def test_the_module_imports_first_in_a_fresh_process() -> None:
    """Importing it imports subproc_pool, whose installer calls back into it: it must be
    whole by then (it was not: AttributeError, partially initialized module)."""
    finished = run_python(
        "import inductor_device_options._hook.workers as workers\n"
        "print(workers.CompileWorkerPickler.__mro__[1].__name__)\n"
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["SubprocPickler"]
