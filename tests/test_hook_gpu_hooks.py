"""torch 2.15's out-of-tree hooks where torch before 2.15 hard-codes cuda and xpu:
``DeviceInterface.is_gpu()``, ``exposes_streams()``, ``get_multi_processor_count()``,
``is_triton_capable()`` and ``DeviceOpOverrides.uses_gpu_cpp_wrapper()``.

The differential: ``gpu_hooks_probe.py`` observes torch's decision points in a process of its
own, for an interface that defines every hook and one that defines none. Native torch 2.15's
answers are recorded in ``data/gpu_hooks_torch_2_15.json``; on the 2.15 leg the record is
checked against torch itself, on every other torch the backports must give the same answers,
and without the package (``INDUCTOR_DEVICE_OPTIONS_DISABLE=1``) the running torch gives other
answers for every hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._dynamo.device_interface import DeviceInterface
from torch._inductor import graph, utils
from torch._inductor.codegen import common
from torch._inductor.runtime.hints import DeviceProperties

from inductor_device_options._hook import gpu_cpp_wrapper, gpu_devices
from inductor_device_options._hook.backports import BACKPORT_MARK
from inductor_device_options._hook.install import install_imported

HERE = Path(__file__).parent
PROBE = HERE / "gpu_hooks_probe.py"
RECORD = json.loads((HERE / "data" / "gpu_hooks_torch_2_15.json").read_text())
TORCH_2_15 = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 15)
KINDS = ("every", "none")


def probe(kind: str, *, disabled: bool = False) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("INDUCTOR_DEVICE_OPTIONS_DISABLE", None)
    if disabled:
        env["INDUCTOR_DEVICE_OPTIONS_DISABLE"] = "1"
    done = subprocess.run(
        [sys.executable, str(PROBE), kind],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    answers: dict[str, Any] = json.loads(done.stdout)
    return answers


@pytest.fixture(scope="module")
def observed() -> dict[str, dict[str, Any]]:
    return {kind: probe(kind) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_decision_points_answer_as_native_torch_2_15(
    observed: dict[str, dict[str, Any]], kind: str
) -> None:
    assert RECORD["torch"].startswith("2.15.")
    assert observed[kind] == RECORD[kind]


@pytest.mark.skipif(TORCH_2_15, reason="torch 2.15 asks the hooks itself")
def test_without_the_package_every_hook_goes_unasked() -> None:
    """The differential has teeth: each decision differs from 2.15's without the backports."""
    stock = probe("every", disabled=True)
    assert {key for key in stock if stock[key] != RECORD["every"][key]} == set(RECORD["every"])


# --- which device gets what: table-driven, in this process ----------------------------------


def _interface(**methods: Any) -> type:
    namespace = {name: staticmethod(value) for name, value in methods.items()}
    namespace["__module__"] = "some_backend"
    return type("SomeInterface", (DeviceInterface,), namespace)


@pytest.fixture
def interfaces() -> Any:
    from torch._dynamo import device_interface

    registry = device_interface.device_interfaces
    saved, initialized = dict(registry), device_interface._device_initialized
    yield registry
    registry.clear()
    registry.update(saved)
    device_interface._device_initialized = initialized


@pytest.mark.parametrize(
    ("name", "methods", "gpu"),
    [
        ("gpudev", {"is_gpu": lambda: True}, True),
        ("notgpu", {"is_gpu": lambda: False}, False),
        ("silent", {}, False),  # 2.15's default: not a GPU
        ("gpudev:0", {"is_gpu": lambda: True}, False),  # indexed names skipped
    ],
)
def test_gpu_devices_as_2_15_builds_them(
    interfaces: dict[str, type], name: str, methods: dict[str, Any], gpu: bool
) -> None:
    interfaces[name] = _interface(**methods)
    assert (name in gpu_devices.gpu_devices()) is gpu


def test_torchs_own_interfaces_are_never_added(interfaces: dict[str, type]) -> None:
    from torch._dynamo import device_interface

    device_interface.init_device_reg()
    assert gpu_devices.gpu_devices() == []


@pytest.mark.parametrize(
    ("methods", "streams"),
    [
        ({"exposes_streams": lambda: False}, False),
        ({"exposes_streams": lambda: True}, True),
        ({}, False),  # 2.15's default: the base Stream, so no streams
    ],
)
def test_exposes_streams_as_2_15_asks_it(methods: dict[str, Any], streams: bool) -> None:
    assert gpu_devices.exposes_streams(_interface(**methods)) is streams


def test_torchs_own_devices_keep_their_decisions() -> None:
    assert utils.is_gpu("cuda") and not utils.is_gpu("cpu")
    assert utils.device_need_guard("cuda") is True
    assert utils.device_need_guard("cpu") is False
    torch_create = getattr(DeviceProperties.create, "__wrapped__", DeviceProperties.create)
    cpu = torch.device("cpu")
    assert DeviceProperties.create(cpu) == torch_create(DeviceProperties, cpu)


