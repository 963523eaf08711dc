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
``config.aot_inductor.custom_op_libs`` as torch itself gives them, made fresh). torch's doors
(2, 4) give exactly what the callback returns, as torch defines them, unless the device is
guaranteed. Nothing here touches ``cpp_builder``: ``hook`` does, and hands torch's registry
in.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _state
from .._errors import (
    RAISED_BY_ATTRIBUTE,
    ProviderRecursionError,
    add_note,
)
from .._options.pipeline import finished
from .._source import CppDeviceOptionsCallback, DeviceOptionsSource, FoundSource
from . import registry as _registry
from .device_types import RESERVED_DEVICE_TYPES
from .interfaces import interface_defining_cpp_options, interface_description
from .provider_attributes import own_identity_of

if TYPE_CHECKING:
    from importlib import metadata

    from .._options.model import CppDeviceOptions

#: The answer below, asked for when needed: what the device gets below the package's
#: sources (the function below's answer, computed at the first call).
AnswerBelow = Callable[[], Any]


def find_source(
    device_type: str,
    torch_registry: Mapping[str, object] | None,
    *,
    serve_interfaces: bool,
    own_dispatcher: object = None,
) -> FoundSource | None:
    """The source that serves a normalized device, in lookup order, or None; found without
    loading it (an entry point not yet imported has no provider yet: :func:`loaded`).

    ``torch_registry``: ``cpp_builder._cpp_device_options_registry`` (None: there is none).
    ``serve_interfaces``: whether this package may ask the device's DeviceInterface itself.
    ``own_dispatcher``: what this package registers in torch's registry (native mode), which
    stands for this package's registrations there.
    """
    registration = _registry.registration(device_type)
    if registration is not None:
        return registration
    callback = torch_registry.get(device_type) if torch_registry is not None else None
    if callback is not None and callback is not own_dispatcher:
        source = DeviceOptionsSource(
            device_type,
            "cpp_builder registration",
            _registry.describe_callable(callback),
            _registry.is_guaranteed(device_type),
        )
        # torch's registry holds what its register_cpp_device_options took: a callback.
        return FoundSource(source, provider=callback)  # type: ignore[arg-type]
    from .entry_points import declared_entry_points, is_bundled  # only past registrations

    entry_point = declared_entry_points().get(device_type)
    if entry_point is not None and not is_bundled(entry_point):
        return _declared(device_type, entry_point)
    interface = interface_defining_cpp_options(device_type)
    if interface is not None:
        if serve_interfaces and _registry.is_guaranteed(device_type):
            method = interface.get_cpp_device_options  # type: ignore[attr-defined]
            source = DeviceOptionsSource(
                device_type, "device interface", interface_description(interface), True
            )
            return FoundSource(
                source,
                provider=lambda _device, aot_mode, compile_only: method(aot_mode, compile_only),
            )
        return None  # the backend answers through its interface, which torch asks
    if entry_point is not None:  # bundled: only where the backend has no answer of its own
        return _declared(device_type, entry_point)
    return None


def _declared(device_type: str, entry_point: metadata.EntryPoint) -> FoundSource:
    """A declared entry point's source: loaded already, or to be loaded by :func:`loaded`."""
    from .entry_points import describe_entry_point, is_bundled

    loaded_already = _state.loaded.get(device_type)
    if loaded_already is not None:
        return loaded_already
    description = describe_entry_point(entry_point)
    return FoundSource(
        DeviceOptionsSource(device_type, "entry point", description, True, is_bundled(entry_point))
    )


def loaded(found: FoundSource) -> FoundSource:
    """``found`` with its provider: a declared entry point's module imported (a provider
    that registered while it was imported serves instead, as a registration always does).

    Raises ``ProviderLoadError`` or ``InvalidProviderError`` when the entry point cannot be
    loaded."""
    if found.provider is not None or not found.served:
        return found
    from .entry_points import own_source

    return own_source(found.device_type) or found


def serve_device(
    device_type: str,
    torch_registry: Mapping[str, object] | None,
    aot_mode: bool,
    compile_only: bool,
    answer_below: AnswerBelow,
    *,
    serve_interfaces: bool = True,
    own_dispatcher: object = None,
    check: Callable[[FoundSource], None] | None = None,
) -> CppDeviceOptions | object | None:
    """What the package's sources give a normalized device, found in lookup order
    (:func:`find_source`'s arguments) and served (:func:`serve`), or None: none serves it.
    ``check(found)`` runs before the provider is loaded or called (torch 2.15's
    ``cpp_stdlib=``, ``_hook/serve``)."""
    found = find_source(
        device_type,
        torch_registry,
        serve_interfaces=serve_interfaces,
        own_dispatcher=own_dispatcher,
    )
    if found is None:
        return None
    if check is not None:
        check(found)
    return serve(found, aot_mode, compile_only, answer_below=answer_below)


