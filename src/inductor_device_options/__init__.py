"""Give TorchInductor the C++ compile options of an out-of-tree device.

A backend registers a provider for its device type::

    import inductor_device_options as ido

    def npu_options(device_type, aot_mode, compile_only):
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        options.definitions.append("USE_NPU")
        return options

    ido.register_cpp_device_options("npu", npu_options)

Importing this package does not import ``torch._inductor``: the hook installs itself
when ``torch._inductor.cpp_builder`` is first imported.

Two submodules complete this face: :mod:`inductor_device_options.introspection` (where a
device's options come from, where the hook stands) and :mod:`inductor_device_options.testing`
(registrations for a ``with`` block, and the one reset of the package's state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import (
    CppDeviceOptionsError,
    DeviceNotAskedWarning,
    InvalidCppDeviceOptionsError,
    InvalidDeviceTypeError,
    InvalidProviderAttributeError,
    InvalidProviderError,
    ProviderLoadError,
    ProviderRecursionError,
    ReservedDeviceTypeError,
    RunpathError,
    SdkMismatchError,
)
from ._hook.install import arm
from ._lookup.device_types import RESERVED_DEVICE_TYPES
from ._lookup.registry import (
    ENTRY_POINT_GROUP,
    guarantee_cpp_device_options,
    register_cpp_device_options,
    unregister_cpp_device_options,
)
from ._options.model import CppDeviceOptions
from ._options.runpath import runpath
from ._source import CppDeviceOptionsCallback

if TYPE_CHECKING:
    from ._defaults import default_cpp_device_options
    from ._hook.lookups import get_cpp_device_options
    from ._options.pipeline import check_value

__version__ = "0.1.0"

__all__ = [
    "ENTRY_POINT_GROUP",
    "RESERVED_DEVICE_TYPES",
    "CppDeviceOptions",
    "CppDeviceOptionsCallback",
    "CppDeviceOptionsError",
    "DeviceNotAskedWarning",
    "InvalidCppDeviceOptionsError",
    "InvalidDeviceTypeError",
    "InvalidProviderAttributeError",
    "InvalidProviderError",
    "ProviderLoadError",
    "ProviderRecursionError",
    "ReservedDeviceTypeError",
    "RunpathError",
    "SdkMismatchError",
    "arm",
    "check_value",
    "default_cpp_device_options",
    "get_cpp_device_options",
    "guarantee_cpp_device_options",
    "register_cpp_device_options",
    "runpath",
    "unregister_cpp_device_options",
]


#: The face's names loaded on first use, not in every process that imports torch: the
#: module each is defined in.
_LOADED_ON_FIRST_USE = {
    "check_value": "_options.pipeline",  # the validation pipeline: for a provider that asks
    "default_cpp_device_options": "_defaults",  # for providers and their users
    "get_cpp_device_options": "_hook.lookups",
}


def __getattr__(name: str) -> object:
    """``ido.introspection``, ``ido.testing`` and the names of ``_LOADED_ON_FIRST_USE`` load
    on first use."""
    import importlib

    if name in ("introspection", "testing"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LOADED_ON_FIRST_USE:
        value = getattr(importlib.import_module(f"{__name__}.{_LOADED_ON_FIRST_USE[name]}"), name)
        value.__module__ = __name__
        globals()[name] = value  # later uses find it without this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# help() and the reference show each name where users import it from.
for _name in __all__:
    _public = globals().get(_name)
    if callable(_public) and getattr(_public, "__module__", "").startswith(__name__ + "._"):
        _public.__module__ = __name__
del _name, _public, TYPE_CHECKING

arm()
