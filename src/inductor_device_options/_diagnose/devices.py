"""Which devices doctor checks: an unknown one (nothing serves it), every one of the
process (``doctor --all``), one whose provider says it cannot be on this machine, and the
object that serves a device, whose attributes doctor reads (``_lookup/provider_attributes``).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ENTRY_POINT_GROUP
from .._errors import CppDeviceOptionsError
from .._hook.sources import found_source, known_device_types
from .._lookup import resolve
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.interfaces import interface_defining_cpp_options
from .._lookup.provider_attributes import hints_of
from .._source import DeviceOptionsSource, FoundSource
from .._torch_names import CPP_BUILDER
from ..introspection import hook_state
from .provider_loading import PROG

#: torch's own function, the one a device without any provider falls through to.
STOCK_FUNCTION = f"{CPP_BUILDER}.get_cpp_torch_device_options"


class UnknownDeviceError(CppDeviceOptionsError):
    """No provider, declaration, device interface or torch itself knows the device."""


def unknown_device(device_type: str, source: DeviceOptionsSource) -> UnknownDeviceError | None:
    """The error to report when nothing provides options for ``device_type``, else None.

    Unknown: no registration, entry point or device interface, not a device torch knows
    (cpu, cuda, xpu, mps), and torch's own function is the one Inductor calls (a
    replacement of it may well serve the device).
    """
    known = known_device_types()
    if device_type in known or source.kind != "torch":
        return None
    if source.description != STOCK_FUNCTION or hook_state().replaced_by is not None:
        return None
    return UnknownDeviceError(
        f"unknown device {device_type!r}: no provider is registered or declared for it and "
        "torch computes no options of its own for it, so Inductor would compile it with "
        f"torch's defaults only. Known devices: {', '.join(known)}.\n"
        "Declare a provider in the distribution of the device's backend (pyproject.toml):\n"
        f"    [project.entry-points.{ENTRY_POINT_GROUP}]\n"
        f'    {device_type} = "your_backend.module:cpp_device_options"\n'
        "or check a callback that is not declared with --provider module:callable.",
        device_type=device_type,
    )


def all_devices() -> list[FoundSource]:
    """What ``doctor --all`` checks: every device this process knows a source for, but
    torch's own (cpu, cuda, xpu, mps), each source found once for the run."""
    return [
        found_source(name) for name in known_device_types() if name not in RESERVED_DEVICE_TYPES
    ]


def loaded_source(found: FoundSource) -> FoundSource:
    """``found`` (a device's source, as the run found it) with its provider loaded (an
    entry point's module imported); as it is, without a provider, where the package does
    not serve the device or the provider cannot be loaded (the options check reports why)."""
    try:
        return resolve.loaded(found)
    except Exception:
        return found


def serving_object(found: FoundSource) -> object | None:
    """What serves the device's options, whose attributes may declare the headers Inductor
    includes and doctor's hints: its DeviceInterface, or the provider of ``found`` (as
    :func:`loaded_source` gives it; None where torch serves the device)."""
    if found.source.kind == "device interface":
        return interface_defining_cpp_options(found.device_type)
    return found.provider


def absent_device(loaded: FoundSource) -> str | None:
    """Why ``doctor --all`` leaves out a device whose provider says it cannot be present
    on this machine (its ``doctor_hints["absent"]``), or None: it is checked. ``loaded``:
    the device's source as :func:`loaded_source` gives it."""
    try:
        absent = hints_of(serving_object(loaded)).get("absent")
    except Exception:  # hints that cannot be read: the checks report what fails
        return None
    if not callable(absent):
        return None
    reason = _ask(absent)
    if not isinstance(reason, str):
        return None
    return f"{reason}; `{PROG} doctor {loaded.device_type}` checks it anyway"


def _ask(absent: Callable[[], object]) -> object:
    try:
        return absent()
    except Exception:  # a hint that fails says nothing: the device is checked
        return None
