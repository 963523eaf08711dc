"""torch's doors, backported: the design's registry API in ``cpp_builder`` where torch lacks
it, and torch 2.15's ``DeviceInterface.get_cpp_device_options`` lookup (with its
``cpp_stdlib=`` validation) around torch's own function before 2.15.

Each behaves exactly as torch defines it (the upstream patch in ``upstream/pytorch``, torch
2.15's ``cpp_builder``): a backend written for those doors works the same on every torch.
"""

from __future__ import annotations

import functools
import warnings
from types import ModuleType
from typing import Any

from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.interfaces import as_torch_2_15, interface_defining_cpp_options
from .._source import CppDeviceOptionsCallback
from .._torch_names import CPP_BUILDER, FUNCTION, REGISTER, REGISTRY
from .serve import DeviceOptionsFunction, device_type_of, flags

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
    """Whether ``function`` is torch's own ``get_cpp_torch_device_options``."""
    return (
        getattr(function, "__module__", None) == CPP_BUILDER
        and getattr(function, "__qualname__", None) == FUNCTION
    )


def with_interface_lookup(function_below: DeviceOptionsFunction) -> DeviceOptionsFunction:
    """``function_below`` (torch's own, before 2.15) asking DeviceInterface first, as torch
    2.15 does: the interface's own lists as it returns them; ``None`` or
    ``NotImplementedError``: the defaults (2.15's ``cpp_builder.get_cpp_torch_device_options``)."""

    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        device_type = device_type_of(args, kwargs)
        if type(device_type) is str and device_type not in RESERVED_DEVICE_TYPES:
            interface = interface_defining_cpp_options(_as_torch_2_15_names(device_type))
            if interface is not None:
                aot_mode, compile_only = flags(args, kwargs)
                # 2.15's fourth parameter; a caller written for 2.6-2.14 never passes it.
                cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
                _validate_cpp_stdlib_as_torch_2_15(cpp_stdlib, device_type, aot_mode)
                try:
                    options = as_torch_2_15(interface).get_cpp_device_options(
                        aot_mode, compile_only
                    )
                except NotImplementedError:
                    options = None
                if options is not None:
                    return options
        return function_below(*args, **kwargs)

    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(get_cpp_torch_device_options, function_below, assigned=(), updated=())
    return get_cpp_torch_device_options


def _as_torch_2_15_names(device_type: str) -> str:
    """torch 2.15's ``cpp_builder._normalize_device_type``: what ``torch.device`` parses,
    its type; any other name (torch.device raises RuntimeError for it) unchanged."""
    import torch

    try:
        return torch.device(device_type).type
    except RuntimeError:
        return device_type


def _validate_cpp_stdlib_as_torch_2_15(
    cpp_stdlib: object, device_type: str, aot_mode: bool
) -> None:
    """torch 2.15's ``_validate_cpp_stdlib`` for a device other than cpu: ``libc++`` is
    refused (torch before 2.15 has no ``cpp_stdlib=`` of its own; 2.15's aot_mode check
    comes after one that always raises here)."""
    if cpp_stdlib is None or cpp_stdlib != "libc++":
        return
    # torch 2.15 asks config.is_fbcode(): the function config imports from here.
    from torch._environment import is_fbcode

    if not is_fbcode():
        raise RuntimeError("cpp_stdlib='libc++' is only supported in fbcode.")
    raise RuntimeError(
        "cpp_stdlib='libc++' is only supported with device_type='cpu', "
        f"got device_type='{device_type}'"
    )
