"""Providers declared by installed distributions: the entry point group.

A distribution declares ``device_type = "module:callable"`` in the group; the declarations
are read once per process (``importlib.metadata`` costs milliseconds: only when a lookup
needs them). Two distributions declaring one device are ordered by a fixed rule, which
``$INDUCTOR_DEVICE_OPTIONS_PREFER`` overrides; the entry point this package bundles comes
last (a fallback).
"""

from __future__ import annotations

import os
import re
import warnings
from typing import TYPE_CHECKING, NamedTuple

from .. import _state
from .._errors import InvalidProviderError, ProviderLoadError
from .._source import DeviceOptionsSource, FoundSource
from .device_types import DEVICE_NAME, refusal
from .registry import ENTRY_POINT_GROUP

if TYPE_CHECKING:
    from importlib import metadata

#: ``device=distribution[,device=distribution...]``: which distribution's entry point
#: serves a device that several distributions declare.
PREFER_ENV = "INDUCTOR_DEVICE_OPTIONS_PREFER"

#: This package's own distribution: its entry points are the bundled fallbacks.
BUNDLED_DISTRIBUTION = "inductor-device-options"


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


class Declarations(NamedTuple):
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


#: The declarations, read once per process (and again after ``_state.reset``).
_declarations: _state.BoundedCache[str, Declarations] = _state.cache(1)


def _read_declarations() -> Declarations:
    read = _declarations.get(ENTRY_POINT_GROUP)
    if read is not None:
        return read
    from importlib import metadata  # ~5 ms: only when a lookup needs it

    # Read outside the lock: never hold it across an import (see own_source).
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
    with _state.lock:
        read = _declarations.get(ENTRY_POINT_GROUP)
        if read is None:
            read = _declarations.put(ENTRY_POINT_GROUP, Declarations(chosen, invalid, conflicts))
        return read


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

    # False sorts first: a backend's own declaration before the bundled fallback, then by
    # distribution name and value, so every process picks the same one.
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
    # An EntryPoint made by hand (tests, tools) has no distribution: its module says.
    return entry_point.value.startswith("inductor_device_options.")


def _declaration_problem(name: str) -> str | None:
    if not DEVICE_NAME.fullmatch(name):
        return (
            f"{name!r} is not a device name (a name such as 'npu', without an index); "
            "the entry point is ignored"
        )
    refused = refusal(name)
    return None if refused is None else f"{refused.reason}; the entry point is ignored"


def describe_entry_point(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    origin = f" (distribution {dist.name} {dist.version})" if dist is not None else ""
    return (
        f"entry point {entry_point.name} = {entry_point.value} in group "
        f"{ENTRY_POINT_GROUP!r}{origin}"
    )


def load_declared(device_type: str) -> FoundSource | None:
    """The provider a distribution declares for a normalized device type, loaded (its
    module imported, without holding the lock: it may register at import), or None."""
    entry_point = declared_entry_points().get(device_type)
    if entry_point is None:
        return None
    conflict = _read_declarations().conflicts.get(device_type)
    if conflict is not None and conflict.warns:
        warnings.warn(conflict.describe(), RuntimeWarning, stacklevel=3)
    description = describe_entry_point(entry_point)
    try:
        callback = entry_point.load()
    except (Exception, SystemExit) as error:  # a module that calls sys.exit() at import too
        raise ProviderLoadError(
            f"cannot load the C++ options provider for device {device_type!r} from "
            f"{description}: {type(error).__name__}: {error}",
            device_type=device_type,
            description=description,
        ) from error
    if not callable(callback):
        raise InvalidProviderError(
            f"the C++ options provider for device {device_type!r} from {description} "
            f"is a {type(callback).__name__}, not a callable",
            device_type=device_type,
            description=description,
        )
    with _state.lock:
        # A registration made meanwhile (by that import, say) comes first, as always.
        registered = _state.registered.get(device_type)
        if registered is not None:
            return registered
        source = DeviceOptionsSource(
            device_type, "entry point", description, True, is_bundled(entry_point)
        )
        return _state.loaded.setdefault(device_type, FoundSource(source, provider=callback))


def own_source(device_type: str) -> FoundSource | None:
    """The package's own source for a normalized device type, with its provider: its
    registration, else the entry point declared for it, loaded."""
    found = _state.registered.get(device_type) or _state.loaded.get(device_type)
    return found if found is not None else load_declared(device_type)
