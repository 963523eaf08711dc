"""The ``aoti_shim_ops`` door: a device's declared C shims are called for that device only.

``aten.nanmedian.dim`` is a FallbackKernel on torch 2.6, 2.13 and 2.15 and is in none of
their ``inductor_fallback_ops``: in cpp_wrapper mode torch calls it through
``aoti_torch_call_dispatcher`` (2.13, 2.15) or Python (2.6), in AOTInductor through the proxy
executor. The sample's SDK declares ``aoti_torch_sampledev_nanmedian_dim``
(``sampledev/c_shim.h``); with a provider declaring the op, sampledev's generated code calls
it and the compiled model gives torch's result, while cpu's code in the same process stays
byte for byte what it was.
"""

from __future__ import annotations

import logging
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._inductor.ir
from support import shared_test_dir

from inductor_device_options import CppDeviceOptions, InvalidProviderAttributeError
from inductor_device_options._demo.compiler_commands import record_compiler_commands
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import shim_ops
from inductor_device_options.sample import DEVICE_NAME, SampleDevice, sdk_cpp_device_options
from inductor_device_options.testing import registered_cpp_device_options

OP = "aten.nanmedian.dim"
SHIM = f"aoti_torch_{DEVICE_NAME}_nanmedian_dim"
#: What torch writes where it looks the op up at run time instead (2.13/2.15 cpp_wrapper,
#: 2.6 cpp_wrapper, AOTInductor).
RUN_TIME_LOOKUPS = (
    "aoti_torch_call_dispatcher(",
    "custom_op_wrapper",
    "aoti_torch_proxy_executor_call_function(",
)
#: torch's warning for a fallback op without a C shim (``FallbackKernel.codegen``).
MISSING_SHIM = "is missing a c-shim implementation"


