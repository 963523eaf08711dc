"""The Ascend provider's per-process memory: what discovery found, and the options built
from it, keyed on what they were computed from.

A provider written against the public face keeps its own memory, as any backend's would:
each cache is a bounded :func:`functools.lru_cache` (an exception is not kept: the next call
searches again). ``ascend.clear_cache`` clears them all, and so does the package's one reset
(``testing.reset``), where this module is loaded."""

from __future__ import annotations

import functools

#: Entries a cache holds (a process rarely sees more than one install).
MAX_ENTRIES = 16

#: The decorator of every Ascend cache.
cached = functools.lru_cache(maxsize=MAX_ENTRIES)
