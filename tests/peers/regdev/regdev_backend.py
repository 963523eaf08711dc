"""regdev: a third-party PrivateUse1 test backend shaped like the backends derived from
PyTorch's openreg sample (not like this package's own sample device).

What makes it "openreg-shaped": its C++ wrapper codegen subclasses ``CppWrapperCpu`` and,
by default, never sets ``self.device``, so it inherits "cpu"; the device is mapped for
``codegen_device`` through ``cpp_utils.DEVICE_TO_ATEN`` (torch < 2.15) or
``DeviceOpOverrides.aten_device_type()`` (torch 2.15); and the generated code includes the
SDK's ``regdev/runtime.h``. Its C++ extension (csrc/regdev.cpp) is built with
``torch.utils.cpp_extension.load``, its SDK is generated on disk by :func:`build`.

``setup()`` is the backend's ``torch.backends`` autoload entry point (``regdev_backend:setup``):
``import torch`` calls it in every process where a distribution declares it. It reads:

``REGDEV_BUILD_DIR``
    where the extension and the SDK are built (required: without it ``setup()`` does nothing,
    so that an unrelated process that happens to see the entry point is left alone).
``REGDEV_CODEGEN_DEVICE``
    ``cpu`` (default, openreg-shaped: the C++ wrapper keeps the inherited "cpu", so cpp_wrapper
    builds ask the builder for "cpu") or ``regdev`` (it reports its device: ``self.device =
    "regdev"`` before ``CppWrapperCpu.__init__``).
``REGDEV_SHIP_WRAPPER_HEADER``
    ``1`` (default) or ``0``: whether the C++ options add the include dir holding
    ``torch/csrc/inductor/{cpp_wrapper,aoti_include}/regdev.h``, the headers torch includes
    (and precompiles) for a wrapper that reports "regdev".
``REGDEV_REGISTER``
    how the C++ options reach Inductor: ``package`` (default,
    ``inductor_device_options.register_cpp_device_options``), ``cpp_builder``
    (``torch._inductor.cpp_builder.register_cpp_device_options``, the design's API that the
    package backports) or ``none``.
``REGDEV_AOTI_RUNNER``
    ``1`` (default) or ``0``: whether setup() registers the AOTInductor model runner for
    "regdev" (``torch.ops.regdev.register_aoti_runner()``); without it ``aoti_load_package``
    fails with ``Unsupported device key found: regdev``.
``REGDEV_C_SHIM``
    ``full`` (default) or ``no_addmm``: the SDK's C shim (``regdev/c_shim.h``, which the
    device headers include) declares ``aoti_torch_regdev_{mm,addmm,bmm}_out``, or all but
    ``addmm``, as an SDK that never implemented it would.
``REGDEV_OVERRIDES``
    ``full`` (default) or ``no_cpp_kernel_type``: whether the device's ``DeviceOpOverrides``
    define ``cpp_kernel_type()`` (AOTInductor's model declares each kernel with it).
``REGDEV_RECORD_OVERRIDES``
    ``1``: the name of every method of the device's overrides that Inductor calls is
    appended to ``overrides_called`` (what doctor asks them is checked against it).

``REGDEV_REGISTER=legacy_wrapper`` is how unmigrated openreg-derived backends give Inductor
their options: a wrapper assigned to ``cpp_builder.get_cpp_torch_device_options`` that adds
them for "regdev" and for "cpu" (what the builds of a wrapper left at "cpu" ask for).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

DEVICE = "regdev"
MACRO = "REGDEV_SDK"
RUNTIME_LIBRARY = "regdev_runtime"
EXTENSION_NAME = "regdev_extension"
EXTENSION_SOURCE = Path(__file__).resolve().parent / "csrc" / "regdev.cpp"

ENV_BUILD_DIR = "REGDEV_BUILD_DIR"
ENV_CODEGEN_DEVICE = "REGDEV_CODEGEN_DEVICE"
ENV_SHIP_WRAPPER_HEADER = "REGDEV_SHIP_WRAPPER_HEADER"
ENV_REGISTER = "REGDEV_REGISTER"
ENV_AOTI_RUNNER = "REGDEV_AOTI_RUNNER"
ENV_C_SHIM = "REGDEV_C_SHIM"
ENV_OVERRIDES = "REGDEV_OVERRIDES"
ENV_RECORD_OVERRIDES = "REGDEV_RECORD_OVERRIDES"

#: With REGDEV_RECORD_OVERRIDES=1: the methods of the overrides called, in order.
overrides_called: list[str] = []

RUNTIME_HEADER = """\
/* The regdev runtime (libregdev_runtime.so). */
#ifndef REGDEV_RUNTIME_H
#define REGDEV_RUNTIME_H
#ifdef __cplusplus
extern "C" {
#endif
int regdev_runtime_version(void);
#ifdef __cplusplus
}
#endif
#endif
"""

RUNTIME_SOURCE = """\
#include <regdev/runtime.h>
extern "C" int regdev_runtime_version(void) { return 1; }
"""

# The C shim: what the generated code calls for an extern kernel on regdev (torch 2.6: of a
# wrapper that reports "regdev"), aoti_torch_regdev_<op> (CppWrapperCpu.get_c_shim_func_name).
# regdev memory is host memory: each runs torch's CPU shim on CPU tensors over that memory.
C_SHIM_HEADER = """\
// The regdev C shim{variant}.
#pragma once
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>

