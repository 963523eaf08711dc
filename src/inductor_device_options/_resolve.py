"""Computing a device's options: ask its provider, validate, finish.

Sources in lookup order: the registered provider, the declared entry point, the device's
``DeviceInterface.get_cpp_device_options`` (torch 2.15's hook, backported to older torch
where the hook asks for it). What a provider returns is validated (``_options``), gets
``config.aot_inductor.custom_op_libs`` as stock torch gives them, and is made fresh
(``_freshness``). Nothing here touches ``cpp_builder``: ``_hook`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from . import _registry
from ._freshness import fresh_options
from ._options import CppDeviceOptions, validate_cpp_device_options

_lock = threading.Lock()


def resolve(
    device_type: str, aot_mode: bool, compile_only: bool, *, use_device_interface: bool
) -> CppDeviceOptions | None:
    """Options for a normalized device from this package's sources, or None.

    Sources in order: registration, entry point, DeviceInterface backport. The result is
    shared: copy it before handing it out.
    """
    provider = _registry.find_provider(device_type)
    if provider is not None:
        description = provider.description
        raw = _call_provider(provider.callback, description, device_type, aot_mode, compile_only)
    else:
        interface = interface_with_cpp_options(device_type) if use_device_interface else None
        if interface is None:
            return None
        description = f"{_registry.describe_callable(interface)}.get_cpp_device_options"
        method = interface.get_cpp_device_options  # type: ignore[attr-defined]
        raw = _call_provider(
            lambda _device, *flags: method(*flags),
            description,
            device_type,
            aot_mode,
            compile_only,
        )
        if raw is None:
            return None
    return _finished(raw, device_type, description)


# Providers usually return the same lists every time: what was validated and made fresh
# once is reused, keyed by the exact values (Inductor asks once per build).
_finished_options: dict[tuple[object, ...], CppDeviceOptions] = {}
_FINISHED_OPTIONS_LIMIT = 256
_SEQUENCE_TYPES = (list, tuple)


def _finished(raw: object, device_type: str, provider: str) -> CppDeviceOptions:
    """Validated, with custom_op_libs, made fresh."""
    custom_op_libs = _custom_op_libs()
    key: tuple[object, ...] | None = None
    if (
        isinstance(raw, _SEQUENCE_TYPES)
        and len(raw) == 7
        and all(type(values) in _SEQUENCE_TYPES for values in raw)
    ):
        key = (device_type, *(tuple(values) for values in raw), custom_op_libs)
        try:
            cached = _finished_options.get(key)
        except TypeError:  # unhashable values: validation below says what is wrong
            key, cached = None, None
        if cached is not None:
            return cached
    options = validate_cpp_device_options(raw, device_type=device_type, provider=provider)
    missing = [lib for lib in custom_op_libs if lib not in options.libraries]
    if missing:
        options = options._replace(libraries=[*options.libraries, *missing])
    options = fresh_options(options)
    if key is not None:
        with _lock:
            if len(_finished_options) >= _FINISHED_OPTIONS_LIMIT:
                _finished_options.clear()
            _finished_options[key] = options
    return options


def _call_provider(
    callback: Callable[..., object],
    description: str,
    device_type: str,
    *args: object,
) -> object:
    try:
        return callback(device_type, *args)
    except Exception as error:
        if hasattr(error, "add_note"):  # Python >= 3.11
            error.add_note(
                f"raised by the C++ options provider {description} for device {device_type!r}"
            )
        raise


def _custom_op_libs() -> tuple[str, ...]:
    # Stock torch appends these for every device; a replaced function used to drop them.
    from torch._inductor import config

    return tuple(getattr(config.aot_inductor, "custom_op_libs", None) or ())


def interface_with_cpp_options(device_type: str) -> type | None:
    """The device's DeviceInterface if it defines get_cpp_device_options."""
    from torch._dynamo.device_interface import get_interface_for_device

    try:
        interface = get_interface_for_device(device_type)
    except NotImplementedError:
        return None
    return interface if getattr(interface, "get_cpp_device_options", None) else None
