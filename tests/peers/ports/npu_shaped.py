"""A backend of torch_npu's shape, written twice, on the sample device "sampledev" (its
extension, SDK and runtime; its own header tree stands for ``torch_npu/csrc/inductor``):

``apply_patches()`` patches torch as torch_npu's public code does (Ascend/pytorch master,
``../shared/census.md`` rows 1-3, 19-25):

* ``cpp_builder.get_cpp_torch_device_options`` replaced wholesale (``_inductor/cpp_builder.py``);
* ``cpp_builder._get_optimization_cflags`` replaced, without ``-march=native``. torch_npu's
  copy is torch 2.6's body; this one filters torch's own answer, so that the flags differ
  from torch's by ``-march=native`` alone on every release (2.13 returns (cflags, ldflags));
* ``codecache._get_cpp_wrapper_header`` wrapped (2.13+; ``_inductor/codecache.py``), and the
  wrapper class overriding ``get_device_include_path_jit/_aot`` (2.6: its header);
* ``CacheBase.get_system`` assigned (``codegen/common.py``);
* ``FxGraphHashDetails.__init__``/``AOTAutogradCacheDetails.__init__`` wrapped to key the
  deterministic level (``deterministic_cache.py``);
* ``torch._export.aot_load`` replaced (``export.py``);
* ``torchgen.aoti.fallback_ops.inductor_fallback_ops`` assigned torch's ops plus the device's
  (``lowering.py``);
* ``cpp_utils.DEVICE_TO_ATEN["sampledev"]`` written (``codegen/cpp_utils.py``): 2.15 has no
  ``DEVICE_TO_ATEN``, so there it raises AttributeError, and the overrides, which define no
  ``aten_device_type()`` (torch_npu's do not), fail the C++ wrapper.

``apply_doors()`` gives the same through the package's doors and torch's registration APIs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

DEVICE = "sampledev"
#: The definition on every g++ line made with the device's options.
DEVICE_MACRO = "SAMPLEDEV_DEVICE"
SDK_VERSION = "sampledev-sdk 1.0"
#: An op Inductor falls back to that no torch's fallback_ops lists (2.6, 2.13, 2.15): the
#: sample SDK's c_shim.h, which torch's default device header includes, declares its shim.
SHIM_OP = "aten.nanmedian.dim"
SHIM_NAMES = (f"aoti_torch_{DEVICE}_nanmedian_dim",)
DETERMINISTIC_LEVEL = 1


# --- what both versions share ---------------------------------------------------------


def set_up_device(root: Path) -> Paths:
    """sampledev in eager PyTorch (the sample's extension and runtime, built into
    ``$PORTS_BUILD_DIR``), without the sample's own Inductor backend or registration."""
    import importlib

    import torch
    from torch.utils.backend_registration import generate_methods_for_privateuse1_backend

    # Not ``from ...sample import _device``: the sample package's global of that name wins.
    device = importlib.import_module("inductor_device_options.sample._device")
    sdk = importlib.import_module("inductor_device_options.sample._sdk")
    build_dir = Path(os.environ["PORTS_BUILD_DIR"])
    library = sdk.build_runtime_library(build_dir / "sdk" / "lib")
    device.load_extension(build_dir / f"torch-{torch.__version__}" / "extension")
    torch.utils.rename_privateuse1_backend(DEVICE)
    module = device._make_device_module()
    del module._inductor_backend_init  # the backend registers its Inductor side itself
    torch._register_device_module(DEVICE, module)
    generate_methods_for_privateuse1_backend()
    tree = write_tree(root / "tree")
    return Paths(sdk.SDK_INCLUDE_DIR, library.parent, tree)


def inputs() -> tuple[Any, ...]:
    import torch

    return torch.randn(4, 8), torch.randn(8, 3)


def model(x: Any, w: Any) -> Any:
    """A matrix product (torch's C shim list), then nanmedian (the device's own shim)."""
    import torch

    return torch.nanmedian(x @ w, dim=1).values + 1.0


