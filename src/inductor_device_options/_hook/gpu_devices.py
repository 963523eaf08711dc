"""torch 2.15's ``DeviceInterface.is_gpu()`` and ``exposes_streams()`` before 2.15.

torch 2.15 builds ``torch._inductor.utils.GPU_TYPES`` once, when that module is first
imported, from the registered interfaces whose ``is_gpu()`` is true (``utils._gpu_types``);
``is_gpu(device)`` and ``get_gpu_type()`` read it, and ``device_need_guard(device)`` asks a
GPU device's ``exposes_streams()``. torch 2.6 to 2.14 hard-code the list (2.6: cuda and xpu;
2.13: cuda, mps, xpu, mtia) and decide the guard by name.

Decided when ``torch._inductor.utils`` is imported, as 2.15 decides then: an out-of-tree
device whose interface is registered by then and defines ``is_gpu()`` returning true is
appended to the list in place (every module that imported the list by name sees it). Only
for such devices do ``get_gpu_type`` and ``device_need_guard`` answer as 2.15 does; every
other device, torch's own included, gets what its torch gives it. Without such a device
nothing is installed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from .._lookup.interfaces import as_torch_2_15, defines, out_of_tree_interfaces
from .._torch_names import DEVICE_NEED_GUARD, GET_GPU_TYPE, GPU_TYPES
from .backports import BACKPORT_MARK
from .install import rebind

log = logging.getLogger(__name__)


def install(utils: ModuleType) -> None:
    """Backport ``is_gpu()`` and ``exposes_streams()`` into ``torch._inductor.utils``: once,
    at its import (``install._device_needs`` sees to it), as 2.15 builds the list."""
    gpu_types: list[str] = utils.__dict__[GPU_TYPES]
    added = tuple(gpu_devices(exclude=gpu_types))
    if not added:
        return
    # Extended in place, not rebound: torch 2.6-2.14's modules import GPU_TYPES by name
    # (``from torch._inductor.utils import GPU_TYPES``) and keep the list object.
    gpu_types.extend(added)
    torch_get_gpu_type = utils.__dict__[GET_GPU_TYPE]
    torch_need_guard = utils.__dict__[DEVICE_NEED_GUARD]
    get_gpu_type = _get_gpu_type(gpu_types, added)
    device_need_guard = _device_need_guard(added, torch_need_guard)
    backports: tuple[tuple[str, Any, Any], ...] = (
        (GET_GPU_TYPE, torch_get_gpu_type, get_gpu_type),
        (DEVICE_NEED_GUARD, torch_need_guard, device_need_guard),
    )
    for name, torch_function, backport in backports:
        backport.__wrapped__ = torch_function
        setattr(backport, BACKPORT_MARK, True)
        utils.__dict__[name] = backport
        rebind(name, torch_function, backport)


def gpu_devices(exclude: Sequence[str] = ()) -> list[str]:
    """torch 2.15's ``_gpu_types()`` for the out-of-tree interfaces registered now."""
    return [
        name
        for name, interface in out_of_tree_interfaces()
        if name not in exclude
        and defines(interface, "is_gpu")
        and as_torch_2_15(interface).is_gpu()
    ]


def _get_gpu_type(gpu_types: list[str], added: tuple[str, ...]) -> Callable[[], str]:
    def get_gpu_type() -> str:
        """torch 2.15's ``get_gpu_type()`` where a device the backport added is available;
        else torch's own answer (torch 2.6 to 2.14: ``torch.<device>.is_available()``)."""
        import torch

        available = [device for device in added if _is_available(device)]
        own = [x for x in gpu_types if x not in added and getattr(torch, x).is_available()]
        if not available:
            assert len(own) <= 1  # torch 2.6 to 2.14's get_gpu_type asserts it
            return "cuda" if not own else own[0]
        return _chosen(own + available)

    return get_gpu_type


def _chosen(available: list[str]) -> str:
    """torch 2.15's choice among available GPU types (``utils.get_gpu_type``)."""
    import torch

    if len(available) == 1:
        return available[0]
    # torch 2.15's get_gpu_type asks torch.accelerator.current_accelerator() (2.6 has it too).
    accelerator = getattr(torch, "accelerator", None)
    current = accelerator.current_accelerator() if accelerator is not None else None
    if current is not None and current.type in available:
        return str(current.type)
    chosen = "cuda" if "cuda" in available else sorted(available)[0]
    log.warning(
        "Multiple GPU types %s are available but the current accelerator (%s) "
        "is not one of them; defaulting to %r. Codegen may target the wrong device.",
        available,
        current,
        chosen,
    )
    return chosen


def _is_available(device: str) -> bool:
    """torch 2.15's ``utils._device_is_available``."""
    from torch._dynamo.device_interface import get_interface_for_device

    try:
        return bool(get_interface_for_device(device).is_available())
    except NotImplementedError:
        return False


def _device_need_guard(
    added: tuple[str, ...], torch_need_guard: Callable[[str], bool]
) -> Callable[[str], bool]:
    def device_need_guard(device: str) -> bool:
        """torch 2.15's ``device_need_guard`` for a device the backport added."""
        if device not in added:
            return torch_need_guard(device)
        from torch._dynamo.device_interface import get_interface_for_device

        return exposes_streams(get_interface_for_device(device))

    return device_need_guard


def exposes_streams(interface: type) -> bool:
    """The interface's ``exposes_streams()``, or torch 2.15's default: whether it gives a
    ``Stream`` of its own."""
    from torch._dynamo.device_interface import DeviceInterface

    if defines(interface, "exposes_streams"):
        return bool(as_torch_2_15(interface).exposes_streams())
    return as_torch_2_15(interface).Stream is not DeviceInterface.Stream
