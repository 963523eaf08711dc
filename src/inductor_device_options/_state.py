"""The package's state in a process, in one place, with one reset.

Everything the package remembers between lookups lives here: who registered what, what
was loaded and guaranteed, where the hook is installed, and the caches. Every cache is a
:class:`BoundedCache` made by :func:`cache` or a function's ``functools`` cache made by
:func:`cached`, so none grows without bound and :func:`reset` clears them all (but those
``cached`` keeps, each saying why). Nothing here imports torch or another module of the
package: every room may import it.

:func:`reset` gives a process the package's state at import, registrations, declarations
read and warnings given included; the hook, its watcher and chains stay (torch's module
holds them); a thread's lookups under way pop what they pushed. ``testing.reset`` calls it
(and clears the Ascend provider's own caches), for tests.
"""

from __future__ import annotations

import enum
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

from ._source import FoundSource

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

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


class _Missing(enum.Enum):
    MISSING = "missing"


#: ``get(key, MISSING)``'s answer for a key a cache does not hold, where None is a value it
#: holds: ``known is not MISSING`` tells the type checker ``known`` is a value.
MISSING: Final = _Missing.MISSING


class _Clearable(Protocol):
    """A cache as :func:`reset` and :func:`clear_group` see it, whatever it holds."""

    limit: int
    group: str

    def __len__(self) -> int: ...

    def clear(self) -> None: ...


_caches: list[_Clearable] = []

#: The group of the caches a compile renews at its start (_hook/compile_boundary): what the
#: SDK identity is computed into, so that none is staler than the compile that uses it.
PER_COMPILE = "per compile"


def cache(limit: int, group: str = "") -> BoundedCache[K, V]:
    """A new cache that :func:`reset` clears (and :func:`clear_group`, given its group)."""
    made: BoundedCache[K, V] = BoundedCache(limit, group)
    _caches.append(made)
    return made


def clear_group(group: str) -> None:
    """Clear the caches of one group alone (``ascend.clear_cache``)."""
    with lock:
        for made in _caches:
            if made.group == group:
                made.clear()


class _ClearableFunction(Protocol):
    """A functools cache as :func:`reset` sees it, whatever it answers."""

    def cache_clear(self) -> None: ...


#: The functools caches of the rooms, made by :func:`cached`, each with why :func:`reset`
#: keeps it ("": reset clears it).
_function_caches: list[tuple[_ClearableFunction, str]] = []


def cached(
    limit: int, *, kept: str = ""
) -> Callable[[Callable[..., V]], functools._lru_cache_wrapper[V]]:
    """``functools.lru_cache(maxsize=limit)``, for a function's answers: :func:`reset`
    clears it, unless ``kept`` says why it must not (a cache torch's callers hold and clear
    themselves, as on the torch release it backports)."""

    def made(function: Callable[..., V]) -> functools._lru_cache_wrapper[V]:
        wrapper = functools.lru_cache(maxsize=limit)(function)
        _function_caches.append((wrapper, kept))
        return wrapper

    return made


#: The lock of every registration and of the hook's installation (re-entrant: a provider
#: module that registers while it is imported by a lookup).
lock = threading.RLock()

# --- _lookup/: who serves a device ---------------------------------------------------------
#: Device type -> the source registered through the package's door (_lookup/registry).
registered: dict[str, FoundSource] = {}
#: Device type -> the source loaded from a declared entry point.
loaded: dict[str, FoundSource] = {}
#: Device types served through torch's doors that get the package's guarantees.
guaranteed: set[str] = set()
#: Called with the device type after each registration (the hook forwards registrations
#: to torch's own registry where torch has one): infrastructure, kept by reset.
registration_listeners: list[Callable[[str], None]] = []

# --- _hook/: the installation in torch._inductor.cpp_builder --------------------------------


class Installed(Protocol):
    """What this module knows of the hook's installation (``_hook/installation.Installation``,
    whose chain is a ``_hook`` type: naming it here would tie this module to that room)."""

    @property
    def module(self) -> ModuleType: ...


class Watcher(Protocol):
    """The package's import watcher on ``sys.meta_path`` (``_hook/install.ImportWatcher``)."""

    def arm(self) -> None: ...

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None: ...


#: The hook's installation once installed (replaced whole, read without a lock).
installation: Installed | None = None
#: The import watcher on sys.meta_path, once armed.
watcher: Watcher | None = None
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


@dataclass(slots=True)
class Frame:
    """A function adopted into the hook's chain, running (``_hook/chain``): the device it
    was asked for, and whether it called back into the chain for that device."""

    device_type: object
    chained: bool = False


#: What a lookup under way offers its provider as the answer below: the device, aot_mode,
#: compile_only, and the answer, computed at the first call (``_lookup/resolve``).
OfferedAnswer = tuple[str, bool, bool, Callable[[], object]]


class _ThisThread(threading.local):
    """This thread's lookups under way, pushed and popped by them (``_hook/chain``,
    ``_hook/serve``, ``_lookup/resolve``)."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []  # per adopted function running
        self.offers: list[OfferedAnswer] = []  # per lookup, innermost last
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
    every cache (but those :func:`cached` keeps, each saying why): the state of a process
    that just imported the package."""
    global backend_init_in_progress
    with lock:
        backend_init_in_progress = False
        registered.clear()
        loaded.clear()
        guaranteed.clear()
        keyed_for_diagnosis.clear()
        for made in _caches:
            made.clear()
        for function_cache, kept in _function_caches:
            if not kept:
                function_cache.cache_clear()
