"""Computing a device's options from the sources this package consults.

Sources, in lookup order (the first that has the device serves it):

1. a registration with this package (``register_cpp_device_options``);
2. a registration with ``cpp_builder.register_cpp_device_options`` (torch's registry: the
   design's API, native with the upstream patch, backported by the hook elsewhere);
3. an entry point of the ``inductor_device_options`` group (another distribution's);
4. only with :func:`~inductor_device_options.guarantee_cpp_device_options`: the device's
   ``DeviceInterface.get_cpp_device_options`` (otherwise torch asks it itself, on 2.15, or
   the hook's backport does, below every adopted function, as torch 2.15 would);
5. an entry point bundled with this package, unless the device's interface defines
   ``get_cpp_device_options``: a fallback, which yields to the function below when it
   cannot compute the options.

The package's own door (1, 3, 5) gets its guarantees: what the provider returns is
validated (``_options``, ``_rendering``, ``_tools``, ``_compiler``), gets
``config.aot_inductor.custom_op_libs`` as stock torch gives them, and is made fresh
(``_freshness``). torch's doors (2, 4) give exactly what the callback returns, as torch
defines them, unless the device is guaranteed. Nothing here touches ``cpp_builder``:
``_hook`` does, and hands torch's registry in.
"""

from __future__ import annotations

import inspect
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._errors import (
    PROVIDER_ATTRIBUTE,
    InvalidCppDeviceOptionsError,
    ProviderRecursionError,
    add_note,
)
from .._torch_names import CPP_BUILDER
from ..options.freshness import fresh_options
from ..options.model import (
    CppDeviceOptions,
    ValueProblem,
    invalid_options_error,
    snapshot,
    value_problems,
)
from . import registry as _registry

if TYPE_CHECKING:
    from importlib import metadata

SourceKind = Literal["registration", "cpp_builder registration", "entry point", "device interface"]
Thunk = Callable[[], Any]

_lock = threading.Lock()
# The devices whose options this thread is computing: a provider that asks for its own
# device would otherwise recurse until RecursionError.
_in_progress = threading.local()


class Source(NamedTuple):
    """The source that serves a device, as found by :func:`find_source`.

    ``call`` is None when the source was found without loading it (an entry point not yet
    imported). ``guaranteed``: its result is validated and completed by this package.
    ``fallback``: a bundled provider, which gives way to the function below when it fails.
    """

    kind: SourceKind
    description: str
    call: Callable[[str, bool, bool], object] | None
    guaranteed: bool
    fallback: bool = False


def find_source(
    device_type: str,
    torch_registry: Mapping[str, object] | None,
    *,
    serve_interfaces: bool,
    load: bool,
    own_dispatcher: object = None,
) -> Source | None:
    """The source that serves a normalized device, in lookup order, or None.

    ``torch_registry``: ``cpp_builder._cpp_device_options_registry`` (None: there is none).
    ``serve_interfaces``: whether this package may ask the device's DeviceInterface itself.
    ``load``: import a declared entry point (False: report it without importing).
    ``own_dispatcher``: what this package registers in torch's registry (native mode), which
    stands for this package's registrations there.
    """
    provider = _registry.registered_provider(device_type)
    if provider is not None:
        return Source("registration", provider.description, provider.callback, True)
    callback = torch_registry.get(device_type) if torch_registry is not None else None
    if callback is not None and callback is not own_dispatcher:
        guaranteed = _registry.is_guaranteed(device_type)
        return Source(
            "cpp_builder registration",
            _registry.describe_callable(callback),
            callback,  # type: ignore[arg-type]
            guaranteed,
        )
    entry_point = _registry.declared_entry_points().get(device_type)
    if entry_point is not None and not _registry.is_bundled(entry_point):
        return _declared(device_type, entry_point, load)
    interface = interface_defining_cpp_options(device_type)
    if interface is not None:
        if serve_interfaces and _registry.is_guaranteed(device_type):
            method = interface.get_cpp_device_options  # type: ignore[attr-defined]
            return Source(
                "device interface",
                interface_description(interface),
                lambda _device, aot_mode, compile_only: method(aot_mode, compile_only),
                True,
            )
        return None  # the backend answers through its interface, which torch asks
    if entry_point is not None:  # bundled: only where the backend has no answer of its own
        return _declared(device_type, entry_point, load)
    return None


def _declared(device_type: str, entry_point: metadata.EntryPoint, load: bool) -> Source:
    bundled = _registry.is_bundled(entry_point)
    declared = Source(
        "entry point", _registry.describe_entry_point(entry_point), None, True, bundled
    )
    if not load:
        return declared
    provider = _registry.find_provider(device_type)
    if provider is None:
        return declared
    if provider.source == "registration":  # registered while its module was imported
        return Source("registration", provider.description, provider.callback, True)
    return declared._replace(call=provider.callback)


