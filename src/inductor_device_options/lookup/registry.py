"""Who provides a device's C++ options through this package's own door: registrations and
declared entry points.

Nothing here imports torch. Lookup order for a device, among these:
explicit registration > an entry point of another distribution > the entry point this
package bundles (a fallback, see ``_resolve``). Two distributions declaring the same device
are ordered by a fixed rule (:func:`declared_entry_points`), which the user may override.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._errors import (
    InvalidDeviceTypeError,
    InvalidProviderError,
    ProviderLoadError,
    ReservedDeviceTypeError,
)

if TYPE_CHECKING:
    from importlib import metadata

#: The entry point group a distribution declares providers in: name = device type,
#: value = "module:callable" with the callback contract.
ENTRY_POINT_GROUP = "inductor_device_options"

#: Devices whose options torch computes itself; their behaviour must never change.
RESERVED_DEVICE_TYPES = frozenset({"cpu", "cuda", "xpu", "mps"})

#: ``device=distribution[,device=distribution...]``: which distribution's entry point
#: serves a device that several distributions declare.
PREFER_ENV = "INDUCTOR_DEVICE_OPTIONS_PREFER"
#: ``device[,device...]``: devices served through torch's own doors that get this
#: package's guarantees (see :func:`guarantee_cpp_device_options`), in every process.
GUARANTEE_ENV = "INDUCTOR_DEVICE_OPTIONS_GUARANTEE"

#: This package's own distribution: its entry points are the bundled fallbacks.
BUNDLED_DISTRIBUTION = "inductor-device-options"

CppDeviceOptionsCallback = Callable[[str, bool, bool], Any]

# How the package's own lookups read a device type; what torch can ask for is stricter.
_DEVICE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEVICE_INDEX = re.compile(r"[0-9]+")
# torch.device() parses a device type of letters and '_' only, and torch names every
# device in lower case: Inductor asks for nothing else.
_TORCH_DEVICE_NAME = re.compile(r"[a-z_]+")


class Provider(NamedTuple):
    """A callback that computes a device's options, and where it came from."""

    device_type: str
    callback: CppDeviceOptionsCallback
    source: Literal["registration", "entry point"]
    description: str
    #: A bundled entry point: it serves only when the backend gives no answer of its own.
    bundled: bool = False


_lock = threading.RLock()
_registered: dict[str, Provider] = {}
_declarations: _Declarations | None = None
_loaded: dict[str, Provider] = {}
_guaranteed: set[str] = set()
# Called with the device type after each registration: the hook uses it to forward
# registrations to torch's own registry when torch has one.
_registration_listeners: list[Callable[[str], None]] = []


def normalize_device_type(device_type: object) -> str:
    """``"npu"`` and ``"npu:0"`` name the same device: return ``"npu"``."""
    if not isinstance(device_type, str):
        raise InvalidDeviceTypeError(
            f"device_type must be a str such as 'npu', got {type(device_type).__name__} "
            f"{device_type!r}",
            device_type=None,
        )
    name, colon, index = device_type.partition(":")
    if not _DEVICE_NAME.fullmatch(name) or (colon and not _DEVICE_INDEX.fullmatch(index)):
        raise InvalidDeviceTypeError(
            f"device_type {device_type!r} is not a device name: expected a name such as "
            "'npu', optionally with an index ('npu:0')",
            device_type=device_type,
        )
    return name


