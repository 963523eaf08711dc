"""The check ``overrides``: the methods of the device's ``DeviceOpOverrides`` that the
running torch calls in a cpp_wrapper (or AOTInductor) build answer without raising.

What torch calls of a device's overrides there (the CPU-style C++ wrapper, every device but
cuda and xpu): the ATen device type of the device's tensors (``codegen_device``, through
``cpp_utils.device_to_aten``: torch 2.15's ``aten_device_type()``, which this package
provides before 2.15); with AOTInductor, ``cpp_kernel_type()`` of the device the wrapper
reports, declaring each C++ kernel of the model (``CppWrapperCpu.codegen_model_kernels``,
torch 2.13 and 2.15); ``uses_gpu_cpp_wrapper()`` on torch 2.15, and before where the device's
overrides define it and the package provides the hook. ``tests/peers/test_regdev.py``
records the calls of real builds against this list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .._hook.gpu_cpp_wrapper import graph_asks_overrides
from .._lookup.registry import describe_callable
from .._options.problems import Problem
from .checks import Check, Context, check
from .text import error_line

NAME = "overrides"


class Asked(NamedTuple):
    """A method torch calls on the device's overrides: where, and how doctor asks it."""

    method: str
    caller: str
    ask: Callable[[str, Any], object]  # (device_type, overrides) -> the answer


def asked_methods(aot_mode: bool, reported: str | None, device_type: str) -> list[Asked]:
    """What the running torch calls of ``device_type``'s overrides in a build of the mode,
    the wrapper reporting ``reported``."""

    asked = [
        Asked("aten_device_type", "CppWrapperCpu.codegen_device, for the device's tensors", _aten)
    ]
    if aot_mode and reported in (None, device_type) and kernels_declared():
        caller = "CppWrapperCpu.codegen_model_kernels, declaring each kernel of the model"
        asked.append(Asked("cpp_kernel_type", caller, _called("cpp_kernel_type")))
    if graph_asks_overrides(device_type):
        caller = "GraphLowering, for every device of the graph"
        asked.append(Asked("uses_gpu_cpp_wrapper", caller, _called("uses_gpu_cpp_wrapper")))
    return asked


def kernels_declared() -> bool:
    """AOTInductor declares the model's C++ kernels with ``cpp_kernel_type()``: the running
    torch's ``CppScheduling.define_kernel`` records them in ``wrapper.src_to_kernel``, which
    ``CppWrapperCpu.codegen_model_kernels`` declares (torch 2.13, 2.15; torch 2.6's model
    calls its C++ kernels directly)."""
    import inspect

    from torch._inductor.codegen.cpp import CppScheduling

    try:
        return "src_to_kernel" in inspect.getsource(CppScheduling.define_kernel)
    except (OSError, TypeError):  # no source: assume it asks, as current torch does
        return True


def _aten(device_type: str, overrides: object) -> object:
    """What the generated code names the device's ATen type with, asked as torch asks."""
    from torch._inductor.codegen import cpp_utils

    device_to_aten = getattr(cpp_utils, "device_to_aten", None)
    if device_to_aten is not None:  # torch 2.15's, or this package's before it
        return device_to_aten(device_type)
    return cpp_utils.DEVICE_TO_ATEN[device_type]


def _called(method: str) -> Callable[[str, Any], object]:
    def ask(device_type: str, overrides: Any) -> object:
        return getattr(overrides, method)()

    return ask


def check_overrides(context: Context) -> Check:
    """Ask the device's overrides what torch asks them in the mode's builds."""
    device, asked = context.device_type, context.asked
    if asked is not None and asked.error is not None:
        return check(NAME, "skip", "skipped: Inductor cannot create the device's codegen")
    overrides = _registered(device)
    if overrides is None:
        if asked is None or asked.codegen is None:
            return check(
                NAME,
                "skip",
                f"skipped: no DeviceOpOverrides are registered for {device!r} in this process: "
                "its backend is not imported",
            )
        return check(
            NAME,
            "fail",
            f"no DeviceOpOverrides registered for {device!r}",
            Problem(
                f"Inductor asks the device's DeviceOpOverrides in every build of {device!r} "
                "(GraphLowering.codegen), and none are registered",
                "call torch._inductor.codegen.common.register_device_op_overrides"
                f"({device!r}, ...) where the backend registers {asked.codegen}",
            ),
        )
    name = describe_callable(type(overrides))
    answers: list[str] = []
    failed: dict[str, Problem] = {}
    for question in asked_methods(context.aot_mode, asked.reported if asked else None, device):
        try:
            answers.append(f"{question.method}() {question.ask(device, overrides)!r}")
        except Exception as error:
            failed[question.method] = _raised(context, overrides, question, error)
    if failed:
        methods = ", ".join(f"{method}()" for method in failed)
        return check(NAME, "fail", f"{name}: {methods} raised", *failed.values())
    return check(NAME, "pass", f"{name}: {', '.join(answers)}")


def _registered(device: str) -> object | None:
    from torch._inductor.codegen import common

    try:
        return common.get_device_op_overrides(device)
    except KeyError:  # torch 2.13 raises; 2.6 returns None
        return None


def _raised(context: Context, overrides: object, question: Asked, error: Exception) -> Problem:
    import torch
    from torch._inductor.codegen.common import DeviceOpOverrides

    name = describe_callable(type(overrides))
    method = question.method
    inherited = getattr(type(overrides), method, None) is getattr(DeviceOpOverrides, method, None)
    mode = "AOTInductor" if context.aot_mode else "cpp_wrapper"
    origin = ", inherited from torch's DeviceOpOverrides, which does not implement it"
    cause = (
        f"{name}.{method}() raised {error_line(error)}{origin if inherited else ''}: torch "
        f"{torch.__version__} calls it in every {mode} build of {context.device_type!r} "
        f"({question.caller})"
    )
    return Problem(cause, method_fix(name, method))


def method_fix(name: str, method: str) -> str:
    """The fix for a method of the overrides class ``name`` that raises when torch asks it."""
    if method == "cpp_kernel_type":
        return (
            f"define cpp_kernel_type() on {name}, returning the C++ type of a kernel pointer "
            '("void*" for C++ kernels); for a host-memory device, derive the overrides from '
            "torch's CpuDeviceOpOverrides (torch._inductor.codegen.cpu_device_op_overrides), "
            "which defines it"
        )
    if method == "aten_device_type":
        return f'define aten_device_type() on {name}, returning "at::kPrivateUse1"'
    return f"make {name}.{method}() answer without raising"
