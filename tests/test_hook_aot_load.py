"""The ``aoti_runner`` door: ``torch._export.aot_load`` runs an out-of-tree device's ``.so``.

torch 2.6 to 2.15's ``aot_load`` knows cpu, cuda, xpu (and mps) runners only and refuses
every other device ("Unsupported device"). A provider that declares ``aoti_runner(so_path,
device)`` gets its device's ``.so`` loaded with the runner it returns, through torch's own
``optimized`` code; every other device gets torch's function itself.

One sampledev ``.so`` and one cpu ``.so``, compiled by ``torch._export.aot_compile`` (the
``.so`` form ``aot_load`` loads, on every release), serve the whole module. The sample's
memory is host memory: torch's ``AOTIModelContainerRunnerCpu`` runs its ``.so`` (the
sample's C++ runner, registered for ``aoti_load_package``, makes its container a CPU one
too), and is the runner the tests' providers give.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch._export
from support import check_python, shared_test_dir

from inductor_device_options import InvalidProviderAttributeError, unregister_cpp_device_options
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import aot_load as door
from inductor_device_options.sample import DEVICE_NAME, sdk_cpp_device_options
from inductor_device_options.testing import registered_cpp_device_options

pytestmark = pytest.mark.usefixtures("clean_registry")


class CosineGate(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (torch.cos(x) * y).relu() + x.sum(dim=0, keepdim=True)


def cpu_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(4, 16, generator=generator), torch.randn(4, 16, generator=generator)


@dataclass(frozen=True)
class Compiled:
    device_so: str  # compiled for sampledev
    cpu_so: str

    @staticmethod
    def device_inputs() -> tuple[torch.Tensor, ...]:
        return tuple(tensor.to(DEVICE_NAME) for tensor in cpu_inputs())

    @staticmethod
    def eager() -> Any:
        return CosineGate()(*cpu_inputs())


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    """The module's two AOTInductor compiles (about 20 s each)."""
    from inductor_device_options import sample

    sample.setup(shared_test_dir() / "sampledev")
    # setup() registers the sample's options for good; this module registers its own.
    unregister_cpp_device_options(DEVICE_NAME)
    torch._dynamo.reset()
    with registered_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options):
        device_so = torch._export.aot_compile(CosineGate(), Compiled.device_inputs())
    cpu_so = torch._export.aot_compile(CosineGate(), cpu_inputs())
    torch._dynamo.reset()
    assert isinstance(device_so, str) and isinstance(cpu_so, str)
    return Compiled(device_so, cpu_so)


@dataclass
class Provider:
    """The sample's options as a provider of this test's, with ``aoti_runner`` to set."""

    function: Callable[..., Any]
    asked: list[tuple[str, str]]

    def declare(self, factory: object) -> None:
        self.function.aoti_runner = factory  # type: ignore[attr-defined]

    def torch_runner(self, so_path: str, device: str) -> Any:
        """The runner a backend gives: torch's real one, the device string recorded."""
        self.asked.append((so_path, device))
        return torch._C._aoti.AOTIModelContainerRunnerCpu(so_path, 1)


@pytest.fixture
def provider(compiled: Compiled) -> Iterator[Provider]:
    def sampledev_options(device_type: str, aot_mode: bool, compile_only: bool) -> Any:
        return sdk_cpp_device_options(device_type, aot_mode, compile_only)

    with registered_cpp_device_options(DEVICE_NAME, sampledev_options):
        yield Provider(sampledev_options, [])


def torch_aot_load() -> Callable[[str, str], Callable[..., Any]]:
    """torch's own ``aot_load``, below the door's wrapper."""
    wrapper = torch._export.aot_load
    assert getattr(wrapper, door._MARK, False), "the door is not installed"
    torch_function: Callable[[str, str], Callable[..., Any]] = wrapper.__wrapped__  # type: ignore[attr-defined]
    assert torch_function.__module__ == "torch._export"
    return torch_function


def bound_runner(loaded: Any) -> Any:
    """The runner torch's ``optimized`` closes over."""
    return loaded.__closure__[0].cell_contents


def torch_optimized_code() -> Any:
    return next(
        constant
        for constant in torch_aot_load().__code__.co_consts
        if getattr(constant, "co_name", None) == "optimized"
    )


@pytest.mark.parametrize("device", [DEVICE_NAME, f"{DEVICE_NAME}:0"])
def test_aot_load_runs_the_device_so_with_the_declared_runner(
    compiled: Compiled, provider: Provider, device: str
) -> None:
    provider.declare(provider.torch_runner)

    loaded = torch._export.aot_load(compiled.device_so, device)
    result = loaded(*compiled.device_inputs())

    assert provider.asked == [(compiled.device_so, device)]  # the device string as given
    assert result.device.type == DEVICE_NAME
    torch.testing.assert_close(result.cpu(), compiled.eager())


def test_the_callable_is_torchs_own_code_and_gives_what_torchs_cpu_path_gives(
    compiled: Compiled, provider: Provider
) -> None:
    """The door binds torch's ``optimized`` to the runner; torch's cpu path on the same
    ``.so`` (the sample's memory is host memory) gives the same tensors."""
    provider.declare(provider.torch_runner)
    inputs = compiled.device_inputs()

    loaded: Any = torch._export.aot_load(compiled.device_so, DEVICE_NAME)
    torch_loaded: Any = torch_aot_load()(compiled.device_so, "cpu")

    assert loaded.__code__ is torch_optimized_code() is torch_loaded.__code__
    assert loaded.__globals__ is vars(torch._export)
    assert isinstance(bound_runner(loaded), torch._C._aoti.AOTIModelContainerRunnerCpu)
    torch.testing.assert_close(loaded(*inputs).cpu(), torch_loaded(*inputs).cpu(), rtol=0, atol=0)


