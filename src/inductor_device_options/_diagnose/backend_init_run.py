"""The PrivateUse1 device module's ``_inductor_backend_init``, run as a compile runs it:
what doctor, ``show`` and ``list`` report of it (the check ``torch_hooks`` judges it)."""

from __future__ import annotations

from typing import NamedTuple

from .._hook.torch_hooks import BACKEND_INIT_HOOK, TorchHook, torch_hooks
from .._torch_names import BACKEND_INIT
from .text import error_line, located


class BackendInit(NamedTuple):
    """The PrivateUse1 device module's ``_inductor_backend_init``, and what came of running
    it as Inductor does at a compile, where the device was not registered yet.

    ``hook``: torch 2.15's ``_inductor_backend_init`` on the running torch (``native`` or
    ``provided`` by this package). ``registered``: the device has an Inductor backend since.
    ``error``: what the hook raised (as every compile would), with where.
    """

    device_type: str
    hook: TorchHook
    registered: bool
    error: str | None = None

    @property
    def function(self) -> str:
        return f"torch.{self.device_type}._inductor_backend_init"

    def describe(self) -> str:
        hook = self.hook
        return f"registers with Inductor through {self.function} ({hook.status}: {hook.detail})"


def run_backend_init() -> BackendInit | None:
    """Where the PrivateUse1 device module defines ``_inductor_backend_init``: while the
    device is not registered with Inductor, ``init_backend_registration()``, as every
    compile calls it (torch 2.15 calls the hook from it; this package, before 2.15); what
    came of it. None where the device module defines no hook (nothing is run)."""
    import torch
    from torch._inductor.codegen import common

    from .._hook.backend_init import pending_backend_init

    hooks = torch_hooks()  # arms the package first: the backport wraps the registration
    device_type = torch._C._get_privateuse1_backend_name()
    module = getattr(torch, device_type, None)
    if device_type == "privateuseone" or getattr(module, BACKEND_INIT, None) is None:
        return None
    [hook] = [hook for hook in hooks if hook.name == BACKEND_INIT_HOOK]
    error = None
    if pending_backend_init() is not None:
        try:
            common.init_backend_registration()
        except Exception as raised:  # every compile would raise it: the check fails
            error = f"{error_line(raised)}{located(raised)}"
    registered = common.get_scheduling_for_device(device_type) is not None
    return BackendInit(device_type, hook, registered, error)
