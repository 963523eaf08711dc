"""Which of torch 2.15's out-of-tree hooks the running torch has natively, which this package
provides, and which it leaves out (``list``, ``show`` and ``doctor`` print them)."""

from __future__ import annotations

import sys
from typing import Literal, NamedTuple

from .._torch_names import (
    CODECACHE,
    CPP_BUILDER,
    DEVICE_TO_ATEN,
    DEVICE_TO_ATEN_FUNCTION,
    INIT_BACKEND_REGISTRATION,
    NATIVE_BACKEND_INIT_FLAG,
)
from .backports import BACKPORT_MARK
from .serve import current_installation

HookStatus = Literal["native", "provided", "left out"]

GET_CPP_DEVICE_OPTIONS = "DeviceInterface.get_cpp_device_options"
ATEN_DEVICE_TYPE_HOOK = "DeviceOpOverrides.aten_device_type"
BACKEND_INIT_HOOK = "_inductor_backend_init"
USES_GPU_CPP_WRAPPER = "DeviceOpOverrides.uses_gpu_cpp_wrapper"
DEVICE_INCLUDE_PATH = "CppWrapperCpu.get_device_include_path_jit/_aot"


class TorchHook(NamedTuple):
    """One of torch 2.15's hooks and who provides it on the running torch."""

    #: As torch 2.15 names it, e.g. ``"DeviceOpOverrides.aten_device_type"``.
    name: str
    #: ``native`` (torch has it), ``provided`` (this package backports it) or ``left out``.
    status: HookStatus
    #: What serves it, or what the running torch does instead.
    detail: str

    def describe(self) -> str:
        return f"{self.name}: {self.status} ({self.detail})"


def torch_hooks() -> list[TorchHook]:
    """torch 2.15's hooks on the running torch. Imports Inductor's codegen (about a second)."""
    import torch
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor.codegen import common, cpp_utils
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    from .install import INSTALLERS, install_imported

    # The codegen hooks, where an import went past the watcher. Not cpp_builder nor codecache:
    # a function written past the package there stays, for doctor's checks to report.
    install_imported(name for name in INSTALLERS if name not in (CPP_BUILDER, CODECACHE))
    version = torch.__version__
    return [
        _cpp_device_options(hasattr(DeviceInterface, "get_cpp_device_options"), version),
        _aten_device_type(cpp_utils.__dict__),
        _backend_init(common.__dict__),
        TorchHook(USES_GPU_CPP_WRAPPER, "native", "GraphLowering asks the device's overrides")
        if hasattr(common.DeviceOpOverrides, "uses_gpu_cpp_wrapper")
        else TorchHook(USES_GPU_CPP_WRAPPER, "left out", uses_gpu_cpp_wrapper_instead(version)),
        _device_include_path(CppWrapperCpu),
    ]


def uses_gpu_cpp_wrapper_instead(version: str) -> str:
    """What torch before 2.15 does where 2.15 asks ``uses_gpu_cpp_wrapper()``."""
    return (
        f"torch {version} takes the GPU-style C++ wrapper path for cuda and xpu only, a list "
        "inside GraphLowering.codegen_with_cpp_wrapper, whose body differs in every release: "
        "any other device gets the CPU-style path"
    )


def _cpp_device_options(native: bool, version: str) -> TorchHook:
    if native:
        return TorchHook(GET_CPP_DEVICE_OPTIONS, "native", "cpp_builder asks the interface")
    installation = current_installation()
    if installation is None or installation.backport:
        return TorchHook(
            GET_CPP_DEVICE_OPTIONS, "provided", "around stock torch's get_cpp_torch_device_options"
        )
    reason = (
        "torch has the design's registry (native)"
        if installation.mode == "native"
        else "the function below the package is another backend's, not stock torch's"
    )
    return TorchHook(GET_CPP_DEVICE_OPTIONS, "left out", f"torch {version}: {reason}")


def _aten_device_type(cpp_utils: dict[str, object]) -> TorchHook:
    function = cpp_utils.get(DEVICE_TO_ATEN_FUNCTION)
    if function is not None and not getattr(function, BACKPORT_MARK, False):
        return TorchHook(ATEN_DEVICE_TYPE_HOOK, "native", "cpp_utils.device_to_aten asks it")
    if function is None:
        return TorchHook(ATEN_DEVICE_TYPE_HOOK, "left out", f"no cpp_utils.{DEVICE_TO_ATEN}")
    return TorchHook(
        ATEN_DEVICE_TYPE_HOOK,
        "provided",
        f"cpp_utils.{DEVICE_TO_ATEN} asks it for devices not in the dict; cpp_utils.device_to_aten",
    )


def _backend_init(common: dict[str, object]) -> TorchHook:
    if NATIVE_BACKEND_INIT_FLAG in common:
        return TorchHook(BACKEND_INIT_HOOK, "native", "init_backend_registration calls it")
    if getattr(common.get(INIT_BACKEND_REGISTRATION), BACKPORT_MARK, False):
        return TorchHook(
            BACKEND_INIT_HOOK,
            "provided",
            "from init_backend_registration and before compile_fx takes decompositions",
        )
    return TorchHook(BACKEND_INIT_HOOK, "left out", "init_backend_registration is not torch's")


def _device_include_path(wrapper: type) -> TorchHook:
    if hasattr(wrapper, "get_device_include_path_jit"):
        return TorchHook(DEVICE_INCLUDE_PATH, "native", "CppWrapperCpu.write_header calls them")
    return TorchHook(DEVICE_INCLUDE_PATH, "left out", f"torch calls {device_include_path_names()}")


def device_include_path_names() -> str:
    """The method(s) the running torch's ``CppWrapperCpu`` asks for a device's header."""
    wrapper = sys.modules["torch._inductor.codegen.cpp_wrapper_cpu"].CppWrapperCpu
    if hasattr(wrapper, "get_device_include_path_jit"):
        return "CppWrapperCpu.get_device_include_path_jit() and _aot()"
    if hasattr(wrapper, "get_device_include_path"):
        return "CppWrapperCpu.get_device_include_path()"
    return "no method: CppWrapperCpu.write_header writes the includes itself"
