"""torch's doors, backported: the design's registry API in ``cpp_builder`` where torch lacks
it, and torch 2.15's ``DeviceInterface.get_cpp_device_options`` lookup (with its
``cpp_stdlib=`` validation) around stock torch's function before 2.15.

Each behaves exactly as torch defines it (the upstream patch in ``upstream/pytorch``, torch
2.15's ``cpp_builder``): a backend written for those doors works the same on every torch.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.interfaces import interface_defining_cpp_options
from .._lookup.registry import CppDeviceOptionsCallback
from .._torch_names import CPP_BUILDER, FUNCTION, REGISTER, REGISTRY
from .chain import DeviceOptionsFunction, device_type_of, flags

# Marks the registry API this package gives a torch that lacks it.
BACKPORT_MARK = "_inductor_device_options_backport"


def backport_registry_api(module: ModuleType) -> None:
    """Give ``module`` the design's ``register_cpp_device_options`` and its registry, with
    the upstream patch's semantics (``upstream/pytorch``), where torch has neither."""
    if not isinstance(module.__dict__.get(REGISTRY), dict):
        module.__dict__[REGISTRY] = {}

    def register_cpp_device_options(device_type: str, callback: CppDeviceOptionsCallback) -> None:
        """Register the C++ build options provider for a device type.

        Allows out-of-tree device backends (e.g. PrivateUse1 devices like NPU) to
        inject their own compile options into Inductor's C++ compilation pipeline
        without monkey-patching get_cpp_torch_device_options.

        Args:
            device_type: The device type string (e.g. "npu").
            callback: Called as ``callback(device_type, aot_mode, compile_only)``;
                must return the same 7-tuple as get_cpp_torch_device_options:
                ``(definitions, include_dirs, cflags, ldflags, libraries_dirs,
                libraries, passthrough_args)``.

        (Backported by inductor-device-options: the registry form of PyTorch PR #190614.)
        """
        registry = module.__dict__[REGISTRY]  # the module global, read at call time
        if device_type in registry:
            warnings.warn(
                f"C++ device options for '{device_type}' are already registered, overwriting.",
                stacklevel=2,
            )
        registry[device_type] = callback

    register_cpp_device_options.__module__ = module.__name__
    register_cpp_device_options.__qualname__ = REGISTER
    setattr(register_cpp_device_options, BACKPORT_MARK, True)
    existing = module.__dict__.get(REGISTER)
    if existing is None or getattr(existing, BACKPORT_MARK, False):
        module.__dict__[REGISTER] = register_cpp_device_options


def is_torch_function(function: object) -> bool:
    """Whether ``function`` is stock torch's ``get_cpp_torch_device_options``."""
    return (
        getattr(function, "__module__", None) == CPP_BUILDER
        and getattr(function, "__qualname__", None) == FUNCTION
    )


def with_interface_lookup(function_below: DeviceOptionsFunction) -> DeviceOptionsFunction:
    """``function_below`` (stock torch before 2.15) asking DeviceInterface first, as torch
    2.15 does: the interface's own lists as it returns them; ``None`` or
    ``NotImplementedError``: the defaults."""

    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        device_type = device_type_of(args, kwargs)
        if type(device_type) is str and device_type not in RESERVED_DEVICE_TYPES:
            interface = interface_defining_cpp_options(_as_torch_2_15_names(device_type))
            if interface is not None:
                aot_mode, compile_only = flags(args, kwargs)
                cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
                _validate_cpp_stdlib_as_torch_2_15(cpp_stdlib, device_type, aot_mode)
                try:
                    options = interface.get_cpp_device_options(aot_mode, compile_only)  # type: ignore[attr-defined]
                except NotImplementedError:
                    options = None
                if options is not None:
                    return options
        return function_below(*args, **kwargs)

    get_cpp_torch_device_options.__wrapped__ = function_below  # type: ignore[attr-defined]
    return get_cpp_torch_device_options


def _as_torch_2_15_names(device_type: str) -> str:
    """torch 2.15's ``_normalize_device_type``: what ``torch.device`` parses, its type;
    any other name unchanged."""
    import torch

    try:
        return torch.device(device_type).type
    except RuntimeError:
        return device_type


def _validate_cpp_stdlib_as_torch_2_15(
    cpp_stdlib: object, device_type: str, aot_mode: bool
) -> None:
    """torch 2.15's ``_validate_cpp_stdlib`` for a device other than cpu: ``libc++`` is
    refused (torch before 2.15 has no ``cpp_stdlib=`` of its own)."""
    if cpp_stdlib is None or cpp_stdlib != "libc++":
        return
    from torch._inductor import config

    if not config.is_fbcode():  # type: ignore[attr-defined]
        raise RuntimeError("cpp_stdlib='libc++' is only supported in fbcode.")
    raise RuntimeError(
        "cpp_stdlib='libc++' is only supported with device_type='cpu', "
        f"got device_type='{device_type}'"
    )
