"""The sources this process knows, for people and tools: a device's source found once (the
package's own record, its provider with it, and the record shown without it), and every
device known. ``introspection`` hands these out; ``list``, ``show`` and ``doctor`` use them.
No lookup imports this module.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import NamedTuple

from .. import _state
from .._lookup import registry as _registry
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.entry_points import declared_entry_points
from .._lookup.interfaces import interface_description
from .._lookup.registry import DeviceOptionsSource
from .._torch_names import CPP_BUILDER
from .serve import (
    current_installation,
    interface_answering,
    native_dispatcher,
    source_of,
    torch_registry,
)


class FoundSource(NamedTuple):
    """A normalized device's source, found once: ``shown``, the record people and tools see
    (without a provider), and ``served``, the package's own record (the provider with it, an
    entry point's once its module is imported), or None: the package does not serve it."""

    shown: DeviceOptionsSource
    served: DeviceOptionsSource | None


def found_source(device_type: str) -> FoundSource:
    """A normalized device's source, in lookup order, without calling or importing any
    provider."""
    served = source_of(device_type)
    return FoundSource(shown_source(device_type, served), served)


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


def shown_source(device_type: str, served: DeviceOptionsSource | None) -> DeviceOptionsSource:
    """The record shown for a normalized device the package serves from ``served`` (found
    by ``source_of``), or, where ``served`` is None, for what serves it below the package."""
    if served is not None:
        description = served.description
        if served.fallback:
            description += (
                "; bundled: it gives way to a registration, another distribution's entry point "
                "or the device's DeviceInterface"
            )
        return replace(served, description=description, provider=None)
    interface = interface_answering(device_type)
    installation = current_installation()
    adopted = installation.chain.adopted() if installation is not None else ()
    # The interface is asked at the bottom, inside (or around) stock torch's function: a
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
