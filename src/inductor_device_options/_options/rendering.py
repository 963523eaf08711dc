"""Whether options reach g++ as the arguments meant, as the running torch renders them.

``CppBuilder`` turns the seven lists into one command line and ``shlex.split``s it into
g++'s arguments; what it does with each field is learned from it (``learning``). Each set of
final options is rendered for real and split as Inductor splits it. The options pass when
g++ gets exactly the words meant — one argument per value (a passthrough value: the words
it splits into) — and none that starts with ``@`` (g++ reads ``@file`` as a response file:
arguments from that file).

If this torch renders in a way the learning does not recognise, every single-word value
must be a plain word (no whitespace, quote or backslash), which any rendering keeps whole.

Step 5 of the validation pipeline (``pipeline``): :func:`rendering_problems` says which
values do not render as meant, :func:`final_arguments` what g++ receives from the others.
"""

from __future__ import annotations

import re
import shlex

from .learning import (
    NotRecognised,
    Rendering,
    alone,
    builder_class,
    command_line,
    inserted,
    running_rendering,
    split,
)
from .model import FIELDS, MULTI_WORD_FIELDS, CppDeviceOptions
from .problems import Problem
from .tools import Argument

_NOT_ONE_WORD = re.compile(r"""[\s'"\\]""")


def rendering_problems(options: CppDeviceOptions) -> list[Problem]:
    """The values of ``options`` that would not reach g++ as the arguments meant.

    One rendering of the whole options, split as Inductor splits it; only when that is
    not what was meant is each value rendered alone, to say which.
    """
    learned = running_rendering()
    if learned is None:
        return _plain_word_problems(options)
    # The common case costs one rendering and one split: a value is looked at alone only
    # where the whole line is not what was meant.
    expected = learned.expected_words(options)
    if expected is not None:
        try:
            if split(command_line(builder_class(), options)) == expected:
                return []
        except NotRecognised:
            pass
    problems = [
        Problem.of_value(field, index, value, cause)
        for field, values in zip(FIELDS, options, strict=True)
        for index, value in enumerate(values)
        if (cause := _rendering_cause(learned, field, value)) is not None
    ]
    return problems or [_whole_line_problem(options)]


def final_arguments(options: CppDeviceOptions) -> list[Argument]:
    """What g++ receives from options that render as meant (no :func:`rendering_problems`)."""
    learned = running_rendering()
    if learned is not None:
        arguments = learned.arguments(options)
        assert arguments is not None, "rendering_problems let through what does not render"
        return arguments
    # A CppBuilder this package does not recognise: plain words, rendered as torch
    # renders them by convention.
    fallback: list[Argument] = []
    for field, values in zip(FIELDS, options, strict=True):
        for position, value in enumerate(values):
            words = (
                shlex.split(value)
                if field in MULTI_WORD_FIELDS
                else [*_CONVENTIONAL[field][:-1], _CONVENTIONAL[field][-1] + value.lstrip(" ")]
            )
            fallback.extend(Argument(word, field, position) for word in words)
    return fallback


# How torch 2.6-2.15's CppBuilder.__init__ renders each field on Linux ("-D {value}",
# "-I{dir}", "-{flag}", "-L{dir}", "-l{name}"), quoting aside.
_CONVENTIONAL: dict[str, tuple[str, ...]] = {
    "definitions": ("-D", ""),
    "include_dirs": ("-I",),
    "cflags": ("-",),
    "ldflags": ("-",),
    "libraries_dirs": ("-L",),
    "libraries": ("-l",),
}


def _rendering_cause(learned: Rendering, field: str, value: str) -> str | None:
    rendering = learned.fields[field]
    hint = ""
    if not rendering.quoted and field not in MULTI_WORD_FIELDS:
        hint = ", so a value must be one word: no whitespace, quotes or backslashes"
    try:
        expected = rendering.expected(value)
    except ValueError as error:
        return f"cannot be split into compiler arguments ({error})"
    try:
        words = split(command_line(builder_class(), alone(field, value)))
    except NotRecognised as error:
        return f"cannot be split into compiler arguments ({error}): {learned.describe(field)}{hint}"
    try:
        received = inserted(learned.base, words)
    except NotRecognised:
        received = words
    if received != expected:
        return (
            f"reaches g++ as {received!r} instead of {expected!r}: {learned.describe(field)}{hint}"
        )
    for word in expected:
        if word.startswith("@"):
            return (
                f"reaches g++ as the argument {word!r}, which g++ reads as a response file "
                "(more arguments from that file)"
            )
    return None


def _whole_line_problem(options: CppDeviceOptions) -> Problem:
    field = next(name for name, values in zip(FIELDS, options, strict=True) if values)
    return Problem.of_value(
        field,
        0,
        getattr(options, field)[0],
        "and the values after it do not split into the compiler arguments meant",
    )


def _plain_word_problems(options: CppDeviceOptions) -> list[Problem]:
    return [
        Problem.of_value(
            field,
            index,
            value,
            "contains whitespace, a quote or a backslash, and this torch's CppBuilder "
            "renders in a way this package does not recognise: only plain words are safe",
        )
        for field, values in zip(FIELDS, options, strict=True)
        if field not in MULTI_WORD_FIELDS
        for index, value in enumerate(values)
        if _NOT_ONE_WORD.search(value.lstrip(" ") if field == "definitions" else value)
    ]
