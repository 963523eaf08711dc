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

# --- torch 2.15's hooks on a device's DeviceInterface and DeviceOpOverrides, asked where
# torch before 2.15 hard-codes cuda and xpu (_hook/gpu_devices.py, _hook/device_properties.py,
# _hook/triton_capable.py, _hook/gpu_cpp_wrapper.py backport them) ----------------------------
#: ``GPU_TYPES`` (2.15: built from ``DeviceInterface.is_gpu()`` at this module's import),
#: ``get_gpu_type`` and ``device_need_guard`` (2.15: asks ``exposes_streams()``).
INDUCTOR_UTILS, GPU_TYPES = "torch._inductor.utils", "GPU_TYPES"
GET_GPU_TYPE, DEVICE_NEED_GUARD = "get_gpu_type", "device_need_guard"
#: ``DeviceProperties.create`` (2.15: asks ``DeviceInterface.get_multi_processor_count``).
RUNTIME_HINTS, DEVICE_PROPERTIES = "torch._inductor.runtime.hints", "DeviceProperties"
#: ``has_triton`` (2.15: asks each interface's ``is_triton_capable()``).
TRITON_UTILS, HAS_TRITON = "torch.utils._triton", "has_triton"
#: ``GraphLowering.codegen_with_cpp_wrapper`` (2.15: asks ``uses_gpu_cpp_wrapper()``).
GRAPH, GRAPH_LOWERING = "torch._inductor.graph", "GraphLowering"
CODEGEN_WITH_CPP_WRAPPER = "codegen_with_cpp_wrapper"

# --- the per-device doors of a provider (issue 48: _hook/removed_cflags.py, _hook/shim_ops.py,
# _hook/device_headers.py, _hook/cache_key_details.py, _hook/aot_load.py) ------------------------
#: ``FallbackKernel.codegen`` decides between an op's C shim and the proxy executor /
#: ``aoti_torch_call_dispatcher`` by ``torchgen.aoti.fallback_ops.inductor_fallback_ops``.
IR, FALLBACK_KERNEL = "torch._inductor.ir", "FallbackKernel"
FALLBACK_OPS_MODULE, FALLBACK_OPS = "torchgen.aoti.fallback_ops", "inductor_fallback_ops"
#: The C++ wrapper codegen: the device's header (2.13+: ``get_device_include_path_jit/_aot``;
#: 2.6: ``write_header``'s C shim include).
CPP_WRAPPER_CPU, CPP_WRAPPER_CPU_CLASS = "torch._inductor.codegen.cpp_wrapper_cpu", "CppWrapperCpu"
#: AOTAutograd's cache key details (the FX graph's are ``codecache.FxGraphHashDetails``).
AUTOGRAD_CACHE = "torch._functorch._aot_autograd.autograd_cache"
AUTOGRAD_CACHE_DETAILS = "AOTAutogradCacheDetails"
#: ``torch._export.aot_load``: the legacy AOTInductor ``.so`` loader (cpu/cuda/xpu/mps only).
EXPORT, AOT_LOAD = "torch._export", "aot_load"
