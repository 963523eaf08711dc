"""Registrations through this package's own door, and the opt-in that gives torch's doors
the package's guarantees.

Nothing here imports torch. Lookup order for a device, among the package's providers:
explicit registration > an entry point of another distribution > the entry point this
package bundles (a fallback: ``entry_points``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .. import _state
from .._errors import InvalidProviderError
from .._source import CppDeviceOptionsCallback, DeviceOptionsSource, FoundSource
from .device_types import (
    RESERVED_DEVICE_TYPES,
    cpu_labelled_builds_fix,
    normalize_device_type,
    refusal,
    refuse,
)

#: The entry point group a distribution declares providers in: name = device type,
#: value = "module:callable" with the callback contract.
ENTRY_POINT_GROUP = "inductor_device_options"

#: ``device[,device...]``: devices served through torch's own doors that get this
#: package's guarantees (see :func:`guarantee_cpp_device_options`), in every process.
GUARANTEE_ENV = "INDUCTOR_DEVICE_OPTIONS_GUARANTEE"


def describe_callable(callback: object) -> str:
    """A name a person can find in the code: ``module.qualname``."""
    module = getattr(callback, "__module__", None)
    qualname = getattr(callback, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return repr(callback)


def register_cpp_device_options(device_type: str, callback: CppDeviceOptionsCallback) -> None:
    """Give Inductor ``callback``'s C++ options for ``device_type``.

    From then on every ``CppTorchDeviceOptions(device_type=...)`` that Inductor builds for
    the device (cpp_wrapper mode, AOTInductor) carries what the callback returns, checked
    and completed by this package: validated as g++ and the tools behind it will receive
    it, with ``config.aot_inductor.custom_op_libs`` appended, include and library dirs
    resolved to real paths, and an SDK identity definition. Registering imports no
    ``torch._inductor``: call it at import time of the backend.

    Args:
        device_type: the device, as torch names it: ``"npu"`` (an index, ``"npu:0"``, is
            dropped). Lower-case letters and ``_``: what Inductor can ask for.
        callback: called as ``callback(device_type, aot_mode, compile_only)`` with the
            device type without index; returns the seven lists, a
            :class:`CppDeviceOptions`, or a plain tuple or list of seven lists of ``str``:
            the complete options. To extend torch's own options rather than repeat them, start from
            :func:`default_cpp_device_options`.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name Inductor can ask for.
        ReservedDeviceTypeError: cpu, cuda, xpu or mps: torch computes those itself.
        InvalidProviderError: ``callback`` is not callable.

    Registering a device again warns and replaces the earlier callback (registering the
    same callback again is silent). Errors in what the callback returns are raised when
    Inductor first asks, before anything reaches g++
    (:class:`InvalidCppDeviceOptionsError`).

    Example:
        >>> import inductor_device_options as ido
        >>> def acme_options(device_type, aot_mode, compile_only):
        ...     options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        ...     options.definitions.append("USE_ACME")
        ...     options.include_dirs.append("/opt/acme/include")
        ...     return options
        >>> ido.register_cpp_device_options("acme", acme_options)
        >>> options = ido.get_cpp_device_options("acme")
        >>> "USE_ACME" in options.definitions, options.include_dirs[-1]
        (True, '/opt/acme/include')
        >>> ido.register_cpp_device_options("ACME", acme_options)
        Traceback (most recent call last):
        ...
        inductor_device_options.InvalidDeviceTypeError: cannot register C++ device options
        for 'ACME' ...: torch names devices in lower case: Inductor asks for 'acme', never
        'ACME', so the registration would never apply
        >>> ido.unregister_cpp_device_options("acme")
        True
    """
    registration = _checked_registration(device_type, callback)
    previous = _put(registration)
    if previous is not None and not _same_callable(previous.provider, callback):
        warnings.warn(
            f"C++ device options for {registration.device_type!r} are already registered by "
            f"{previous.description}; overwriting with {registration.description}",
            stacklevel=2,
        )


def _same_callable(first: object, second: object) -> bool:
    """The same function, or the same method of the same object (``obj.method`` is a new
    bound method at each access)."""
    if first is second:
        return True
    self_ = getattr(first, "__self__", None)
    func = getattr(first, "__func__", None)
    return (
        func is not None
        and func is getattr(second, "__func__", None)
        and self_ is getattr(second, "__self__", None)
    )


def _put(registration: FoundSource) -> FoundSource | None:
    with _state.lock:
        previous = _state.registered.get(registration.device_type)
        _state.registered[registration.device_type] = registration
    for listener in _state.registration_listeners:
        listener(registration.device_type)
    return previous


def _checked_registration(device_type: str, callback: CppDeviceOptionsCallback) -> FoundSource:
    name = normalize_device_type(device_type)
    refused = refusal(name)
    if refused is not None:
        description = describe_callable(callback)
        if refused.reserved:
            why = (
                f"torch computes the options of {', '.join(sorted(RESERVED_DEVICE_TYPES))} "
                f"itself, and they must stay exactly as torch computes them"
                f"{cpu_labelled_builds_fix(name)}"
            )
        else:
            why = f"{refused.reason}, so the registration would never apply"
        refuse(
            name,
            refused,
            f"cannot register C++ device options for {name!r} (callback {description}): {why}",
            description,
        )
    if not callable(callback):
        raise InvalidProviderError(
            f"callback for device {name!r} must be callable as "
            f"callback(device_type, aot_mode, compile_only), got {type(callback).__name__} "
            f"{callback!r}",
            device_type=name,
            description=repr(callback),
        )
    return FoundSource(
        DeviceOptionsSource(name, "registration", describe_callable(callback), True),
        provider=callback,
    )


def unregister_cpp_device_options(
    device_type: str, callback: CppDeviceOptionsCallback | None = None
) -> bool:
    """Remove the registration of ``device_type`` made with
    :func:`register_cpp_device_options`.

    Args:
        device_type: ``"npu"`` or ``"npu:0"``.
        callback: remove the registration only if it is this callback's (a backend that
            unregisters its own provider leaves another's alone). None: whichever it is.

    Returns:
        True if there was one (``callback``'s, when given). The device then gets its options
        from the next source in the lookup order (an entry point, its DeviceInterface,
        torch).

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.register_cpp_device_options("widget", lambda d, a, c: ([], [], [], [], [], [], []))
        >>> ido.unregister_cpp_device_options("widget"), ido.unregister_cpp_device_options("widget")
        (True, False)
    """
    name = normalize_device_type(device_type)
    with _state.lock:
        registered = _state.registered.get(name)
        if registered is None:
            return False
        if callback is not None and not _same_callable(registered.provider, callback):
            return False
        del _state.registered[name]
        return True


@contextmanager
def registered_cpp_device_options(
    device_type: str, callback: CppDeviceOptionsCallback
) -> Iterator[None]:
    """Register ``callback`` for ``device_type`` for the ``with`` block, then restore the
    registration that was there before (or none): for tests.

    Args and raises: as :func:`register_cpp_device_options`, without its warning.

    Example:
        >>> import inductor_device_options as ido
        >>> def acme_options(device_type, aot_mode, compile_only):
        ...     return (["USE_ACME"], [], [], [], [], [], [])
        >>> with ido.testing.registered_cpp_device_options("acme", acme_options):
        ...     ido.get_cpp_device_options("acme").definitions
        ['USE_ACME']
        >>> ido.introspection.device_options_source("acme").kind
        'torch'
    """
    registration = _checked_registration(device_type, callback)
    previous = _put(registration)
    try:
        yield
    finally:
        with _state.lock:
            if previous is None:
                _state.registered.pop(registration.device_type, None)
            else:
                _state.registered[registration.device_type] = previous


def registration(device_type: str) -> FoundSource | None:
    # One dict read, atomic: every lookup of a served device makes it, without the lock.
    return _state.registered.get(device_type)


# --- the opt-in to the package's guarantees for torch's doors -----------------------------


def guarantee_cpp_device_options(device_type: str) -> None:
    """Give a device served through torch's own doors this package's guarantees.

    torch's doors — ``torch._inductor.cpp_builder.register_cpp_device_options`` and
    ``DeviceInterface.get_cpp_device_options`` — get exactly what the backend returns, as
    torch defines them. After this call, what they return for ``device_type`` is checked and
    completed as for :func:`register_cpp_device_options`: validated, with
    ``custom_op_libs``, real paths and the SDK identity. To reach every process (compile
    subprocesses, distributed ranks), set ``INDUCTOR_DEVICE_OPTIONS_GUARANTEE=npu`` (a
    comma-separated list) instead.

    Args:
        device_type: ``"npu"`` or ``"npu:0"``.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name Inductor can ask for.
        ReservedDeviceTypeError: cpu, cuda, xpu or mps.

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder as cpp_builder
        >>> def options(device_type, aot_mode, compile_only):
        ...     return (["USE_ACME"], ["relative/include"], [], [], [], [], [])
        >>> cpp_builder.register_cpp_device_options("acme", options)
        >>> ido.get_cpp_device_options("acme").include_dirs  # torch's door: as returned
        ['relative/include']
        >>> ido.guarantee_cpp_device_options("acme")
        >>> ido.get_cpp_device_options("acme")
        Traceback (most recent call last):
        ...
        inductor_device_options.InvalidCppDeviceOptionsError: C++ options for device 'acme'
        from ...options: include_dirs[0] = 'relative/include' is relative: ...
    """
    name = normalize_device_type(device_type)
    refused = refusal(name)
    if refused is not None:
        why = "torch computes them itself" if refused.reserved else refused.reason
        refuse(name, refused, f"cannot guarantee the C++ options of {name!r}: {why}")
    with _state.lock:
        _state.guaranteed.add(name)


def is_guaranteed(device_type: str) -> bool:
    """Whether ``device_type``'s options from torch's doors get the package's guarantees."""
    if device_type in _state.guaranteed:
        return True
    listed = os.environ.get(GUARANTEE_ENV, "")
    return device_type in {name.strip() for name in listed.split(",")}
