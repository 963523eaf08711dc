"""A device's per-device doors, asked of the provider that serves it through the package's
own door (a registration or a backend's entry point, not a provider bundled with this
package), where and when torch needs the answer.

Every function takes the device as Inductor names it (``"npu"``, ``"npu:0"``) and answers
"nothing" at once for torch's own devices and for a device no such provider serves: then
torch's code runs exactly as without the package. What a provider declares is checked by
``_lookup.provider_attributes``, which names the device, the provider and the attribute.
"""

from __future__ import annotations

from typing import Any

from .._lookup import provider_attributes as attributes
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._source import CppDeviceOptionsCallback, FoundSource

#: The sources whose provider is the package's to ask: torch's doors (its registry, 2.15's
#: DeviceInterface) behave as torch defines them, with no attributes.
_OWN_DOOR_KINDS = frozenset({"registration", "entry point"})


def door_source(device: str) -> FoundSource | None:
    """The source of the package's own door for ``device``, loaded, or None: its doors are
    not asked."""
    device_type = device.partition(":")[0]
    if device_type in RESERVED_DEVICE_TYPES or not device_type:
        return None
    from .._lookup.resolve import loaded
    from .installation import source_of

    found = source_of(device_type)
    # A bundled provider is a fallback: it fills in the options and never changes what a
    # backend's own code does (the Ascend provider's inductor_headers are doctor's).
    if found is None or found.source.kind not in _OWN_DOOR_KINDS or found.source.fallback:
        return None
    found = loaded(found)
    return found if found.provider is not None else None


def _door_provider(device: str) -> tuple[CppDeviceOptionsCallback, str, str] | None:
    """The provider a device's doors are asked of, its device and its description."""
    found = door_source(device)
    if found is None or found.provider is None:
        return None
    return found.provider, found.device_type, found.description


def removed_cflags(device: str) -> frozenset[str]:
    """The cflags that leave every g++ command made with the device's options."""
    asked = _door_provider(device)
    if asked is None:
        return frozenset()
    return attributes.removed_cflags_of(*asked)


def shim_ops(device: str) -> frozenset[str]:
    """The ``aten.<op>.<overload>`` ops whose C shims the device's SDK declares."""
    asked = _door_provider(device)
    if asked is None:
        return frozenset()
    return attributes.shim_ops_of(*asked)


def headers(device: str, aot_mode: bool) -> tuple[str, ...] | None:
    """The headers the device's generated code includes instead of torch's default one."""
    asked = _door_provider(device)
    if asked is None:
        return None
    return attributes.headers_of(asked[0], asked[1], aot_mode, asked[2])


def cache_key_detail(device: str) -> str | None:
    """The device's cache-key detail for the compile being keyed, as JSON text, or None."""
    asked = _door_provider(device)
    if asked is None:
        return None
    return attributes.cache_key_detail_of(*asked)


def runner(so_path: str, device: str) -> Any:
    """The device's AOTInductor runner for ``so_path``, or None where it declares none."""
    asked = _door_provider(device)
    if asked is None:
        return None
    return attributes.runner_of(*asked, so_path, device)
