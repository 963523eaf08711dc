"""torch 2.15's door: a device's ``DeviceInterface`` that defines ``get_cpp_device_options``.

Found through torch's own registry of device interfaces; asked by torch 2.15's function,
and by the package's backport of it on earlier torch (``_hook/backports``).
"""

from __future__ import annotations

import inspect

from .registry import describe_callable


def interface_defining_cpp_options(device_type: str) -> type | None:
    """The device's DeviceInterface if it defines ``get_cpp_device_options`` itself: not
    the base class's (torch 2.15's answers None), which every interface inherits there."""
    from torch._dynamo import device_interface

    try:
        interface = device_interface.get_interface_for_device(device_type)
    except NotImplementedError:
        return None
    own = inspect.getattr_static(interface, "get_cpp_device_options", None)
    if own is None:
        return None
    inherited = inspect.getattr_static(
        device_interface.DeviceInterface, "get_cpp_device_options", None
    )
    return None if own is inherited else interface


def interface_description(interface: type) -> str:
    """The interface's method as a person finds it in the code."""
    return f"{describe_callable(interface)}.get_cpp_device_options"
