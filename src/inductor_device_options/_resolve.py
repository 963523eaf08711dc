"""Computing a device's options: ask its provider, validate, finish.

Sources in lookup order: the registered provider, the declared entry point, the device's
``DeviceInterface.get_cpp_device_options`` (torch 2.15's hook, backported to older torch
where the hook asks for it). What a provider returns is validated (``_options``), gets
``config.aot_inductor.custom_op_libs`` as stock torch gives them, and is made fresh
(``_freshness``). Nothing here touches ``cpp_builder``: ``_hook`` does.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence

from . import _registry
from ._errors import (
    PROVIDER_ATTRIBUTE,
    InvalidCppDeviceOptionsError,
    ProviderRecursionError,
    add_note,
)
from ._freshness import fresh_options
from ._options import (
    CppDeviceOptions,
    ValueProblem,
    invalid_options_error,
    snapshot,
    value_problems,
)

CPP_BUILDER = "torch._inductor.cpp_builder"

_lock = threading.Lock()
# The devices whose options this thread is computing: a provider that asks for its own
# device would otherwise recurse until RecursionError.
_in_progress = threading.local()


def resolve(
    device_type: str, aot_mode: bool, compile_only: bool, *, use_device_interface: bool
) -> CppDeviceOptions | None:
    """Options for a normalized device from this package's sources, or None.

    Sources in order: registration, entry point, DeviceInterface backport. The result is
    shared: copy it before handing it out. Raises ``ProviderRecursionError`` when the
    device's provider, directly or not, asks for the options of that same device.
    """
    active: set[str] | None = getattr(_in_progress, "devices", None)
    if active is None:
        active = _in_progress.devices = set()
    if device_type in active:
        raise _recursion_error(device_type, use_device_interface)
    active.add(device_type)
    try:
        return _resolve(device_type, aot_mode, compile_only, use_device_interface)
    finally:
        active.discard(device_type)


def _resolve(
    device_type: str, aot_mode: bool, compile_only: bool, use_device_interface: bool
) -> CppDeviceOptions | None:
    provider = _registry.find_provider(device_type)
    if provider is not None:
        description = provider.description
        raw = _call_provider(provider.callback, description, device_type, aot_mode, compile_only)
    else:
        interface = interface_with_cpp_options(device_type) if use_device_interface else None
        if interface is None:
            return None
        description = _interface_description(interface)
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


def _recursion_error(device_type: str, use_device_interface: bool) -> ProviderRecursionError:
    provider = _registry.find_provider(device_type)
    interface = interface_with_cpp_options(device_type) if use_device_interface else None
    if provider is not None:
        description = provider.description
    elif interface is not None:
        description = _interface_description(interface)
    else:
        description = "its provider"
    return ProviderRecursionError(
        f"the C++ options provider {description} for device {device_type!r} asked for the "
        f"C++ options of {device_type!r} itself (get_cpp_torch_device_options, "
        "CppTorchDeviceOptions or get_cpp_device_options), which would call it again, "
        "without end. To extend torch's options for the device, call "
        "default_cpp_device_options(device_type, aot_mode, compile_only): it calls no provider",
        device_type=device_type,
        provider=description,
    )


def _interface_description(interface: type) -> str:
    return f"{_registry.describe_callable(interface)}.get_cpp_device_options"


# Providers usually return the same lists every time: what was validated and made fresh
# once is reused, keyed by the exact values (Inductor asks once per build) and by the
# CppBuilder they were checked against.
_finished_options: dict[tuple[object, ...], CppDeviceOptions] = {}
_FINISHED_OPTIONS_LIMIT = 256
_SEQUENCE_TYPES = (list, tuple)
_CUSTOM_OP_LIBS = "config.aot_inductor.custom_op_libs"


def _finished(raw: object, device_type: str, provider: str) -> CppDeviceOptions:
    """Validated, with custom_op_libs, made fresh: what Inductor gets."""
    custom_op_libs = _custom_op_libs()
    key = _cache_key(raw, device_type, custom_op_libs)
    if key is not None:
        cached = _finished_options.get(key)
        if cached is not None:
            return cached
        raw = key[2:9]  # the values just read: what is cached is what is validated
    options = finish(raw, device_type=device_type, provider=provider, custom_op_libs=custom_op_libs)
    if key is not None:
        with _lock:
            if len(_finished_options) >= _FINISHED_OPTIONS_LIMIT:
                _finished_options.clear()
            _finished_options[key] = options
    return options


def _cache_key(
    raw: object, device_type: str, custom_op_libs: tuple[object, ...]
) -> tuple[object, ...] | None:
    """(CppBuilder, device, the 7 lists as tuples, custom_op_libs), for plain lists and
    tuples only; a hit gives the options finished from values equal to these."""
    if not isinstance(raw, _SEQUENCE_TYPES) or len(raw) != 7:
        return None
    for values in raw:
        if type(values) not in _SEQUENCE_TYPES:
            return None
    # Checked against that CppBuilder (a reloaded cpp_builder may render otherwise).
    builder = getattr(sys.modules.get(CPP_BUILDER), "CppBuilder", None)
    key = (builder, device_type, *map(tuple, raw), custom_op_libs)
    try:
        hash(key)
    except TypeError:  # unhashable values: the snapshot says what is wrong
        return None
    return key


def finish(
    raw: object, *, device_type: str, provider: str, custom_op_libs: Sequence[object] = ()
) -> CppDeviceOptions:
    """What Inductor gets from a provider's result: a plain snapshot, with
    ``custom_op_libs`` appended, real paths and the SDK fingerprint, every value checked
    first by the rules of ``_options``, then, final, against how the running
    ``CppBuilder`` renders it.

    Raises ``InvalidCppDeviceOptionsError`` naming the device, the provider, the field,
    the value and, for a value the provider did not write as such, where it came from.
    """
    provided = snapshot(raw, device_type=device_type, provider=provider)
    libraries = list(provided.libraries)
    for index, library in enumerate(custom_op_libs):
        if not isinstance(library, str):
            raise InvalidCppDeviceOptionsError(
                f"C++ options for device {device_type!r}: {_CUSTOM_OP_LIBS}[{index}] is a "
                f"{type(library).__name__} ({library!r}), not a str",
                device_type=device_type,
                provider=provider,
                field="libraries",
                value=library,
            )
        if library not in libraries:
            libraries.append(str.__str__(library))
    options = provided._replace(libraries=libraries)
    _raise_first(value_problems(options), options, options, device_type, provider, custom_op_libs)
    from ._rendering import rendering_problems  # learns from torch: only when there is news

    final = fresh_options(options)
    problems = value_problems(final) or rendering_problems(final)
    _raise_first(problems, options, final, device_type, provider, custom_op_libs)
    return final


def _raise_first(
    problems: list[ValueProblem],
    provided: CppDeviceOptions,
    final: CppDeviceOptions,
    device_type: str,
    provider: str,
    custom_op_libs: Sequence[object],
) -> None:
    if not problems:
        return
    problem = problems[0]
    shown, value = where_from(problem, provided, final, custom_op_libs)
    raise invalid_options_error(
        problem, device_type=device_type, provider=provider, shown=shown, value=value
    )


def where_from(
    problem: ValueProblem,
    provided: CppDeviceOptions,
    final: CppDeviceOptions,
    custom_op_libs: Sequence[object] = (),
) -> tuple[str, str]:
    """How to show a final value in an error, and the value the provider wrote: a real
    path is shown with the dir it resolves, a custom op library says so."""
    value = problem.value
    if problem.field in ("include_dirs", "libraries_dirs"):
        original = getattr(provided, problem.field)[problem.position]
        if original != getattr(final, problem.field)[problem.position]:
            return f"{original!r} (real path {value!r})", original
    if problem.field == "libraries" and value in custom_op_libs:
        return f"{value!r} (from {_CUSTOM_OP_LIBS})", value
    return repr(value), value


def _call_provider(
    callback: Callable[..., object],
    description: str,
    device_type: str,
    *args: object,
) -> object:
    try:
        return callback(device_type, *args)
    except ProviderRecursionError:
        raise  # its message names the provider already
    except Exception as error:
        add_note(
            error, f"raised by the C++ options provider {description} for device {device_type!r}"
        )
        setattr(error, PROVIDER_ATTRIBUTE, description)
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
