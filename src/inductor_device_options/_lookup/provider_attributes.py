"""What a provider function may carry besides its options: its per-device doors.

A provider is a plain function; a backend sets these attributes on it where it defines it
(``cpp_device_options.inductor_headers = ...``). A provider without them works the same.
Each is read when the door is asked (``sdk_identity`` at each lookup, ``removed_cflags`` at
each build, ...), acts for the declaring device only, and is checked here: what a door
cannot use, and what the attribute's callable raises (its cause), is an
:class:`~inductor_device_options.InvalidProviderAttributeError` naming the device, the provider
and the attribute; ``sdk_identity``, asked at each lookup as the provider is, raises as the
provider does: its own exception, with a note. ``doctor_hints`` is read by ``_diagnose/`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._errors import (
    RAISED_BY_ATTRIBUTE,
    CppDeviceOptionsError,
    InvalidProviderAttributeError,
    add_note,
)

T = TypeVar("T")

#: ``sdk_identity(device_type)``: a str that names the SDK the options point at (such as its
#: version), or None; it joins the device's SDK identity, which is otherwise computed from
#: the contents of the device's headers and libraries.
IDENTITY_ATTRIBUTE = "sdk_identity"

#: ``inductor_headers(device_type, aot_mode)``: the header names the device's generated C++
#: includes instead of torch's default device header (the first is the one precompiled).
HEADERS_ATTRIBUTE = "inductor_headers"

#: ``removed_cflags``: cflags in torch's spelling, without the ``-`` (``"march=native"``),
#: that leave every g++ command made with the device's options (a sequence of str, or a
#: callable ``(device_type)`` returning one).
REMOVED_CFLAGS_ATTRIBUTE = "removed_cflags"

#: ``aoti_shim_ops``: ``"aten.<op>.<overload>"`` entries whose C shims the device's SDK
#: declares (``aoti_torch_<device>_<op>[_<overload>]``): Inductor calls them instead of the
#: proxy executor / ``aoti_torch_call_dispatcher`` (a collection of str, or a callable
#: ``(device_type)`` returning one).
SHIM_OPS_ATTRIBUTE = "aoti_shim_ops"

#: ``cache_key_details(device_type)``: a JSON-serialisable value, or None, asked anew for
#: each compile with something on the device; it joins that compile's FX graph and
#: AOTAutograd cache keys.
CACHE_KEY_DETAILS_ATTRIBUTE = "cache_key_details"

#: ``aoti_runner(so_path, device)``: an object with ``run(flat_inputs)`` and
#: ``get_call_spec()``, with which ``torch._export.aot_load`` runs the device's ``.so``.
RUNNER_ATTRIBUTE = "aoti_runner"

#: ``doctor_hints``: a mapping with optional keys ``"setup"`` (str, added to doctor's fix when
#: the SDK or its environment is missing), ``"loader"`` (str, added to the dynamic loader's
#: fix), ``"headers"`` (str, added to the missing headers' fix) and ``"absent"`` (a callable
#: returning None where the device can be present, else why it cannot, as a str).
HINTS_ATTRIBUTE = "doctor_hints"


def hints_of(provider: object) -> Mapping[str, object]:
    """The ``doctor_hints`` ``provider`` carries, or an empty mapping."""
    hints = getattr(provider, HINTS_ATTRIBUTE, None)
    return hints if isinstance(hints, Mapping) else {}


def own_identity_of(provider: object, device_type: str, description: str) -> str | None:
    """What ``provider.sdk_identity(device_type)`` says, or None where it has none.

    Raises ``InvalidProviderAttributeError`` when the attribute is not callable or does not
    return a str or None; what it raises itself propagates, with a note."""
    function = getattr(provider, IDENTITY_ATTRIBUTE, None)
    if function is None:
        return None
    identity = (
        _identity_asked(function, device_type, description)
        if callable(function)
        else function  # the identity itself, a str
    )
    if identity is None or type(identity) is str:
        return identity
    raise _invalid(
        IDENTITY_ATTRIBUTE,
        device_type,
        description,
        identity,
        "a str or None",
        f"make {IDENTITY_ATTRIBUTE}(device_type) return the SDK's identity as a str, or None",
    )


def _identity_asked(
    function: Callable[[str], object], device_type: str, description: str
) -> object:
    """``sdk_identity`` is asked at each lookup, as the provider itself is: what it raises
    propagates as the provider's own would, with its type and a note."""
    try:
        return function(device_type)
    except CppDeviceOptionsError:
        raise
    except Exception as error:
        add_note(
            error,
            f"raised by the {IDENTITY_ATTRIBUTE} of the C++ options provider {description} "
            f"for device {device_type!r}",
        )
        setattr(error, RAISED_BY_ATTRIBUTE, description)
        raise


