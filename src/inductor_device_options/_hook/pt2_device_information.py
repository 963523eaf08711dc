"""A ``.pt2`` of a device the package serves loads in a process that only loads: without
the device's ``DeviceInterface``, which a backend may register only at its first compile.

torch (2.13 and later) reads ``codecache.get_device_information(device)`` when it loads a
package, to compare it with what the package was built on; without an interface for the
device, ``get_interface_for_device`` raises ``NotImplementedError``, a RuntimeError, which
torch 2.13-2.15's ``package.load_package`` takes for a package of an older format: it warns
"Loading outdated pt2 file" and loads it another way. For a device the
package serves, what can be said without the interface is said instead (the platform, the
machine, the CPU's vector ISA); every other device gets torch's answer, or torch's error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType

from .._lookup.device_types import normalize_device_type
from .installation import is_served

FUNCTION = "get_device_information"
#: What only the device's interface can say.
_INTERFACE_KEYS = ("AOTI_COMPUTE_CAPABILITY",)
_MARK = "_inductor_device_options_device_information"


def install(codecache: ModuleType) -> None:
    """Wrap ``codecache.get_device_information`` where torch has it; idempotent."""
    current = codecache.__dict__.get(FUNCTION)
    if current is None or getattr(current, _MARK, False):
        return
    codecache.__dict__[FUNCTION] = _without_interface(current)


def _without_interface(
    get_device_information: Callable[[str], dict[str, str]],
) -> Callable[[str], dict[str, str]]:
    @functools.wraps(get_device_information)
    def wrapper(device_type: str) -> dict[str, str]:
        try:
            return get_device_information(device_type)
        except NotImplementedError:
            if not is_served(normalize_device_type(device_type)):
                raise
        # torch's own answer for cpu: the same platform, machine and ISA fields, computed by
        # the function a backend may have wrapped, then without the interface's fields.
        information = get_device_information("cpu")
        for key in _INTERFACE_KEYS:
            information.pop(key, None)
        return information

    setattr(wrapper, _MARK, True)
    return wrapper
