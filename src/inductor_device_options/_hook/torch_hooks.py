"""Which of torch 2.15's out-of-tree hooks the running torch has natively, which this package
provides, and which it leaves out (``list``, ``show`` and ``doctor`` print them)."""

from __future__ import annotations

import sys
from types import FunctionType
from typing import Literal, NamedTuple

from .._lookup.registry import describe_callable
from .._torch_names import (
    CODECACHE,
    CODEGEN_WITH_CPP_WRAPPER,
    CPP_BUILDER,
    DEVICE_TO_ATEN,
    DEVICE_TO_ATEN_FUNCTION,
    GRAPH_LOWERING,
    HAS_TRITON,
    INIT_BACKEND_REGISTRATION,
    NATIVE_BACKEND_INIT_FLAG,
)
from .backports import BACKPORT_MARK
from .installation import current_installation

HookStatus = Literal["native", "provided", "left out"]

GET_CPP_DEVICE_OPTIONS = "DeviceInterface.get_cpp_device_options"
ATEN_DEVICE_TYPE_HOOK = "DeviceOpOverrides.aten_device_type"
BACKEND_INIT_HOOK = "_inductor_backend_init"
USES_GPU_CPP_WRAPPER = "DeviceOpOverrides.uses_gpu_cpp_wrapper"
IS_GPU = "DeviceInterface.is_gpu"
EXPOSES_STREAMS = "DeviceInterface.exposes_streams"
GET_MULTI_PROCESSOR_COUNT = "DeviceInterface.get_multi_processor_count"
IS_TRITON_CAPABLE = "DeviceInterface.is_triton_capable"
GET_CACHE_SYSTEM_INFO = "DeviceInterface.get_cache_system_info"
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
    from torch._inductor import graph, utils
    from torch._inductor.codegen import common, cpp_utils
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.runtime import hints
    from torch.utils import _triton

    from .install import INSTALLERS, install_imported

    # The codegen hooks, where an import went past the watcher. Not cpp_builder nor codecache:
    # a function written past the package there stays, for doctor's checks to report.
    install_imported(name for name in INSTALLERS if name not in (CPP_BUILDER, CODECACHE))
    version = torch.__version__
    # Each hook is "native" where the running torch has 2.15's method or name (hasattr on
    # torch's base classes, or the name in torch's module), whatever the release number.
    return [
        _cpp_device_options(hasattr(DeviceInterface, "get_cpp_device_options"), version),
        _aten_device_type(cpp_utils.__dict__),
        _backend_init(common.__dict__),
        TorchHook(GET_CACHE_SYSTEM_INFO, "native", "CacheBase.get_system() asks every interface")
        if hasattr(DeviceInterface, "get_cache_system_info")
        else TorchHook(
            GET_CACHE_SYSTEM_INFO,
            "provided",
            "CacheBase.get_system(), wrapped, asks every registered, available interface",
        ),
        _uses_gpu_cpp_wrapper(common.DeviceOpOverrides, graph.__dict__[GRAPH_LOWERING]),
        *_gpu_devices(DeviceInterface, utils.__dict__),
        _multi_processor_count(DeviceInterface, hints.DeviceProperties),
        _triton_capable(_triton.__dict__[HAS_TRITON]),
        _device_include_path(CppWrapperCpu),
    ]


def uses_gpu_cpp_wrapper_instead(version: str) -> str:
    """What torch before 2.15 does where 2.15 asks ``uses_gpu_cpp_wrapper()``."""
    return (
        f"torch {version} takes the GPU-style C++ wrapper path for cuda and xpu only, a list "
        "inside GraphLowering.codegen_with_cpp_wrapper: any other device gets the CPU-style path"
    )