_CFLAG = re.compile(r"[A-Za-z0-9_+][^\s]*")


def removed_cflags_of(provider: object, device_type: str, description: str) -> frozenset[str]:
    """The cflags ``provider`` removes from the device's builds (empty where it has none)."""
    return _string_set(
        provider,
        REMOVED_CFLAGS_ATTRIBUTE,
        device_type,
        description,
        _CFLAG,
        "cflags in torch's spelling, without the leading '-' (['march=native'])",
    )


#: ``inductor_fallback_ops``' keys: ``aten.<op>.<overload>``.
SHIM_OP = re.compile(r"aten\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")


def shim_ops_of(provider: object, device_type: str, description: str) -> frozenset[str]:
    """The ``aten.<op>.<overload>`` entries whose C shims the device's SDK declares."""
    return _string_set(
        provider,
        SHIM_OPS_ATTRIBUTE,
        device_type,
        description,
        SHIM_OP,
        "entries as torchgen's inductor_fallback_ops spells them (['aten.mm.out'])",
    )


def _string_set(
    provider: object,
    attribute: str,
    device_type: str,
    description: str,
    pattern: re.Pattern[str],
    expected: str,
) -> frozenset[str]:
    """An attribute that holds str (or a callable ``(device_type)`` giving them), each
    matching ``pattern``; empty where the provider has none."""
    value = getattr(provider, attribute, None)
    if value is None:
        return frozenset()
    if callable(value):
        value = _asked(value, attribute, device_type, description, device_type)
    return frozenset(_strings(value, attribute, device_type, description, pattern, expected))


def shim_name(device_type: str, op: str) -> str:
    """The C shim torch names for ``op`` (``aten.<op>.<overload>``) on the device:
    ``aoti_torch_<device>_<op>`` for ``.default``, ``aoti_torch_<device>_<op>_<overload>``."""
    # As torch 2.6-2.15's CppWrapperCpu.get_c_shim_func_name names at::_ops::<op>::call.
    match = SHIM_OP.fullmatch(op)
    assert match is not None, op
    name, overload = match.groups()
    suffix = name if overload == "default" else f"{name}_{overload}"
    return f"aoti_torch_{device_type}_{suffix}"


def headers_of(
    provider: object, device_type: str, aot_mode: bool, description: str
) -> tuple[str, ...] | None:
    """The header names the device's generated code includes, or None where the provider
    declares none. A name is written between ``<>``: no space, quote or ``>`` in it."""
    function = getattr(provider, HEADERS_ATTRIBUTE, None)
    if function is None:
        return None
    if not callable(function):
        raise _not_callable(HEADERS_ATTRIBUTE, device_type, description, function)
    names = _asked(function, HEADERS_ATTRIBUTE, device_type, description, device_type, aot_mode)
    headers = _strings(
        names,
        HEADERS_ATTRIBUTE,
        device_type,
        description,
        _HEADER_NAME,
        "header names as written between <> (['my_sdk/inductor.h'])",
    )
    if not headers:
        raise _invalid(
            HEADERS_ATTRIBUTE,
            device_type,
            description,
            names,
            "at least one header name",
            "return the headers the device's generated code includes, or set no "
            f"{HEADERS_ATTRIBUTE} to keep torch's",
        )
    return headers


_HEADER_NAME = re.compile(r"[^\s<>\"']+")


