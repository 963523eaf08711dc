"""One cold cpp_wrapper compile of the sample device, in this process; prints its seconds.

    python benchmarks/e2e_compile.py registry|replacement SAMPLE_CACHE_DIR

registry: the device's options reach Inductor through register_cpp_device_options (the hook).
replacement: the same options, installed by replacing cpp_builder.get_cpp_torch_device_options
directly, as backends do today: written to the module's __dict__, past the hook, so that
Inductor calls the replacement alone (it computes torch's defaults with torch's function).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import torch
import torch._inductor.cpp_builder as cpp_builder

from inductor_device_options import CppDeviceOptions, sample, unregister_cpp_device_options
from inductor_device_options.sample._sdk import sdk_options_for


def install_replacement(runtime_lib_dir: Any) -> None:
    unregister_cpp_device_options(sample.DEVICE_NAME)
    stock = cpp_builder.get_cpp_torch_device_options.__wrapped__  # type: ignore[attr-defined]

    def replacement(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: Any
    ) -> Any:
        # **kwargs: torch 2.15 passes cpp_stdlib=, which a replacement must take to work there.
        defaults = CppDeviceOptions(*stock(device_type, aot_mode, compile_only, **kwargs))
        if device_type == sample.DEVICE_NAME:
            return tuple(
                sdk_options_for(runtime_lib_dir, device_type, aot_mode, compile_only, defaults)
            )
        return tuple(defaults)

    cpp_builder.__dict__["get_cpp_torch_device_options"] = replacement


def main(variant: str, cache_dir: str) -> None:
    device = sample.setup(cache_dir)
    if variant == "replacement":
        install_replacement(device.runtime_lib_dir)
    elif variant != "registry":
        raise SystemExit(f"unknown variant {variant!r}")

    def model(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        hidden = torch.sin(x) * y + 1.0
        return hidden.sum(dim=-1, keepdim=True) * hidden.relu()

    inputs = (torch.randn(64, 64), torch.randn(64, 64))
    on_device = tuple(tensor.to(sample.DEVICE_NAME) for tensor in inputs)
    start = time.perf_counter()
    result = torch.compile(model, options={"cpp_wrapper": True})(*on_device)
    elapsed = time.perf_counter() - start
    assert torch.allclose(result.cpu(), model(*inputs), rtol=1e-5, atol=1e-5)
    print(elapsed)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
