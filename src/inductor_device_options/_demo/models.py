"""The small models the demo compiles for the sample device, and what they run on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..sample import DEVICE_NAME

if TYPE_CHECKING:
    import torch


def make_model() -> torch.nn.Module:
    """A pointwise op and a reduction: Inductor's own C++ kernels, no extern kernel."""
    import torch

    class PointwiseAndReduction(torch.nn.Module):
        # No parameters: torch's AOTInductor runtime cannot hold sampledev constants.
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            hidden = torch.sin(x) * y + 1.0
            return hidden.sum(dim=-1, keepdim=True) * hidden.relu()

    return PointwiseAndReduction()


def make_linear_model() -> torch.nn.Module:
    """An nn.Linear between pointwise ops, with fixed weights."""
    import torch

    class LinearLayer(torch.nn.Module):
        # A matrix product is an extern kernel: the module calls the sampledev C shim.
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(16, 8)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.linear(torch.sin(x) * y + 1.0))

    torch.manual_seed(0)
    return LinearLayer().requires_grad_(False)


@dataclass(frozen=True)
class Workload:
    """The demo's two models, their inputs on the sample device, and eager CPU's results."""

    model: torch.nn.Module
    linear_model: torch.nn.Module  # moved to the sample device
    inputs: tuple[torch.Tensor, ...]  # on the sample device
    expected: torch.Tensor
    linear_expected: torch.Tensor


def make_workload() -> Workload:
    """The models, run eagerly on the CPU for the results to compare with."""
    import torch

    model = make_model()
    inputs = (torch.randn(8, 16), torch.randn(8, 16))
    expected = model(*inputs)
    device_inputs = tuple(tensor.to(DEVICE_NAME) for tensor in inputs)
    linear_model = make_linear_model()
    linear_expected = linear_model(*inputs)
    linear_model.to(DEVICE_NAME)
    return Workload(model, linear_model, device_inputs, expected, linear_expected)
