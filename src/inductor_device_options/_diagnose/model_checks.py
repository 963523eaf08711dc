"""The checks of ``doctor --compile`` on what its fresh Python compiled after ``x * 2 + 1``
(``compile_models``): ``linear_model``, ``user_model`` and ``builds_asked``.
``linear_model``: weights and extern kernels (with ``--aot`` packaged, loaded and run);
with ``--model``, ``user_model``; ``builds_asked``, for a legacy door (the builds asked for
another type, answered with the device's options).
"""

from __future__ import annotations

from typing import Any, Protocol

from .aoti_weights import WORKAROUND
from .checks import Check
from .compile_models import LINEAR_MODEL
from .compile_words import compile_check, error_cause, first_line, relevant, short_type
from .hook_checks import legacy_door_problem
from .legacy_door import LegacyDoor

Json = dict[str, Any]


class Judge(Protocol):
    """What these checks read of ``real_compile``'s judge of a fresh Python's compile."""

    device: str
    aot_mode: bool
    model: str | None
    result: Json | None
    steps: dict[str, Json]

    def ok(self, step: str) -> bool: ...


def model_checks(judge: Judge, fix: str) -> list[Check]:
    """``linear_model``, and ``user_model`` when ``--model`` named one."""
    checks = [_linear_model(judge, fix)]
    if judge.model is not None:
        checks.append(_user_model(judge, fix))
    return checks


def _not_run(judge: Judge, name: str) -> Check | None:
    if judge.result is None or not judge.ok("setup"):
        return compile_check(name, "skip", "skipped: the compile did not start")
    if name not in judge.steps:
        failed = "x * 2 + 1 did not compile" if not judge.ok("compile") else "its package failed"
        return compile_check(name, "skip", f"skipped: {failed} (this would fail alike)")
    return None


def _linear_model(judge: Judge, fix: str) -> Check:
    name = "linear_model"
    if (skipped := _not_run(judge, name)) is not None:
        return skipped
    step, model = judge.steps[name], (judge.result or {}).get("model", {})
    if step["ok"]:
        return compile_check(name, "pass", _ran(judge, LINEAR_MODEL, step, model, "the CPU's"))
    error = step["error"]
    cause, fix = error_cause(error, fix, judge.device)
    # The child retries with the weights out of the .so where the packaged ones failed
    # (torch 2.13-2.15's runtime refuses constants of a device other than the container's
    # and the CPU: aoti_weights): its outcome decides the fix.
    retry = judge.steps.get("linear_model_unpackaged")
    if retry is not None and retry["ok"]:
        cause += "; with its weights out of the .so, given with load_constants, it loads and runs"
        fix = f"{WORKAROUND}: doctor did so, and the model then loads and runs"
    elif retry is not None:
        cause += f"; with its weights out of the .so too: {short_type(retry['error'])}: "
        cause += first_line(retry["error"])
    return _failed(judge, name, LINEAR_MODEL, error, cause, fix)


def _user_model(judge: Judge, fix: str) -> Check:
    name = "user_model"
    if judge.result is None or not judge.ok("setup"):
        return compile_check(name, "skip", "skipped: the compile did not start")
    step = judge.steps.get(name)
    what = f"your model {judge.model}"
    if step is None:
        return compile_check(name, "skip", "skipped: not run")
    if step["ok"]:
        model = (judge.result or {}).get("model", {})
        return compile_check(name, "pass", _ran(judge, what, step, model, "its eager result"))
    error = step["error"]
    cause, fix = error_cause(error, fix, judge.device)
    if error["type"] in ("ModuleNotFoundError", "ImportError", "AttributeError"):
        fix = (
            f"make {judge.model} importable from the current directory (or PYTHONPATH), a "
            "function returning the module and a tuple of its inputs"
        )
    return _failed(judge, name, what, error, cause, fix)


def _failed(judge: Judge, name: str, what: str, error: Json, cause: str, fix: str) -> Check:
    mode = "AOTInductor: packaged, loaded and run" if judge.aot_mode else "cpp_wrapper"
    return compile_check(
        name,
        "fail",
        f"{what} raised {short_type(error)}",
        f"{what} on {judge.device} ({mode}) in a fresh python raised {cause}",
        fix,
        details=relevant(error),
    )


def _ran(judge: Judge, what: str, step: Json, model: Json, compared: str) -> str:
    seconds = f"in {step['seconds']:.1f} s"
    if not judge.aot_mode:
        return (
            f"torch.compile(cpp_wrapper=True) built and ran {what} on {judge.device} "
            f"{seconds}, the result matches {compared}"
        )
    weights = "in the .so" if model.get("packaged", True) else "given with load_constants"
    return (
        f"aoti_compile_and_package built {what}, its weights {weights}; aoti_load_package "
        f"loaded and ran it on {judge.device} {seconds}, the result matches {compared}"
    )


def door_check(device: str, door: Json, codegen: str | None, summary: str) -> Check:
    """``builds_asked`` where the builds asked for another type, whose answer carried the
    device's options: a pass, with the legacy door's warning."""
    legacy = LegacyDoor(door["asked"], tuple(door["carried"]), door["answered_by"])
    reason = f"{codegen or 'the codegen'} reports {legacy.asked!r}"
    problem = legacy_door_problem(device, reason, legacy, codegen or "the codegen")
    summary += f", answered with {device}'s options"
    return compile_check("builds_asked", "warn", summary, problem.cause, problem.fix)