def _uses_gpu_cpp_wrapper(overrides: type, lowering: type) -> TorchHook:
    if hasattr(overrides, "uses_gpu_cpp_wrapper"):
        return TorchHook(
            USES_GPU_CPP_WRAPPER, "native", "GraphLowering asks the device's overrides"
        )
    import torch

    from .gpu_cpp_wrapper import recompiled

    provided = (
        "GraphLowering.codegen_with_cpp_wrapper is torch's own, its cuda/xpu list extended to "
        "ask the overrides of an out-of-tree device (from a compile's start, once a process "
        "has such overrides)"
    )
    method = lowering.__dict__.get(CODEGEN_WITH_CPP_WRAPPER)
    if getattr(method, BACKPORT_MARK, False):
        return TorchHook(USES_GPU_CPP_WRAPPER, "provided", provided)
    # Not torch's own method (a backend replaced it, as before 2.15 backends did): the
    # backport recompiles torch's source only, and leaves a replacement alone.
    if getattr(method, "__module__", None) != "torch._inductor.graph":
        reason = (
            f"GraphLowering.codegen_with_cpp_wrapper is {describe_callable(method)}, not torch's"
        )
    # As install does: torch's method recompiled, where it is a function.
    elif (
        not isinstance(method, FunctionType)
        or recompiled(method, sys.modules["torch._inductor.graph"]) is None
    ):
        reason = "its cuda/xpu list is not found in GraphLowering.codegen_with_cpp_wrapper"
    else:  # installed at a compile's start once the process has such overrides
        return TorchHook(USES_GPU_CPP_WRAPPER, "provided", provided)
    instead = uses_gpu_cpp_wrapper_instead(torch.__version__)
    return TorchHook(USES_GPU_CPP_WRAPPER, "left out", f"{reason}: {instead}")


def _gpu_devices(interface: type, utils: dict[str, object]) -> list[TorchHook]:
    if hasattr(interface, "is_gpu"):
        return [
            TorchHook(IS_GPU, "native", "utils.GPU_TYPES is built from it at utils' import"),
            TorchHook(EXPOSES_STREAMS, "native", "utils.device_need_guard asks it of a GPU"),
        ]
    added = getattr(utils.get("get_gpu_type"), BACKPORT_MARK, False)
    return [
        TorchHook(
            IS_GPU,
            "provided",
            "utils.GPU_TYPES takes the out-of-tree interfaces registered before "
            "torch._inductor.utils is imported, as 2.15 builds it"
            + ("" if added else " (none was: the list is torch's)"),
        ),
        TorchHook(
            EXPOSES_STREAMS,
            "provided",
            "utils.device_need_guard asks it of a device GPU_TYPES took from is_gpu()",
        ),
    ]


def _multi_processor_count(interface: type, properties: type) -> TorchHook:
    if hasattr(interface, "get_multi_processor_count"):
        return TorchHook(GET_MULTI_PROCESSOR_COUNT, "native", "DeviceProperties.create asks it")
    # The classmethod's function (torch 2.6-2.14 cache it with functools): the backport's
    # carries the mark.
    if getattr(properties.__dict__["create"].__func__, BACKPORT_MARK, False):
        return TorchHook(
            GET_MULTI_PROCESSOR_COUNT,
            "provided",
            "DeviceProperties.create asks it of an out-of-tree device whose interface defines it",
        )
    from .device_properties import unknown_fields

    fields = unknown_fields(properties)
    reason = f"fields {fields} unknown to the backport" if fields else "create is not torch's"
    return TorchHook(GET_MULTI_PROCESSOR_COUNT, "left out", f"DeviceProperties has {reason}")


def _triton_capable(has_triton: object) -> TorchHook:
    from .install import calls

    if calls(has_triton, "get_registered_device_interfaces"):
        return TorchHook(IS_TRITON_CAPABLE, "native", "has_triton() asks every interface")
    if getattr(has_triton, BACKPORT_MARK, False):
        return TorchHook(
            IS_TRITON_CAPABLE,
            "provided",
            "has_triton() asks it of the out-of-tree interfaces after torch's fixed list",
        )
    return TorchHook(
        IS_TRITON_CAPABLE,
        "left out",
        f"torch.utils._triton.has_triton is {describe_callable(has_triton)}",
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
