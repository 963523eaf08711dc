"""The Ascend provider's per-process memory: what discovery found, and the options built
from it, keyed on what they were computed from.

Each cache is one of the package's bounded caches (``inductor_device_options._state``), so
the package's one reset clears them too; :func:`clear_all` (``ascend.clear_cache``) clears
the Ascend ones alone."""

from __future__ import annotations

from typing import Any

from .. import _state
from .._state import BoundedCache

#: Entries a cache holds (a process rarely sees more than one install).
MAX_ENTRIES = 16

_GROUP = "ascend"


def cache() -> BoundedCache[Any, Any]:
    """A new Ascend cache: bounded, cleared by the package's reset and by :func:`clear_all`."""
    return _state.cache(MAX_ENTRIES, _GROUP)


def clear_all() -> None:
    """Forget everything the Ascend caches hold."""
    _state.clear_group(_GROUP)