def test_without_a_declared_runner_aot_load_raises_torchs_unsupported_device(
    compiled: Compiled, provider: Provider
) -> None:
    with pytest.raises(RuntimeError, match=rf"^Unsupported device {DEVICE_NAME}$"):
        torch._export.aot_load(compiled.device_so, DEVICE_NAME)
    unregister_cpp_device_options(DEVICE_NAME)  # no provider serves the device
    with pytest.raises(RuntimeError, match=rf"^Unsupported device {DEVICE_NAME}:0$"):
        torch._export.aot_load(compiled.device_so, f"{DEVICE_NAME}:0")
    with pytest.raises(RuntimeError, match=r"^Unsupported device no_such_device$"):
        torch._export.aot_load(compiled.device_so, "no_such_device")


def test_cpu_aot_load_is_torchs_own_while_the_device_declares_a_runner(
    compiled: Compiled, provider: Provider
) -> None:
    provider.declare(provider.torch_runner)
    inputs = cpu_inputs()

    loaded: Any = torch._export.aot_load(compiled.cpu_so, "cpu")
    torch_loaded: Any = torch_aot_load()(compiled.cpu_so, "cpu")

    assert provider.asked == []
    assert loaded.__code__ is torch_loaded.__code__
    assert isinstance(bound_runner(loaded), torch._C._aoti.AOTIModelContainerRunnerCpu)
    result = loaded(*inputs)
    assert result.device.type == "cpu"
    torch.testing.assert_close(result, torch_loaded(*inputs), rtol=0, atol=0)
    torch.testing.assert_close(result, compiled.eager())


class RunnerWithout:
    """A runner lacking one of the two methods torch's callable uses."""

    def __init__(self, missing: str) -> None:
        self.missing = missing

    def __getattr__(self, name: str) -> Any:
        if name in ("run", "get_call_spec") and name != self.missing:
            return lambda *args: None
        raise AttributeError(name)


@pytest.mark.parametrize("missing", ["run", "get_call_spec"])
def test_a_runner_without_run_or_get_call_spec_is_named(
    compiled: Compiled, provider: Provider, missing: str
) -> None:
    provider.declare(lambda so_path, device: RunnerWithout(missing))

    with pytest.raises(InvalidProviderAttributeError) as raised:
        torch._export.aot_load(compiled.device_so, DEVICE_NAME)

    error = raised.value
    assert (error.device_type, error.attribute) == (DEVICE_NAME, "aoti_runner")
    assert "sampledev_options" in str(error.description)
    message = str(error)
    for part in (repr(DEVICE_NAME), "aoti_runner", "sampledev_options", f"{missing}()"):
        assert part in message, message


def test_a_runner_attribute_that_is_not_callable_is_named(
    compiled: Compiled, provider: Provider
) -> None:
    provider.declare(torch._C._aoti.AOTIModelContainerRunnerCpu(compiled.device_so, 1))

    with pytest.raises(InvalidProviderAttributeError, match="aoti_runner") as raised:
        torch._export.aot_load(compiled.device_so, DEVICE_NAME)

    assert (raised.value.device_type, raised.value.attribute) == (DEVICE_NAME, "aoti_runner")
    assert "not a callable" in str(raised.value)
    assert "sampledev_options" in str(raised.value)


def test_a_raising_factory_is_an_error_naming_the_door_caused_by_its_error(
    compiled: Compiled, provider: Provider
) -> None:
    def refusing_factory(so_path: str, device: str) -> Any:
        raise OSError(f"cannot open {so_path} on {device}")

    provider.declare(refusing_factory)

    with pytest.raises(
        InvalidProviderAttributeError, match="its aoti_runner raised OSError"
    ) as raised:
        torch._export.aot_load(compiled.device_so, f"{DEVICE_NAME}:0")

    assert (raised.value.device_type, raised.value.attribute) == (DEVICE_NAME, "aoti_runner")
    assert isinstance(raised.value.__cause__, OSError)
    assert "sampledev_options" in str(raised_by_provider(raised.value))


def test_install_is_idempotent_and_rebinds_modules_that_bound_torchs_function(
    compiled: Compiled, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    wrapper = torch._export.aot_load
    door.install(torch._export)
    assert torch._export.aot_load is wrapper  # not wrapped twice

    # As at the first import: torch's function in torch._export, and bound by name in a
    # module imported before the install.
    original = torch_aot_load()
    binder = types.ModuleType("torch._ido_test_binds_aot_load")
    binder.aot_load = original  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, binder.__name__, binder)
    monkeypatch.setitem(vars(torch._export), "aot_load", original)
    door.install(torch._export)

    fresh: Any = torch._export.aot_load
    assert fresh is not original and getattr(fresh, door._MARK)
    assert binder.aot_load is fresh
    assert fresh.__wrapped__ is original


def test_the_door_acts_on_this_torch() -> None:
    assert door.release_gap() is None
    assert door.is_installed()


def test_import_torch_installs_it_and_disabling_the_package_leaves_torchs() -> None:
    code = """
        import json, torch, torch._export
        from inductor_device_options._hook import aot_load as door
        print(json.dumps([door.is_installed(), torch._export.aot_load.__module__]))
    """
    installed = check_python(code)
    assert json.loads(installed.splitlines()[-1]) == [True, "torch._export"]
    disabled = check_python(code, env={"INDUCTOR_DEVICE_OPTIONS_DISABLE": "1"})
    assert json.loads(disabled.splitlines()[-1]) == [False, "torch._export"]
