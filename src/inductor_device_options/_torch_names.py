"""The names in torch this package relies on, in one place."""

from __future__ import annotations

#: The module Inductor builds C++ with.
CPP_BUILDER = "torch._inductor.cpp_builder"
#: Its function ``CppTorchDeviceOptions`` asks for a device's options (a module-global
#: lookup at call time).
FUNCTION = "get_cpp_torch_device_options"
#: The design's registry API in that module: torch has it with the upstream patch; the hook
#: backports it everywhere else.
REGISTER = "register_cpp_device_options"
REGISTRY = "_cpp_device_options_registry"
