"""Which device type Inductor's C++ builds ask for, read off torch's own objects: the wrapper
codegen registered for the device (created as Inductor creates it), the header torch's
precompile step includes, and, at run time, the graph being built.

Real torch throughout: real ``register_backend_for_device`` registrations (removed
afterwards), a real ``GraphLowering`` as the graph being built, a real
``CppTorchDeviceOptions`` asking the hook.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import torch
import torch.fx
from support import creating_needs_op_overrides
from torch._inductor.codegen import common
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch._inductor.cpp_builder import CppTorchDeviceOptions
from torch._inductor.graph import GraphLowering
from torch._inductor.virtualized import V

import inductor_device_options as ido
from inductor_device_options import DeviceNotAskedWarning, _state, testing
from inductor_device_options._diagnose.asked import asked_device_type

pytestmark = pytest.mark.usefixtures("clean_registry")


class OpenregShapedCodegen(CppWrapperCpu):
    """As openreg-derived backends write it: device left as CppWrapperCpu's "cpu"."""

    @staticmethod
    def create(*args: object) -> OpenregShapedCodegen:
        return OpenregShapedCodegen()


class ReportingCodegen(CppWrapperCpu):
    """Reports its device, as the package's sample does."""

    def __init__(self) -> None:
        self.device = "askeddev"
        super().__init__()

    @staticmethod
    def create(*args: object) -> ReportingCodegen:
        return ReportingCodegen()


def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
    result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    result.definitions.append("USE_ASKED")
    return result


@pytest.fixture
def backends() -> Iterator[None]:
    """Two devices registered with Inductor as backends of their own."""
    for device, codegen in (("askedcpu", OpenregShapedCodegen), ("askeddev", ReportingCodegen)):
        common.register_backend_for_device(device, CppScheduling, PythonWrapperCodegen, codegen)
    # A wrapper that reports its device asks for the device's overrides, as backends give.
    common.register_device_op_overrides("askeddev", common.DeviceOpOverrides())
    testing.reset()
    yield
    for device in ("askedcpu", "askeddev"):
        common.device_codegens.pop(device, None)
    common.device_op_overrides_dict.pop("askeddev", None)
    testing.reset()


@pytest.mark.usefixtures("backends")
def test_a_codegen_that_never_sets_its_device_asks_for_cpu() -> None:
    asked = asked_device_type("askedcpu", aot_mode=False)
    assert asked.asked == "cpu" and asked.mismatch
    assert asked.codegen == f"{__name__}.OpenregShapedCodegen"
    assert "never sets self.device" in asked.reason
    # torch's precompile step then includes the header of the device asked.
    if asked.precompiled_header is not None:
        assert asked.precompiled_header.endswith("cpp_wrapper/cpu.h")


@pytest.mark.usefixtures("backends")
def test_a_codegen_that_reports_its_device_asks_for_it() -> None:
    asked = asked_device_type("askeddev", aot_mode=False)
    assert (asked.asked, asked.mismatch) == ("askeddev", False)
    from torch._inductor import codecache

    if hasattr(codecache, "_get_cpp_wrapper_header"):  # torch 2.6 precompiles no header
        assert asked.precompiled_header == "torch/csrc/inductor/cpp_wrapper/askeddev.h"


@pytest.mark.usefixtures("backends")
def test_aotinductor_asks_for_the_graph_device_whatever_the_codegen() -> None:
    asked = asked_device_type("askedcpu", aot_mode=True)
    assert (asked.asked, asked.reported, asked.mismatch) == ("askedcpu", "cpu", False)


class UnregisteredOverridesCodegen(CppWrapperCpu):
    """Reports its device, whose DeviceOpOverrides nobody registered."""

    def __init__(self) -> None:
        self.device = "askedbroken"
        super().__init__()

    @staticmethod
    def create(*args: object) -> UnregisteredOverridesCodegen:
        return UnregisteredOverridesCodegen()


