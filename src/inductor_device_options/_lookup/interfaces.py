"""torch 2.15's doors on a device's ``DeviceInterface``: the methods a backend's interface
defines itself (``get_cpp_device_options``, ``is_gpu``, ``get_multi_processor_count``, ...).

Found through torch's own registry of device interfaces; asked by torch 2.15, and by the
package's backports of 2.15's hooks on earlier torch (``_hook/``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from typing import Protocol, cast

from .registry import describe_callable

#: Where torch defines its own interfaces (cuda, xpu, mtia, cpu, mps, tpu): the backports
#: never change what torch's own devices get.
_TORCH_INTERFACES = "torch._dynamo.device_interface"


def interface_defining_cpp_options(device_type: str) -> type | None:
    """The device's DeviceInterface if it defines ``get_cpp_device_options`` itself: not
    the base class's (torch 2.15's answers None), which every interface inherits there."""
    from torch._dynamo import device_interface

    try:
        interface = device_interface.get_interface_for_device(device_type)
    except NotImplementedError:  # torch 2.6-2.15: "No interface for device ..."
        return None
    return interface if defines(interface, "get_cpp_device_options") else None


def defines(interface: type, method: str) -> bool:
    """Whether ``interface`` has ``method`` of its own: not the one of torch's base
    ``DeviceInterface`` (which torch 2.15 gives every hook, with its default answer)."""
    from torch._dynamo.device_interface import DeviceInterface

    # getattr_static: descriptors as defined, comparable by identity (bound ones are new).
    own = inspect.getattr_static(interface, method, None)
    return own is not None and own is not inspect.getattr_static(DeviceInterface, method, None)


class Torch215Interface(Protocol):
    """A device's ``DeviceInterface`` as torch 2.15 declares it: the hooks the backports
    ask. torch 2.6 to 2.14's class (and the stubs of the running torch) has none of
    ``get_cpp_device_options``, ``is_gpu`` or ``exposes_streams``."""

    Stream: type

    def is_available(self) -> bool: ...
    def is_triton_capable(self) -> bool: ...
    def is_gpu(self) -> bool: ...
    def exposes_streams(self) -> bool: ...
    def get_cpp_device_options(self, aot_mode: bool, compile_only: bool) -> object: ...


def as_torch_2_15(interface: type) -> Torch215Interface:
    """``interface``, its hooks typed as torch 2.15's: ask one only where :func:`defines`
    found the interface's own (the running torch's base class may lack it)."""
    return cast(Torch215Interface, interface)


def out_of_tree_interface_registered(method: str | None = None) -> bool:
    """Whether torch's registry holds an out-of-tree interface (defining ``method``, if
    given), without importing anything: no module registers one without importing the
    registry first."""
    if "torch._dynamo.device_interface" not in sys.modules:
        return False
    return any(
        method is None or defines(interface, method) for _, interface in out_of_tree_interfaces()
    )


def out_of_tree_interfaces() -> Iterator[tuple[str, type]]:
    """The registered interfaces torch does not define itself, by device type, in the
    registry's order; indexed names (``"npu:0"``) skipped, as torch 2.15 skips them.

    Read from torch's registry without registering torch's own interfaces first
    (``init_device_reg``), which torch does lazily: when it does is unchanged."""
    from torch._dynamo import device_interface

    # torch 2.6-2.15's dict itself: get_registered_device_interfaces() runs init_device_reg().
    for name, interface in list(device_interface.device_interfaces.items()):
        if ":" not in name and interface.__module__ != _TORCH_INTERFACES:
            yield name, interface


def out_of_tree_interface(device_type: str, method: str) -> type | None:
    """The device's registered interface, if torch does not define it and it defines
    ``method`` itself: the device a backport of that hook answers for."""
    from torch._dynamo import device_interface

    interface = device_interface.device_interfaces.get(device_type)
    if interface is None or interface.__module__ == _TORCH_INTERFACES:
        return None
    return interface if defines(interface, method) else None


def interface_description(interface: type) -> str:
    """The interface's method as a person finds it in the code."""
    return f"{describe_callable(interface)}.get_cpp_device_options"