def torch_default_header(aot_mode: bool) -> str:
    """The device header torch's generated code includes for the device by default."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    mode = "aot" if aot_mode else "jit"
    include = getattr(CppWrapperCpu, f"get_device_include_path_{mode}", None)
    if include is None:  # torch 2.6: the C shim header, in both modes
        return f"torch/csrc/inductor/aoti_torch/generated/c_shim_{DEVICE}.h"
    return str(include(DEVICE)).removeprefix("#include <").removesuffix(">")


def tree_headers(aot_mode: bool) -> list[str]:
    """The headers of the backend's own tree the generated code includes instead."""
    return [f"npu_shaped/{'aoti_include' if aot_mode else 'cpp_wrapper'}/{DEVICE}.h"]


def write_tree(root: Path) -> Path:
    """The backend's own include dir (``torch_npu/csrc/inductor``'s counterpart): a header
    per mode that includes torch's default one (and so the SDK's C shims)."""
    include = root / "include"
    for aot_mode in (False, True):
        path = include / tree_headers(aot_mode)[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#pragma once\n#include <{torch_default_header(aot_mode)}>\n")
    return include


class Paths:
    def __init__(self, sdk_include: Path, runtime_lib_dir: Path, tree_include: Path) -> None:
        self.sdk_include = sdk_include
        self.runtime_lib_dir = runtime_lib_dir
        self.tree_include = tree_include


def options_fields(paths: Paths) -> tuple[list[str], ...]:
    """The device's seven fields, computed whole (torch_npu's include_paths/library_paths)."""
    import torch
    from torch.utils import cpp_extension

    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    return (
        ["SAMPLEDEV_DEVICE"],
        [*cpp_extension.include_paths(), str(paths.sdk_include), str(paths.tree_include)],
        [],
        [f"Wl,-rpath,{os.path.realpath(paths.runtime_lib_dir)}"],
        [torch_lib, str(paths.runtime_lib_dir)],
        ["sampledev_runtime"],
        [],
    )


def deterministic_level() -> int:
    return DETERMINISTIC_LEVEL


def cpu_runner(so_path: str, device: str) -> Any:
    """sampledev memory is host memory: torch's CPU container runs the model."""
    import torch

    return torch._C._aoti.AOTIModelContainerRunnerCpu(so_path, 1)


def _register_backend(*, patch: bool, paths: Paths) -> None:
    """Inductor's backend for the device, through torch's registration APIs only."""
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import (
        DeviceOpOverrides,
        register_backend_for_device,
        register_device_op_overrides,
    )
    from torch._inductor.codegen.cpp import CppScheduling

    from inductor_device_options.sample import _inductor_backend as sample

    interface: type = sample.SampledevDeviceInterface
    overrides: type = sample.SampledevDeviceOpOverrides
    wrapper: type = sample.SampledevCppWrapperCodegen
    if patch:
        # torch_npu's overrides define no aten_device_type(): DEVICE_TO_ATEN names the type.
        methods = {
            name: value
            for name, value in vars(sample.SampledevDeviceOpOverrides).items()
            if name != "aten_device_type" and not name.startswith("__")
        }
        overrides = type("NpuShapedOverrides", (DeviceOpOverrides,), methods)
        wrapper = _patch_wrapper(sample.SampledevCppWrapperCodegen)
    else:

        class DoorInterface(sample.SampledevDeviceInterface):  # type: ignore[misc, name-defined]
            @staticmethod
            def get_cache_system_info() -> dict[str, Any]:
                return {"name": DEVICE, "sdk": SDK_VERSION}

        interface = DoorInterface
    register_interface_for_device(DEVICE, interface)
    # Before 2.13 torch fills its own overrides only into an empty table (cpu's among them).
    from torch._inductor.codegen import cpu_device_op_overrides  # noqa: F401

    register_device_op_overrides(DEVICE, overrides())
    register_backend_for_device(
        DEVICE, CppScheduling, sample.SampledevPythonWrapperCodegen, wrapper
    )


def _patch_wrapper(base: type) -> type:
    """torch_npu's wrapper class: includes the header of its own tree."""
    has_include_paths = hasattr(base, "get_device_include_path_jit")

    class NpuShapedWrapper(base):  # type: ignore[misc, valid-type]
        @staticmethod
        def create(*args: Any) -> Any:
            return NpuShapedWrapper()

        if has_include_paths:

            @staticmethod
            def get_device_include_path_jit(device: str) -> str:
                return f"#include <{tree_headers(False)[0]}>"

            @staticmethod
            def get_device_include_path_aot(device: str) -> str:
                return f"#include <{tree_headers(True)[0]}>"

        else:  # torch 2.6 writes the C shim header in write_header

            def write_header(self) -> None:
                super().write_header()
                from torch._inductor.virtualized import V

                default = f"#include <{torch_default_header(False)}>"
                lines = self.header._lines
                for i, line in enumerate(lines):
                    if isinstance(line, str) and line.strip() == default:
                        lines[i] = f"#include <{tree_headers(V.graph.aot_mode)[0]}>"

    return NpuShapedWrapper


# --- the patch version ------------------------------------------------------------------


def apply_patches(paths: Paths) -> dict[str, str]:
    """Patch torch as torch_npu does. Returns each patch that raised: {name: error}."""
    import torch
    import torch._export
    import torch._inductor.codecache as codecache
    import torch._inductor.cpp_builder as cpp_builder
    import torchgen.aoti.fallback_ops as fallback_ops
    from torch._functorch._aot_autograd import autograd_cache

    _register_backend(patch=True, paths=paths)
    failed: dict[str, str] = {}

    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **later: Any
    ) -> tuple[list[str], ...]:
        if device_type != DEVICE:
            return previous(device_type, aot_mode, compile_only, **later)  # type: ignore[no-any-return]
        return options_fields(paths)

    previous = cpp_builder.get_cpp_torch_device_options
    cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options

    torch_cflags = cpp_builder._get_optimization_cflags

    def _get_optimization_cflags(*args: Any, **kwargs: Any) -> Any:
        answer = torch_cflags(*args, **kwargs)
        if isinstance(answer, tuple):  # 2.13+: (cflags, ldflags)
            return [flag for flag in answer[0] if flag != "march=native"], answer[1]
        return [flag for flag in answer if flag != "march=native"]

    cpp_builder._get_optimization_cflags = _get_optimization_cflags

    if hasattr(codecache, "_get_cpp_wrapper_header"):
        origin_header = codecache._get_cpp_wrapper_header

        def _get_cpp_wrapper_header_npu(device: str, aot_mode: bool = False) -> str:
            if device.split(":", maxsplit=1)[0] == DEVICE:
                return tree_headers(aot_mode)[0]
            return origin_header(device, aot_mode)  # type: ignore[no-any-return]

        codecache._get_cpp_wrapper_header = _get_cpp_wrapper_header_npu

    codecache.CacheBase.get_system = staticmethod(functools.cache(_get_system))

    for details in (codecache.FxGraphHashDetails, autograd_cache.AOTAutogradCacheDetails):
        details.__init__ = _with_deterministic_level(details.__init__)
    codecache.FxGraphHashDetails._npu_deterministic_level_patched = True

    origin_aot_load = torch._export.aot_load

    def aot_load_npu(so_path: str, device: str) -> Any:
        if device == DEVICE or device.startswith(f"{DEVICE}:"):
            return _loaded(cpu_runner(so_path, device))
        return origin_aot_load(so_path, device)

    torch._export.aot_load = aot_load_npu

    ops = fallback_ops.inductor_fallback_ops
    fallback_ops.inductor_fallback_ops = (
        {**ops, SHIM_OP: {}} if isinstance(ops, dict) else {*ops, SHIM_OP}
    )

    try:
        from torch._inductor import codegen

        codegen.cpp_utils.DEVICE_TO_ATEN[DEVICE] = "at::kPrivateUse1"
    except AttributeError as error:
        failed["DEVICE_TO_ATEN"] = f"{type(error).__name__}: {error}"
    return failed


