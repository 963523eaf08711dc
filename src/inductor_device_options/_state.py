"""The package's state in a process, in one place, with one reset.

Everything the package remembers between lookups lives here: who registered what, what
was loaded and guaranteed, where the hook is installed, and the caches. Every cache is a
:class:`BoundedCache` made by :func:`cache`, so none grows without bound and
:func:`reset` clears them all. Nothing here imports torch or another module of the
package: every room may import it.

:func:`reset` gives a process the package's state at import, registrations, declarations
read and warnings given included; the hook, its watcher and chains stay (torch's module
holds them); a thread's lookups under way pop what they pushed. ``testing.reset`` calls it
(and clears the Ascend provider's own caches), for tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(dict[K, V], Generic[K, V]):
    """A dict that keeps at most ``limit`` entries: the oldest goes first. ``group`` names
    the room it serves, for :func:`clear_group`. Read it with ``get`` (one atomic read),
    write it with :meth:`put` (safe across threads: making room walks the dict)."""

    def __init__(self, limit: int, group: str = ""):
        super().__init__()
        self.limit = limit
        self.group = group
        self._lock = threading.Lock()

    def put(self, key: K, value: V) -> V:
        with self._lock:
            if key not in self and len(self) >= self.limit:
                self.pop(next(iter(self)), None)  # the oldest (dicts keep insertion order)
            self[key] = value
        return value


_caches: list[BoundedCache[Any, Any]] = []

#: The group of the caches a compile renews at its start (_hook/compile_boundary): what the
#: SDK identity is computed into, so that none is staler than the compile that uses it.
PER_COMPILE = "per compile"


def cache(limit: int, group: str = "") -> BoundedCache[Any, Any]:
    """A new cache that :func:`reset` clears (and :func:`clear_group`, given its group)."""
    made: BoundedCache[Any, Any] = BoundedCache(limit, group)
    _caches.append(made)
    return made


def clear_group(group: str) -> None:
    """Clear the caches of one group alone (``ascend.clear_cache``)."""
    with lock:
        for made in _caches:
            if made.group == group:
                made.clear()


#: The lock of every registration and of the hook's installation (re-entrant: a provider
#: module that registers while it is imported by a lookup).
lock = threading.RLock()

# --- _lookup/: who serves a device ---------------------------------------------------------
#: Device type -> the DeviceOptionsSource registered through the package's door (_lookup/registry).
registered: dict[str, Any] = {}
#: Device type -> the DeviceOptionsSource loaded from a declared entry point.
loaded: dict[str, Any] = {}
#: Device types served through torch's doors that get the package's guarantees.
guaranteed: set[str] = set()
#: The entry points declared, read once per process (lookup.entry_points.Declarations).
declarations: list[Any] = []
#: Called with the device type after each registration (the hook forwards registrations
#: to torch's own registry where torch has one): infrastructure, kept by reset.
registration_listeners: list[Callable[[str], None]] = []

# --- _hook/: the installation in torch._inductor.cpp_builder --------------------------------
# Typed where they are made and read (_hook/serve, _hook/install): importing their types
# here, even for the type checker alone, would tie this module to the rooms above it.
#: The hook's installation once installed (an Installation: replaced whole, read without a lock).
installation: Any = None
#: The import watcher on sys.meta_path, once armed (an ImportWatcher).
watcher: Any = None
#: Whether a function was ever adopted into a chain: until one is, a lookup need not look
#: at its thread's frames (the fast path). A flag: an adopted function runs without a lock.
adopted_once: bool = False
#: The ``torch._inductor.utils`` modules whose GPU_TYPES the is_gpu() backport decided on,
#: by name: once, at their import, as torch 2.15 builds the list (_hook/install); kept by
#: reset, as the list is.
gpu_types_decided: set[str] = set()
#: Whether a thread is inside the device module's _inductor_backend_init (_hook/backend_init,
#: torch 2.15's ``_privateuse1_backend_init_in_progress``; guarded by Dynamo's compile lock).
backend_init_in_progress: bool = False


class _ThisThread(threading.local):
    """This thread's lookups under way, pushed and popped by them (``_hook/in_progress``,
    ``_lookup/resolve``)."""

    def __init__(self) -> None:
        self.frames: list[Any] = []  # per adopted function running: an _hook.in_progress.Frame
        self.answers_below: list[tuple[str, bool, bool, Callable[[], Any]]] = []  # per lookup
        self.bypassed: set[str] = set()  # devices whose answer below is being computed
        self.serving: set[str] = set()  # devices whose provider runs (no recursion)
        self.compile_depth = 0  # compile_fx calls under way (_hook/compile_boundary)
        #: The SDK identity the C++ build Inductor writes is keyed on (_hook/cpp_cache_keys).
        self.build_identity: str | None = None
        #: Whether the package asks Inductor's function for a device's SDK identity, not for
        #: a build (_hook/device_identity): doctor's recorder leaves such questions out.
        self.asking_for_identity = False
        #: How many of the cache_key_details door's wrappers of a details ``__init__`` run
        #: (_hook/cache_key_details): the outermost asks the providers.
        self.keying_cache_details = 0
        #: The ops torch's fallback-op list holds for this thread's FallbackKernel codegen
        #: under way (_hook/shim_ops): the declaring device's shim ops.
        self.shim_ops_listed: frozenset[str] = frozenset()


this_thread = _ThisThread()

# --- _hook/device_identity: the devices whose SDK identity keys Inductor's caches -----------
#: Device types whose identity keys the caches while a diagnosis asks what the key would hold
#: (doctor, for a device whose backend is not imported in its process).
keyed_for_diagnosis: set[str] = set()

# --- _hook/asked: what builds asked and which warnings were given ---------------------------
#: (device type served, device type asked) -> the codegen that asked, seen this process.
not_asked_seen: BoundedCache[tuple[str, str], str] = cache(256)
#: (device type served, device type asked) warned about already.
not_asked_warned: BoundedCache[tuple[str, str], bool] = cache(256)


def reset() -> None:
    """Forget registrations, loaded and declared providers, guarantees, warnings given and
    every cache: the state of a process that just imported the package."""
    global backend_init_in_progress
    with lock:
        backend_init_in_progress = False
        registered.clear()
        loaded.clear()
        guaranteed.clear()
        declarations.clear()
        keyed_for_diagnosis.clear()
        for made in _caches:
            made.clear()
