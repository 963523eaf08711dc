"""Whether the compiler takes a definition or a flag at all: asked, not guessed.

Which ``-D`` definitions g++ accepts is the preprocessor's business: ``F(x)=((x)+1)`` and
``FOO-BAR`` (with a warning) are fine, ``1FOO``, ``F(x`` and ``FOO=/*`` are errors. Which
options it takes is the driver's: a cflag ``-std=c++17``, rendered ``--std=c++17``, is an
alias GCC knows, ``-O2`` rendered ``--O2`` is an error, and so are ``Wbogus`` and ``O2x``.
So, for every definition that is not plainly valid and for every flag and passthrough
argument, the compiler Inductor runs is asked (``-E`` on an empty C++ source, in an empty
directory: once for all of them, each alone only when that fails, the verdicts kept) and its
own error is the refusal's reason. Definitions that are plainly valid — ``NAME`` or
``NAME=VALUE`` of ordinary characters — are never sent to it. What only ld can judge (an
option behind ``-Wl,``, a library that does not exist) is not asked: ``-E`` does not link.
Step 7 of the validation pipeline (``pipeline``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from typing import NamedTuple

from .. import _state
from .model import FIELDS, CppDeviceOptions
from .problems import Problem
from .tools import Argument

_PLAIN_DEFINITION = re.compile(r" *([A-Za-z_][A-Za-z0-9_]*)(=[A-Za-z0-9_.+\-:%,=]*)?")
# Names #define refuses (C++ operator names, 'defined') or warns about: the compiler decides.
_SPECIAL_NAMES = frozenset(
    {
        "defined",
        "and",
        "and_eq",
        "bitand",
        "bitor",
        "compl",
        "not",
        "not_eq",
        "or",
        "or_eq",
        "xor",
        "xor_eq",
        "__VA_ARGS__",
        "__VA_OPT__",
    }
)
# Every value of these is an option of the compiler's own (``Wbogus`` as much as
# ``-O2``, rendered ``--O2``): the compiler judges each.
_FLAG_FIELDS = frozenset({"cflags", "ldflags", "passthrough_args"})

# (compiler, words) -> the compiler's error, None if it takes them; _state.reset() clears it.
_verdicts: _state.BoundedCache[tuple[str, tuple[str, ...]], str | None] = _state.cache(1024)


class CompilerQuestion(NamedTuple):
    """The arguments of one value that the compiler is asked about."""

    field: str
    position: int
    value: str
    words: tuple[str, ...]


def needs_compiler(field: str, value: str) -> bool:
    """Whether only the compiler can tell if it takes ``value`` in ``field``."""
    if field == "definitions":
        plain = _PLAIN_DEFINITION.fullmatch(value)
        return plain is None or plain.group(1) in _SPECIAL_NAMES
    return field in _FLAG_FIELDS


def questions(
    arguments: Sequence[Argument], values: dict[tuple[str, int], str]
) -> list[CompilerQuestion]:
    """The values to ask the compiler about, each with the arguments g++ gets for it.

    ``values``: each value by (field, position)."""
    words: dict[tuple[str, int], list[str]] = {}
    for argument in arguments:
        key = (argument.field, argument.position)
        if needs_compiler(argument.field, values[key]):
            words.setdefault(key, []).append(argument.text)
    return [
        CompilerQuestion(field, position, values[(field, position)], tuple(texts))
        for (field, position), texts in words.items()
    ]


def compiler_problems(arguments: Sequence[Argument], options: CppDeviceOptions) -> list[Problem]:
    """The values of ``options`` whose arguments (``arguments``: what g++ receives) the
    compiler Inductor runs rejects, with its own error (step 7 of the validation pipeline)."""
    values = {
        (field, position): value
        for field, field_values in zip(FIELDS, options, strict=True)
        for position, value in enumerate(field_values)
    }
    asked = questions(arguments, values)
    if not asked:
        return []
    compiler = _compiler()
    problems = []
    for question, error in compiler_errors(compiler, asked):
        cause = f"reaches g++ as {list(question.words)!r}, which {compiler} rejects: {error}"
        problems.append(
            Problem.of_value(
                question.field, question.position, question.value, cause + _dash_hint(question)
            )
        )
    return problems


def _dash_hint(question: CompilerQuestion) -> str:
    """Say so when the value holds the dash Inductor adds itself."""
    value = question.value.lstrip(" ")
    dash = "-D" if question.field == "definitions" else "-"
    if not value.startswith(dash):
        return ""
    return f" (Inductor adds {dash!r} itself: write {value.removeprefix(dash)!r}?)"


def _compiler() -> str:
    """The compiler Inductor runs (``$CXX``, or what torch picks)."""
    import torch._inductor.cpp_builder as cpp_builder  # imported already during a lookup

    # torch 2.6-2.15's cpp_builder.get_cpp_compiler(): $CXX, else what torch finds (2.15
    # takes an optional device_type, used on Windows only).
    compiler: str = cpp_builder.get_cpp_compiler()
    return compiler


def compiler_errors(
    compiler: str, asked: Sequence[CompilerQuestion]
) -> list[tuple[CompilerQuestion, str]]:
    """Each question whose arguments ``compiler`` rejects, with the compiler's own error."""
    if not asked:
        return []
    # One compiler run for all of them (the usual answer: all taken); each alone only then.
    if _verdict(compiler, tuple(word for question in asked for word in question.words)) is None:
        return []
    rejected = []
    for question in asked:
        error = _verdict(compiler, question.words)
        if error is not None:
            rejected.append((question, error))
    return rejected


def _verdict(compiler: str, words: tuple[str, ...]) -> str | None:
    """The compiler's error for ``words`` on an empty source, None if it takes them."""
    key = (compiler, words)
    known = _verdicts.get(key, _state.MISSING)
    if known is not _state.MISSING:
        return known
    verdict = _ask(compiler, words)
    _verdicts.put(key, verdict)
    return verdict


def _ask(compiler: str, words: tuple[str, ...]) -> str | None:
    with tempfile.TemporaryDirectory(prefix="inductor-device-options-cc-") as empty:
        try:
            finished = subprocess.run(
                # -x none: a file among the words is what its name says (an object is
                # a linker input, as in the build), not C++ source.
                [compiler, "-E", "-x", "c++", os.devnull, "-o", os.devnull, "-x", "none", *words],
                cwd=empty,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="backslashreplace",
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None  # no compiler to ask: Inductor's own build will say so
    if finished.returncode == 0:
        return None
    lines = [line.strip() for line in finished.stderr.splitlines() if line.strip()]
    errors = (
        [line for line in lines if "error" in line]
        or lines
        or [f"exit status {finished.returncode}"]
    )
    return "; ".join(errors[:2])