namespace regdev_shim {{
// A CPU tensor over the memory of a regdev (or CPU) tensor, deleted with the holder.
struct HostAlias {{
  AtenTensorHandle handle = nullptr;
  explicit HostAlias(AtenTensorHandle tensor) {{
    void* data = nullptr;
    int64_t dim = 0;
    int64_t* sizes = nullptr;
    int64_t* strides = nullptr;
    int32_t dtype = 0;
    if (aoti_torch_get_data_ptr(tensor, &data) || aoti_torch_get_dim(tensor, &dim) ||
        aoti_torch_get_sizes(tensor, &sizes) || aoti_torch_get_strides(tensor, &strides) ||
        aoti_torch_get_dtype(tensor, &dtype)) {{
      return;
    }}
    aoti_torch_create_tensor_from_blob(
        data, dim, sizes, strides, 0, dtype, aoti_torch_device_type_cpu(), 0, &handle);
  }}
  ~HostAlias() {{
    if (handle != nullptr) {{
      aoti_torch_delete_tensor_object(handle);
    }}
  }}
}};
}}  // namespace regdev_shim

extern "C" {{
inline AOTITorchError aoti_torch_regdev_mm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {{
  regdev_shim::HostAlias o(out), a(self), b(mat2);
  return aoti_torch_cpu_mm_out(o.handle, a.handle, b.handle);
}}
{addmm}
inline AOTITorchError aoti_torch_regdev_bmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {{
  regdev_shim::HostAlias o(out), a(self), b(mat2);
  return aoti_torch_cpu_bmm_out(o.handle, a.handle, b.handle);
}}
}}  // extern "C"
"""
ADDMM_SHIM = """\
inline AOTITorchError aoti_torch_regdev_addmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2,
    double beta, double alpha) {
  regdev_shim::HostAlias o(out), s(self), a(mat1), b(mat2);
  return aoti_torch_cpu_addmm_out(o.handle, s.handle, a.handle, b.handle, beta, alpha);
}"""
C_SHIMS = {
    "full": C_SHIM_HEADER.format(variant="", addmm=ADDMM_SHIM),
    "no_addmm": C_SHIM_HEADER.format(variant=", without addmm", addmm=""),
}

# What the generated code needs for regdev on top of torch's CPU headers. Nothing names the
# device "regdev" in it but the C shim: the device mapping below makes codegen_device name it
# privateuse1 (cached_torch_device_type_privateuse1), which torch's shim knows.
DEVICE_HEADER_BODY = """\
#include <regdev/runtime.h>
#include <regdev/c_shim.h>

// The module needs the runtime: a reference the loader must resolve (through the runpath).
[[maybe_unused]] static const int regdev_runtime_linked_version = regdev_runtime_version();
"""


# --- the SDK, generated on disk --------------------------------------------------------


def sdk_dir(build_dir: Path) -> Path:
    return build_dir / "sdk"


def c_shim_include_dir(build_dir: Path, variant: str) -> Path:
    """The include dir holding ``regdev/c_shim.h`` of one variant (full, no_addmm)."""
    return sdk_dir(build_dir) / f"shim-{variant}"


def inductor_include_dir(build_dir: Path) -> Path:
    """The headers torch includes for a "regdev" wrapper: they follow the installed torch's
    own CPU headers, hence one dir per torch version."""
    import torch

    return build_dir / f"torch-{torch.__version__}" / "inductor-include"


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` holds it already; atomically (other processes read)."""
    if path.is_file() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as file:
        file.write(text)
    os.replace(file.name, path)


