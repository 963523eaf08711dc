"""The demo's control: the same cpp_wrapper compile with torch's own options for the sample
device must fail, so the options the sample registers are what makes it build."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import default_cpp_device_options
from ..sample import DEVICE_NAME
from ..testing import registered_cpp_device_options
from .inductor_env import compiling_in_this_process, fresh_inductor_cache
from .report import Report

if TYPE_CHECKING:
    import torch


def check_fails_without_options(
    report: Report,
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    inductor_cache_base: str,
) -> None:
    import torch

    torch._dynamo.reset()
    # The control compiles in this process, where the registration below applies.
    with (
        compiling_in_this_process(),
        registered_cpp_device_options(DEVICE_NAME, default_cpp_device_options),
        fresh_inductor_cache(inductor_cache_base),
    ):
        try:
            torch.compile(model, options={"cpp_wrapper": True})(*inputs)
        except Exception as error:  # Inductor wraps the compiler's error
            message = str(error)
        else:
            message = ""
    torch._dynamo.reset()
    first_error = next((line.strip() for line in message.splitlines() if "error:" in line), "")
    report.check(
        f"the build fails: the compiler cannot find the {DEVICE_NAME} headers",
        f"{DEVICE_NAME}.h: No such file or directory" in message,
        first_error or "it did not fail",
    )