def _get_system() -> dict[str, Any]:
    system: dict[str, Any] = {"device": {"name": DEVICE}, "version": {"sdk": SDK_VERSION}}
    system["hash"] = hashlib.sha256(json.dumps(system, sort_keys=True).encode()).hexdigest()
    return system


def _with_deterministic_level(init: Any) -> Any:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.npu_deterministic_level = deterministic_level()

    return __init__


def _loaded(runner: Any) -> Any:
    """torch_npu's ``optimized``: pytree in, pytree out."""
    import torch
    import torch.utils._pytree as pytree
    from torch.export._tree_utils import reorder_kwargs

    def optimized(*args: Any, **kwargs: Any) -> Any:
        call_spec = runner.get_call_spec()
        in_spec = pytree.treespec_loads(call_spec[0])
        out_spec = pytree.treespec_loads(call_spec[1])
        flat_inputs = pytree.tree_flatten((args, reorder_kwargs(kwargs, in_spec)))[0]
        flat_inputs = [x for x in flat_inputs if isinstance(x, torch.Tensor)]
        return pytree.tree_unflatten(runner.run(flat_inputs), out_spec)

    return optimized


#: What apply_patches() writes, as torch_writes.diff() names it, on the running torch.
def patched_names() -> list[str]:
    import torch._inductor.codecache as codecache
    from torch._inductor.codegen import cpp_utils

    names = [
        "torch._inductor.cpp_builder.get_cpp_torch_device_options",
        "torch._inductor.cpp_builder._get_optimization_cflags",
        "torch._inductor.codecache.CacheBase.get_system",
        "torch._inductor.codecache.FxGraphHashDetails.__init__",
        "torch._inductor.codecache.FxGraphHashDetails._npu_deterministic_level_patched",
        "torch._functorch._aot_autograd.autograd_cache.AOTAutogradCacheDetails.__init__",
        "torch._export.aot_load",
        "torchgen.aoti.fallback_ops.inductor_fallback_ops",
    ]
    if hasattr(codecache, "_get_cpp_wrapper_header"):
        names.append("torch._inductor.codecache._get_cpp_wrapper_header")
    if hasattr(cpp_utils, "DEVICE_TO_ATEN"):
        # The entry is seen in every module that imported the dict (cpp_wrapper_cpu too).
        names += [
            f"{name}.DEVICE_TO_ATEN['{DEVICE}']"
            for name, module in list(sys.modules.items())
            if name.startswith("torch")
            and getattr(module, "DEVICE_TO_ATEN", None) is cpp_utils.DEVICE_TO_ATEN
        ]
    return sorted(names)


# --- the door version -------------------------------------------------------------------


def apply_doors(paths: Paths) -> None:
    """The same backend through the package's doors: nothing assigned in torch."""
    import inductor_device_options as ido

    _register_backend(patch=False, paths=paths)

    def provider(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> ido.CppDeviceOptions:
        return ido.CppDeviceOptions(*(list(values) for values in options_fields(paths)))

    provider.removed_cflags = ["march=native"]  # type: ignore[attr-defined]
    provider.aoti_shim_ops = {SHIM_OP}  # type: ignore[attr-defined]
    provider.inductor_headers = lambda device_type, aot_mode: tree_headers(aot_mode)  # type: ignore[attr-defined]
    provider.cache_key_details = lambda device_type: {  # type: ignore[attr-defined]
        "deterministic_level": deterministic_level()
    }
    provider.aoti_runner = cpu_runner  # type: ignore[attr-defined]
    provider.sdk_identity = lambda device_type: SDK_VERSION  # type: ignore[attr-defined]
    ido.register_cpp_device_options(DEVICE, provider)
