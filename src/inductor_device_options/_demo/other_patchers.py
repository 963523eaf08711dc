"""The demo's step with other backends: a wholesale replacement (torch_npu 2.14's kind) and
a chaining wrapper (openreg's kind) are assigned to Inductor's function after the sample
registered, and the sample still builds with its options."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import RESERVED_DEVICE_TYPES
from ..introspection import hook_state
from ..sample import DEVICE_NAME
from .build_checks import check_result
from .compiler_commands import Flags, last_shared_library, record_compiler_commands
from .inductor_env import compiling_in_this_process, fresh_inductor_cache
from .report import Report

if TYPE_CHECKING:
    import torch

WRAPPER_MACRO = "DEMO_CHAINING_WRAPPER"


def check_other_patchers(
    report: Report,
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    expected: torch.Tensor,
    marks: list[Flags],
    inductor_cache_base: str,
) -> None:
    """Compile with both assigned; check the module got the sample's flags and the
    wrapper's, that the hook adopted both, and the result."""
    import torch
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        with _other_patchers_assigned(report):
            torch._dynamo.reset()
            # In this process, where the two were assigned (a compile subprocess has neither).
            with (
                compiling_in_this_process(),
                fresh_inductor_cache(inductor_cache_base),
                record_compiler_commands(get_cpp_compiler()) as commands,
            ):
                result = torch.compile(model, options={"cpp_wrapper": True})(*inputs)
            state = hook_state()
    finally:
        torch._dynamo.reset()
    report.say(state.describe())
    module = last_shared_library(commands)
    missing = [" ".join(f) for f in marks if module is None or not module.has(f)]
    report.check(
        f"every flag from the {DEVICE_NAME} options still in the command that built the module",
        not missing,
        f"missing {', '.join(missing)}" if missing else "",
    )
    report.check(
        f"the wrapper's -D {WRAPPER_MACRO} reached the compiler too",
        module is not None and module.has(("-D", WRAPPER_MACRO)),
    )
    report.check(
        "both adopted by the hook: a replacement, then a wrapper of the hook",
        [function.behaviour for function in state.adopted] == ["replacement", "wraps the hook"]
        and state.registrations_apply,
    )
    check_result(report, result, expected)


@contextmanager
def _other_patchers_assigned(report: Report) -> Iterator[None]:
    """The replacement, then the wrapper, assigned for the block; what was there after it."""
    import inspect

    import torch._inductor.cpp_builder as cpp_builder

    saved = cpp_builder.get_cpp_torch_device_options
    cpp_builder.get_cpp_torch_device_options = _legacy_replacement(inspect.unwrap(saved))
    cpp_builder.get_cpp_torch_device_options = _chaining_wrapper(
        cpp_builder.get_cpp_torch_device_options
    )
    report.say(
        "cpp_builder.get_cpp_torch_device_options = legacy_replacement  # never calls through\n"
        "cpp_builder.get_cpp_torch_device_options = chaining_wrapper    # adds -D "
        f"{WRAPPER_MACRO}"
    )
    try:
        yield
    finally:
        cpp_builder.get_cpp_torch_device_options = saved


def _legacy_replacement(torch_function: Callable[..., Any]) -> Callable[..., Any]:
    def legacy_replacement(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> Any:
        # A backend's own copy of torch's own function, assigned for every device: it knows
        # torch's devices, and gives any other one torch's generic options.
        known = device_type if device_type in RESERVED_DEVICE_TYPES else "legacy_backend_device"
        return torch_function(known, aot_mode, compile_only)

    return legacy_replacement


def _chaining_wrapper(captured: Callable[..., Any]) -> Callable[..., Any]:
    def chaining_wrapper(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: object
    ) -> Any:
        # **kwargs: torch 2.15's CppTorchDeviceOptions passes cpp_stdlib= as well.
        options = captured(device_type, aot_mode, compile_only, **kwargs)
        if device_type == DEVICE_NAME:
            options[0].append(WRAPPER_MACRO)
        return options

    return chaining_wrapper
