"""torch 2.15's out-of-tree hooks where torch before 2.15 hard-codes cuda and xpu, observed
at torch's own decision points: ``python gpu_hooks_probe.py every|none`` prints one JSON
object, decision -> what the running torch answered, and which hook methods it asked.

``every``: the device's interface and overrides define every hook, each answering what
torch's defaults would not (a GPU with streams, 7 compute units its properties do not
list, Triton-capable, the GPU-style C++ wrapper). ``none``: they define none of them.

A subprocess, because PrivateUse1 can be renamed only once per process. The interface is
registered as a backend registers it, before Inductor is used. Two decisions cannot be
observed whole without a GPU, so the probe observes them as far as torch takes them:
- ``has_triton()`` first asks whether the ``triton`` package imports. Where it is not
  installed (torch 2.13's CPU build), an empty stand-in module named ``triton`` is put in
  ``sys.modules`` for that call only, so torch goes on to ask the devices.
- ``GraphLowering.codegen_with_cpp_wrapper`` is called on a stand-in graph (AOT mode,
  autotuning at run time) whose ``codegen`` and ``compile_to_module`` only record that they
  were called: the GPU-style path's first step differs by release (2.6 to 2.14 compile a
  Python wrapper first, 2.15 checks for a ``CppWrapperGpu``), the CPU-style path returns
  ``codegen()``'s answer.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import torch

DEVICE = "hookdev"
#: An interface registered the way backends register (importing torch._dynamo first).
LATE_DEVICE = "latedev"
ASKED: list[str] = []


class _Properties:
    """What a device's ``get_device_properties`` returns; ``none`` lists its count."""


def interface(every: bool) -> type:
    from torch._dynamo.device_interface import DeviceInterface

    class Stream(torch.Stream):
        pass

    namespace: dict[str, Any] = {
        "is_available": staticmethod(lambda: True),
        "get_device_properties": staticmethod(lambda device=None: _Properties()),
        "get_compute_capability": staticmethod(lambda device=None: "probe"),
        "__module__": "hookdev_backend",
    }
    if every:
        namespace.update(
            is_gpu=staticmethod(lambda: _asked("is_gpu", True)),
            exposes_streams=classmethod(lambda cls: _asked("exposes_streams", True)),
            get_multi_processor_count=classmethod(
                lambda cls, device=None: _asked("get_multi_processor_count", 7)
            ),
            is_triton_capable=staticmethod(lambda device=None: _asked("is_triton_capable", True)),
            Stream=Stream,
        )
    else:
        _Properties.multi_processor_count = 3  # type: ignore[attr-defined]
    return type("HookdevInterface", (DeviceInterface,), namespace)


def overrides(every: bool) -> Any:
    from torch._inductor.codegen.common import DeviceOpOverrides

    namespace: dict[str, Any] = {"__module__": "hookdev_backend"}
    if every:
        namespace["uses_gpu_cpp_wrapper"] = lambda self: _asked("uses_gpu_cpp_wrapper", True)
    return type("HookdevOverrides", (DeviceOpOverrides,), namespace)()


def _asked(hook: str, answer: Any) -> Any:
    ASKED.append(hook)
    return answer


def outcome(call: Any) -> Any:
    ASKED.clear()
    try:
        answer: Any = call()
    except Exception as error:
        answer = f"raises {type(error).__name__}"
    return {"answer": answer, "asked": sorted(set(ASKED))}


def has_triton() -> Any:
    from torch.utils._triton import has_triton, has_triton_package

    has_triton.cache_clear()
    if has_triton_package():
        return outcome(has_triton)
    getattr(has_triton_package, "cache_clear", lambda: None)()  # cached from torch 2.7
    stand_in = types.ModuleType("triton")
    stand_in.backends = types.ModuleType("triton.backends")  # type: ignore[attr-defined]
    stand_in.backends.backends = {}  # type: ignore[attr-defined]
    sys.modules["triton"], sys.modules["triton.backends"] = stand_in, stand_in.backends  # type: ignore[attr-defined]
    try:
        return outcome(has_triton)
    finally:
        del sys.modules["triton"], sys.modules["triton.backends"]
        has_triton.cache_clear()
        getattr(has_triton_package, "cache_clear", lambda: None)()


class _Graph:
    """The attributes ``codegen_with_cpp_wrapper`` reads before it takes a path."""

    aot_mode = True
    wrapper_code = None

    def __init__(self) -> None:
        self.operations: list[object] = []
        self.device_types = {DEVICE}
        self.cpp_wrapper = True

    def validate_can_generate_cpp_wrapper(self) -> None:
        pass

    def codegen(self) -> tuple[str, str]:
        return ("wrapper", "kernels")

    def compile_to_module(self) -> Any:
        raise _FirstPassCompiled


class _FirstPassCompiled(Exception):
    pass


def wrapper_path() -> Any:
    from torch._inductor import config
    from torch._inductor.graph import GraphLowering

    def path() -> str:
        try:
            answer = GraphLowering.codegen_with_cpp_wrapper(_Graph())  # type: ignore[arg-type]
        except _FirstPassCompiled:
            return "GPU-style: two passes"
        except (AssertionError, RuntimeError) as error:
            if "CppWrapperGpu" in str(error):  # torch 2.15's lazy-compile AOT pass
                return "GPU-style: two passes"
            raise
        assert answer == ("wrapper", "kernels")
        return "CPU-style: one pass"

    with config.patch({"triton.autotune_at_compile_time": False}):
        return outcome(path)


class _RegisterOnImport:
    """Registers the device's interface as soon as ``torch._dynamo.device_interface`` has
    executed: importing it imports ``torch._dynamo``, which imports ``torch._inductor.utils``,
    so a backend that imports it to register is always too late for ``GPU_TYPES``, on 2.15
    too. This is the moment 2.15's docstring asks for: before ``utils`` builds the list."""

    def __init__(self, every: bool) -> None:
        self.every = every

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch._dynamo.device_interface":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader, every = spec.loader, self.every

        class Loader:
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                module.device_interfaces[DEVICE] = interface(every)

        spec.loader = Loader()
        return spec


def main(kind: str) -> dict[str, Any]:
    every = kind == "every"
    torch.utils.rename_privateuse1_backend(DEVICE)
    assert "torch._inductor.utils" not in sys.modules
    sys.meta_path.insert(0, _RegisterOnImport(every))
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor import utils

    register_interface_for_device(LATE_DEVICE, interface(every))
    from torch._inductor.codegen.common import register_device_op_overrides
    from torch._inductor.runtime.hints import DeviceProperties

    register_device_op_overrides(DEVICE, overrides(every))
    return {
        "is_gpu": outcome(lambda: utils.is_gpu(DEVICE)),
        "GPU_TYPES, out-of-tree": [name for name in utils.GPU_TYPES if "dev" in name],
        "get_gpu_type": outcome(utils.get_gpu_type),
        "device_need_guard": outcome(lambda: utils.device_need_guard(DEVICE)),
        "DeviceProperties.create": outcome(
            lambda: DeviceProperties.create(torch.device(DEVICE, 0)).multi_processor_count
        ),
        "has_triton": has_triton(),
        "codegen_with_cpp_wrapper": wrapper_path(),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1, sort_keys=True))
