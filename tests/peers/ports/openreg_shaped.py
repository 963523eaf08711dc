"""A backend of the openreg sample's shape (torch's ``test/cpp_extensions/
open_registration_extension/torch_openreg``), written twice, on regdev
(tests/peers/regdev): a C++ extension with its own AOTI model runner (registered in torch's
C++ registry) and C shims (``aoti_torch_regdev_{mm,addmm,bmm}_out`` in its SDK's
``regdev/c_shim.h``), a wrapper class that reports "regdev" and includes the SDK's runtime.

``apply_patches()`` patches torch as unmigrated openreg-derived backends do:

* ``cpp_builder.get_cpp_torch_device_options`` wrapped to add the SDK for "regdev" and for
  "cpu" (regdev_backend's ``REGDEV_REGISTER=legacy_wrapper``);
* ``cpp_utils.DEVICE_TO_ATEN["regdev"]`` written where torch has it (before 2.15);
* ``torch._export.aot_load`` replaced to load regdev's ``.so`` (torch's knows cpu, cuda,
  xpu and mps only).

``apply_doors()``: the package's registration, ``DeviceOpOverrides.aten_device_type()``
(backported before 2.15) and the ``aoti_runner`` door; nothing assigned in torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

DEVICE = "regdev"
#: The definition on every g++ line made with the device's options.
DEVICE_MACRO = "REGDEV_SDK"
#: The ops the model reaches through the SDK's C shims.
SHIM_NAMES = ("aoti_torch_regdev_addmm_out",)


def _regdev() -> Any:
    import regdev_backend

    return regdev_backend


def set_up_device(root: Path) -> Path:
    """regdev in eager PyTorch (its SDK and extension built into ``$PORTS_BUILD_DIR``)."""
    import torch
    from torch.utils.backend_registration import generate_methods_for_privateuse1_backend

    regdev = _regdev()
    build_dir = Path(os.environ["PORTS_BUILD_DIR"])
    os.environ[regdev.ENV_BUILD_DIR] = str(build_dir)
    regdev.build(build_dir)
    torch.utils.rename_privateuse1_backend(DEVICE)
    torch._register_device_module(DEVICE, regdev._device_module())
    generate_methods_for_privateuse1_backend()
    # The AOTI runner of its own, in torch's C++ registry (aoti_load_package's door).
    torch.ops.regdev.register_aoti_runner()
    return build_dir


def inputs() -> tuple[Any, ...]:
    import torch

    return torch.randn(4, 8), torch.randn(8, 3), torch.randn(3)


def model(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.relu(torch.addmm(b, x, w))


def cpu_runner(so_path: str, device: str) -> Any:
    """regdev memory is host memory: torch's CPU container runs the model (as regdev's own
    C++ runner, csrc/regdev.cpp, does for aoti_load_package)."""
    import torch

    return torch._C._aoti.AOTIModelContainerRunnerCpu(so_path, 1)


def _register_backend(*, write_device_to_aten: bool) -> None:
    """regdev's Inductor side (regdev_backend's, reporting "regdev"), through torch's APIs."""
    import torch
    from torch._dynamo.device_interface import (
        CpuDeviceProperties,
        DeviceInterface,
        register_interface_for_device,
    )
    from torch._inductor.codegen import cpp_utils
    from torch._inductor.codegen.common import (
        DeviceOpOverrides,
        register_backend_for_device,
        register_device_op_overrides,
    )
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.virtualized import V

    class Overrides(DeviceOpOverrides):  # type: ignore[misc]
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
            return "at::kPrivateUse1"

    class PythonWrapper(PythonWrapperCodegen):  # type: ignore[misc]
        @staticmethod
        def create(is_subgraph: bool, *args: Any) -> Any:
            if is_subgraph:
                return PythonWrapperCodegen.create(is_subgraph, *args)
            return PythonWrapper()

        def _generate_kernel_call_helper(
            self, kernel_name: str, call_args: Any, *, device: Any = None, **kwargs: Any
        ) -> None:
            device = device or V.graph.get_current_device_or_throw()
            if device.type == DEVICE:
                device = torch.device("cpu")
            super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)

    class CppWrapper(CppWrapperCpu):  # type: ignore[misc]
        def __init__(self) -> None:
            self.device = DEVICE  # kept by CppWrapperCpu.__init__
            super().__init__()

        @staticmethod
        def create(*args: Any) -> Any:
            return CppWrapper()

        def write_header(self) -> None:
            super().write_header()
            if not getattr(V.graph, "is_const_graph", False):
                self.header.writeline(f"#include <{DEVICE}/runtime.h>")

    class Interface(DeviceInterface):  # type: ignore[misc]
        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                pass

            @staticmethod
            def current_device() -> int:
                return 0

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return CpuDeviceProperties(os.cpu_count() or 1)

        current_device = staticmethod(lambda: 0)
        set_device = staticmethod(lambda device: None)
        maybe_exchange_device = staticmethod(lambda device: 0)
        exchange_device = staticmethod(lambda device: 0)
        device_count = staticmethod(lambda: 1)
        is_available = staticmethod(lambda: True)
        get_raw_stream = staticmethod(lambda device_idx: 0)
        synchronize = staticmethod(lambda device=None: None)
        get_compute_capability = staticmethod(lambda device=None: "")
        is_bf16_supported = staticmethod(lambda including_emulation=False: True)
        is_triton_capable = staticmethod(lambda device=None: False)

    register_interface_for_device(DEVICE, Interface)
    # Before 2.13 torch fills its own overrides only into an empty table (cpu's among them).
    from torch._inductor.codegen import cpu_device_op_overrides  # noqa: F401

    register_device_op_overrides(DEVICE, Overrides())
    register_backend_for_device(DEVICE, CppScheduling, PythonWrapper, CppWrapper)
    device_to_aten = getattr(cpp_utils, "DEVICE_TO_ATEN", None)
    if write_device_to_aten and device_to_aten is not None:
        device_to_aten[DEVICE] = "at::kPrivateUse1"


def apply_patches(build_dir: Path) -> dict[str, str]:
    import torch
    import torch._export

    _register_backend(write_device_to_aten=True)
    _regdev()._assign_legacy_wrapper()
    origin_aot_load = torch._export.aot_load

    def aot_load_regdev(so_path: str, device: str) -> Any:
        if device == DEVICE or device.startswith(f"{DEVICE}:"):
            from npu_shaped import _loaded

            return _loaded(cpu_runner(so_path, device))
        return origin_aot_load(so_path, device)

    torch._export.aot_load = aot_load_regdev
    return {}


def patched_names() -> list[str]:
    from torch._inductor.codegen import cpp_utils

    names = ["torch._export.aot_load", "torch._inductor.cpp_builder.get_cpp_torch_device_options"]
    if hasattr(cpp_utils, "DEVICE_TO_ATEN"):
        names += [
            f"{name}.DEVICE_TO_ATEN['{DEVICE}']"
            for name, module in list(sys.modules.items())
            if name.startswith("torch")
            and getattr(module, "DEVICE_TO_ATEN", None) is cpp_utils.DEVICE_TO_ATEN
        ]
    return sorted(names)


def apply_doors(build_dir: Path) -> None:
    import inductor_device_options as ido

    _register_backend(write_device_to_aten=False)

    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> Any:
        return _regdev().cpp_device_options(device_type, aot_mode, compile_only)

    provider.aoti_runner = cpu_runner  # type: ignore[attr-defined]
    ido.register_cpp_device_options(DEVICE, provider)
