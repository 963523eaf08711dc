"""Runs one version of a port in a fresh interpreter (patches are global and irreversible):
``python port_worker.py <backend module> <patch|door> <root>``. Sets the device up, applies
the version, compiles one model with cpp_wrapper and one with AOTInductor, and writes
``<root>/result.json``: the torch attributes written (setup and compile phases), the g++
calls, the generated C++, and the outputs against eager. ``$CXX`` is a logging g++ wrapper
(``$IDO_TOOL_LOG``). ``python port_worker.py build <backend module> <dir>`` builds the
backend's extension first."""

from __future__ import annotations

import glob
import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch_writes
from tool_log import read_tool_log


def _import_everything() -> None:
    """Inductor and what the backends patch, imported (and the package installed into them)
    before the first snapshot, so that the package's own installs are not counted."""
    import torch
    import torch._export
    import torch._inductor.codecache
    import torch._inductor.codegen.cpp_wrapper_cpu
    import torch._inductor.compile_fx
    import torch._inductor.cpp_builder
    import torch._inductor.ir
    import torch._inductor.utils
    import torch.utils.cpp_extension
    import torchgen.aoti.fallback_ops  # noqa: F401
    from torch._functorch._aot_autograd import autograd_cache  # noqa: F401
    from torch._inductor.codegen import cpp_utils, cpu_device_op_overrides  # noqa: F401

    import inductor_device_options as ido

    importlib.import_module("inductor_device_options.sample._device")
    ido.arm()
    del torch


def _compile_both(
    backend: ModuleType, version: str, failed: dict[str, str], result: dict[str, Any]
) -> None:
    import torch
    from torch._inductor.utils import run_and_get_cpp_code

    torch.manual_seed(0)
    on_cpu = backend.inputs()
    expected = backend.model(*on_cpu)
    args = tuple(tensor.to(backend.DEVICE) for tensor in on_cpu)
    model = backend.model

    def cpp_wrapper() -> tuple[Any, str]:
        torch._dynamo.reset()
        compiled = torch.compile(model, options={"cpp_wrapper": True})
        return run_and_get_cpp_code(compiled, *args)  # type: ignore[no-any-return]

    try:
        out, code = cpp_wrapper()
    except Exception as error:
        if version != "patch" or not failed:
            raise
        # 2.15: the patch could not name the ATen type. A backend's fix there: overrides
        # with aten_device_type(), registered through torch's API.
        result["first_compile_error"] = f"{type(error).__name__}: {error}"[:2000]
        from torch._inductor.codegen.common import register_device_op_overrides

        from inductor_device_options.sample import _inductor_backend as sample

        register_device_op_overrides(backend.DEVICE, sample.SampledevDeviceOpOverrides())
        Path(os.environ["IDO_TOOL_LOG"]).unlink(missing_ok=True)
        out, code = cpp_wrapper()
    result["cpp_wrapper"] = {
        "equal": bool(torch.allclose(out.cpu(), expected, atol=1e-4, rtol=1e-4)),
        "device": str(out.device),
        "code": code,
    }

    so_path = torch._export.aot_compile(model, args)
    runner = torch._export.aot_load(so_path, backend.DEVICE)
    out = runner(*args)
    out = out[0] if isinstance(out, (list, tuple)) else out
    # <hash>.wrapper.cpp, <hash>.kernel.cpp: ordered by kind, the hashes differ per version.
    sources = sorted(
        glob.glob(os.path.join(os.path.dirname(so_path), "*.cpp")),
        key=lambda source: os.path.basename(source).partition(".")[2],
    )
    result["aoti"] = {
        "equal": bool(torch.allclose(out.cpu(), expected, atol=1e-4, rtol=1e-4)),
        "device": str(out.device),
        "code": "\n".join(Path(source).read_text() for source in sources),
    }


def _command_lines(device_type: str) -> dict[str, str]:
    """A build's command line for cpu and for the device, as torch makes it (nothing run)."""
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    lines = {}
    for device in ("cpu", device_type):
        lines[device] = CppBuilder(
            name="probe",
            sources=["probe.cpp"],
            BuildOption=CppTorchDeviceOptions(device_type=device),
            output_dir="",
        ).get_command_line()
    return lines


def main(backend_name: str, version: str, root: Path) -> None:
    result: dict[str, Any] = {"backend": backend_name, "version": version}
    _import_everything()
    backend = importlib.import_module(backend_name)
    result.update(device=backend.DEVICE, macro=backend.DEVICE_MACRO, shims=backend.SHIM_NAMES)
    before = torch_writes.take()
    context = backend.set_up_device(root)
    failed: dict[str, str] = {}
    if version == "patch":
        failed = backend.apply_patches(context)
    else:
        backend.apply_doors(context)
    applied = torch_writes.take()
    result["setup_writes"] = torch_writes.diff(before, applied)
    result["patched_names"] = backend.patched_names()
    result["failed_patches"] = failed
    Path(os.environ["IDO_TOOL_LOG"]).unlink(missing_ok=True)  # the extension's build
    try:
        _compile_both(backend, version, failed, result)
    except Exception:
        result["error"] = traceback.format_exc()
    result["compile_writes"] = torch_writes.diff(applied, torch_writes.take())
    result["command_lines"] = _command_lines(backend.DEVICE)
    result["calls"] = read_tool_log(os.environ["IDO_TOOL_LOG"])
    (root / "result.json").write_text(json.dumps(result, indent=1))


def build(backend_name: str, build_dir: Path) -> None:
    """A backend's extension (and SDK), built before its two versions run at once."""
    import torch

    if backend_name == "openreg_shaped":
        import regdev_backend

        regdev_backend.build(build_dir)
        return
    device = importlib.import_module("inductor_device_options.sample._device")
    sdk = importlib.import_module("inductor_device_options.sample._sdk")
    sdk.build_runtime_library(build_dir / "sdk" / "lib")
    device.load_extension(build_dir / f"torch-{torch.__version__}" / "extension")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], Path(sys.argv[3]))
    else:
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
