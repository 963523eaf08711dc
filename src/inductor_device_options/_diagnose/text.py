"""The few ways doctor words what it found: an exception as one line and where it was
raised, a long line shortened, a count with its noun, the relevant lines of a tool's
output, and the message and fix an error carries."""

from __future__ import annotations

import importlib
import os
import re
import traceback
from collections.abc import Iterable, Sequence

from .._errors import CppDeviceOptionsError

#: Lines of a compiler's (or torch's) output that say what went wrong.
RELEVANT = re.compile(
    r"error|fatal|cannot find|undefined reference|no such file|not found", re.IGNORECASE
)

_IMPORTLIB_DIR = os.path.dirname(importlib.__file__) + os.sep


def error_line(error: BaseException) -> str:
    """``Type: message``, or the type alone for an error without a message."""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def raised_at(error: BaseException, skip: Sequence[str] = ()) -> str | None:
    """``file:line`` where ``error`` was raised: a SyntaxError's own position, else the
    innermost frame that is not Python's import machinery nor in ``skip``."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith(("<frozen ", _IMPORTLIB_DIR))
        and frame.filename not in skip
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def located(error: BaseException, skip: Sequence[str] = ()) -> str:
    """``", at file:line"`` where ``error`` was raised, or nothing when that is unknown."""
    where = raised_at(error, skip)
    return f", at {where}" if where else ""


def message_and_fix(error: BaseException) -> tuple[str, str | None]:
    """What ``error`` says is wrong, and what it says to do: a package error's ``fix``, or
    for another exception (a provider's own) the text after its ``"\\nFix: "``, as written."""
    fix = getattr(error, "fix", None)
    if isinstance(fix, str):
        return str(error).removesuffix(f"\nFix: {fix}"), fix
    if isinstance(error, CppDeviceOptionsError):
        return str(error), None
    cause, marker, quoted = str(error).partition("\nFix: ")
    return cause, (quoted if marker else None)


def relevant_lines(output: str, count: int = 6) -> tuple[str, ...]:
    """The lines of ``output`` that say what went wrong (else its last ones), shortened."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    relevant = [line for line in lines if RELEVANT.search(line)] or lines[-count:]
    return tuple(shorten(line) for line in relevant[:count])


def shorten(line: str, width: int = 300) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def unique(values: Iterable[str]) -> list[str]:
    """``values`` in order, each once."""
    return list(dict.fromkeys(values))
