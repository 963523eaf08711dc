"""What ``doctor --compile`` runs in its fresh Python: a compile of a tiny graph on the
device, recorded in one JSON file that ``real_compile`` judges.

Torch is imported first (its backend autoload has loaded the device's backend); then the
``--provider``, if any, is registered; a recording wrapper is assigned to
``cpp_builder.get_cpp_torch_device_options`` (the package adopts it into its chain, below
which its sources are: it sees every question, those the registrations answer included);
every compiler command is recorded (an audit hook on ``subprocess.Popen``); then the graph
is compiled, and each step's outcome, the questions, commands and options are written to
the file.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import _state
from .compile_models import run_models
from .raised_in import raised_in

Json = dict[str, Any]


def child_main(argv: Sequence[str]) -> int:
    """In the fresh Python (torch imported): compile, record, write the result file."""
    device, mode, provider_spec, result_path, work, model = argv
    result: Json = {"questions": [], "commands": [], "steps": [], "options": []}
    result.update(codegen=None, recording=None, legacy_door=None)
    try:
        _child(device, mode == "aot", provider_spec or None, Path(work), result, model or None)
    finally:
        Path(result_path).write_text(json.dumps(result))
    return 0


def _step(result: Json, name: str, run: Callable[[], object]) -> bool:
    started = time.perf_counter()
    error: Json | None = None
    try:
        run()
    except KeyboardInterrupt:
        raise
    except BaseException as caught:  # SystemExit of a provider included
        lines = traceback.format_exception(type(caught), caught, caught.__traceback__)
        tail = [line.rstrip() for chunk in lines for line in chunk.splitlines()][-12:]
        kind = type(caught)
        kind_name = f"{kind.__module__}.{kind.__qualname__}".removeprefix("builtins.")
        error = {"type": kind_name, "message": str(caught)[:20000], "lines": tail}
        error["raised_in"] = raised_in(caught)
    seconds = time.perf_counter() - started
    result["steps"].append({"name": name, "ok": error is None, "error": error, "seconds": seconds})
    return error is None


def _child(
    device: str,
    aot_mode: bool,
    provider_spec: str | None,
    work: Path,
    result: Json,
    model: str | None,
) -> None:
    if not _step(result, "setup", lambda: _setup(device, provider_spec)):
        return
    _record_options(device, aot_mode, result)
    _install_recorder(device, aot_mode, result)
    compile_run, load = _compiles(device, work)
    sys.addaudithook(_auditor(device, result))  # for good: the process ends after the compile
    if _step(result, "compile", compile_run[aot_mode]) and aot_mode:
        _step(result, "load", load)
    run_models(device, aot_mode, work, model, result, _step)
    result["codegen"] = _codegen(device)
    result["legacy_door"] = _legacy_door(device, aot_mode, result)


def _legacy_door(device: str, aot_mode: bool, result: Json) -> Json | None:
    """The device type asked instead of the device, when its answer carried the device's
    options (``legacy_door``)."""
    from .legacy_door import legacy_door

    questions: list[Json] = result["questions"]
    asked = {q["device_type"].partition(":")[0] for q in questions}
    recorded = len(questions)
    try:
        for other in sorted(asked - {device}) if device not in asked else ():
            door = legacy_door(device, other, aot_mode)
            if door is not None:
                return door._asdict()
    except Exception:  # the static checks report a provider that raises
        pass
    finally:
        del questions[recorded:]  # its own questions are not the compile's
    return None


def _setup(device: str, provider_spec: str | None) -> None:
    """The ``--provider`` registered; Inductor's caches off, so that each compile really
    generates code (and asks the builders)."""
    # Imported by name: torch 2.6's Inductor config does not import functorch's, and nothing
    # else has here, since the sample registers at its first compile, not at set-up.
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    from .._lookup import registry as _registry
    from .provider_loading import load_provider

    if provider_spec is not None:
        callback = load_provider(provider_spec, device)
        _registry.register_cpp_device_options(device, callback)
    inductor_config.fx_graph_cache = False
    inductor_config.fx_graph_remote_cache = False
    # torch 2.6-2.15 all have it (2.6 as a plain module global, 2.13 on as a Config).
    if hasattr(functorch_config, "enable_autograd_cache"):
        functorch_config.enable_autograd_cache = False


def _record_options(device: str, aot_mode: bool, result: Json) -> None:
    """What the package gives for the device, for linking and for compiling."""
    from .. import get_cpp_device_options

    for compile_only in (False, True):
        entry: Json = {"compile_only": compile_only, "options": None}
        try:
            entry["options"] = get_cpp_device_options(device, aot_mode, compile_only)._asdict()
        except Exception as error:
            entry["error"] = f"{type(error).__name__}: {error}"
        result["options"].append(entry)


def _install_recorder(device: str, aot_mode: bool, result: Json) -> None:
    """A wrapper assigned to ``get_cpp_torch_device_options`` that records each question
    and its answer; asked once through the attribute, as Inductor asks, to see that it
    gets what the package gives."""
    from torch._inductor import cpp_builder

    from .._hook.serve import flags

    questions: list[Json] = result["questions"]
    found = cpp_builder.get_cpp_torch_device_options

    def recording(*args: Any, **kwargs: Any) -> Any:
        if _state.this_thread.asking_for_identity:  # a cache key's question, not a build's
            return found(*args, **kwargs)
        aot, compile_only = flags(args, kwargs)
        device_type = str(args[0] if args else kwargs.get("device_type"))
        asked = {"device_type": device_type, "aot_mode": aot, "compile_only": compile_only}
        question: Json = {**asked, "answer": None}
        questions.append(question)  # asked, even if the answer raises
        answer = found(*args, **kwargs)
        question["answer"] = [[str(value) for value in values] for values in answer]
        return answer

    cpp_builder.get_cpp_torch_device_options = recording
    expected = result["options"][0]["options"]
    if expected is not None:
        cpp_builder.get_cpp_torch_device_options(device, aot_mode, False)
        if not questions or questions[-1]["answer"] != list(expected.values()):
            result["recording"] = f"the wrapper did not see the options of {device!r}"
    del questions[:]


def _compiles(device: str, work: Path) -> tuple[dict[bool, Callable[[], None]], Callable[[], None]]:
    """The compile of ``x * 2 + 1`` on the device (by aot_mode: cpp_wrapper or
    AOTInductor), and the load of the AOTInductor package, each result checked against
    the CPU's."""
    import torch

    def host() -> Any:
        return torch.arange(8, dtype=torch.float32)

    def graph(x: Any) -> Any:
        return x * 2 + 1

    class Module(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return graph(x)

    package = work / "doctor-compile.pt2"
    outputs: list[Any] = []

    def compile_jit() -> None:
        got = torch.compile(graph, options={"cpp_wrapper": True})(host().to(device))
        torch.testing.assert_close(got.cpu(), graph(host()))

    def compile_aot() -> None:
        exported = torch.export.export(Module(), (host().to(device),))
        built = torch._inductor.aoti_compile_and_package(exported, package_path=str(package))
        outputs.append(built)

    def load_aot() -> None:
        got = torch._inductor.aoti_load_package(str(outputs[0]))(host().to(device))
        got = got[0] if isinstance(got, (list, tuple)) else got
        torch.testing.assert_close(got.cpu(), graph(host()))

    return {False: compile_jit, True: compile_aot}, load_aot


def _auditor(device: str, result: Json) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook that records every compiler command (``subprocess.Popen``)."""
    from torch._inductor import cpp_builder

    compiler = os.path.basename(cpp_builder.get_cpp_compiler())
    commands: list[Json] = result["commands"]
    questions: list[Json] = result["questions"]

    def audit(event: str, arguments: tuple[Any, ...]) -> None:
        if event == "subprocess.Popen":
            argv = arguments[1]
            words = [os.fsdecode(w) for w in ([argv] if isinstance(argv, (str, bytes)) else argv)]
            if words and os.path.basename(words[0]) == compiler:
                # After a question for the device, with an input: one of its builds (not a
                # probe of the CPU's features, not `g++ -v`).
                asked = any(q["device_type"].partition(":")[0] == device for q in questions)
                device_build = asked and any(not w.startswith("-") for w in words[1:])
                commands.append({"argv": words, "device_build": device_build})

    return audit


def _codegen(device: str) -> str | None:
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    from .._lookup.registry import describe_callable

    codegen = get_wrapper_codegen_for_device(device, cpp_wrapper=True)
    if codegen is None:
        return None
    return describe_callable(getattr(codegen, "__self__", codegen))