def _torch_includes(header: str) -> list[str]:
    """The ``#include`` lines of one of torch's own headers (``cpp_wrapper/cpu.h`` ...), or
    [] when this torch has no such header."""
    import torch

    path = Path(torch.__file__).parent / "include" / header
    if not path.is_file():
        return []
    return [line for line in path.read_text().splitlines() if re.match(r"\s*#include\b", line)]


def _device_header(torch_header: str, *, include_it: bool = False) -> str:
    """A regdev header standing for torch's CPU one: what ``torch_header`` includes (or,
    with ``include_it``, ``torch_header`` itself), then the regdev SDK."""
    includes = [] if include_it else _torch_includes(torch_header)
    includes = includes or [f"#include <{torch_header}>"]
    return "\n".join(
        [
            f"// Generated by regdev_backend.py from {torch_header}.",
            "#pragma once",
            "",
            *includes,
            "",
            DEVICE_HEADER_BODY,
        ]
    )


def build_sdk(build_dir: Path) -> None:
    sdk = sdk_dir(build_dir)
    _write(sdk / "include" / "regdev" / "runtime.h", RUNTIME_HEADER)
    _write(sdk / "src" / "regdev_runtime.cpp", RUNTIME_SOURCE)
    for variant, header in C_SHIMS.items():
        _write(c_shim_include_dir(build_dir, variant) / "regdev" / "c_shim.h", header)
    library = sdk / "lib" / f"lib{RUNTIME_LIBRARY}.so"
    stamp = library.with_suffix(".so.source")
    if not (library.is_file() and stamp.is_file() and stamp.read_text() == RUNTIME_SOURCE):
        library.parent.mkdir(parents=True, exist_ok=True)
        scratch = library.with_name(f".{library.name}.{os.getpid()}")
        subprocess.run(
            [
                "g++",
                "-shared",
                "-fPIC",
                f"-Wl,-soname,lib{RUNTIME_LIBRARY}.so",
                f"-I{sdk / 'include'}",
                str(sdk / "src" / "regdev_runtime.cpp"),
                "-o",
                str(scratch),
            ],
            check=True,
        )
        os.replace(scratch, library)
        stamp.write_text(RUNTIME_SOURCE)

    inductor = inductor_include_dir(build_dir) / "torch" / "csrc" / "inductor"
    _write(
        inductor / "cpp_wrapper" / "regdev.h",
        _device_header("torch/csrc/inductor/cpp_wrapper/cpu.h"),
    )
    _write(
        inductor / "aoti_include" / "regdev.h",
        _device_header("torch/csrc/inductor/aoti_include/cpu.h"),
    )
    # torch 2.6 has neither header: its wrapper includes aoti_torch/generated/c_shim_<device>.h.
    _write(
        inductor / "aoti_torch" / "generated" / "c_shim_regdev.h",
        _device_header("torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h", include_it=True),
    )


def load_extension(build_dir: Path) -> None:
    """Build (when out of date) and load csrc/regdev.cpp: one build per torch version."""
    import torch
    from torch.utils import cpp_extension

    directory = build_dir / f"torch-{torch.__version__}" / "extension"
    directory.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(
        name=EXTENSION_NAME,
        sources=[str(EXTENSION_SOURCE)],
        extra_cflags=["-O1"],
        build_directory=str(directory),
        is_python_module=False,
    )