def serve(
    device_type: str,
    aot_mode: bool,
    compile_only: bool,
    *,
    torch_registry: Mapping[str, object] | None,
    serve_interfaces: bool,
    default: Thunk,
    own_dispatcher: object = None,
) -> object | None:
    """What the sources give a normalized device, or None when none serves it.

    The package's own door gives a finished :class:`CppDeviceOptions` (shared: copy it);
    torch's doors give the callback's own result. ``default()`` is what the device gets
    below this package; a bundled provider that fails gives way to it, with a warning.
    Raises ``ProviderRecursionError`` when the device's provider, directly or not, asks for
    the options of that same device.
    """
    active: set[str] | None = getattr(_in_progress, "devices", None)
    if active is None:
        active = _in_progress.devices = set()
    source = find_source(
        device_type,
        torch_registry,
        serve_interfaces=serve_interfaces,
        load=True,
        own_dispatcher=own_dispatcher,
    )
    if source is None or source.call is None:
        return None
    if device_type in active:
        raise _recursion_error(device_type, source.description)
    active.add(device_type)
    try:
        return _served(source, device_type, aot_mode, compile_only, default)
    finally:
        active.discard(device_type)


def _served(
    source: Source, device_type: str, aot_mode: bool, compile_only: bool, default: Thunk
) -> object | None:
    assert source.call is not None
    if source.kind == "cpp_builder registration" and device_type in _registry.RESERVED_DEVICE_TYPES:
        default()  # torch's branches for its own devices run first, as in the design
    if not source.guaranteed:  # torch's door: exactly what it gives
        if source.kind == "device interface":
            return _interface_options(source.call, device_type, aot_mode, compile_only)
        return source.call(device_type, aot_mode, compile_only)
    if not source.fallback:
        raw = _call_provider(source, device_type, aot_mode, compile_only)
        return (
            None
            if raw is None and source.kind == "device interface"
            else _finished(raw, device_type, source.description)
        )
    try:
        return _finished(
            _call_provider(source, device_type, aot_mode, compile_only),
            device_type,
            source.description,
        )
    except ProviderRecursionError:
        raise
    except Exception as error:
        return _fall_back(source, device_type, error, default)


def _interface_options(
    call: Callable[[str, bool, bool], object], device_type: str, aot_mode: bool, compile_only: bool
) -> object | None:
    """torch 2.15's reading of ``get_cpp_device_options``: ``NotImplementedError`` is no
    answer, like ``None``."""
    try:
        return call(device_type, aot_mode, compile_only)
    except NotImplementedError:
        return None


def _fall_back(source: Source, device_type: str, error: Exception, default: Thunk) -> object:
    """A bundled provider failed: the device gets what it gets without this package, unless
    that fails too (then the provider's error says what to do)."""
    try:
        fallback = default()
    except Exception as below:
        add_note(error, f"and what {device_type!r} gets without it failed too: {below!r}")
        raise error from below
    warnings.warn(
        f"inductor-device-options: the bundled C++ options provider for {device_type!r} "
        f"({source.description}) cannot compute them ({type(error).__name__}: "
        f"{str(error).splitlines()[0]}); {device_type!r} gets what it gets without "
        "inductor-device-options",
        RuntimeWarning,
        stacklevel=2,
    )
    return fallback


def _recursion_error(device_type: str, description: str) -> ProviderRecursionError:
    return ProviderRecursionError(
        f"the C++ options provider {description} for device {device_type!r} asked for the "
        f"C++ options of {device_type!r} itself (get_cpp_torch_device_options, "
        "CppTorchDeviceOptions or get_cpp_device_options), which would call it again, "
        "without end. To extend torch's options for the device, call "
        "default_cpp_device_options(device_type, aot_mode, compile_only): it calls no provider",
        device_type=device_type,
        provider=description,
    )


def interface_description(interface: type) -> str:
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
    first by the rules of ``_options``, then, final, as the running ``CppBuilder`` renders
    it, the tools behind g++ receive it and the compiler takes it.

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
    from ..options.rendering import final_problems  # learns from torch: only when there is news

    final = fresh_options(options)
    _raise_first(final_problems(final), options, final, device_type, provider, custom_op_libs)
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


def _call_provider(source: Source, device_type: str, aot_mode: bool, compile_only: bool) -> object:
    """Call a source of the package's own door: an error it raises says so (a note, and
    the attribute :func:`~inductor_device_options._errors.raised_by_provider` reads)."""
    assert source.call is not None
    try:
        if source.kind == "device interface":
            return _interface_options(source.call, device_type, aot_mode, compile_only)
        return source.call(device_type, aot_mode, compile_only)
    except ProviderRecursionError:
        raise  # its message names the provider already
    except Exception as error:
        add_note(
            error,
            f"raised by the C++ options provider {source.description} for device {device_type!r}",
        )
        setattr(error, PROVIDER_ATTRIBUTE, source.description)
        raise


def _custom_op_libs() -> tuple[str, ...]:
    # Stock torch appends these for every device; a replaced function used to drop them.
    from torch._inductor import config

    return tuple(getattr(config.aot_inductor, "custom_op_libs", None) or ())


def interface_defining_cpp_options(device_type: str) -> type | None:
    """The device's DeviceInterface if it defines ``get_cpp_device_options`` itself: not
    the base class's (torch 2.15's answers None), which every interface inherits there."""
    from torch._dynamo import device_interface

    try:
        interface = device_interface.get_interface_for_device(device_type)
    except NotImplementedError:
        return None
    own = inspect.getattr_static(interface, "get_cpp_device_options", None)
    if own is None:
        return None
    inherited = inspect.getattr_static(
        device_interface.DeviceInterface, "get_cpp_device_options", None
    )
    return None if own is inherited else interface
