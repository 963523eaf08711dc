"""What this thread's lookups are doing right now: the adopted functions running (to see
whether one calls back), the answer below offered for the device being computed, and the
devices whose lookups skip the package's sources while their answer below is computed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._state import this_thread

if TYPE_CHECKING:
    from .._lookup.resolve import Thunk

# The device of the frame ``bypassing`` pushes: lookups under it call back no function.
BARRIER = object()


@dataclass(slots=True)
class Frame:
    """An adopted function running: its device, and whether it called back for it."""

    device_type: object
    chained: bool = False


@contextmanager
def offering_answer_below(
    device_type: str, aot_mode: bool, compile_only: bool, answer_below: Thunk
) -> Iterator[None]:
    """While a source computes ``device_type``'s options, what the device gets below the
    package's sources (computed once, if asked)."""
    cached: list[Any] = []

    def once() -> Any:
        if not cached:
            cached.append(answer_below())
        return cached[0]

    this_thread.answers_below.append((device_type, aot_mode, compile_only, once))
    try:
        yield
    finally:
        this_thread.answers_below.pop()


def offered_answer_below(device_type: str, aot_mode: bool, compile_only: bool) -> Thunk | None:
    """The answer below offered by the lookup under way for this device and flags, if any."""
    for device, aot, only, answer_below in this_thread.answers_below[::-1]:  # innermost first
        if (device, aot, only) == (device_type, aot_mode, compile_only):
            return answer_below
    return None


def is_bypassed(device_type: str) -> bool:
    """Whether this thread computes ``device_type``'s answer below right now."""
    return device_type in this_thread.bypassed


@contextmanager
def bypassing(device_type: str) -> Iterator[None]:
    """Lookups of ``device_type`` skip the package's sources (to compute its answer below)."""
    added = device_type not in this_thread.bypassed
    this_thread.bypassed.add(device_type)
    # A barrier frame: the lookup made here is not a call-back of the function running
    # (torch's own function, reaching its registry under it, in native mode).
    this_thread.frames.append(Frame(BARRIER))
    try:
        yield
    finally:
        this_thread.frames.pop()
        if added:
            this_thread.bypassed.discard(device_type)
