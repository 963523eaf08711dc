"""What installs into ``torch._inductor.codecache`` when it is imported: the SDK identity
in the FX graph and AOTAutograd cache keys (``cache_keys``) and in the C++ code cache's
(``cpp_cache_keys``), the stamp of AOTInductor packages (``pt2_stamp``), and the device
information a package of a served device is loaded with (``pt2_device_information``)."""

from __future__ import annotations

from types import ModuleType

from . import cache_key_details, cpp_cache_keys, device_headers, pt2_device_information
from .cache_keys import install as install_cache_keys
from .pt2_stamp import install_stamp


def install(codecache: ModuleType) -> None:
    install_cache_keys(codecache)
    cpp_cache_keys.install(codecache)
    install_stamp(codecache)
    pt2_device_information.install(codecache)
    cache_key_details.install_into_codecache(codecache)
    device_headers.install_into_codecache(codecache)
