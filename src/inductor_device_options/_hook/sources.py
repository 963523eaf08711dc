"""The sources this process knows, for people and tools: a device's source found once (what
people see, whether the package serves the device, its provider), and every device known.
``introspection`` hands these out; ``list``, ``show`` and ``doctor`` use them. No lookup
imports this module.
"""

from __future__ import annotations

import sys

from .. import _state
from .._lookup import registry as _registry
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.entry_points import declared_entry_points
from .._lookup.interfaces import interface_description
from .._source import DeviceOptionsSource, FoundSource
from .._torch_names import CPP_BUILDER
from .installation import current_installation, interface_answering, native_dispatcher, source_of
from .serve import torch_registry


def found_source(device_type: str) -> FoundSource:
    """A normalized device's source, in lookup order, without calling or importing any
    provider: the package's own, or, where it does not serve the device, what serves it below
    the package."""
    served = source_of(device_type)
    return (
        served if served is not None else FoundSource(_unserved_source(device_type), served=False)
    )


def registered_device_types() -> list[str]:
    """Every device type registered, through this package or through torch's
    ``register_cpp_device_options``, sorted."""
    with _state.lock:
        names = set(_state.registered)
    module = sys.modules.get(CPP_BUILDER)
    registry = torch_registry(module) if module is not None else None
    if registry is not None:
        names.update(
            name
            for name, callback in registry.items()
            if isinstance(name, str) and callback is not native_dispatcher
        )
    return sorted(names)


def known_device_types() -> list[str]:
    """Every device this process knows a source for: torch's own, registered (through
    either door), declared, and devices whose DeviceInterface's ``get_cpp_device_options``
    is asked, sorted. Finds none of their sources."""
    from torch._dynamo.device_interface import get_registered_device_interfaces

    names = set(RESERVED_DEVICE_TYPES)
    names.update(registered_device_types())
    names.update(declared_entry_points())
    names.update(
        name
        for name, _ in get_registered_device_interfaces()
        if interface_answering(name) is not None
    )
    return sorted(names)


def _unserved_source(device_type: str) -> DeviceOptionsSource:
    """The source of a normalized device the package does not serve: what serves it below
    the package."""
    interface = interface_answering(device_type)
    installation = current_installation()
    adopted = installation.chain.adopted() if installation is not None else ()
    # The interface is asked at the bottom, inside (or around) torch's own function: a
    # replacement adopted above it answers instead, as it would on torch 2.15.
    replacements = [function for function in adopted if function.behaviour == "replacement"]
    if interface is not None and not replacements:
        description = interface_description(interface)
        undecided = [
            f"{function.description} ({function.behaviour})"
            for function in adopted
            if function.behaviour in ("not called yet", "wraps for some devices")
        ]
        if undecided:
            description += "; asked only where " + ", ".join(undecided) + " calls through"
        return DeviceOptionsSource(device_type, "device interface", description)
    if installation is None:
        return DeviceOptionsSource(device_type, "torch", "stock torch")
    descriptions = [
        *(function.description for function in reversed(adopted)),
        _registry.describe_callable(installation.function_below),
    ]
    description = " over ".join(descriptions)
    if interface is not None:
        description += (
            f"; {replacements[-1].description} replaces it, so "
            f"{interface_description(interface)} is never asked"
        )
    return DeviceOptionsSource(device_type, "torch", description)
