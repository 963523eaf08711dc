"""A device's SDK identity as a build of its code reads it, and the devices whose identity
keys Inductor's caches.

The identity (``options.identity``) of a device is that of the options Inductor gets for it:
the definition the package's door adds, or, for a device served through torch's doors
(whose options the package passes as they are), the identity of the dirs and libraries
those options name.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from .. import _state
from .._lookup.device_types import normalize_device_type
from .._lookup.entry_points import declared_entry_points
from .._options.freshness import identity_in
from .._options.identity import sdk_identity
from .._torch_names import CPP_BUILDER
from .serve import interface_answering, is_served, torch_registry


def device_identity(device_type: str, aot_mode: bool = False) -> str | None:
    """The SDK identity of what Inductor gets for ``device_type`` (``aot_mode``: for
    AOTInductor), or None where the options name no SDK of the device's own. Calls the
    device's provider: raises what the lookup raises."""
    from .lookups import get_cpp_device_options

    options = get_cpp_device_options(device_type, aot_mode)
    identity = identity_in(options)
    if identity is not None:
        return identity
    return sdk_identity(
        [os.path.realpath(path) for path in options.include_dirs],
        [os.path.realpath(path) for path in options.libraries_dirs],
        list(options.libraries),
    )


def identity_device_types() -> list[str]:
    """The devices whose SDK identity keys Inductor's caches in this process, sorted: every
    device the package serves (either door) that is registered in this process, or that
    this process can compile for (its PrivateUse1 backend, a registered DeviceInterface).
    A declared provider whose backend is not imported is not loaded for a key."""
    with _state.lock:
        names = set(_state.registered)
    module = sys.modules.get(CPP_BUILDER)
    registry = torch_registry(module) if module is not None else None
    names.update(name for name in registry or () if isinstance(name, str))
    usable = _usable_device_types() | _state.keyed_for_diagnosis
    names.update(name for name in declared_entry_points() if name in usable)
    names.update(name for name in usable if interface_answering(name) is not None)
    return sorted(name for name in names if is_served(normalize_device_type(name)))


@contextlib.contextmanager
def keyed_as_if_usable(device_type: str) -> Iterator[None]:
    """For the block, ``device_type`` keys the caches as if this process could compile for
    it: what a diagnosis asks, in a process that has not imported the device's backend."""
    with _state.lock:
        added = device_type not in _state.keyed_for_diagnosis
        _state.keyed_for_diagnosis.add(device_type)
    try:
        yield
    finally:
        if added:
            with _state.lock:
                _state.keyed_for_diagnosis.discard(device_type)


def _usable_device_types() -> set[str]:
    """The device types this process can run code on, beside torch's own."""
    import torch
    from torch._dynamo.device_interface import get_registered_device_interfaces

    names = {name for name, _ in get_registered_device_interfaces() if ":" not in name}
    names.add(torch._C._get_privateuse1_backend_name())
    return names
