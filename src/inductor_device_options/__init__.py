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
"""

from __future__ import annotations

from ._errors import (
    CppDeviceOptionsError,
    DeviceNotAskedWarning,
    InvalidCppDeviceOptionsError,
    InvalidDeviceTypeError,
    InvalidProviderError,
    ProviderLoadError,
    ProviderRecursionError,
    ReservedDeviceTypeError,
    RunpathError,
)
from .hook.install import (
    DeviceOptionsSource,
    HookState,
    arm,
    default_cpp_device_options,
    device_options_source,
    get_cpp_device_options,
    hook_state,
    known_device_options_sources,
    registered_device_types,
)
from .lookup.registry import (
    ENTRY_POINT_GROUP,
    RESERVED_DEVICE_TYPES,
    CppDeviceOptionsCallback,
    guarantee_cpp_device_options,
    register_cpp_device_options,
    registered_cpp_device_options,
    unregister_cpp_device_options,
)
from .options.model import CppDeviceOptions
from .options.tools import runpath

__version__ = "0.1.0"

__all__ = [
    "ENTRY_POINT_GROUP",
    "RESERVED_DEVICE_TYPES",
    "CppDeviceOptions",
    "CppDeviceOptionsCallback",
    "CppDeviceOptionsError",
    "DeviceNotAskedWarning",
    "DeviceOptionsSource",
    "HookState",
    "InvalidCppDeviceOptionsError",
    "InvalidDeviceTypeError",
    "InvalidProviderError",
    "ProviderLoadError",
    "ProviderRecursionError",
    "ReservedDeviceTypeError",
    "RunpathError",
    "arm",
    "default_cpp_device_options",
    "device_options_source",
    "get_cpp_device_options",
    "guarantee_cpp_device_options",
    "hook_state",
    "known_device_options_sources",
    "register_cpp_device_options",
    "registered_cpp_device_options",
    "registered_device_types",
    "runpath",
    "unregister_cpp_device_options",
]

# help() and the reference show each name where users import it from.
for _name in __all__:
    _public = globals()[_name]
    if callable(_public) and getattr(_public, "__module__", "").startswith(__name__ + "._"):
        _public.__module__ = __name__
del _name, _public

arm()
