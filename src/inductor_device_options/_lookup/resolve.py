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

The package's own door (1, 3, 5) gets its guarantees: what the provider returns goes
through the validation pipeline (``options.pipeline``: validated, with
``config.aot_inductor.custom_op_libs`` as stock torch gives them, made fresh). torch's doors
(2, 4) give exactly what the callback returns, as torch defines them, unless the device is
guaranteed. Nothing here touches ``cpp_builder``: ``hook`` does, and hands torch's registry
in.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .. import _state
from .._errors import (
    PROVIDER_ATTRIBUTE,
    CppDeviceOptionsError,
    ProviderRecursionError,
    add_note,
)
from .._options.pipeline import finished
from . import registry as _registry
from .device_types import RESERVED_DEVICE_TYPES
from .interfaces import interface_defining_cpp_options, interface_description
from .provider_attributes import own_identity_of
from .registry import CppDeviceOptionsCallback

if TYPE_CHECKING:
    from importlib import metadata

SourceKind = Literal["registration", "cpp_builder registration", "entry point", "device interface"]
Thunk = Callable[[], Any]


class Source(NamedTuple):
    """The source that serves a device, as found by :func:`find_source`.

    ``call`` is None when the source was found without loading it (an entry point not yet
    imported). ``guaranteed``: its result is validated and completed by this package.
    ``fallback``: a bundled provider, which gives way to the function below when it fails.
    """

    kind: SourceKind
    description: str
    call: CppDeviceOptionsCallback | None
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
    from .entry_points import declared_entry_points, is_bundled  # only past registrations

    entry_point = declared_entry_points().get(device_type)
    if entry_point is not None and not is_bundled(entry_point):
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
    from .entry_points import describe_entry_point, find_provider, is_bundled

    bundled = is_bundled(entry_point)
    declared = Source("entry point", describe_entry_point(entry_point), None, True, bundled)
    if not load:
        return declared
    provider = find_provider(device_type)
    if provider is None:
        return declared
    if provider.kind == "registration":  # registered while its module was imported
        return Source("registration", provider.description, provider.callback, True)
    return declared._replace(call=provider.callback)


def serve(
    device_type: str,
    aot_mode: bool,
    compile_only: bool,
    *,
    torch_registry: Mapping[str, object] | None,
    serve_interfaces: bool,
    answer_below: Thunk,
    own_dispatcher: object = None,
) -> object | None:
    """What the sources give a normalized device, or None when none serves it.

    The package's own door gives a finished :class:`CppDeviceOptions` (shared: copy it);
    torch's doors give the callback's own result. ``answer_below()`` is what the device
    gets below this package; a bundled provider that fails gives way to it, with a warning.
    Raises ``ProviderRecursionError`` when the device's provider, directly or not, asks for
    the options of that same device.
    """
    # A provider that asks for its own device would otherwise recurse until RecursionError.
    active = _state.this_thread.serving
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
        return _served(source, device_type, aot_mode, compile_only, answer_below)
    finally:
        active.discard(device_type)


def _served(
    source: Source, device_type: str, aot_mode: bool, compile_only: bool, answer_below: Thunk
) -> object | None:
    assert source.call is not None
    if source.kind == "cpp_builder registration" and device_type in RESERVED_DEVICE_TYPES:
        answer_below()  # torch's branches for its own devices run first, as in the design
    if not source.guaranteed:  # torch's door: exactly what it gives
        if source.kind == "device interface":
            return _interface_options(source.call, device_type, aot_mode, compile_only)
        answer: object = source.call(device_type, aot_mode, compile_only)
        return answer
    if not source.fallback:
        raw = _call_provider(source, device_type, aot_mode, compile_only)
        return (
            None
            if raw is None and source.kind == "device interface"
            else finished(raw, device_type, source.description, _own_identity(source, device_type))
        )
    try:
        return finished(
            _call_provider(source, device_type, aot_mode, compile_only),
            device_type,
            source.description,
            _own_identity(source, device_type),
        )
    except ProviderRecursionError:
        raise
    except Exception as error:
        return _fall_back(source, device_type, error, answer_below)


def _interface_options(
    call: CppDeviceOptionsCallback, device_type: str, aot_mode: bool, compile_only: bool
) -> object | None:
    """torch 2.15's reading of ``get_cpp_device_options``: ``NotImplementedError`` is no
    answer, like ``None``."""
    try:
        answer: object = call(device_type, aot_mode, compile_only)
    except NotImplementedError:
        return None
    return answer


def _fall_back(source: Source, device_type: str, error: Exception, answer_below: Thunk) -> object:
    """A bundled provider failed: the device gets what it gets without this package, unless
    that fails too (then the provider's error says what to do)."""
    try:
        fallback = answer_below()
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


def _own_identity(source: Source, device_type: str) -> str | None:
    """The provider's own SDK identity (its ``sdk_identity``), raised as its own error."""
    try:
        return own_identity_of(source.call, device_type, source.description)
    except CppDeviceOptionsError:
        raise
    except Exception as error:
        add_note(
            error,
            f"raised by the sdk_identity of the C++ options provider {source.description} "
            f"for device {device_type!r}",
        )
        setattr(error, PROVIDER_ATTRIBUTE, source.description)
        raise


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
