"""Who provides a device's C++ options: registrations and declared entry points.

Nothing here imports torch. Lookup order for a device:
explicit registration > entry point in the ``inductor_device_options`` group.
(The hook then falls back to the device's DeviceInterface and to the function that
was installed before it.)
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ._errors import (
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

CppDeviceOptionsCallback = Callable[[str, bool, bool], Any]

_DEVICE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEVICE_INDEX = re.compile(r"[0-9]+")


class Provider(NamedTuple):
    """A callback that computes a device's options, and where it came from."""

    device_type: str
    callback: CppDeviceOptionsCallback
    source: Literal["registration", "entry point"]
    description: str


_lock = threading.RLock()
_registered: dict[str, Provider] = {}
_declared: dict[str, metadata.EntryPoint] | None = None
_invalid: list[InvalidDeclaration] = []
_loaded: dict[str, Provider] = {}
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


def describe_callable(callback: object) -> str:
    """A name a person can find in the code: ``module.qualname``."""
    module = getattr(callback, "__module__", None)
    qualname = getattr(callback, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return repr(callback)


def register(device_type: str, callback: CppDeviceOptionsCallback) -> None:
    """Register ``callback`` for ``device_type``; warn and overwrite if one exists."""
    provider = _checked_provider(device_type, callback)
    previous = _put(provider)
    if previous is not None:
        warnings.warn(
            f"C++ device options for {provider.device_type!r} are already registered by "
            f"{previous.description}; overwriting with {provider.description}",
            stacklevel=2,
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
            "as torch computes them",
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


def unregister(device_type: str) -> bool:
    """Remove the registration of ``device_type``; True if there was one."""
    name = normalize_device_type(device_type)
    with _lock:
        return _registered.pop(name, None) is not None


def registered_device_types() -> list[str]:
    """Device types with an explicit registration, sorted."""
    with _lock:
        return sorted(_registered)


@contextmanager
def registered(device_type: str, callback: CppDeviceOptionsCallback) -> Iterator[None]:
    """Register ``callback`` for the ``with`` block, then restore what was there."""
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


class InvalidDeclaration(NamedTuple):
    """An entry point of the group that cannot name a device, and why."""

    entry_point: metadata.EntryPoint
    reason: str

    def describe(self) -> str:
        return f"{describe_entry_point(self.entry_point)}: {self.reason}"


def declared_entry_points() -> dict[str, metadata.EntryPoint]:
    """The group's entry points by device type, read once per process. Entry points
    whose name is not a device name are left out (see ``invalid_declarations``)."""
    declared = _declared
    if declared is None:
        _read_declarations()
        declared = _declared
        assert declared is not None
    return declared


def invalid_declarations() -> list[InvalidDeclaration]:
    """Entry points of the group that name no device this package can serve."""
    declared_entry_points()
    return list(_invalid)


def _read_declarations() -> None:
    global _declared, _invalid
    from importlib import metadata  # ~5 ms: only when a lookup needs it

    # Read outside the lock: never hold it across an import (see find_provider).
    declared: dict[str, metadata.EntryPoint] = {}
    invalid: list[InvalidDeclaration] = []
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        reason = _declaration_problem(entry_point.name)
        if reason is None:
            declared[entry_point.name] = entry_point
        else:
            invalid.append(InvalidDeclaration(entry_point, reason))
    with _lock:
        if _declared is None:
            _declared, _invalid = declared, invalid


def _declaration_problem(name: str) -> str | None:
    if not _DEVICE_NAME.fullmatch(name):
        return (
            f"{name!r} is not a device name (a name such as 'npu', without an index); "
            "the entry point is ignored"
        )
    if name in RESERVED_DEVICE_TYPES:
        return f"torch computes the options of {name!r} itself; the entry point is ignored"
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
            device_type, Provider(device_type, callback, "entry point", description)
        )