def test_a_codegen_that_cannot_be_created_is_an_error_not_an_unknown() -> None:
    """Inductor creates the codegen the same way at every cpp_wrapper build: what raises
    here raises there (CppWrapperCpu asks for the device's DeviceOpOverrides)."""
    if not creating_needs_op_overrides():
        pytest.skip(f"torch {torch.__version__} gives DeviceOpOverrides to every device")
    common.register_backend_for_device(
        "askedbroken", CppScheduling, PythonWrapperCodegen, UnregisteredOverridesCodegen
    )
    try:
        for aot_mode in (False, True):
            asked = asked_device_type("askedbroken", aot_mode)
            assert asked.asked is None and asked.error is not None
            assert "KeyError" in asked.error and "'askedbroken'" in asked.error
            assert asked.codegen == f"{__name__}.UnregisteredOverridesCodegen"
    finally:
        common.device_codegens.pop("askedbroken", None)


def test_without_a_registered_codegen_nothing_is_claimed() -> None:
    asked = asked_device_type("nocodegen", aot_mode=False)
    assert asked.asked is None and not asked.mismatch
    assert "no C++ wrapper codegen is registered" in asked.reason


def graph_being_built(
    device_type: str, codegen: type[CppWrapperCpu], cpp_wrapper: bool
) -> GraphLowering:
    """A real graph as Inductor holds it while it builds: its device and its wrapper."""
    graph = GraphLowering(torch.fx.symbolic_trace(lambda x: x), cpp_wrapper=cpp_wrapper)
    graph.device_type = device_type
    with V.set_graph_handler(graph):
        graph.wrapper_code = codegen.create(False, None, None, None)  # type: ignore[attr-defined]
    return graph


def questions(
    graph: GraphLowering, device_type: str, times: int = 2
) -> list[DeviceNotAskedWarning]:
    with warnings.catch_warnings(record=True) as caught, V.set_graph_handler(graph):
        warnings.simplefilter("always")
        for _ in range(times):
            CppTorchDeviceOptions(device_type=device_type)
    return [w.message for w in caught if isinstance(w.message, DeviceNotAskedWarning)]


@pytest.mark.usefixtures("backends")
def test_a_served_device_built_with_cpus_options_warns_once() -> None:
    ido.register_cpp_device_options("askedcpu", options)
    graph = graph_being_built("askedcpu", OpenregShapedCodegen, cpp_wrapper=True)
    (warning,) = questions(graph, "cpu")
    assert (warning.device_type, warning.asked) == ("askedcpu", "cpu")
    assert warning.codegen == f"{__name__}.OpenregShapedCodegen"
    message = str(warning)
    assert "OpenregShapedCodegen.__init__, set self.device = 'askedcpu'" in message
    assert "torch/csrc/inductor/cpp_wrapper/askedcpu.h" in message
    assert _state.not_asked_seen == {("askedcpu", "cpu"): f"{__name__}.OpenregShapedCodegen"}
    assert questions(graph, "cpu") == []  # once per (device, device type asked)


@pytest.mark.usefixtures("backends")
@pytest.mark.parametrize(
    "case", ["not served", "python wrapper", "codegen reports the device", "outside a graph"]
)
def test_no_warning_where_nothing_is_missed(case: str) -> None:
    if case != "not served":
        ido.register_cpp_device_options("askedcpu", options)
        ido.register_cpp_device_options("askeddev", options)
    if case == "codegen reports the device":
        graph = graph_being_built("askeddev", ReportingCodegen, cpp_wrapper=True)
        assert questions(graph, "askeddev") == []
        return
    if case == "outside a graph":
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            CppTorchDeviceOptions(device_type="cpu")
        return
    # plain torch.compile: the C++ kernels of a CPU-like device are CPU code, built as "cpu"
    graph = graph_being_built(
        "askedcpu", OpenregShapedCodegen, cpp_wrapper=case != "python wrapper"
    )
    assert questions(graph, "cpu") == []


def test_doctor_names_the_extern_kernels_as_this_torch_does() -> None:
    """doctor's c_shim check names each kernel's C++ name rather than import the modules
    that define them (their templates take 0.4 s to compile): the same as this torch's."""
    from torch._inductor.kernel import bmm, mm

    from inductor_device_options._diagnose.generated_code import EXTERN_KERNELS

    torch_s = {
        "mm": mm.aten_mm.cpp_kernel_name,
        "addmm": mm.aten_addmm.cpp_kernel_name,
        "bmm": bmm.aten_bmm.cpp_kernel_name,
    }
    assert torch_s == EXTERN_KERNELS
