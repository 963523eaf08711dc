"""What installs into ``torch._inductor.codecache`` when it is imported: the SDK identity
in the FX graph and AOTAutograd cache keys (``cache_keys``), and the stamp of AOTInductor
packages (``pt2_stamp``)."""

from __future__ import annotations

from types import ModuleType

from .cache_keys import install as install_cache_keys
from .pt2_stamp import install_stamp


def install(codecache: ModuleType) -> None:
    install_cache_keys(codecache)
    install_stamp(codecache)
