"""The devices whose lookups skip the package's sources on this thread, while their answer
below is computed (``bypassing``), and the barrier frame that keeps such a lookup from
counting as a call-back of the adopted function running (``_hook/chain``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .._state import Frame, this_thread

# The device of the frame ``bypassing`` pushes: lookups under it call back no function.
BARRIER = object()


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
