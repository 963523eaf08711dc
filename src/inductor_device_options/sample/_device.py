"""The "sampledev" device in eager PyTorch: the C++ extension, the PrivateUse1
renaming, and the ``torch.sampledev`` device module."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from ._sdk import DEVICE_COUNT, DEVICE_NAME

EXTENSION_NAME = "sampledev_backend"
EXTENSION_SOURCE = Path(__file__).resolve().parent / "csrc" / "sampledev_backend.cpp"


def load_extension(build_dir: Path, *, verbose: bool = False) -> None:
    """Build (when its source changed) and load the C++ backend into this process.

    The extension registers itself when loaded: allocator, device guard, hooks,
    aten kernels and the AOTInductor model runner for "sampledev".
    """
    from torch.utils import cpp_extension

    build_dir.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(
        name=EXTENSION_NAME,
        sources=[str(EXTENSION_SOURCE)],
        extra_cflags=["-O2"],
        build_directory=str(build_dir),
        is_python_module=False,
        verbose=verbose,
    )


def _device_index(device: torch.types.Device) -> int:
    if device is None:
        return 0
    index = torch.device(device).index if not isinstance(device, int) else device
    if index is None:
        return 0
    if not 0 <= index < DEVICE_COUNT:
        raise ValueError(f"{DEVICE_NAME} device index {index} out of range ({DEVICE_COUNT} device)")
    return index


def _make_device_module() -> ModuleType:
    """``torch.sampledev``: the module PyTorch asks about a PrivateUse1 device."""
    module = ModuleType(f"torch.{DEVICE_NAME}", f"The {DEVICE_NAME} sample device.")

    def is_available() -> bool:
        return True

    def device_count() -> int:
        return DEVICE_COUNT

    def current_device() -> int:
        return 0

    def set_device(device: torch.types.Device) -> None:
        _device_index(device)

    def synchronize(device: torch.types.Device = None) -> None:
        # Kernels run synchronously on the host.
        _device_index(device)

    # torch.manual_seed asks for these two (torch.random.manual_seed calls
    # _seed_custom_device, which asks the PrivateUse1 device module for them). The device
    # has no generator of its own: random ops fall back to the CPU, whose generator
    # torch.manual_seed seeds.
    def _is_in_bad_fork() -> bool:
        return False

    def manual_seed_all(seed: int) -> None:
        del seed

    def _inductor_backend_init() -> None:
        # torch 2.15 calls this before the device's first compile needs it (this package
        # does before 2.15): importing torch keeps torch._inductor out.
        from ._inductor_backend import register_inductor_backend

        register_inductor_backend()

    for function in (
        _inductor_backend_init,
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


def register_device() -> None:
    """Name PrivateUse1 "sampledev" and give it its device module and tensor methods."""
    from torch.utils.backend_registration import (
        generate_methods_for_privateuse1_backend,
        rename_privateuse1_backend,
    )

    if torch._C._get_privateuse1_backend_name() != DEVICE_NAME:
        # Raises when another backend already took the PrivateUse1 slot.
        rename_privateuse1_backend(DEVICE_NAME)
    if not hasattr(torch, DEVICE_NAME):
        torch._register_device_module(DEVICE_NAME, _make_device_module())
    if not hasattr(torch.Tensor, f"is_{DEVICE_NAME}"):
        generate_methods_for_privateuse1_backend()
