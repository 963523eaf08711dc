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
#: Its builder, and the builder's writers of the C++ project AOTInductor writes with
#: ``aot_inductor.package_cpp_only`` (torch 2.6 has none): the hook wraps them (_hook/cmake.py).
BUILDER = "CppBuilder"
CMAKE_WRITERS = ("save_compile_cmd_to_cmake", "save_link_cmd_to_cmake")

# --- torch 2.15's out-of-tree hooks in Inductor's codegen (_hook/aten_device_type.py,
# _hook/backend_init.py backport them before 2.15) -------------------------------------------
#: Inductor's C++ codegen helpers. Before 2.15 they map a device type to ATen's with the dict
#: ``DEVICE_TO_ATEN``; torch 2.15 asks ``device_to_aten``, which asks the device's
#: ``DeviceOpOverrides.aten_device_type()``.
CPP_UTILS = "torch._inductor.codegen.cpp_utils"
DEVICE_TO_ATEN = "DEVICE_TO_ATEN"
DEVICE_TO_ATEN_FUNCTION = "device_to_aten"
ATEN_DEVICE_TYPE = "aten_device_type"
#: Where Inductor registers the devices' backends (``init_backend_registration``).
CODEGEN_COMMON = "torch._inductor.codegen.common"
INIT_BACKEND_REGISTRATION = "init_backend_registration"
#: The attribute of a PrivateUse1 device module that torch 2.15 calls before the device's
#: first compile needs its registration.
BACKEND_INIT = "_inductor_backend_init"
#: torch 2.15's guard flag in ``codegen.common``: a torch that has it calls BACKEND_INIT.
NATIVE_BACKEND_INIT_FLAG = "_privateuse1_backend_init_in_progress"
#: Inductor's compile entry (``torch.compile``, ``compile_fx``, AOTInductor): torch 2.15 runs
#: BACKEND_INIT at the top of its ``_compile_fx_main``, before the decomposition table is
#: taken (torch 2.6 takes it in ``compile_fx`` itself).
COMPILE_FX = "torch._inductor.compile_fx"
COMPILE_FX_MAIN = "_compile_fx_main"
COMPILE_FX_FUNCTION = "compile_fx"

# --- the SDK identity in Inductor's caches and packages (_hook/cache_keys.py, _hook/pt2_stamp.py)
#: Inductor's caches (``CacheBase.get_system()``) and AOTInductor's package writer; the
#: modules that load packages (through ``torch._C._aoti.AOTIModelPackageLoader``).
CODECACHE, CODECACHE_READY = "torch._inductor.codecache", "AotCodeCompiler"
PACKAGE_LOADER, PACKAGE_LOADER_READY = "torch._inductor.package.package", "load_package"
PT2_ARCHIVE, PT2_ARCHIVE_READY = "torch.export.pt2_archive._package", "load_pt2"