def test_device_properties_of_a_later_torch_are_left_out() -> None:
    from typing import NamedTuple

    from inductor_device_options._hook import device_properties

    class Later(NamedTuple):
        type: str
        new_field: int

    assert device_properties.unknown_fields(Later) == ["new_field"]
    assert device_properties.unknown_fields(DeviceProperties) == []


@pytest.mark.skipif(TORCH_2_15, reason="torch 2.15 asks uses_gpu_cpp_wrapper() itself")
def test_the_wrapper_path_is_torchs_method_with_one_expression_extended(
    out_of_tree_overrides: None,
) -> None:
    install_imported([graph.__name__])
    method = graph.GraphLowering.codegen_with_cpp_wrapper
    assert getattr(method, BACKPORT_MARK, False)
    torch_method = method.__wrapped__
    assert method.__code__.co_filename == torch_method.__code__.co_filename
    assert method.__code__.co_firstlineno == torch_method.__code__.co_firstlineno
    assert method.__code__.co_freevars == ("_inductor_device_options_uses_gpu_cpp_wrapper",)


def test_a_method_without_torchs_list_is_left_alone() -> None:
    def codegen_with_cpp_wrapper(self: Any) -> Any:
        return any(device in self.device_types for device in ["cuda", "mtia"])

    assert gpu_cpp_wrapper.recompiled(codegen_with_cpp_wrapper, graph) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cpu", "cuda", "xpu", "meta", "nodevice"])
def test_torchs_own_overrides_are_never_asked(device: str) -> None:
    assert gpu_cpp_wrapper.uses_gpu_cpp_wrapper([device]) is False


class _Overrides(common.DeviceOpOverrides):
    def uses_gpu_cpp_wrapper(self) -> bool:
        return True


@pytest.fixture
def out_of_tree_overrides() -> Any:
    common.get_device_op_overrides("cpu")  # torch's own are registered first
    common.device_op_overrides_dict["pathdev"] = _Overrides()
    yield
    del common.device_op_overrides_dict["pathdev"]


def test_an_out_of_tree_device_whose_overrides_answer_true_takes_the_gpu_path(
    out_of_tree_overrides: None,
) -> None:
    assert gpu_cpp_wrapper.uses_gpu_cpp_wrapper(["cpu", "pathdev"]) is True


def test_gpu_types_is_decided_once_at_utils_import(interfaces: dict[str, type]) -> None:
    import inductor_device_options as ido

    interfaces["toolate"] = _interface(is_gpu=lambda: True)
    ido.arm()  # installs into the imported modules again
    install_imported([utils.__name__])
    assert "toolate" not in utils.GPU_TYPES


def test_the_sample_answers_every_hook_as_a_host_memory_device() -> None:
    import os

    from inductor_device_options._lookup.interfaces import defines
    from inductor_device_options.sample import _inductor_backend as sample

    interface = sample.SampledevDeviceInterface
    hooks = ("is_gpu", "exposes_streams", "get_multi_processor_count", "is_triton_capable")
    assert all(defines(interface, hook) for hook in hooks)
    assert (interface.is_gpu(), interface.exposes_streams(), interface.is_triton_capable()) == (
        False,
        False,
        False,
    )
    assert interface.get_multi_processor_count() == os.cpu_count()
    assert sample.SampledevDeviceOpOverrides().uses_gpu_cpp_wrapper() is False


# --- installed only in a process with an out-of-tree device ---------------------------------

INSTALLED = """
import sys, torch
from torch._inductor import graph, utils
from torch._inductor.compile_fx import compile_fx
from torch._inductor.runtime.hints import DeviceProperties
from torch.utils import _triton
from inductor_device_options._hook.backports import BACKPORT_MARK

def installed():
    return [name for name, function in (
        ("codegen_with_cpp_wrapper", graph.GraphLowering.codegen_with_cpp_wrapper),
        ("get_gpu_type", utils.get_gpu_type),
        ("DeviceProperties.create", DeviceProperties.create),
        ("has_triton", _triton.has_triton),
    ) if getattr(function, BACKPORT_MARK, False)]

print(installed())
if sys.argv[1] == "device":
    from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device
    from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides
    register_interface_for_device("laterdev", type("I", (DeviceInterface,), {}))
    register_device_op_overrides("laterdev", type("O", (DeviceOpOverrides,), {})())
    torch.compile(lambda x: x + 1)(torch.ones(2))  # the compile's start installs them
print(installed())
"""


@pytest.mark.skipif(TORCH_2_15, reason="torch 2.15 asks the hooks itself: nothing installs")
@pytest.mark.parametrize("process", ["cpu only", "device"])
def test_installed_only_once_the_process_has_an_out_of_tree_device(
    process: str, tmp_path: Path
) -> None:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path), "TMPDIR": str(tmp_path)}
    env.pop("INDUCTOR_DEVICE_OPTIONS_DISABLE", None)
    done = subprocess.run(
        [sys.executable, "-c", INSTALLED, process.split()[0]],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    before, after = done.stdout.splitlines()[-2:]
    # Asked outside compiles too (Dynamo asks has_triton while it traces): in every process.
    always = ["DeviceProperties.create", "has_triton"]
    assert before == str(always)
    assert after == str((["codegen_with_cpp_wrapper"] if process == "device" else []) + always)
