"""What Inductor's caches key on for a device, on the running torch: its SDK identity in the
C++ code cache (the command line), the FX graph and AOTAutograd caches (``get_system()``)
and AOTInductor packages (the stamp). For ``show``, ``list`` and doctor's ``cache_keys``.
Computes only; calls the device's provider.
"""

from __future__ import annotations

from typing import NamedTuple

from .._hook import cpp_cache_keys
from .._hook.cache_keys import CACHE_KEY_FIELD
from .._hook.cache_keys import install as adopt_get_system
from .._hook.device_identity import device_identity, identity_device_types, keyed_as_if_usable
from .._hook.lookups import get_cpp_device_options
from .._hook.pt2_stamp import stamp_for
from .._options.freshness import identity_in
from .._options.model import CppDeviceOptions

#: The caches, by JSON key, as people name them.
CACHES = {
    "cpp_code_cache": "C++ code cache",
    "fx_graph_cache": "FX graph cache",
    "aot_autograd_cache": "AOTAutograd cache",
    "pt2_stamp": ".pt2 stamp",
}


#: The order of imports doctor diagnoses: its process imports the package first, as torch's
#: backend autoload does, then the backend. In the other order (autoload off, the package
#: armed after the backend patched torch) the keys hold the same: what a backend assigned is
#: adopted at the next compile, and a replacement of Inductor's function is the base.
IMPORT_ORDER = "the package imported before the backend, as torch's autoload imports it"


class CacheKeying(NamedTuple):
    """A device's SDK identity and, for each cache, whether its key holds it (or why not).

    ``identity``: as cpp_wrapper builds read the SDK; ``aot_identity``: as AOTInductor's
    do (the same, unless the provider gives AOTInductor other dirs or libraries). Each
    cache maps to None where its key holds the identity, else to why it does not.
    """

    device_type: str
    identity: str | None
    aot_identity: str | None
    cpp_code_cache: str | None
    fx_graph_cache: str | None
    aot_autograd_cache: str | None
    pt2_stamp: str | None

    def describe(self) -> list[str]:
        """One line for the identity, one per cache."""
        identity = self.identity or "none (the options name no SDK of the device's own)"
        if self.aot_identity != self.identity:
            identity += f"; AOTInductor: {self.aot_identity}"
        lines = [f"SDK identity: {identity}"]
        for key, name in CACHES.items():
            why_not = getattr(self, key)
            lines.append(f"  {name}: {'keyed on it' if why_not is None else why_not}")
        return lines

    def document(self) -> dict[str, object]:
        return {
            "device_type": self.device_type,
            "identity": self.identity,
            "aot_identity": self.aot_identity,
            "keyed": {key: getattr(self, key) is None for key in CACHES},
            "not_keyed_because": {key: getattr(self, key) for key in CACHES},
        }


def cache_keying(device_type: str) -> CacheKeying:
    """What the caches key on for ``device_type`` (raises what its provider raises)."""
    options = get_cpp_device_options(device_type)
    identity = device_identity(device_type)
    aot_identity = device_identity(device_type, aot_mode=True)
    if identity is None and aot_identity is None:
        none = "no SDK identity to key on"
        return CacheKeying(device_type, None, None, none, none, none, none)
    fx = _fx_graph_key(device_type, identity)
    return CacheKeying(
        device_type,
        identity,
        aot_identity,
        _cpp_code_cache_key(options),
        fx,
        fx,  # AOTAutograd's key details are the FX graph's, get_system() included
        None
        if stamp_for(device_type) is not None
        else "its options for AOTInductor name no SDK of the device's own",
    )


def _cpp_code_cache_key(options: CppDeviceOptions) -> str | None:
    """None when the C++ code cache keys the device's builds on its identity: in the
    command line (the package's door), or beside it (``cpp_cache_keys``, every other door)."""
    if identity_in(options) is not None:
        return None
    from torch._inductor import codecache

    if cpp_cache_keys.is_installed(codecache):
        return None
    return "its command line holds the options as given, and nothing keys the build beside it"


def _fx_graph_key(device_type: str, identity: str | None) -> str | None:
    """None when ``CacheBase.get_system()`` holds the device's identity at the next compile
    (as in a process that compiles for the device), else why not."""
    from torch._inductor import codecache

    # What the next compile does first: a get_system a backend assigned since is adopted.
    adopt_get_system(codecache)
    with keyed_as_if_usable(device_type):
        held = codecache.CacheBase.get_system().get(CACHE_KEY_FIELD, {})
    if isinstance(held, dict) and held.get(device_type) == identity:
        return None
    return "CacheBase.get_system() does not hold it"


def served_keying() -> list[CacheKeying | tuple[str, BaseException]]:
    """The keying of each device whose identity keys the caches here (``list``); a device
    whose provider fails gives (device, error)."""
    found: list[CacheKeying | tuple[str, BaseException]] = []
    for device_type in identity_device_types():
        try:
            found.append(cache_keying(device_type))
        except Exception as error:
            found.append((device_type, error))
    return found