def build(build_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build the SDK and the extension (and load it into this process)."""
    directory = Path(build_dir or os.environ[ENV_BUILD_DIR]).resolve()
    build_sdk(directory)
    load_extension(directory)
    return directory


# --- the C++ options ---------------------------------------------------------------------


def options_added() -> tuple[list[str], ...]:
    """What regdev adds to torch's defaults, field by field (CppDeviceOptions order)."""
    build_dir = Path(os.environ[ENV_BUILD_DIR]).resolve()
    lib_dir = str(sdk_dir(build_dir) / "lib")
    include_dirs = [str(sdk_dir(build_dir) / "include")]
    variant = os.environ.get(ENV_C_SHIM, "full")
    if variant not in C_SHIMS:
        raise ValueError(f"{ENV_C_SHIM}={variant!r}: expected one of {', '.join(C_SHIMS)}")
    include_dirs.append(str(c_shim_include_dir(build_dir, variant)))
    if os.environ.get(ENV_SHIP_WRAPPER_HEADER, "1") == "1":
        include_dirs.append(str(inductor_include_dir(build_dir)))
    # The runpath, as inductor_device_options.runpath(lib_dir) gives it (lib_dir is real).
    ldflags = [f"Wl,-rpath,{lib_dir}"]
    return [MACRO], include_dirs, [], ldflags, [lib_dir], [RUNTIME_LIBRARY], []


def cpp_device_options(device_type: str, aot_mode: bool, compile_only: bool) -> Any:
    import inductor_device_options as ido

    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    for values, added in zip(options, options_added(), strict=True):
        values.extend(added)
    return options


# --- eager PyTorch -----------------------------------------------------------------------


def _device_module() -> ModuleType:
    module = ModuleType(f"torch.{DEVICE}")

    def is_available() -> bool:
        return True

    def device_count() -> int:
        return 1

    def current_device() -> int:
        return 0

    def set_device(device: Any) -> None:
        pass

    def synchronize(device: Any = None) -> None:
        pass

    def _is_in_bad_fork() -> bool:
        return False

    def manual_seed_all(seed: int) -> None:
        pass

    for function in (
        is_available,
        device_count,
        current_device,
        set_device,
        synchronize,
        _is_in_bad_fork,
        manual_seed_all,
    ):
        setattr(module, function.__name__, function)
    return module


# --- Inductor ----------------------------------------------------------------------------


def _register_inductor_backend(codegen_device: str) -> None:
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

    class RegdevDeviceOpOverrides(DeviceOpOverrides):
        def import_get_raw_stream_as(self, name: str) -> str:
            return f"def {name}(_):\n    return 0\n"

        def set_device(self, device_idx: int) -> str:
            return "pass"

        def synchronize(self) -> str:
            return "pass"

        def device_guard(self, device_idx: int) -> str:
            return "torch._ops.contextlib.nullcontext()"

        # torch 2.15's CppWrapperCpu.codegen_device asks this (earlier torch reads
        # cpp_utils.DEVICE_TO_ATEN, set below).
        def aten_device_type(self) -> str:
            return "at::kPrivateUse1"

    class RegdevFullDeviceOpOverrides(RegdevDeviceOpOverrides):
        def cpp_kernel_type(self) -> str:
            return "void*"

    class RegdevPythonWrapperCodegen(PythonWrapperCodegen):
        """Plain torch.compile: the kernels are CPU C++ kernels, called as for CPU."""

        @staticmethod
        def create(
            is_subgraph: bool, subgraph_name: Any, parent_wrapper: Any, *partition_signatures: Any
        ) -> Any:
            if is_subgraph:
                return PythonWrapperCodegen.create(
                    is_subgraph, subgraph_name, parent_wrapper, *partition_signatures
                )
            return RegdevPythonWrapperCodegen()

        def _generate_kernel_call_helper(
            self, kernel_name: str, call_args: Any, *, device: Any = None, **kwargs: Any
        ) -> None:
            device = device or V.graph.get_current_device_or_throw()
            if device.type == DEVICE:
                device = torch.device("cpu")
            super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)

    class RegdevCppWrapperCodegen(CppWrapperCpu):
        """cpp_wrapper and AOTInductor code for regdev: torch's CPU wrapper plus the SDK."""

        def __init__(self) -> None:
            if codegen_device == DEVICE:
                # Reported before CppWrapperCpu.__init__, which keeps a device already set.
                self.device = DEVICE
            super().__init__()

        @staticmethod
        def create(
            is_subgraph: bool, subgraph_name: Any, parent_wrapper: Any, *partition_signatures: Any
        ) -> Any:
            return RegdevCppWrapperCodegen()

        def write_header(self) -> None:
            super().write_header()
            if not getattr(V.graph, "is_const_graph", False):  # super() wrote nothing then
                self.header.writeline(f"#include <{DEVICE}/runtime.h>")

    class RegdevDeviceInterface(DeviceInterface):
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

        @staticmethod
        def current_device() -> int:
            return 0

        @staticmethod
        def set_device(device: Any) -> None:
            pass

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return 0

        @staticmethod
        def exchange_device(device: int) -> int:
            return 0

        @staticmethod
        def device_count() -> int:
            return 1

        @staticmethod
        def is_available() -> bool:
            return True

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @staticmethod
        def synchronize(device: Any = None) -> None:
            pass

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            return ""

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False

    register_interface_for_device(DEVICE, RegdevDeviceInterface)
    overrides = os.environ.get(ENV_OVERRIDES, "full")
    if overrides not in ("full", "no_cpp_kernel_type"):
        raise ValueError(f"{ENV_OVERRIDES}={overrides!r}: expected full or no_cpp_kernel_type")
    # Without cpp_kernel_type(), the overrides inherit DeviceOpOverrides' own, which raises.
    chosen = RegdevFullDeviceOpOverrides if overrides == "full" else RegdevDeviceOpOverrides
    if os.environ.get(ENV_RECORD_OVERRIDES) == "1":
        chosen = _recording(chosen)
    # torch before 2.13 loads its own DeviceOpOverrides (cpu's among them) only into an empty
    # table: registering regdev's first would leave cpu without them (KeyError: 'cpu' in every
    # C++ wrapper build). Importing cpu's registers them, as a backend must on those releases.
    from torch._inductor.codegen import cpu_device_op_overrides  # noqa: F401

    register_device_op_overrides(DEVICE, chosen())
    register_backend_for_device(
        DEVICE, CppScheduling, RegdevPythonWrapperCodegen, RegdevCppWrapperCodegen
    )
    # As openreg-derived backends do: the generated code names the device privateuse1.
    # torch 2.15 asks DeviceOpOverrides.aten_device_type() instead (above).
    device_to_aten = getattr(cpp_utils, "DEVICE_TO_ATEN", None)
    if device_to_aten is not None:
        device_to_aten[DEVICE] = "at::kPrivateUse1"


