"""What ``doctor --compile`` compiles in its fresh Python after ``x * 2 + 1``: a model as
real models are, with weights and extern kernels, and the user's own model. The first is a
``Linear`` with and without bias, and a ``bmm`` (``mm``, ``addmm`` and ``bmm`` through the
device's C shim); the user's is ``--model MODULE:FUNCTION``, the function returning the
module and its inputs.

With AOTInductor a model is packaged, loaded and run as a user does: its weights in the
``.so`` (torch's default) unless ``aot_inductor.package_constants_in_so`` is False in the
process, then given with ``load_constants(..., user_managed=True)``. Where the packaged
weights fail, the same model is tried the other way: whether the way round works is what
the fix then says.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Json = dict[str, Any]
#: ``_step(result, name, run) -> ok`` of compile_child.
Step = Callable[[Json, str, Callable[[], object]], bool]

LINEAR_MODEL = "a Linear with and without bias and a bmm"


def run_models(
    device: str, aot_mode: bool, work: Path, model: str | None, result: Json, step: Step
) -> None:
    """The steps ``linear_model`` (and ``linear_model_unpackaged``) when the earlier ones
    passed, and ``user_model`` when ``model`` names one: their outcomes in ``result``."""
    from torch._inductor import config

    packaged = bool(config.aot_inductor.package_constants_in_so)
    result["model"] = {"packaged": packaged}
    if all(entry["ok"] for entry in result["steps"]):
        with captured_output(result, "linear_model"):
            ok = step(result, "linear_model", lambda: _run(device, aot_mode, work, linear_model()))
        if not ok and aot_mode and packaged and _user_managed_loads() and _may_be_weights(result):
            with captured_output(result, "linear_model_unpackaged"):
                step(
                    result,
                    "linear_model_unpackaged",
                    lambda: _run(device, aot_mode, work, linear_model(), packaged=False),
                )
    if model is not None:
        with captured_output(result, "user_model"):
            step(result, "user_model", lambda: _run(device, aot_mode, work, _user(model)))


def _may_be_weights(result: Json) -> bool:
    """The last step's failure may come of the weights in the .so: not g++ failing on the
    generated code, which fails alike without them."""
    error = result["steps"][-1]["error"] or {}
    return "CppCompileError" not in f"{error.get('type')} {error.get('message')}"


def linear_model() -> tuple[Any, tuple[Any, ...], Callable[[], Any]]:
    """The model (always the same weights), its inputs on the CPU, and what computes its
    result on the CPU."""
    import torch

    class LinearModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = torch.nn.Linear(32, 16)  # addmm
            self.out = torch.nn.Linear(16, 8, bias=False)  # mm

        def forward(self, x: Any) -> Any:
            y = self.out(torch.relu(self.hidden(x)))
            return torch.bmm(y.unsqueeze(0), y.t().unsqueeze(0)).squeeze(0) + 1  # bmm

    module = LinearModel().requires_grad_(False)
    generator = torch.Generator().manual_seed(0)
    for parameter in module.parameters():  # the same weights in every run
        parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    inputs = (torch.randn(6, 32, generator=generator),)
    return module, inputs, lambda: module(*inputs)


def _user(spec: str) -> tuple[Any, tuple[Any, ...], Callable[[], Any]]:
    """The user's module and inputs, as their function returns them (on the device), and
    their eager result."""
    module_name, _, attribute = spec.partition(":")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as for --provider: the current directory
    target: Any = importlib.import_module(module_name)
    for name in attribute.split("."):
        target = getattr(target, name)
    module, inputs = target()
    inputs = tuple(inputs)
    return module, inputs, lambda: module(*inputs)


def _run(
    device: str,
    aot_mode: bool,
    work: Path,
    made: tuple[Any, tuple[Any, ...], Callable[[], Any]],
    packaged: bool | None = None,
) -> None:
    """Compile ``made``'s module on the device (moved there, with its inputs), run it, and
    compare with the eager result."""
    import torch

    module, inputs, eager = made
    expected = eager()
    on_device = copy.deepcopy(module).to(device)
    device_inputs = tuple(i.to(device) if isinstance(i, torch.Tensor) else i for i in inputs)
    if aot_mode:
        got = _aoti(on_device, device_inputs, work, packaged)
    else:
        torch._dynamo.reset()
        compiled: Callable[..., Any] = torch.compile(on_device, options={"cpp_wrapper": True})
        got = compiled(*device_inputs)
    got = got[0] if isinstance(got, (list, tuple)) and len(got) == 1 else got
    torch.testing.assert_close(_on_cpu(got), _on_cpu(expected))


def _aoti(module: Any, inputs: tuple[Any, ...], work: Path, packaged: bool | None) -> Any:
    import torch
    from torch._inductor import config

    configs = {} if packaged is None else {"aot_inductor.package_constants_in_so": packaged}
    if packaged is None:
        packaged = bool(config.aot_inductor.package_constants_in_so)
    exported = torch.export.export(module, inputs)
    path = work / f"doctor-model-{len(list(work.glob('doctor-model-*.pt2')))}.pt2"
    built = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(path), inductor_configs=configs
    )
    compiled = torch._inductor.aoti_load_package(str(built))
    if not packaged:  # the weights the package does not hold, used where they are
        names = set(compiled.get_constant_fqns())
        weights = {n: t for n, t in module.state_dict(keep_vars=True).items() if n in names}
        compiled.load_constants(weights, check_full_update=True, user_managed=True)
    return compiled(*inputs)


def _on_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cpu(item) for item in value)
    return value


def _user_managed_loads() -> bool:
    """This torch's loaded packages take weights they do not copy (torch 2.6's do not)."""
    from torch._inductor import package

    # AOTICompiledModel.load_constants (defined in torch.export.pt2_archive._package on 2.13
    # and 2.15, imported into torch._inductor.package) takes user_managed=; torch 2.6's, in
    # torch._inductor.package itself, takes check_full_update only.
    loaded = getattr(package, "AOTICompiledModel", None)
    method = getattr(loaded, "load_constants", None)
    return method is not None and "user_managed" in inspect.signature(method).parameters


@contextmanager
def captured_output(result: Json, name: str) -> Iterator[None]:
    """What the process writes to its output file while step ``name`` runs (torch's C++
    runtime prints its errors there, not in the exception), added to the step's error."""
    try:
        status = os.fstat(2)
    except OSError:
        status = None
    # Only a file is read back (doctor's log of the run): a pipe or a terminal is not.
    start = status.st_size if status is not None and stat.S_ISREG(status.st_mode) else None
    yield  # the C++ runtime writes to the file itself, unbuffered
    step = next((s for s in result["steps"] if s["name"] == name), None)
    if start is None or step is None or step["error"] is None:
        return
    try:
        with open("/proc/self/fd/2", "rb") as output:  # a file: doctor's log of this run
            output.seek(start)
            text = output.read(200_000).decode(errors="replace")
    except OSError:
        return
    step["error"]["output"] = [line for line in text.splitlines() if line.strip()][-40:]
