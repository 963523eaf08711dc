"""What this thread's lookups are doing right now: the adopted functions running (to see
whether one calls back), the defaults pending for the device being computed, and the
devices whose lookups skip the package's sources while their default is computed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._state import this_thread

Thunk = Callable[[], Any]

# The frame ``bypassing`` pushes: lookups under it are no call-back of an adopted function.
BARRIER = object()


@contextmanager
def pending_default(
    device_type: str, aot_mode: bool, compile_only: bool, default: Thunk
) -> Iterator[None]:
    """While a source computes ``device_type``'s options, what its defaults are."""
    cached: list[Any] = []

    def once() -> Any:
        if not cached:
            cached.append(default())
        return cached[0]

    this_thread.defaults.append((device_type, aot_mode, compile_only, once))
    try:
        yield
    finally:
        this_thread.defaults.pop()


def pending_default_for(device_type: str, aot_mode: bool, compile_only: bool) -> Thunk | None:
    """The default of the lookup under way for this device and flags, if there is one."""
    for device, aot, only, default in this_thread.defaults[::-1]:  # the innermost first
        if (device, aot, only) == (device_type, aot_mode, compile_only):
            return default
    return None


def is_bypassed(device_type: str) -> bool:
    """Whether this thread computes ``device_type``'s default right now."""
    return device_type in this_thread.bypassed


@contextmanager
def bypassing(device_type: str) -> Iterator[None]:
    """Lookups of ``device_type`` skip the package's sources (to compute its default)."""
    added = device_type not in this_thread.bypassed
    this_thread.bypassed.add(device_type)
    # A barrier frame: the lookup made here is not a call-back of the function running
    # (torch's own function, reaching its registry under it, in native mode).
    this_thread.frames.append([BARRIER, False])
    try:
        yield
    finally:
        this_thread.frames.pop()
        if added:
            this_thread.bypassed.discard(device_type)
