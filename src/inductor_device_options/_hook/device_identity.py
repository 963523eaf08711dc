"""A device's SDK identity as a build of its code reads it, and the devices whose identity
keys Inductor's caches.

The identity (``options.identity``) of a device is that of the answer Inductor gets for it,
whichever door gave it: the definition the package's door adds, or, for a device served
another way (torch's doors, a replacement or a wrapper the chain adopted), the identity of
what that answer names beyond the defaults every out-of-tree device gets from torch: its
include dirs, and the libraries it names as ld finds them in its library dirs. A device
nobody serves gets torch's defaults, which name nothing of its own: it has no identity.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES, normalize_device_type
from .._options.freshness import identity_in
from .._options.identity import sdk_identity
from .._options.model import CppDeviceOptions
from .._torch_names import CPP_BUILDER
from .installation import installed
from .serve import DEFAULTS_PROBE_DEVICE, torch_registry

# aot_mode -> what torch's own function gives a device nobody serves (it never changes in a
# process: the function below and torch's version are fixed).
_defaults: _state.BoundedCache[bool, CppDeviceOptions] = _state.cache(2)


def device_identity(device_type: str, aot_mode: bool = False) -> str | None:
    """The SDK identity of what Inductor gets for ``device_type`` (``aot_mode``: for
    AOTInductor), or None where the answer names no SDK of the device's own. Calls the
    device's provider: raises what the lookup raises."""
    options = _answer(device_type, aot_mode)
    if options is None:
        return None
    return identity_in(options) or _named_identity(options, aot_mode)


def key_identity(device_type: str, aot_mode: bool = False) -> str | None:
    """The identity the C++ code cache must be keyed on beside the command line: that of a
    device whose answer does not carry it in a definition (every door but the package's),
    or None (torch's devices, a device with no SDK of its own, the package's door)."""
    options = _answer(device_type, aot_mode)
    if options is None or identity_in(options) is not None:
        return None
    return _named_identity(options, aot_mode)


def _answer(device_type: str, aot_mode: bool) -> CppDeviceOptions | None:
    from .lookups import get_cpp_device_options

    name = normalize_device_type(device_type)
    if name in RESERVED_DEVICE_TYPES:  # torch's version covers torch's own devices' code
        return None
    # Marked for the lookup underneath: it is asked for an identity, not for a build, and
    # doctor's recorder of Inductor's questions (_diagnose/compile_child) leaves it out.
    this_thread = _state.this_thread
    outer, this_thread.asking_for_identity = this_thread.asking_for_identity, True
    try:
        return get_cpp_device_options(name, aot_mode)
    finally:
        this_thread.asking_for_identity = outer


def _named_identity(options: CppDeviceOptions, aot_mode: bool) -> str | None:
    """The identity of what ``options`` name beyond torch's defaults (real paths)."""
    defaults = _defaults_for(aot_mode)
    default_dirs = {os.path.realpath(path) for path in defaults.include_dirs}
    include_dirs = [os.path.realpath(path) for path in options.include_dirs]
    # Library dirs are kept whole: they only say where the named libraries are looked up.
    return sdk_identity(
        [path for path in include_dirs if path not in default_dirs],
        [os.path.realpath(path) for path in options.libraries_dirs],
        [name for name in options.libraries if name not in defaults.libraries],
    )


def _defaults_for(aot_mode: bool) -> CppDeviceOptions:
    known = _defaults.get(aot_mode)
    if known is None:
        # Never a registered device: the function below gives it the defaults.
        defaults = installed().function_below(DEFAULTS_PROBE_DEVICE, aot_mode, False)
        known = _defaults.put(aot_mode, CppDeviceOptions.of(defaults))
    return known


def identity_device_types() -> list[str]:
    """The devices whose SDK identity may key Inductor's caches in this process, sorted:
    every device registered in this process (either door), and every device this process
    can compile for (its PrivateUse1 backend, a registered DeviceInterface), whoever serves
    it. A declared provider whose backend is not imported is not loaded for a key: that
    process cannot compile for the device."""
    with _state.lock:
        names = set(_state.registered)
    module = sys.modules.get(CPP_BUILDER)
    registry = torch_registry(module) if module is not None else None
    names.update(name for name in registry or () if isinstance(name, str))
    names.update(_usable_device_types() | _state.keyed_for_diagnosis)
    return sorted(name for name in names if _keyable(name))


def _keyable(name: str) -> bool:
    try:
        return normalize_device_type(name) not in RESERVED_DEVICE_TYPES
    except ValueError:
        return False


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

    # Indexed entries ("npu:0") skipped, as torch 2.15's CacheBase.get_system skips them;
    # the PrivateUse1 name is "privateuseone" until renamed, which _keyable lets through
    # harmlessly (nobody serves it).
    names = {name for name, _ in get_registered_device_interfaces() if ":" not in name}
    names.add(torch._C._get_privateuse1_backend_name())
    return names
