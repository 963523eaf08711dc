"""What Inductor's generated code includes for ``npu``, for ``doctor`` to check.

torch_npu's C++ wrapper codegen (``CppWrapperNpu``) cannot be imported without the device
runtime, so the provider declares its includes instead (``cpp_device_options.inductor_headers``).
"""

from __future__ import annotations

#: What torch_npu 2.14.0's C++ wrapper for npu (``CppWrapperNpu`` in
#: ``torch_npu/_inductor/codegen/cpp_wrapper_npu.py``) includes before the device header,
#: in both modes: ``write_header``'s AOTI runtime headers, then ``add_device_include``'s
#: AscendCL, runtime and torch_npu headers. ``{device}`` is the device type.
NPU_WRAPPER_HEADERS: tuple[str, ...] = (
    "torch_npu/csrc/inductor/aoti_runtime/model.h",
    "torch_npu/csrc/inductor/aoti_runtime/device_utils.h",
    "torch_npu/csrc/inductor/aoti_runtime/utils_npu.h",
    "torch_npu/csrc/inductor/aoti_torch/generated/c_shim_{device}.h",
    "fstream",
    "acl/acl.h",
    "acl/acl_rt.h",
    "runtime/runtime/rt.h",
    "torch_npu/csrc/core/npu/NPUStream.h",
    "torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h",
    "torch_npu/csrc/framework/OpCommand.h",
)


def inductor_headers(device_type: str = "npu", aot_mode: bool = False) -> list[str]:
    """The headers torch_npu 2.14.0's C++ wrapper includes for ``device_type``, in order:
    :data:`NPU_WRAPPER_HEADERS`, then its device header
    (``get_device_include_path_jit`` / ``_aot``): ``torch_npu/csrc/inductor/cpp_wrapper/
    <device>.h``, with AOTInductor ``.../aoti_include/<device>.h`` (in torch_npu's
    ``include`` dir, the first of the include dirs)."""
    kind = "aoti_include" if aot_mode else "cpp_wrapper"
    return [
        *(header.format(device=device_type) for header in NPU_WRAPPER_HEADERS),
        f"torch_npu/csrc/inductor/{kind}/{device_type}.h",
    ]
