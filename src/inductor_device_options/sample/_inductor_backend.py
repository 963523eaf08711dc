"""TorchInductor's side of "sampledev": the device's memory is host memory, so it
reuses Inductor's CPU C++ kernels; what differs is the device name the wrappers
report, which is what selects the device's headers and C++ options.

Written once against torch 2.15's out-of-tree contract, with no branch on torch's
version: torch calls :func:`register_inductor_backend` through the device module's
``_inductor_backend_init`` before the device's first compile, the generated C++
names the device's ATen type from ``aten_device_type()``, and the device answers 2.15's
other hooks as a host-memory device does: not a GPU, no streams, no Triton, the CPU-style
C++ wrapper, the host's cores as compute units (before 2.15 this package provides them).
Importing this module imports ``torch._inductor``: only that hook does.
"""

# torch's Inductor codegen classes are not typed: calls into them need
# ``type: ignore[no-untyped-call]`` under mypy --strict.
from __future__ import annotations

import os
from typing import Any

import torch
from torch._dynamo.device_interface import (
    CpuDeviceProperties,
    DeviceInterface,
    register_interface_for_device,
)
from torch._inductor.codegen.common import (
    DeviceOpOverrides,
    register_backend_for_device,
    register_device_op_overrides,
)
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen

from ._sdk import DEVICE_COUNT, DEVICE_NAME


class SampledevDeviceOpOverrides(DeviceOpOverrides):
    """Python wrapper snippets: no streams, no device switching on the host."""

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"def {name}(_):\n    return 0\n"

    def set_device(self, device_idx: int) -> str:
        return "pass"

    def synchronize(self) -> str:
        return "pass"

    def device_guard(self, device_idx: int) -> str:
        return "torch._ops.contextlib.nullcontext()"

    def cpp_kernel_type(self) -> str:
        return "void*"

    def aten_device_type(self) -> str:
        # The generated C++ caches the device type with aoti_torch_device_type_privateuse1().
        return "at::kPrivateUse1"

    def uses_gpu_cpp_wrapper(self) -> bool:
        # C++ kernels, nothing to autotune: the C++ wrapper is written in one pass, as cpu's.
        return False


class SampledevPythonWrapperCodegen(PythonWrapperCodegen):
    """Python wrapper (plain ``torch.compile``): calls the C++ kernels as for CPU."""

    # *partition_signatures: torch 2.13 and 2.15 pass a fourth argument to create(), 2.6
    # does not.
    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        *partition_signatures: Any,
    ) -> PythonWrapperCodegen:
        if is_subgraph:  # a subgraph's wrapper is torch's own
            wrapper: PythonWrapperCodegen = PythonWrapperCodegen.create(
                is_subgraph, subgraph_name, parent_wrapper, *partition_signatures
            )
            return wrapper
        return SampledevPythonWrapperCodegen()  # type: ignore[no-untyped-call]

    def _generate_kernel_call_helper(
        self,
        kernel_name: str,
        call_args: Any,
        *,
        device: torch.device | None = None,
        **kwargs: Any,
    ) -> None:
        # torch 2.13 and 2.15's PythonWrapperCodegen._generate_kernel_call_helper writes a
        # C++ kernel's call for cpu and mps only and raises "device ... nyi" for any other;
        # the call is the same as cpu's. (torch 2.6 has no such method: its
        # generate_kernel_call writes the call for any device when gpu=False.)
        from torch._inductor.virtualized import V

        device = device or V.graph.get_current_device_or_throw()
        if device.type == DEVICE_NAME:
            device = torch.device("cpu")
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)


class SampledevCppWrapperCodegen(CppWrapperCpu):
    """C++ wrapper (``cpp_wrapper`` and AOTInductor) for "sampledev".

    Reporting the device name makes Inductor include
    ``torch/csrc/inductor/{cpp_wrapper,aoti_include}/sampledev.h`` and build with
    ``CppTorchDeviceOptions(device_type="sampledev")``: the two things the
    device's C++ options must serve.
    """

    def __init__(self) -> None:
        # CppWrapperCpu keeps a device set before its __init__ and defaults to "cpu"
        # (torch 2.6-2.15: ``if not hasattr(self, "device"): self.device = "cpu"``).
        self.device = DEVICE_NAME
        super().__init__()  # type: ignore[no-untyped-call]

    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        *partition_signatures: Any,
    ) -> PythonWrapperCodegen:
        return SampledevCppWrapperCodegen()


class SampledevDeviceInterface(DeviceInterface):
    """What Dynamo and Inductor ask about the device (one device, no streams)."""

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            pass

        @staticmethod
        def current_device() -> int:
            return 0

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> CpuDeviceProperties:
            # Inductor sizes reductions by the processor count: the host's cores run
            # sampledev kernels.
            return CpuDeviceProperties(os.cpu_count() or 1)

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def set_device(device: torch.types.Device) -> None:
        pass

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return 0

    @staticmethod
    def exchange_device(device: int) -> int:
        return 0

    @staticmethod
    def device_count() -> int:
        return DEVICE_COUNT

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return 0

    @staticmethod
    def synchronize(device: torch.types.Device = None) -> None:
        pass

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device: torch.types.Device = None) -> bool:
        return False

    @staticmethod
    def is_gpu() -> bool:
        # Host memory and CPU kernels: Inductor treats it as it treats cpu (no device guards).
        return False

    @classmethod
    def exposes_streams(cls) -> bool:
        return False

    @classmethod
    def get_multi_processor_count(cls, device: torch.types.Device = None) -> int:
        # Inductor sizes reductions by the compute units: the host's cores.
        return os.cpu_count() or 1


def register_inductor_backend() -> None:
    """Tell Dynamo and Inductor how to compile for "sampledev": the device module's
    ``_inductor_backend_init``."""
    register_interface_for_device(DEVICE_NAME, SampledevDeviceInterface)
    register_device_op_overrides(DEVICE_NAME, SampledevDeviceOpOverrides())
    register_backend_for_device(
        DEVICE_NAME,
        CppScheduling,
        SampledevPythonWrapperCodegen,
        SampledevCppWrapperCodegen,
    )