def cache_key_detail_of(provider: object, device_type: str, description: str) -> str | None:
    """What ``provider.cache_key_details(device_type)`` gives, as canonical JSON text, or
    None where it has none or gives None."""
    function = getattr(provider, CACHE_KEY_DETAILS_ATTRIBUTE, None)
    if function is None:
        return None
    if not callable(function):
        raise _not_callable(CACHE_KEY_DETAILS_ATTRIBUTE, device_type, description, function)
    detail = _asked(function, CACHE_KEY_DETAILS_ATTRIBUTE, device_type, description, device_type)
    if detail is None:
        return None
    try:
        _refuse_non_str_keys(detail)
        return json.dumps(detail, sort_keys=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise _invalid(
            CACHE_KEY_DETAILS_ATTRIBUTE,
            device_type,
            description,
            detail,
            f"a JSON-serialisable value or None ({error})",
            "return str, int, float, bool, None, and lists and str-keyed dicts of them",
        ) from None


def _refuse_non_str_keys(value: object) -> None:
    """json.dumps writes a dict's int, float, bool and None keys as str: ``{1: x}`` and
    ``{"1": x}`` would key a compile alike. Refused, not changed silently."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__} {key!r}")
            _refuse_non_str_keys(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_non_str_keys(item)


def runner_factory_of(
    provider: object, device_type: str, description: str
) -> Callable[[str, str], Any] | None:
    """The provider's ``aoti_runner``, or None where it has none."""
    factory: object = getattr(provider, RUNNER_ATTRIBUTE, None)
    if factory is None:
        return None
    if not callable(factory):
        raise _not_callable(RUNNER_ATTRIBUTE, device_type, description, factory)
    return factory


def runner_of(
    provider: object, device_type: str, description: str, so_path: str, device: str
) -> Any:
    """The runner ``provider.aoti_runner(so_path, device)`` gives, checked for ``run`` and
    ``get_call_spec``, or None where the provider has no ``aoti_runner``."""
    factory = runner_factory_of(provider, device_type, description)
    if factory is None:
        return None
    runner = _asked(factory, RUNNER_ATTRIBUTE, device_type, description, so_path, device)
    missing = [
        name for name in ("run", "get_call_spec") if not callable(getattr(runner, name, None))
    ]
    if missing:
        raise _invalid(
            RUNNER_ATTRIBUTE,
            device_type,
            description,
            runner,
            "a runner with run(flat_inputs) and get_call_spec() (it lacks "
            + " and ".join(f"{name}()" for name in missing)
            + ")",
            "return the device's AOTIModelContainerRunner, as torch's "
            "AOTIModelContainerRunnerCpu(so_path, 1) for cpu",
        )
    return runner


def _asked(
    function: Callable[..., T], attribute: str, device_type: str, description: str, *args: object
) -> T:
    """``function(*args)``. What it raises becomes an ``InvalidProviderAttributeError`` naming
    the door, with the exception as its cause: torch wraps what a compile raises into errors
    of its own (``BackendCompilerFailed``) whose message keeps the message alone, not notes."""
    if not callable(function):
        raise _not_callable(attribute, device_type, description, function)
    try:
        return function(*args)
    except CppDeviceOptionsError:
        raise
    except Exception as error:
        raised = InvalidProviderAttributeError(
            f"the C++ options provider {description} for device {device_type!r}: its "
            f"{attribute} raised {type(error).__name__}: {error}",
            device_type=device_type,
            description=description,
            fix=f"fix the provider's {attribute}, or set none",
            attribute=attribute,
            value=function,
        )
        setattr(raised, RAISED_BY_ATTRIBUTE, description)
        raise raised from error


def _strings(
    value: object,
    attribute: str,
    device_type: str,
    description: str,
    pattern: re.Pattern[str],
    expected: str,
) -> tuple[str, ...]:
    """``value`` as a tuple of str each matching ``pattern``: a list, tuple, set or a
    dict's keys (torch 2.13's inductor_fallback_ops is a dict, 2.6's a set), never one str."""
    if isinstance(value, (str, bytes)) or not isinstance(
        value, (list, tuple, set, frozenset, Mapping)
    ):
        raise _invalid(attribute, device_type, description, value, expected, f"give {expected}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not pattern.fullmatch(item):
            raise _invalid(
                attribute,
                device_type,
                description,
                value,
                f"{expected}; {item!r} is not one",
                f"give {expected}",
            )
    return items


def _not_callable(
    attribute: str, device_type: str, description: str, value: object
) -> InvalidProviderAttributeError:
    return _invalid(
        attribute,
        device_type,
        description,
        value,
        "a callable",
        f"set {attribute} to a function (see the backend author's guide)",
    )


def _invalid(
    attribute: str, device_type: str, description: str, value: object, expected: str, fix: str
) -> InvalidProviderAttributeError:
    return InvalidProviderAttributeError(
        f"the C++ options provider {description} for device {device_type!r}: its "
        f"{attribute} gave {type(value).__name__} {_short(value)}, not {expected}",
        device_type=device_type,
        description=description,
        fix=fix,
        attribute=attribute,
        value=value,
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