def serve(
    found: FoundSource | None,
    aot_mode: bool,
    compile_only: bool,
    *,
    answer_below: AnswerBelow,
) -> CppDeviceOptions | object | None:
    """What ``found`` (by :func:`find_source`) gives its device, or None when there is none
    or it has no provider.

    The package's own door gives a finished :class:`CppDeviceOptions` (shared: copy it);
    torch's doors give the callback's own result. ``answer_below()`` is what the device
    gets below this package: offered to the provider (``default_cpp_device_options``) while
    it runs, and what a bundled provider that fails gives way to, with a warning. Raises
    ``ProviderRecursionError`` when the device's provider, directly or not, asks for the
    options of that same device.
    """
    if found is None:
        return None
    found = loaded(found)
    provider = found.provider
    if provider is None:
        return None
    # A provider that asks for its own device would otherwise recurse until RecursionError.
    this_thread = _state.this_thread
    device_type = found.device_type
    if device_type in this_thread.serving:
        raise _recursion_error(device_type, found.description)
    this_thread.serving.add(device_type)
    # Computed once for the lookup, whoever asks: the provider, torch's branches, a fallback.
    answer_below = _once(answer_below)
    this_thread.offers.append((device_type, aot_mode, compile_only, answer_below))
    try:
        return _served(found.source, provider, aot_mode, compile_only, answer_below)
    finally:
        this_thread.offers.pop()
        this_thread.serving.discard(device_type)


def _once(answer_below: AnswerBelow) -> AnswerBelow:
    """``answer_below``, computed at the first call only."""
    computed: list[object] = []

    def once() -> object:
        if not computed:
            computed.append(answer_below())
        return computed[0]

    return once


def _served(
    source: DeviceOptionsSource,
    provider: CppDeviceOptionsCallback,
    aot_mode: bool,
    compile_only: bool,
    answer_below: AnswerBelow,
) -> CppDeviceOptions | object | None:
    device_type = source.device_type
    if source.kind == "cpp_builder registration" and device_type in RESERVED_DEVICE_TYPES:
        # The design's get_cpp_torch_device_options (../shared/seed, upstream/pytorch's patch)
        # runs its cuda/xpu/mps branches before it asks the registry: so does the package.
        answer_below()
    if not source.guaranteed:  # torch's door: exactly what it gives
        if source.kind == "device interface":
            return _interface_options(provider, device_type, aot_mode, compile_only)
        answer: object = provider(device_type, aot_mode, compile_only)
        return answer
    try:
        raw = _call_provider(source, provider, aot_mode, compile_only)
        if raw is None and source.kind == "device interface":
            return None
        own_identity = own_identity_of(provider, device_type, source.description)
        return finished(raw, device_type, source.description, own_identity)
    except ProviderRecursionError:
        raise
    except Exception as error:
        if not source.fallback:
            raise
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


def _fall_back(
    source: DeviceOptionsSource, device_type: str, error: Exception, answer_below: AnswerBelow
) -> object:
    """A bundled provider failed: the device gets what it gets without this package, unless
    that fails too (then the provider's error says what to do)."""
    try:
        fallback = answer_below()
    except Exception as failed:
        add_note(error, f"and what {device_type!r} gets without it failed too: {failed!r}")
        raise error from failed
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
        description=description,
    )


def _call_provider(
    source: DeviceOptionsSource,
    provider: CppDeviceOptionsCallback,
    aot_mode: bool,
    compile_only: bool,
) -> object:
    """Call a source of the package's own door: an error it raises says so (a note, and
    the attribute :func:`~inductor_device_options._errors.raised_by_provider` reads)."""
    device_type = source.device_type
    try:
        if source.kind == "device interface":
            return _interface_options(provider, device_type, aot_mode, compile_only)
        return provider(device_type, aot_mode, compile_only)
    except ProviderRecursionError:
        raise  # its message names the provider already
    except Exception as error:
        add_note(
            error,
            f"raised by the C++ options provider {source.description} for device {device_type!r}",
        )
        setattr(error, RAISED_BY_ATTRIBUTE, source.description)
        raise
