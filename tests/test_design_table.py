"""The design's validation table (seed section 6), one test per row, against real torch.

The design verified these on CANN 9.0.1 + torch 2.13.0 with an Ascend device. Here there is
no NPU, no CUDA and no XPU: rows 7-10 use a callback shaped like torch_npu's (paths need not
exist: nothing is compiled), and rows 3-4 run torch's own cuda/xpu branches as far as they
go without their SDKs (see each docstring).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch._inductor.cpp_builder as cpp_builder
from support import definitions_of, outcome, passthrough_args_of

import inductor_device_options as ido

pytestmark = pytest.mark.usefixtures("clean_registry")

ASCEND_HOME = "/usr/local/Ascend/cann"
TORCH_NPU = "/site-packages/torch_npu"


def mock_options(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
    return (["USE_MOCK"], ["/mock/include"], [], [], ["/mock/lib"], ["mocklib"], [])


def npu_options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
    """The shape of torch_npu 2.14.0's get_cpp_torch_device_options for "npu"."""
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("USE_NPU")
    options.include_dirs.extend(
        [f"{TORCH_NPU}/include", f"{ASCEND_HOME}/include", f"{ASCEND_HOME}/pkg_inc"]
    )
    options.libraries_dirs.extend([f"{TORCH_NPU}/lib", f"{ASCEND_HOME}/lib64"])
    options.libraries.extend(["torch_npu", "runtime", "ascendcl"])
    options.passthrough_args.append("-DBUILD_LIBTORCH=ON -Wno-unused-function")
    return options


def inductor_sees(device_type: str) -> cpp_builder.CppTorchDeviceOptions:
    return cpp_builder.CppTorchDeviceOptions(device_type=device_type, aot_mode=True)


def test_1_mock_device_register_and_lookup() -> None:
    ido.register_cpp_device_options("mock", mock_options)
    assert ido.introspection.registered_device_types() == ["mock"]
    assert ido.get_cpp_device_options("mock") == ido.CppDeviceOptions(*mock_options("mock", 0, 0))
    assert "USE_MOCK" in definitions_of(inductor_sees("mock"))


def test_2_registering_again_warns() -> None:
    ido.register_cpp_device_options("mock", mock_options)
    with pytest.warns(UserWarning, match="'mock' are already registered"):
        ido.register_cpp_device_options("mock", npu_options)


def test_3_a_registered_device_does_not_pollute_cuda(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No CUDA toolkit here: torch's CUDA_HOME is pointed at an empty directory so that
    torch's own cuda branch runs to the end (it only joins paths)."""
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path))
    ido.register_cpp_device_options("mock", mock_options)
    definitions = definitions_of(inductor_sees("cuda"))
    assert " USE_CUDA" in definitions
    assert "USE_MOCK" not in definitions


def test_4_a_registered_device_does_not_pollute_xpu() -> None:
    """No SYCL runtime here: torch's xpu branch stops with its own OSError where it checks
    for one (2.7+), or returns its xpu options (2.6); the registry neither changes that
    nor answers for xpu (xpu cannot be registered)."""
    stock = outcome(lambda: ido.default_cpp_device_options("xpu", aot_mode=True))
    ido.register_cpp_device_options("mock", mock_options)
    sees = outcome(lambda: definitions_of(inductor_sees("xpu")))
    if stock[0] == "raised":
        error_type, _ = stock[1]  # type: ignore[misc]
        assert issubclass(error_type, OSError)
        assert sees == stock
    else:
        assert sees[0] == "returned"
        assert " USE_XPU" in sees[1] and "USE_MOCK" not in sees[1]  # type: ignore[operator]
    with pytest.raises(ido.ReservedDeviceTypeError):
        ido.register_cpp_device_options("xpu", mock_options)


def test_5_a_registered_device_does_not_pollute_mps() -> None:
    """torch's mps options (" USE_MPS"; torch 2.6 has no mps branch: the defaults) only."""
    torch_mps = ido.default_cpp_device_options("mps", aot_mode=True).definitions
    ido.register_cpp_device_options("mock", mock_options)
    definitions = definitions_of(inductor_sees("mps"))
    assert set(torch_mps) <= set(definitions)
    assert "USE_MOCK" not in definitions


def test_6_an_unknown_device_gets_no_mock_definitions() -> None:
    ido.register_cpp_device_options("mock", mock_options)
    unknown = inductor_sees("unknowndev")
    assert "USE_MOCK" not in definitions_of(unknown)
    assert "mocklib" not in unknown.get_libraries()
    assert ido.get_cpp_device_options("unknowndev") == ido.default_cpp_device_options("unknowndev")


def test_7_npu_callback_injects_use_npu() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    assert "USE_NPU" in definitions_of(inductor_sees("npu"))


def test_8_npu_include_paths() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    include_dirs = inductor_sees("npu").get_include_dirs()
    for expected in (f"{TORCH_NPU}/include", f"{ASCEND_HOME}/include", f"{ASCEND_HOME}/pkg_inc"):
        assert expected in include_dirs


def test_9_npu_libraries() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    built = inductor_sees("npu")
    assert {"ascendcl", "torch_npu", "runtime"} <= set(built.get_libraries())
    assert f"{ASCEND_HOME}/lib64" in built.get_libraries_dirs()


def test_10_npu_passthrough_args() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    passthrough = passthrough_args_of(inductor_sees("npu"))
    assert "-DBUILD_LIBTORCH=ON -Wno-unused-function" in passthrough
