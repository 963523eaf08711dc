"""Extern kernels on the sample device: the C shims of its SDK (sampledev/c_shim.h).

In cpp_wrapper mode and with AOTInductor, a matrix product or a convolution is not
generated code but a call to ``aoti_torch_<device>_<op>``, which the device must provide.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from inductor_device_options.sample import DEVICE_NAME, SampleDevice


def random_tensors(*shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator) for shape in shapes)


def linear(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 8).to(x.device)
    return torch.relu(layer(x))


# (the shim Inductor calls, the function compiled, the shapes of its inputs)
EXTERN_KERNELS: list[tuple[str, Callable[..., torch.Tensor], list[tuple[int, ...]]]] = [
    ("mm_out", lambda a, b: a @ b, [(4, 8), (8, 5)]),
    (
        "addmm_out",
        lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
        [(5,), (4, 8), (8, 5)],
    ),
    ("bmm_out", torch.bmm, [(3, 4, 8), (3, 8, 5)]),
    (
        "baddbmm_out",
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
        [(3, 4, 5), (3, 4, 8), (3, 8, 5)],
    ),
    (
        "convolution",
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        [(2, 3, 9, 9), (4, 3, 3, 3), (4,)],
    ),
    ("convolution", lambda x, w: F.conv2d(x, w), [(2, 3, 9, 9), (4, 3, 3, 3)]),
    ("addmm_out", linear, [(4, 16)]),  # an nn.Linear: its parameters on the device
]
IDS = ["mm", "addmm", "bmm", "baddbmm", "conv2d", "conv2d-no-bias", "linear"]


@pytest.mark.parametrize(("shim", "function", "shapes"), EXTERN_KERNELS, ids=IDS)
def test_cpp_wrapper_calls_the_sampledev_shim_and_matches_eager_cpu(
    sampledev: SampleDevice,
    shim: str,
    function: Callable[..., torch.Tensor],
    shapes: list[tuple[int, ...]],
) -> None:
    from torch._inductor.utils import run_and_get_cpp_code

    inputs = random_tensors(*shapes)
    compiled = torch.compile(function, options={"cpp_wrapper": True})
    result, wrapper = run_and_get_cpp_code(compiled, *(t.to(DEVICE_NAME) for t in inputs))

    assert f"aoti_torch_{DEVICE_NAME}_{shim}(" in wrapper
    assert result.device.type == DEVICE_NAME
    torch.testing.assert_close(result.cpu(), function(*inputs))


class ConvolutionThenAddmm(torch.nn.Module):
    # Weights are inputs: torch's AOTInductor runtime cannot hold sampledev constants.
    def forward(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, matrix: torch.Tensor
    ) -> torch.Tensor:
        features = F.conv2d(x, weight, bias, padding=1).flatten(1)
        return torch.addmm(bias[:1], features, matrix)


def test_aoti_package_calls_the_sampledev_shims_and_matches_eager_cpu(
    sampledev: SampleDevice, tmp_path: Path
) -> None:
    inputs = random_tensors((2, 3, 5, 5), (4, 3, 3, 3), (4,), (100, 6))
    device_inputs = tuple(t.to(DEVICE_NAME) for t in inputs)
    exported = torch.export.export(ConvolutionThenAddmm(), device_inputs)
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(tmp_path / "model.pt2")
    )
    sources = "\n".join(path.read_text() for path in _unpacked_cpp_sources(package, tmp_path))
    for shim in ("convolution", "addmm_out"):
        assert f"aoti_torch_{DEVICE_NAME}_{shim}(" in sources

    result = torch._inductor.aoti_load_package(package)(*device_inputs)
    assert result.device.type == DEVICE_NAME
    torch.testing.assert_close(result.cpu(), ConvolutionThenAddmm()(*inputs))


def _unpacked_cpp_sources(package: str, directory: Path) -> list[Path]:
    import zipfile

    with zipfile.ZipFile(package) as archive:
        archive.extractall(directory / "unpacked")
    return sorted((directory / "unpacked").rglob("*.cpp"))


def test_eager_convolution_runs_on_the_host_and_matches_cpu(sample_build: SampleDevice) -> None:
    # ATen sends it to convolution_overrideable, which the sample's extension implements.
    x, weight, bias = random_tensors((2, 3, 9, 9), (4, 3, 3, 3), (4,))
    result = F.conv2d(x.to(DEVICE_NAME), weight.to(DEVICE_NAME), bias.to(DEVICE_NAME), padding=1)
    assert result.device.type == DEVICE_NAME
    assert result.is_contiguous()
    torch.testing.assert_close(result.cpu(), F.conv2d(x, weight, bias, padding=1))
