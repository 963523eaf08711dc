"""Inductor's compile worker pools get the package, whatever their environment.

A ``SubprocPool`` (the async compile pool of ``TORCHINDUCTOR_WORKER_START=subprocess``, and the
child of ``TORCHINDUCTOR_FX_COMPILE_MODE=subprocess``) starts a fresh interpreter, its sidecar,
with the environment of that moment, and the sidecar forks or spawns the workers. Started
while a backend's import sets ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (torch_npu around
``AsyncCompile.warm_pool()``), or by a parent run with it, their ``import torch`` runs no
backend's autoload, this package's included: a C++ build there gets torch's defaults.

The sidecar imports the module of the pool's pickler (``--pickler=module.Class``), and each
worker unpickles the pickler with every job. A pool made without a pickler of its own gets
this module's, which pickles exactly as torch's does: so every process of the pool imports the
package, which arms the hook there, and nothing else changes. Not where the sidecar may not
find this module: a compile binary of its own, or ``TORCH_CUSTOM_PYTHONPATH``.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

from .backports import BACKPORT_MARK


def install(module: ModuleType) -> None:
    """Give ``SubprocPool``s made without a pickler this module's (once).

    torch 2.13-2.15's ``subproc_pool.SubprocPool.__init__(nprocs, pickler=None, ...)`` starts
    the sidecar with ``--pickler=<module>.<class>`` of ``pickler or SubprocPickler()``."""
    pool = module.SubprocPool
    torch_init = pool.__init__
    if getattr(torch_init, BACKPORT_MARK, False):
        return

    @functools.wraps(torch_init)
    def __init__(self: object, nprocs: int, pickler: Any = None, *args: Any, **kwargs: Any) -> None:
        if pickler is None and _sidecar_finds_the_package():
            pickler = CompileWorkerPickler()
        torch_init(self, nprocs, pickler, *args, **kwargs)

    setattr(__init__, BACKPORT_MARK, True)
    pool.__init__ = __init__


def _sidecar_finds_the_package() -> bool:
    """Whether the sidecar runs this Python on this process's ``sys.path`` (torch passes it as
    PYTHONPATH), where this module is found.

    torch 2.13-2.15's ``SubprocPool.__init__`` runs ``find_compile_subproc_binary()`` instead
    of ``sys.executable`` when it names one, and ``utils.python_subprocess_env`` sets
    PYTHONPATH from ``$TORCH_CUSTOM_PYTHONPATH`` over ``sys.path``. The getattr: a torch
    without that function runs ``sys.executable``."""
    from torch import _utils_internal

    find_binary = getattr(_utils_internal, "find_compile_subproc_binary", None)
    binary = find_binary() if find_binary is not None else None
    return binary is None and "TORCH_CUSTOM_PYTHONPATH" not in os.environ


# Imported last: importing subproc_pool runs the package's installer for it, which calls this
# module's install(), defined above by then (imported first, this module would be half made).
from torch._inductor.compile_worker.subproc_pool import SubprocPickler  # noqa: E402


class CompileWorkerPickler(SubprocPickler):
    """torch's pickler, defined in the package: the pool's processes import it, and so the
    package."""