def nanmedian_twice(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = torch.nanmedian(x, dim=1)
    return values * 2, indices


def cpu_input() -> torch.Tensor:
    x = torch.randn(4, 7, generator=torch.Generator().manual_seed(0))
    x[1, 2] = x[3, 0] = float("nan")
    return x


def provider(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """The sample device's options; each test sets ``aoti_shim_ops`` on it."""
    return sdk_cpp_device_options(device_type, aot_mode, compile_only)


@pytest.fixture(scope="module")
def sample_device() -> SampleDevice:
    from inductor_device_options import sample, unregister_cpp_device_options

    device = sample.setup(shared_test_dir() / "sampledev")
    unregister_cpp_device_options(DEVICE_NAME)  # each test registers its own provider
    return device


@pytest.fixture
def declaring(sample_device: SampleDevice) -> Iterator[Callable[[object], None]]:
    """Registers ``provider`` for sampledev; call the fixture to set its ``aoti_shim_ops``."""

    def declare(ops: object) -> None:
        provider.aoti_shim_ops = ops  # type: ignore[attr-defined]

    torch._dynamo.reset()
    with registered_cpp_device_options(DEVICE_NAME, provider):
        yield declare
    vars(provider).pop("aoti_shim_ops", None)
    torch._dynamo.reset()


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class Compiled:
    code: str
    result: tuple[torch.Tensor, torch.Tensor]
    warnings: list[str]
    #: torch 2.15: ``_uses_aot_proxy_executor``'s answers for the op at lowering.
    proxy_answers: list[bool]


def compile_cpp_wrapper(device: str) -> Compiled:
    """``nanmedian_twice`` compiled anew with cpp_wrapper on ``device`` and run: Inductor's
    graph caches are off, so it generates the code again (its C++ cache still serves a
    module built from the same code)."""
    from torch._inductor import config
    from torch._inductor.ir import FallbackKernel
    from torch._inductor.utils import run_and_get_cpp_code

    torch._dynamo.reset()
    warnings, answers = _Warnings(), []
    torch_asks = vars(FallbackKernel).get("_uses_aot_proxy_executor")

    def uses_aot_proxy_executor(kernel: Any) -> bool:  # records torch's own answer
        answer: bool = torch_asks.__func__(kernel)  # type: ignore[union-attr]
        if str(kernel) == OP:
            answers.append(answer)
        return answer

    logger = logging.getLogger("torch._inductor.ir")
    logger.addHandler(warnings)
    if torch_asks is not None:
        FallbackKernel._uses_aot_proxy_executor = staticmethod(uses_aot_proxy_executor)
    try:
        with (
            config.patch(fx_graph_cache=False),
            torch._functorch.config.patch(enable_autograd_cache=False),
        ):
            compiled = torch.compile(nanmedian_twice, options={"cpp_wrapper": True})
            result, code = run_and_get_cpp_code(compiled, cpu_input().to(device))
    finally:
        logger.removeHandler(warnings)
        if torch_asks is not None:
            FallbackKernel._uses_aot_proxy_executor = torch_asks
    return Compiled(code, result, warnings.messages, answers)


@dataclass
class Codes:
    cpu_before: Compiled
    cpu_after: Compiled
    sampledev: Compiled
    sampledev_more_declared: Compiled


@pytest.fixture(scope="module")
def codes(sample_device: SampleDevice) -> Iterator[Codes]:
    """One process: cpu's code, then sampledev's with the op declared, cpu's again, and
    sampledev's with ops that are no fallback in the graph declared too (three g++ builds;
    the fourth code is served by the C++ cache when it is the same)."""
    with registered_cpp_device_options(DEVICE_NAME, provider):
        try:
            cpu_before = compile_cpp_wrapper("cpu")
            provider.aoti_shim_ops = [OP]  # type: ignore[attr-defined]
            sampledev = compile_cpp_wrapper(DEVICE_NAME)
            cpu_after = compile_cpp_wrapper("cpu")
            # mul is generated code in this graph; digamma is not in it.
            provider.aoti_shim_ops = {OP, "aten.mul.Tensor", "aten.digamma.default"}  # type: ignore[attr-defined]
            more = compile_cpp_wrapper(DEVICE_NAME)
        finally:
            vars(provider).pop("aoti_shim_ops", None)
            torch._dynamo.reset()
    yield Codes(cpu_before, cpu_after, sampledev, more)


def assert_torch_result(result: tuple[torch.Tensor, ...], device: str) -> None:
    expected = nanmedian_twice(cpu_input())
    assert [t.device.type for t in result] == [device, device]
    torch.testing.assert_close([t.cpu() for t in result], list(expected))


def test_the_op_is_no_torch_shim_on_this_release() -> None:
    from torchgen.aoti.fallback_ops import inductor_fallback_ops

    assert OP not in inductor_fallback_ops


def test_cpp_wrapper_calls_the_declared_shim_and_gives_torchs_result(codes: Codes) -> None:
    code = codes.sampledev.code
    assert f"{SHIM}(" in code
    assert not [lookup for lookup in RUN_TIME_LOOKUPS if lookup in code], code
    assert not [m for m in codes.sampledev.warnings if MISSING_SHIM in m]
    assert_torch_result(codes.sampledev.result, DEVICE_NAME)


def test_cpu_code_in_the_same_process_is_byte_for_byte_unchanged(codes: Codes) -> None:
    assert codes.cpu_after.code == codes.cpu_before.code
    assert "nanmedian_dim(" not in codes.cpu_before.code  # no aoti_torch_cpu_ shim either
    assert [lookup for lookup in RUN_TIME_LOOKUPS if lookup in codes.cpu_before.code]
    for compiled in (codes.cpu_before, codes.cpu_after):
        assert [m for m in compiled.warnings if MISSING_SHIM in m and OP in m]
        assert_torch_result(compiled.result, "cpu")


def test_declaring_ops_that_are_no_fallback_in_the_graph_changes_nothing(codes: Codes) -> None:
    assert codes.sampledev_more_declared.code == codes.sampledev.code


@pytest.mark.skipif(
    not hasattr(torch._inductor.ir.FallbackKernel, "_uses_aot_proxy_executor"),
    reason="torch 2.6 and 2.13 ask no proxy-executor question at lowering",
)
def test_lowering_sees_the_declared_op_as_a_shim_on_2_15(codes: Codes) -> None:
    # 2.15 materialises a scalar in a Tensor slot for ops it sends to the proxy executor.
    assert codes.sampledev.proxy_answers == [False]
    assert codes.cpu_before.proxy_answers == codes.cpu_after.proxy_answers == [True]


class NanmedianTwice(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return nanmedian_twice(x)


def test_aoti_calls_the_declared_shim_and_gives_torchs_result(
    declaring: Callable[[object], None], tmp_path: Path
) -> None:
    declaring((OP,))
    device_input = cpu_input().to(DEVICE_NAME)
    exported = torch.export.export(NanmedianTwice(), (device_input,))
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(tmp_path / "model.pt2")
    )
    with zipfile.ZipFile(package) as archive:
        archive.extractall(tmp_path / "unpacked")
    sources = "\n".join(p.read_text() for p in sorted((tmp_path / "unpacked").rglob("*.cpp")))
    assert f"{SHIM}(" in sources
    assert not [lookup for lookup in RUN_TIME_LOOKUPS if lookup in sources]

    result = torch._inductor.aoti_load_package(package)(device_input)
    assert_torch_result(tuple(result), DEVICE_NAME)


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (OP, "not entries"),  # one str, not a collection of them
        (["nanmedian.dim"], "'nanmedian.dim' is not one"),
        ([OP, 3], "3 is not one"),
    ],
    ids=["a-str", "no-namespace", "not-a-str"],
)
def test_an_invalid_declaration_is_named_before_any_gpp(
    declaring: Callable[[object], None], declared: object, expected: str
) -> None:
    declaring(declared)
    error = compile_failing()
    assert isinstance(error, InvalidProviderAttributeError), error
    assert error.attribute == "aoti_shim_ops"
    assert error.device_type == DEVICE_NAME
    for part in (DEVICE_NAME, "aoti_shim_ops", provider.__qualname__, expected):
        assert part in str(error)


