"""The sample device compiled by Inductor after other code assigned Inductor's function:
torch_npu 2.14.0's released replacement, and a chaining wrapper, on top of its registration."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import released_torch_npu
import torch
import torch._inductor.cpp_builder as cpp_builder
from test_sample_device import (
    PointwiseAndReduction,
    assert_built_with_sample_options,
    assert_equals_eager_cpu,
    compiler,
    cpu_inputs,
)

from inductor_device_options._demo.compiler_commands import (
    last_shared_library,
    record_compiler_commands,
)
from inductor_device_options.introspection import hook_state
from inductor_device_options.sample import DEVICE_NAME, SampleDevice

WRAPPER_MACRO = "SAMPLE_WRAPPER_SAW_IT"


@pytest.fixture
def restored() -> Iterator[None]:
    saved = cpp_builder.get_cpp_torch_device_options
    yield
    cpp_builder.get_cpp_torch_device_options = saved


def wrap(previous: Callable[..., Any]) -> Callable[..., Any]:
    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: Any
    ) -> Any:
        options = previous(device_type, aot_mode, compile_only, **kwargs)
        if device_type == DEVICE_NAME:
            options[0].append(WRAPPER_MACRO)
        return options

    return get_cpp_torch_device_options


@pytest.mark.usefixtures("restored")
def test_cpp_wrapper_after_torch_npus_replacement_and_a_wrapper(
    sampledev: SampleDevice, tmp_path: Path
) -> None:
    torch_npu = released_torch_npu.load_cpp_builder(released_torch_npu.unpack(tmp_path))
    torch_npu.patch_get_cpp_torch_device_options()  # replaces the function for every device
    cpp_builder.get_cpp_torch_device_options = wrap(cpp_builder.get_cpp_torch_device_options)

    inputs = cpu_inputs()
    with record_compiler_commands(compiler()) as commands:
        compiled = torch.compile(PointwiseAndReduction(), options={"cpp_wrapper": True})
        result = compiled(*(tensor.to(DEVICE_NAME) for tensor in inputs))

    assert_equals_eager_cpu(result, inputs)
    assert_built_with_sample_options(commands, sampledev)
    module = last_shared_library(commands)
    assert module is not None and module.has(("-D", WRAPPER_MACRO))
    assert [function.behaviour for function in hook_state().adopted] == [
        "replacement",
        "wraps the hook",
    ]
