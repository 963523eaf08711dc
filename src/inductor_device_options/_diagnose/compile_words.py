"""How ``doctor --compile`` words what its fresh Python recorded: a check of its own, an
error's first line and relevant lines, and an error's cause with its fix. For an error that
says nothing, the cause is the function that raised it (``raised_in``); for the errors whose
cause is known (a C shim function not declared, weights the AOTInductor runtime refuses),
that cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._options.problems import Problem
from .aoti_weights import MIXED_DEVICE, WORKAROUND
from .checks import CHECKS, Check, Status
from .raised_in import bare_cause, bare_fix
from .text import RELEVANT, shorten

Json = dict[str, Any]
NOT_RUN: Json = {"type": "nothing", "message": "not run", "lines": []}
# What torch appends to a compile error: advice, not the error.
_TORCH_HINT = re.compile(r"suppress_errors|TORCHDYNAMO_VERBOSE|TORCH_LOGS|TORCH_TRACE")
# g++ quotes names with curly quotes in a UTF-8 locale, with ' otherwise.
_NOT_DECLARED = re.compile("[\u2018'`](aoti_torch_\\w+)[\u2019'] was not declared")


def compile_check(
    name: str, status: Status, summary: str, *problem: str, details: Sequence[str] = ()
) -> Check:
    """A check; with ``problem`` (cause, fix), its one problem."""
    problems = (Problem(problem[0], problem[1], tuple(details)),) if problem else ()
    return Check(name, CHECKS[name], status, summary, problems)


def first_line(error: Json) -> str:
    return shorten((str(error["message"]).strip().splitlines() or [""])[0], 400)


def short_type(error: Json) -> str:
    """``InductorError`` for ``torch._inductor.exc.InductorError``."""
    return str(error["type"]).rpartition(".")[2]


def relevant(error: Json) -> list[str]:
    lines = [
        line.rstrip()
        for line in str(error["message"]).splitlines()
        if line.strip() and not _TORCH_HINT.search(line)
    ]
    found = [line for line in lines if RELEVANT.search(line)] or lines[-6:]
    if not found:
        found = list(error.get("lines", []))[-6:]
    return [shorten(line) for line in found[:6]]


def error_cause(error: Json, fix: str, device: str) -> tuple[str, str]:
    """``TYPE: first line`` and ``fix``, unless the error's cause is known: an error that
    says nothing is placed where it was raised, with a fix for that function; a C shim
    function not declared and weights the runtime refuses are named, with their fixes."""
    place = error.get("raised_in")
    if place and place.get("bare"):
        return f"{error['type']}: {bare_cause(place)}", bare_fix(place)
    said = f"{error['type']}: {first_line(error)}"
    text = "\n".join([str(error["message"]), *error.get("output", [])])
    if missing := sorted(set(_NOT_DECLARED.findall(text))):
        functions = ", ".join(missing)
        return (
            f"{said} ({functions} not declared)",
            f"declare and define {functions} in the device's C shim, in a header the "
            "generated code includes (the check 'C shim functions declared' names it)",
        )
    if MIXED_DEVICE in text:
        line = next(line for line in text.splitlines() if MIXED_DEVICE in line).strip()
        if "Model device is" not in line:  # the runtime's, at load: the weights in the .so
            return f"{said} ({shorten(line, 400)})", WORKAROUND
        return said, (  # CppWrapperCpu's, at build: the wrapper reports another device
            f"make the device's C++ wrapper codegen report {device!r} (self.device = "
            f"{device!r} before super().__init__() in its __init__): CppWrapperCpu refuses "
            "weights on another device than the one it reports, and the CPU"
        )
    return said, fix