def test_a_raising_declaration_is_an_error_naming_the_door_caused_by_it(
    declaring: Callable[[object], None],
) -> None:
    def shim_ops_of(device_type: str) -> list[str]:
        raise LookupError(f"no SDK for {device_type}")

    declaring(shim_ops_of)
    error = compile_failing()
    assert isinstance(error, InvalidProviderAttributeError), error
    assert isinstance(error.__cause__, LookupError)
    assert f"its aoti_shim_ops raised LookupError: no SDK for {DEVICE_NAME}" in str(error)
    assert raised_by_provider(error) == f"{__name__}.{provider.__qualname__}"
    for part in (DEVICE_NAME, "aoti_shim_ops", provider.__qualname__):
        assert part in str(error)


def compile_failing() -> BaseException:
    """What compiling ``nanmedian_twice`` on sampledev raised, innermost first; no g++ ran."""
    from torch._inductor import config
    from torch._inductor.cpp_builder import get_cpp_compiler

    torch._dynamo.reset()
    compiled = torch.compile(nanmedian_twice, options={"cpp_wrapper": True})
    with (
        record_compiler_commands(get_cpp_compiler()) as commands,
        config.patch(fx_graph_cache=False),
        pytest.raises(Exception) as raised,
    ):
        compiled(cpu_input().to(DEVICE_NAME))
    assert [c.argv for c in commands] == []
    return _provider_error(raised.value)


def _provider_error(raised: BaseException) -> BaseException:
    """The door's error in what torch raised: torch.compile's ``BackendCompilerFailed``
    (2.6) or ``InductorError`` (2.13, 2.15) holds it as ``__cause__`` or
    ``inner_exception``."""
    error: BaseException | None = raised
    while error is not None and not isinstance(error, (InvalidProviderAttributeError, LookupError)):
        error = getattr(error, "inner_exception", None) or error.__cause__ or error.__context__
    assert error is not None, raised
    return error


def test_a_copy_of_the_list_holds_the_op_for_the_declaring_thread_alone() -> None:
    import torchgen.aoti.fallback_ops as fallback_ops

    torch_list = fallback_ops.inductor_fallback_ops
    seen_elsewhere: list[bool] = []
    with shim_ops._listed(OP):
        assert OP in fallback_ops.inductor_fallback_ops
        other = threading.Thread(
            target=lambda: seen_elsewhere.append(OP in fallback_ops.inductor_fallback_ops)
        )
        other.start()
        other.join()
        assert type(fallback_ops.inductor_fallback_ops).__mro__[1] is type(torch_list)
    assert seen_elsewhere == [False]
    assert fallback_ops.inductor_fallback_ops is torch_list
    assert OP not in torch_list


def test_install_is_idempotent() -> None:
    from torch._inductor import ir

    assert shim_ops.is_installed(ir)
    installed = vars(ir.FallbackKernel)["codegen"]
    shim_ops.install(ir)
    assert vars(ir.FallbackKernel)["codegen"] is installed


def test_release_gap_is_none_where_codegen_reads_the_list() -> None:
    assert shim_ops.release_gap() is None
