"""Inductor's vector-ISA probes, trusted to the CPU's flags in every Python process of a test run.

torch 2.13 and later read ``TORCHINDUCTOR_VEC_ISA_OK`` (tests/conftest.py sets it) into
``config.cpp.vec_isa_ok``; torch 2.6 (``torch/_inductor/cpu_vec_isa.py``,
``VecISA.__bool__``) reads no variable, and compiles and loads a probe in every fresh cache
directory: 8 to 10 s per compiling process. tests/conftest.py puts this directory last on
PYTHONPATH, so that each process a test starts sets the value when it imports
``torch._inductor.config``, where no variable set it. The sitecustomize after this one on
``sys.path`` still runs, and one before it that runs the next it finds (upstream/verify.py's
import overlay, first on PYTHONPATH) runs this one, once.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

CONFIG = "torch._inductor.config"


def trust_vec_isa(config: ModuleType) -> None:
    """``config.cpp.vec_isa_ok = True`` where nothing set it (None: probe)."""
    if config.cpp.vec_isa_ok is None:
        config.cpp.vec_isa_ok = True


class _TrustOnImport:
    """Finds nothing itself: runs the finders after it, then sets the value once the module
    has run."""

    trusts_vec_isa = True  # one on sys.meta_path, whichever import of this file put it there

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != CONFIG:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_trust(module: ModuleType) -> None:
            exec_module(module)
            trust_vec_isa(module)

        spec.loader.exec_module = exec_then_trust  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Set the value now if ``torch._inductor.config`` is imported, else at its import."""
    if CONFIG in sys.modules:
        trust_vec_isa(sys.modules[CONFIG])
    elif not any(getattr(finder, "trusts_vec_isa", False) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TrustOnImport())


def _run_next_sitecustomize() -> None:
    """The one after this directory on ``sys.path``: one before it that runs the next one
    found past itself (upstream/verify.py's) has run already, and ran this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    after = entries[entries.index(here) + 1 :] if here in entries else []
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", after)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if __name__ == "sitecustomize":
    install()
    _run_next_sitecustomize()