def _recording(overrides: type) -> type:
    """``overrides`` that append the name of each method called to ``overrides_called``."""

    class Recording(overrides):  # type: ignore[misc, valid-type]
        def __getattribute__(self, name: str) -> Any:
            value = super().__getattribute__(name)
            if callable(value) and not name.startswith("_"):
                overrides_called.append(name)
            return value

    return Recording


def _assign_legacy_wrapper() -> None:
    """What unmigrated openreg-derived backends do: wrap Inductor's function, and answer for
    "cpu" too, since the builds of a wrapper codegen left at "cpu" ask for "cpu"."""
    from torch._inductor import cpp_builder

    below = cpp_builder.get_cpp_torch_device_options

    def with_regdev(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: Any
    ) -> Any:
        answer = below(device_type, aot_mode, compile_only, **kwargs)
        if device_type not in ("cpu", DEVICE):
            return answer
        return tuple(
            [*values, *added] for values, added in zip(answer, options_added(), strict=True)
        )

    cpp_builder.get_cpp_torch_device_options = with_regdev


# --- the entry point ---------------------------------------------------------------------

_set_up = False


def setup() -> None:
    """Set regdev up in this process (the ``torch.backends`` autoload entry point)."""
    global _set_up
    build_dir = os.environ.get(ENV_BUILD_DIR)
    if _set_up or not build_dir:
        return
    _set_up = True
    import torch
    from torch.utils.backend_registration import generate_methods_for_privateuse1_backend

    build(build_dir)
    torch.utils.rename_privateuse1_backend(DEVICE)
    torch._register_device_module(DEVICE, _device_module())
    generate_methods_for_privateuse1_backend()
    codegen_device = os.environ.get(ENV_CODEGEN_DEVICE, "cpu")
    if codegen_device not in ("cpu", DEVICE):
        raise ValueError(f"{ENV_CODEGEN_DEVICE}={codegen_device!r}: expected cpu or {DEVICE}")
    _register_inductor_backend(codegen_device)

    register = os.environ.get(ENV_REGISTER, "package")
    if register == "package":
        import inductor_device_options as ido

        ido.register_cpp_device_options(DEVICE, cpp_device_options)
    elif register == "cpp_builder":
        # Importing the package arms its hook, which backports the API onto torch's module
        # (its own torch.backends entry point, which does too, may run after this one).
        from torch._inductor import cpp_builder

        import inductor_device_options  # noqa: F401

        cpp_builder.register_cpp_device_options(DEVICE, cpp_device_options)
    elif register == "legacy_wrapper":
        _assign_legacy_wrapper()
    elif register != "none":
        raise ValueError(
            f"{ENV_REGISTER}={register!r}: expected package, cpp_builder, legacy_wrapper or none"
        )

    if os.environ.get(ENV_AOTI_RUNNER, "1") == "1":
        torch.ops.regdev.register_aoti_runner()
