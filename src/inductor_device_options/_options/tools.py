"""The words g++ hands to the tools behind it, and a runpath that reaches the loader whole.

g++ passes some arguments on: ``-Wl,a,b`` gives ld ``a`` and ``b`` (split at every comma),
``-Wa,`` the assembler, ``-Wp,`` the preprocessor, and ``-Xlinker``, ``-Xassembler``,
``-Xpreprocessor`` the next word whole. Those tools read a ``@file`` argument as a response
file, as g++ does. So a value that reaches g++ as the arguments meant may still give ld
more: a path with a comma inside ``-Wl,-rpath,<path>`` becomes two ld arguments, the second
whatever follows the comma. The rules, on the words g++ receives:

* no piece a tool receives starts with ``@``;
* the word after ``-Xlinker``, ``-Xassembler`` or ``-Xpreprocessor`` is the options' own, of
  the same field: Inductor renders torch's own words and other fields between fields;
* no comma in a ``-Wl,``/``-Wa,``/``-Wp,`` word falls inside a path that exists (a real
  path, a symlink's target, the current directory) or inside the value of an environment
  variable, any value (a path or not) with a comma between two other characters: such a
  comma may not be the provider's, and would give the tool arguments from outside the
  provider's code (``--foo=$V`` with ``V=x,--wrap=malloc`` gives ld ``--wrap=malloc``).
  The package cannot tell a value the provider wrote from one it read, so it refuses both.

Step 6 of the validation pipeline (``pipeline``). Pure: no torch import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from .model import CppDeviceOptions
from .problems import Problem

#: Words whose comma-separated pieces g++ hands to another tool.
SPLIT_PREFIXES: Mapping[str, str] = {"-Wl,": "ld", "-Wa,": "as", "-Wp,": "the preprocessor"}
#: Words after which g++ hands the next word, whole, to another tool.
WHOLE_NEXT: Mapping[str, str] = {
    "-Xlinker": "ld",
    "-Xassembler": "as",
    "-Xpreprocessor": "the preprocessor",
}


class Argument(NamedTuple):
    """One argument g++ receives from the options, and the value it comes from."""

    text: str
    field: str
    position: int


def tool_problems(
    arguments: Sequence[Argument],
    options: CppDeviceOptions,
    environ: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Each argument of ``arguments`` (what g++ receives, in order) that would give ld, as
    or the preprocessor an argument the provider did not write, as a problem of the value of
    ``options`` it comes from (step 6 of the validation pipeline)."""
    environ = os.environ if environ is None else environ
    problems: list[Problem] = []

    def found(argument: Argument, what_it_does: str) -> None:
        value = getattr(options, argument.field)[argument.position]
        cause = f"reaches g++ as {argument.text!r}, which {what_it_does}"
        problems.append(Problem.of_value(argument.field, argument.position, value, cause))

    # Each argument with the one before it: -Xlinker and -D give the next word its meaning.
    for index, argument in enumerate(arguments):
        previous = arguments[index - 1].text if index else ""
        if previous in WHOLE_NEXT:
            cause = _response_file(argument.text, WHOLE_NEXT[previous], previous)
            if cause is not None:
                found(argument, cause)
            continue
        if argument.field == "definitions" and previous == "-D":
            continue  # a macro, whatever it looks like: the compiler judges it
        following = arguments[index + 1] if index + 1 < len(arguments) else None
        if argument.text in WHOLE_NEXT and (following is None or following.field != argument.field):
            found(argument, _takes_an_argument_not_given(argument))
        for prefix, tool in SPLIT_PREFIXES.items():
            if argument.text.startswith(prefix):
                cause = split_word_cause(argument.text, prefix, tool, environ)
                if cause is not None:
                    found(argument, cause)
    return problems


def _takes_an_argument_not_given(argument: Argument) -> str:
    tool = WHOLE_NEXT[argument.text]
    return (
        f"hands the argument after it to {tool}, and it is the last of {argument.field}: "
        f"{tool} would get whatever follows on Inductor's command line, none of these options"
    )


def _response_file(piece: str, tool: str, how: str) -> str | None:
    if not piece.startswith("@"):
        return None
    return (
        f"gives {tool} the argument {piece!r} (through {how}), which {tool} reads as a "
        "response file (more arguments from that file)"
    )


def split_word_cause(word: str, prefix: str, tool: str, environ: Mapping[str, str]) -> str | None:
    """Why ``word`` (``prefix`` then comma-separated pieces) gives ``tool`` other
    arguments than meant, or None."""
    payload = word[len(prefix) :]
    pieces = payload.split(",")
    received = f"g++ splits {prefix} at every comma, so {tool} receives {pieces!r}"
    for piece in pieces:
        cause = _response_file(piece, tool, f"{prefix}")
        if cause is not None:
            return f"{cause}: {received}"
    path = _path_across_comma(payload)
    if path is not None:
        return (
            f"holds the path {path!r}, which exists with a comma in it: {received}, the "
            "path cut in two; no path with a comma can pass through "
            f"{prefix} (the word after -Xlinker reaches ld whole)"
        )
    for name, value in _comma_values(environ):
        if value in payload:
            return (
                f"holds the value of ${name} ({value!r}), a value from the environment whose "
                f"comma the package cannot tell from the provider's: {received}"
            )
    return None


def _path_across_comma(payload: str) -> str | None:
    """A path that exists and runs across a comma of ``payload``, or None."""
    # For each comma: a path starts at the first '/' of the piece before it, and may end
    # at any '/' or ',' after it; the first such span that exists on disk is the culprit.
    comma = payload.find(",")
    while comma != -1:
        start = payload.rfind(",", 0, comma) + 1
        slash = payload.find("/", start, comma)
        if slash != -1:
            for end in _path_ends(payload, comma + 1):
                candidate = payload[slash:end]
                if os.path.lexists(candidate):
                    return candidate
        comma = payload.find(",", comma + 1)
    return None


def _path_ends(payload: str, after: int) -> Iterable[int]:
    """Where a path that runs past index ``after`` may end: before each ``/`` or ``,``."""
    for index in range(after, len(payload)):
        if payload[index] in "/,":
            yield index
    yield len(payload)


def _comma_values(environ: Mapping[str, str]) -> Iterable[tuple[str, str]]:
    """Environment variables whose value has a comma between two other characters: one that
    cuts the value itself (``V=,`` or ``V=a,`` cuts nothing of it)."""
    for name, value in environ.items():
        if "," in value.strip(","):
            yield name, value
