"""torch 2.15's ``DeviceInterface.is_triton_capable()`` in ``has_triton()`` before 2.15.

torch 2.15's ``torch.utils._triton.has_triton()`` asks every registered interface (indexed
names and, by default, cpu skipped) whether it is available and Triton-capable, then its
``raise_if_triton_unavailable()``; torch 2.6 to 2.14 check a fixed list (cuda, xpu, cpu,
and mtia from 2.7), so backends replaced ``has_triton`` in the modules that imported it.
Installed when ``torch.utils._triton`` is imported: torch's own answer first, then 2.15's
question to each out-of-tree interface that defines ``is_triton_capable()``; cached as both
releases cache it (``cache_clear`` clears both). Modules that imported ``has_triton`` by
name get the backport too.
"""

from __future__ import annotations

from types import ModuleType

from .. import _state
from .._lookup.interfaces import as_torch_2_15, defines, out_of_tree_interfaces
from .._torch_names import HAS_TRITON
from .backports import BACKPORT_MARK
from .install import calls, rebind

HOOK = "is_triton_capable"
#: What torch 2.15's ``has_triton`` calls to walk the interfaces.
NATIVE_CALL = "get_registered_device_interfaces"


def install(triton_utils: ModuleType) -> None:
    """Backport ``is_triton_capable()`` into ``has_triton()``."""
    torch_has_triton = triton_utils.__dict__[HAS_TRITON]
    if getattr(torch_has_triton, BACKPORT_MARK, False) or calls(torch_has_triton, NATIVE_CALL):
        return

    # Kept by the package's reset, as torch's own answer is: torch caches has_triton for the
    # process, and its callers clear it with ``has_triton.cache_clear()``, which clears both.
    @_state.cached(1, kept="torch's has_triton's, cleared with it")
    def has_triton() -> bool:
        return bool(torch_has_triton()) or _capable_interface(triton_utils)

    own_clear = has_triton.cache_clear

    def cache_clear() -> None:
        torch_has_triton.cache_clear()
        own_clear()

    has_triton.cache_clear = cache_clear  # type: ignore[method-assign]
    has_triton.__doc__ = torch_has_triton.__doc__
    setattr(has_triton, BACKPORT_MARK, True)
    triton_utils.__dict__[HAS_TRITON] = has_triton
    rebind(HAS_TRITON, torch_has_triton, has_triton)


def _capable_interface(triton_utils: ModuleType) -> bool:
    """torch 2.15's walk, for the out-of-tree interfaces that define the hook."""
    if not triton_utils.has_triton_package():
        return False
    from torch._dynamo import exc
    from torch._inductor import config

    # 2.13-2.15's config switch, which 2.15's has_triton obeys; 2.6 has none.
    if getattr(config, "triton_disable_device_detection", False):
        return False
    # 2.15's has_triton skips an interface raising it; any other error propagates.
    unavailable = getattr(exc, "TritonUnavailableError", None)  # torch 2.15's
    for _, interface in out_of_tree_interfaces():
        if not defines(interface, HOOK):
            continue
        asked = as_torch_2_15(interface)
        if not (asked.is_available() and asked.is_triton_capable()):
            continue
        check = getattr(interface, "raise_if_triton_unavailable", None)  # torch 2.6 has none
        try:
            if check is not None:
                check()
        except Exception as error:
            if unavailable is not None and isinstance(error, unavailable):
                continue
            raise
        return True
    return False
