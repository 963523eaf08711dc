"""The boundary of one compile: what the package renews at the top of each.

``torch.compile``, AOTInductor and ``standalone_compile`` all enter Inductor through
``compile_fx.compile_fx``, which calls itself again for parts of one compile. At its
outermost call on a thread:

* the SDK identities and the options finished with them are forgotten
  (``_state.PER_COMPILE``): each is computed again when the compile first asks, from the
  content memo (a warm memo only stats the SDK's files). A long-lived process whose SDK
  changed keys its next compile under the new identity, and builds with it;
* a function a backend assigned to ``CacheBase.get_system`` since the last compile is
  adopted (``cache_keys.install``): the key keeps the package's identities beside that
  function's own fields, whether or not it calls the one it replaced (torch_npu, torch_mlu
  and torch-supa assign one before torch 2.15, torch_npu at its first compile).

Before torch 2.15 the same entry also runs the device module's ``_inductor_backend_init``
where 2.15 does (``backend_init``).
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from .. import _state
from .._torch_names import CODECACHE, COMPILE_FX_FUNCTION
from .install import DEVICE_HOOK_MODULES, install_imported, rebind, torch_runs_backend_init

_MARK = "_inductor_device_options_compile_boundary"


def install(compile_fx: ModuleType) -> None:
    """Wrap ``compile_fx.compile_fx`` (and rebind it where torch imported it by name), and,
    before torch 2.15, backport ``_inductor_backend_init`` into the same module."""
    if not torch_runs_backend_init():
        from .backend_init import install_into_compile_fx

        install_into_compile_fx(compile_fx)
    entry = compile_fx.__dict__.get(COMPILE_FX_FUNCTION)
    if entry is None or getattr(entry, _MARK, False):
        return

    @functools.wraps(entry)
    def compile_fx_with_fresh_identities(*args: Any, **kwargs: Any) -> Any:
        # A depth, not a flag: torch 2.6-2.15's compile_fx.compile_fx calls itself again
        # with its config_patches applied (2.6 also for cpp_wrapper), and only the outermost
        # call begins a compile.
        this_thread = _state.this_thread
        if this_thread.compile_depth == 0:
            begin_compile()
        this_thread.compile_depth += 1
        try:
            return entry(*args, **kwargs)
        finally:
            this_thread.compile_depth -= 1

    setattr(compile_fx_with_fresh_identities, _MARK, True)
    rebind(COMPILE_FX_FUNCTION, entry, compile_fx_with_fresh_identities)


def begin_compile() -> None:
    """What a compile renews before it asks anything: identities, and ``get_system``."""
    _state.clear_group(_state.PER_COMPILE)
    install_imported(DEVICE_HOOK_MODULES)  # an out-of-tree device registered since
    # Not imported here when the compile has not imported it: importing codecache costs, and
    # its own installer adopts get_system at its import.
    codecache = sys.modules.get(CODECACHE)
    if codecache is not None and hasattr(codecache, "CacheBase"):
        from .cache_keys import install as adopt_get_system

        adopt_get_system(codecache)
