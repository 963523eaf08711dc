"""torch 2.15's ``_inductor_backend_init`` on torch before 2.15.

A PrivateUse1 device module may define ``_inductor_backend_init``, a no-arg callable that
registers the device with Inductor (``register_backend_for_device`` and whatever else it
needs), so that ``import torch`` never imports ``torch._inductor``. torch 2.15 calls it
while the device is unregistered, under Dynamo's compile lock, from
``init_backend_registration`` and in ``compile_fx`` before the decomposition table is taken.

Before 2.15 :func:`install_into_common` wraps ``codegen.common.init_backend_registration``
(torch's own registration first, then the hook, as 2.15 orders them) and
:func:`install_into_compile_fx` wraps ``_compile_fx_main``, where 2.15 calls it. The hook
runs as 2.15 runs it: only while the device is unregistered, once per thread at a time (a
re-entering hook does not fire itself again), other threads waiting on the lock; an
exception propagates and the next compile calls it again. Without a
device module defining it, both wrappers only call what they wrap.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from .. import _state
from .._torch_names import (
    BACKEND_INIT,
    CODEGEN_COMMON,
    COMPILE_FX_FUNCTION,
    COMPILE_FX_MAIN,
    INIT_BACKEND_REGISTRATION,
)
from .backports import BACKPORT_MARK
from .install import DEVICE_HOOK_MODULES, install_imported, rebind

# Imported with Inductor's codegen, so torch is imported already. A private binding of torch's
# C module, on every torch 2.6-2.15: what torch.utils.rename_privateuse1_backend set
# ("privateuseone" until a backend renames it).
_privateuse1_backend_name = torch._C._get_privateuse1_backend_name


def pending_backend_init() -> Callable[[], Any] | None:
    """The PrivateUse1 device module's ``_inductor_backend_init`` while the device is not
    registered with Inductor, else ``None``. (On every registration Inductor asks for.)"""
    device_type = _privateuse1_backend_name()
    if device_type == "privateuseone":
        return None
    # torch 2.15's contract: the device module's hook takes no argument.
    hook: Callable[[], Any] | None = getattr(getattr(torch, device_type, None), BACKEND_INIT, None)
    if hook is None or _is_registered(device_type):
        return None
    return hook


def _is_registered(device_type: str) -> bool:
    # torch 2.15's own test in codegen.common.init_backend_registration.
    common = sys.modules[CODEGEN_COMMON]
    return common.get_scheduling_for_device(device_type) is not None


def run_backend_init() -> None:
    """Call the pending hook, if any, as torch 2.15 does."""
    if pending_backend_init() is None:
        return
    # torch 2.15 runs the hook under torch._dynamo.convert_frame.compile_lock, an RLock on
    # 2.6-2.15: a hook that compiles re-enters it on its own thread.
    from torch._dynamo.convert_frame import compile_lock

    with compile_lock:
        # Again under the lock: another thread may have registered the device meanwhile.
        hook = pending_backend_init()
        if hook is None or _state.backend_init_in_progress:
            return
        _state.backend_init_in_progress = True
        try:
            _load_torchs_device_op_overrides()
            hook()
        finally:
            _state.backend_init_in_progress = False
        install_imported(DEVICE_HOOK_MODULES)  # for the interface and overrides it registered


def _load_torchs_device_op_overrides() -> None:
    """Have torch load its own DeviceOpOverrides (cpu's, cuda's, ...) before the hook can
    register the device's. torch before 2.13 loads them at the first
    ``get_device_op_overrides`` only while none is registered: after a hook registered its
    device's first, every cpu cpp_wrapper and AOTInductor build would fail with
    ``KeyError: 'cpu'``, a failure torch without the backport never meets. torch 2.13 on
    loads its own whatever is registered."""
    common = sys.modules[CODEGEN_COMMON]
    if hasattr(common, "_initialize_device_op_overrides"):  # torch 2.13 on
        return
    if not common.device_op_overrides_dict:
        common.get_device_op_overrides("cpu")


def install_into_common(common: ModuleType) -> None:
    """Wrap ``init_backend_registration`` (and rebind it where it was imported by name)
    where this did not run already (``install`` calls it only where torch does not call the
    hook itself, before 2.15)."""
    registration = common.__dict__.get(INIT_BACKEND_REGISTRATION)
    if registration is None or getattr(registration, BACKPORT_MARK, False):
        return

    @functools.wraps(registration)
    def init_backend_registration() -> None:
        registration()
        run_backend_init()

    # torch 2.6-2.14 cache init_backend_registration with functools (2.15 does not): code
    # that clears it keeps working through the wrapper.
    for name in ("cache_clear", "cache_info"):
        if hasattr(registration, name):
            setattr(init_backend_registration, name, getattr(registration, name))
    setattr(init_backend_registration, BACKPORT_MARK, True)
    rebind(INIT_BACKEND_REGISTRATION, registration, init_backend_registration)


def install_into_compile_fx(compile_fx: ModuleType) -> None:
    """Run a pending hook, after torch's own registration, where torch 2.15 does: at the top of
    ``_compile_fx_main``, before the decomposition table is taken (torch without it, 2.6:
    ``compile_fx``'s own call that takes the table, the one with its config patches applied).
    ``install`` calls it only where torch does not call the hook itself. (``select_decomp_table``
    itself stays: the FX graph cache pickles it into its keys by name.)"""
    common = sys.modules[CODEGEN_COMMON]
    name = COMPILE_FX_MAIN if COMPILE_FX_MAIN in compile_fx.__dict__ else COMPILE_FX_FUNCTION
    compile_main = compile_fx.__dict__.get(name)
    if compile_main is None or getattr(compile_main, BACKPORT_MARK, False):
        return
    config = compile_fx.__dict__["config"]

    @functools.wraps(compile_main)
    def with_backend_init(*args: Any, **kwargs: Any) -> Any:
        # torch 2.6's compile_fx(model_, example_inputs_, inner_compile, config_patches, ...)
        # calls itself again with config_patches applied, and again for cpp_wrapper: only
        # the call that goes on to take the decomposition table runs the hook.
        takes_table = name == COMPILE_FX_MAIN or not (
            kwargs.get("config_patches") or (len(args) > 3 and args[3]) or config.cpp_wrapper
        )
        if takes_table and pending_backend_init() is not None:
            common.__dict__[INIT_BACKEND_REGISTRATION]()
        return compile_main(*args, **kwargs)

    setattr(with_backend_init, BACKPORT_MARK, True)
    rebind(name, compile_main, with_backend_init)