def _unaskable(name: str) -> str | None:
    """Why Inductor can never ask for device type ``name``, or None."""
    if _TORCH_DEVICE_NAME.fullmatch(name):
        return None
    if _TORCH_DEVICE_NAME.fullmatch(name.lower()):
        return (
            f"torch names devices in lower case: Inductor asks for {name.lower()!r}, never {name!r}"
        )
    return (
        f"torch.device() parses device types of letters and '_' only ({name!r} has a digit): "
        "Inductor never asks for it"
    )


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
    resolved to real paths, and an SDK fingerprint definition. Registering imports no
    ``torch._inductor``: call it at import time of the backend.

    Args:
        device_type: the device, as torch names it: ``"npu"`` (an index, ``"npu:0"``, is
            dropped). Lower-case letters and ``_``: what Inductor can ask for.
        callback: called as ``callback(device_type, aot_mode, compile_only)`` with the
            device type without index; returns the seven lists, a
            :class:`CppDeviceOptions` or a plain 7-tuple of lists of ``str``, the complete
            options. To extend torch's own options rather than repeat them, start from
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
    provider = _checked_provider(device_type, callback)
    previous = _put(provider)
    if previous is not None and not _same_callable(previous.callback, provider.callback):
        warnings.warn(
            f"C++ device options for {provider.device_type!r} are already registered by "
            f"{previous.description}; overwriting with {provider.description}",
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


def _put(provider: Provider) -> Provider | None:
    with _lock:
        previous = _registered.get(provider.device_type)
        _registered[provider.device_type] = provider
    for listener in _registration_listeners:
        listener(provider.device_type)
    return previous


def _checked_provider(device_type: str, callback: CppDeviceOptionsCallback) -> Provider:
    name = normalize_device_type(device_type)
    if name in RESERVED_DEVICE_TYPES:
        raise ReservedDeviceTypeError(
            f"cannot register C++ device options for {name!r} (callback "
            f"{describe_callable(callback)}): torch computes the options of "
            f"{', '.join(sorted(RESERVED_DEVICE_TYPES))} itself, and they must stay exactly "
            f"as torch computes them{_cpu_labelled_builds_fix(name)}",
            device_type=name,
            provider=describe_callable(callback),
        )
    unaskable = _unaskable(name)
    if unaskable is not None:
        raise InvalidDeviceTypeError(
            f"cannot register C++ device options for {name!r} (callback "
            f"{describe_callable(callback)}): {unaskable}, so the registration would never "
            "apply",
            device_type=name,
            provider=describe_callable(callback),
        )
    if not callable(callback):
        raise InvalidProviderError(
            f"callback for device {name!r} must be callable as "
            f"callback(device_type, aot_mode, compile_only), got {type(callback).__name__} "
            f"{callback!r}",
            device_type=name,
            provider=repr(callback),
        )
    return Provider(name, callback, "registration", describe_callable(callback))


def _cpu_labelled_builds_fix(name: str) -> str:
    """What a backend whose builds ask for "cpu" does instead of registering "cpu": every
    CPU build asks for it, so extending it would change the builds of every CPU graph."""
    if name != "cpu":
        return ""
    device = _privateuse1_name() or "DEVICE"
    return (
        ". If your backend's cpp_wrapper builds ask for 'cpu', its C++ wrapper codegen (a "
        "CppWrapperCpu subclass) does not report its device: set "
        f"self.device = {device!r} in its __init__ before super().__init__(), register the "
        f"provider for {device!r}, and ship torch/csrc/inductor/cpp_wrapper/{device}.h in an "
        f"include dir it adds (`inductor-device-options doctor {device}` checks all three)"
    )


def _privateuse1_name() -> str | None:
    """The name the PrivateUse1 backend took, where torch is imported and it was renamed."""
    torch = sys.modules.get("torch")
    get_name = getattr(getattr(torch, "_C", None), "_get_privateuse1_backend_name", None)
    if get_name is None:
        return None
    name = get_name()
    return name if isinstance(name, str) and name != "privateuseone" else None


def unregister_cpp_device_options(device_type: str) -> bool:
    """Remove the registration of ``device_type`` made with
    :func:`register_cpp_device_options`.

    Args:
        device_type: ``"npu"`` or ``"npu:0"``.

    Returns:
        True if there was one. The device then gets its options from the next source in
        the lookup order (an entry point, its DeviceInterface, torch).

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.register_cpp_device_options("widget", lambda d, a, c: ([], [], [], [], [], [], []))
        >>> ido.unregister_cpp_device_options("widget"), ido.unregister_cpp_device_options("widget")
        (True, False)
    """
    name = normalize_device_type(device_type)
    with _lock:
        return _registered.pop(name, None) is not None


def registered_device_types() -> list[str]:
    """Device types with an explicit registration through this package, sorted.

    Devices registered through ``torch._inductor.cpp_builder.register_cpp_device_options``
    are added by the package's top-level :func:`registered_device_types`.
    """
    with _lock:
        return sorted(_registered)


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
        >>> with ido.registered_cpp_device_options("acme", acme_options):
        ...     ido.get_cpp_device_options("acme").definitions
        ['USE_ACME']
        >>> ido.device_options_source("acme").source
        'torch'
    """
    provider = _checked_provider(device_type, callback)
    previous = _put(provider)
    try:
        yield
    finally:
        with _lock:
            if previous is None:
                _registered.pop(provider.device_type, None)
            else:
                _registered[provider.device_type] = previous


def registered_provider(device_type: str) -> Provider | None:
    with _lock:
        return _registered.get(device_type)


# --- the opt-in to the package's guarantees for torch's doors -----------------------------


def guarantee_cpp_device_options(device_type: str) -> None:
    """Give a device served through torch's own doors this package's guarantees.

    torch's doors — ``torch._inductor.cpp_builder.register_cpp_device_options`` and
    ``DeviceInterface.get_cpp_device_options`` — get exactly what the backend returns, as
    torch defines them. After this call, what they return for ``device_type`` is checked and
    completed as for :func:`register_cpp_device_options`: validated, with
    ``custom_op_libs``, real paths and the SDK fingerprint. To reach every process (compile
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
    if name in RESERVED_DEVICE_TYPES:
        raise ReservedDeviceTypeError(
            f"cannot guarantee the C++ options of {name!r}: torch computes them itself",
            device_type=name,
        )
    unaskable = _unaskable(name)
    if unaskable is not None:
        raise InvalidDeviceTypeError(f"{unaskable}", device_type=name)
    with _lock:
        _guaranteed.add(name)


def is_guaranteed(device_type: str) -> bool:
    """Whether ``device_type``'s options from torch's doors get the package's guarantees."""
    if device_type in _guaranteed:
        return True
    listed = os.environ.get(GUARANTEE_ENV, "")
    return device_type in {name.strip() for name in listed.split(",")}


# --- declared entry points ---------------------------------------------------------------


class InvalidDeclaration(NamedTuple):
    """An entry point of the group that cannot name a device, and why."""

    entry_point: metadata.EntryPoint
    reason: str

    def describe(self) -> str:
        return f"{describe_entry_point(self.entry_point)}: {self.reason}"


class DeclarationConflict(NamedTuple):
    """Several distributions declare the same device: which one serves it, and why."""

    device_type: str
    chosen: metadata.EntryPoint
    others: tuple[metadata.EntryPoint, ...]
    reason: str

    @property
    def warns(self) -> bool:
        """A bundled fallback giving way is by design; two backends for a device are not."""
        return any(not is_bundled(entry_point) for entry_point in self.others)

    def describe(self) -> str:
        others = "; ".join(describe_entry_point(entry_point) for entry_point in self.others)
        return (
            f"device {self.device_type!r} is declared by several distributions: "
            f"{describe_entry_point(self.chosen)} serves it ({self.reason}); not used: "
            f"{others}. To choose, set {PREFER_ENV}={self.device_type}=<distribution>"
        )


class _Declarations(NamedTuple):
    chosen: dict[str, metadata.EntryPoint]
    invalid: list[InvalidDeclaration]
    conflicts: dict[str, DeclarationConflict]


def declared_entry_points() -> dict[str, metadata.EntryPoint]:
    """The group's entry points by device type, read once per process: for a device that
    several distributions declare, the one chosen (see :class:`DeclarationConflict`).
    Entry points whose name is not a device name are left out (``invalid_declarations``)."""
    return _read_declarations().chosen


def invalid_declarations() -> list[InvalidDeclaration]:
    """Entry points of the group that name no device this package can serve."""
    return list(_read_declarations().invalid)


def declaration_conflicts() -> list[DeclarationConflict]:
    """Devices that several distributions declare, sorted by device type."""
    conflicts = _read_declarations().conflicts
    return [conflicts[name] for name in sorted(conflicts)]


def _read_declarations() -> _Declarations:
    global _declarations
    declarations = _declarations
    if declarations is not None:
        return declarations
    from importlib import metadata  # ~5 ms: only when a lookup needs it

    # Read outside the lock: never hold it across an import (see find_provider).
    candidates: dict[str, list[metadata.EntryPoint]] = {}
    invalid: list[InvalidDeclaration] = []
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        reason = _declaration_problem(entry_point.name)
        if reason is None:
            candidates.setdefault(entry_point.name, []).append(entry_point)
        else:
            invalid.append(InvalidDeclaration(entry_point, reason))
    preferred = _preferences(os.environ.get(PREFER_ENV, ""))
    chosen: dict[str, metadata.EntryPoint] = {}
    conflicts: dict[str, DeclarationConflict] = {}
    for name, entry_points in candidates.items():
        ordered, reason = _ordered(entry_points, preferred.get(name))
        chosen[name] = ordered[0]
        if len(ordered) > 1:
            conflicts[name] = DeclarationConflict(name, ordered[0], tuple(ordered[1:]), reason)
    with _lock:
        if _declarations is None:
            _declarations = _Declarations(chosen, invalid, conflicts)
        return _declarations


def _preferences(value: str) -> dict[str, str]:
    """``{device: normalized distribution name}`` from ``$INDUCTOR_DEVICE_OPTIONS_PREFER``."""
    preferences: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        device, equals, distribution = item.partition("=")
        if not equals or not device.strip() or not distribution.strip():
            warnings.warn(
                f"{PREFER_ENV}: {item!r} is not device=distribution; ignored", stacklevel=3
            )
            continue
        preferences[device.strip()] = _normalized_name(distribution)
    return preferences


def _ordered(
    entry_points: list[metadata.EntryPoint], preferred: str | None
) -> tuple[list[metadata.EntryPoint], str]:
    """The declarations of one device, the one that serves it first, and why it does."""

    def key(entry_point: metadata.EntryPoint) -> tuple[bool, str, str]:
        return (is_bundled(entry_point), _distribution_name(entry_point), entry_point.value)

    ordered = sorted(entry_points, key=key)
    if preferred is not None:
        chosen = [ep for ep in ordered if _distribution_name(ep) == preferred]
        if chosen:
            rest = [ep for ep in ordered if ep is not chosen[0]]
            return [chosen[0], *rest], f"{PREFER_ENV} names {preferred}"
        reason = f"{PREFER_ENV} names {preferred}, which declares no such entry point; otherwise "
    else:
        reason = ""
    return ordered, (
        reason + "another distribution's declaration comes before the one bundled with "
        "inductor-device-options, then distributions in order of their names"
    )


def _normalized_name(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _distribution_name(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    return _normalized_name(dist.name) if dist is not None else ""


def is_bundled(entry_point: metadata.EntryPoint) -> bool:
    """Whether ``entry_point`` is declared by this package itself (a fallback provider)."""
    if entry_point.dist is not None:
        return _distribution_name(entry_point) == BUNDLED_DISTRIBUTION
    return entry_point.value.startswith("inductor_device_options.")


def _declaration_problem(name: str) -> str | None:
    if not _DEVICE_NAME.fullmatch(name):
        return (
            f"{name!r} is not a device name (a name such as 'npu', without an index); "
            "the entry point is ignored"
        )
    if name in RESERVED_DEVICE_TYPES:
        return f"torch computes the options of {name!r} itself; the entry point is ignored"
    unaskable = _unaskable(name)
    if unaskable is not None:
        return f"{unaskable}; the entry point is ignored"
    return None


def describe_entry_point(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    origin = f" (distribution {dist.name} {dist.version})" if dist is not None else ""
    return (
        f"entry point {entry_point.name} = {entry_point.value} in group "
        f"{ENTRY_POINT_GROUP!r}{origin}"
    )


def find_provider(device_type: str) -> Provider | None:
    """The provider for a normalized device type, loading its entry point if needed.

    The entry point's module is imported without holding the registry's lock: it may
    register at import, from another thread importing it at the same time, too.
    """
    provider = _registered.get(device_type) or _loaded.get(device_type)
    if provider is not None:
        return provider
    entry_point = declared_entry_points().get(device_type)
    if entry_point is None:
        return None
    conflict = _read_declarations().conflicts.get(device_type)
    if conflict is not None and conflict.warns:
        warnings.warn(conflict.describe(), RuntimeWarning, stacklevel=2)
    description = describe_entry_point(entry_point)
    try:
        callback = entry_point.load()
    except (Exception, SystemExit) as error:  # a module that calls sys.exit() at import too
        raise ProviderLoadError(
            f"cannot load the C++ options provider for device {device_type!r} from "
            f"{description}: {type(error).__name__}: {error}",
            device_type=device_type,
            provider=description,
        ) from error
    if not callable(callback):
        raise InvalidProviderError(
            f"the C++ options provider for device {device_type!r} from {description} "
            f"is a {type(callback).__name__}, not a callable",
            device_type=device_type,
            provider=description,
        )
    with _lock:
        # A registration made meanwhile (by that import, say) comes first, as always.
        registered = _registered.get(device_type)
        if registered is not None:
            return registered
        return _loaded.setdefault(
            device_type,
            Provider(device_type, callback, "entry point", description, is_bundled(entry_point)),
        )
