"""torch 2.15's ``DeviceInterface.get_multi_processor_count(device)`` before 2.15.

torch 2.15's ``DeviceProperties.create(device)`` (``torch._inductor.runtime.hints``) takes the
count of compute units from the device's interface; torch 2.6 to 2.14 read the properties'
``multi_processor_count`` (xpu and mtia aside) and raise ``AttributeError`` without it, so
backends replaced ``create``. Installed when ``hints`` is imported: for an out-of-tree device
whose interface defines the method, ``create`` asks it, once per device as 2.15 caches it;
every other field is what the running torch computes. Every other device goes to torch's
own ``create``.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from .. import _state
from .._lookup.interfaces import out_of_tree_interface
from .._torch_names import DEVICE_PROPERTIES
from .backports import BACKPORT_MARK

HOOK = "get_multi_processor_count"


def install(hints: ModuleType) -> None:
    """Backport ``get_multi_processor_count`` into ``DeviceProperties.create``."""
    properties = hints.__dict__[DEVICE_PROPERTIES]
    # A classmethod over a functools cache (2.6-2.15): its cache_clear is kept below.
    torch_create = properties.__dict__["create"].__func__
    if getattr(torch_create, BACKPORT_MARK, False) or unknown_fields(properties):
        return

    def create(cls: type, device: Any) -> Any:
        interface = out_of_tree_interface(device.type, HOOK)
        if interface is None:
            return torch_create(cls, device)
        return _create(cls, device, interface)

    def cache_clear() -> None:
        torch_create.cache_clear()
        _create.cache_clear()

    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(create, torch_create, assigned=(), updated=())
    create.cache_clear = cache_clear  # type: ignore[attr-defined]
    setattr(create, BACKPORT_MARK, True)
    properties.create = classmethod(create)


#: The fields of ``DeviceProperties`` in torch 2.6 to 2.14, each as torch computes it for an
#: out-of-tree device (``max_threads_per_block`` from 2.9): what ``create`` builds.
KNOWN_FIELDS = frozenset(
    {
        "type",
        "index",
        "multi_processor_count",
        "cc",
        "major",
        "regs_per_multiprocessor",
        "max_threads_per_multi_processor",
        "max_threads_per_block",
        "warp_size",
    }
)


def unknown_fields(properties: type) -> list[str]:
    """Fields of the running torch's ``DeviceProperties`` the backport cannot fill: with
    any, it is left out."""
    return sorted(set(getattr(properties, "_fields", ())) - KNOWN_FIELDS)


# Kept by the package's reset, as torch's own cache of ``create`` is: torch 2.15 caches it per
# device for the process, and its callers clear it with ``create.cache_clear()``, which
# clears this one too.
@_state.cached(64, kept="DeviceProperties.create's, cleared with it")
def _create(cls: Any, device: Any, interface: Any) -> Any:
    props = interface.get_device_properties(device)
    values = {
        "type": device.type,
        "index": device.index,
        "multi_processor_count": interface.get_multi_processor_count(device),
        "cc": interface.get_compute_capability(device),
        "major": getattr(props, "major", None),
        "regs_per_multiprocessor": getattr(props, "regs_per_multiprocessor", None),
        "max_threads_per_multi_processor": getattr(props, "max_threads_per_multi_processor", None),
        # The getattr defaults are torch 2.13's DeviceProperties.create's.
        "max_threads_per_block": getattr(props, "max_threads_per_block", 1024),
        # torch 2.6 to 2.14: 32 for a device other than cpu (2.15: None)
        "warp_size": getattr(props, "warp_size", 32),
    }
    return cls(**{field: values[field] for field in cls._fields})
