"""The rules each value must meet whatever torch does, and the snapshot they are checked on.
Pure: no torch.

``torch._inductor.cpp_builder.CppBuilder`` renders each list into one command line and
then ``shlex.split``s it into g++'s arguments. What must hold whatever the running torch
does is checked here; what depends on how that torch renders a field (whether it quotes
include dirs, say) is learned from it by ``rendering``, what ld and the other tools behind
g++ receive is ``tools``' business, and whether g++ takes a definition or a dashed flag at
all is asked of the compiler by ``compiler`` (the order: ``pipeline``). The rules here:

* a value is a ``str`` (a subclass is copied to a plain ``str``: it is the characters that
  are validated and rendered, not its own formatting), and each list is read once;
* no value holds a newline, a carriage return or a NUL, and none but a passthrough
  argument is empty;
* a library does not start with the ``-l`` Inductor adds itself, and is a name, not a file
  name (``ascendcl``, or ``:libascendcl.so`` for one file): ld would look for another file;
* include and library dirs are absolute: Inductor runs g++ in a directory of its own, and
  this process's current directory must not decide what it finds;
* a passthrough argument splits into words, none of which starts with ``@``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Sequence

from .._errors import InvalidCppDeviceOptionsError
from .model import FIELDS, MULTI_WORD_FIELDS, CppDeviceOptions
from .problems import Problem

# Characters that end a line or a C string: invalid in every field.
_LINE_BREAKING = re.compile(r"[\n\r\x00]")
_SHARED_LIBRARY_FILE = re.compile(r"^lib(?P<name>.+?)\.(so|a|dylib)(\.\d+)*$")
_DIRECTORY_FIELDS = ("include_dirs", "libraries_dirs")
_EXPECTED = f"CppDeviceOptions, or a tuple or list of 7 lists of str ({', '.join(FIELDS)})"


def snapshot(result: object, *, device_type: str, description: str) -> CppDeviceOptions:
    """What a provider returned, as ``CppDeviceOptions`` of plain lists of plain ``str``.

    Each sequence is read exactly once, and each value copied to a plain ``str``: what is
    validated afterwards is what Inductor gets, however the provider's objects behave.
    Raises ``InvalidCppDeviceOptionsError`` when the result is not 7 sequences of str.
    """

    def malformed(detail: str, field: str | None = None, value: object = result) -> Exception:
        return InvalidCppDeviceOptionsError(
            f"C++ options for device {device_type!r} from {description}: {detail}; expected "
            f"{_EXPECTED}",
            device_type=device_type,
            description=description,
            field=field,
            value=value,
        )

    outer = tuple(result) if isinstance(result, (tuple, list)) else None
    if outer is None or len(outer) != len(FIELDS):
        shape = f"{type(result).__name__}"
        if outer is not None:
            shape += f" of length {len(outer)}"
        raise malformed(f"got {shape}")
    lists: list[list[str]] = []
    for field, values in zip(FIELDS, outer, strict=True):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise malformed(
                f"{field} is a {type(values).__name__}, not a list", field=field, value=values
            )
        plain: list[str] = []
        for index, value in enumerate(list(values)):
            if not isinstance(value, str):
                raise malformed(
                    f"{field}[{index}] is a {type(value).__name__} ({value!r}), not a str",
                    field=field,
                    value=value,
                )
            plain.append(value if type(value) is str else str.__str__(value))
        lists.append(plain)
    return CppDeviceOptions(*lists)


def invalid_options_error(
    problem: Problem,
    *,
    device_type: str,
    description: str,
    shown: str,
    value: str,
) -> InvalidCppDeviceOptionsError:
    """The error for ``problem``, a problem of one value: ``shown`` replaces the value's
    ``repr`` in the message (to say where it came from), and ``value`` is the value the
    error carries (the one the provider wrote)."""
    return InvalidCppDeviceOptionsError(
        f"C++ options for device {device_type!r} from {description}: {problem.stated(shown)}",
        device_type=device_type,
        description=description,
        field=None if problem.place is None else problem.place.field,
        value=value,
    )


def rule_problems(
    options: CppDeviceOptions, *, checked: CppDeviceOptions | None = None
) -> list[Problem]:
    """Every value of ``options`` that breaks a rule of this module.

    ``checked``: options whose values were checked already; a value of ``options`` that
    stands in the same field of ``checked`` is not checked again (each value is checked
    once in a pass of the pipeline: only what a later step made new is)."""
    problems: list[Problem] = []
    for index, (field, values) in enumerate(zip(FIELDS, options, strict=True)):
        seen: Collection[str] = frozenset(checked[index]) if checked is not None else ()
        for position, value in enumerate(values):
            if value in seen:
                continue
            cause = rule_cause(field, value)
            if cause is not None:
                problems.append(Problem.of_value(field, position, value, cause))
    return problems


def rule_cause(field: str, value: str) -> str | None:
    """Why ``value`` cannot stand in ``field`` whatever torch's rendering (the cause of its
    problem), or None."""
    if _LINE_BREAKING.search(value):
        return "contains a newline or NUL character, which would cut the compiler command line"
    if field in MULTI_WORD_FIELDS:
        return _passthrough_cause(value)
    if value.strip() == "":
        return "is empty"
    if field in _DIRECTORY_FIELDS and not value.startswith("/"):
        return (
            "is relative: Inductor runs the compiler in a directory of its own, and this "
            "process's current directory is no part of the options; make it absolute"
        )
    if field == "libraries" and value.startswith("-"):
        return (
            "starts with '-'; Inductor adds '-l' itself, so ld would look for "
            f"lib{value}.so: write {value.removeprefix('-l' if value.startswith('-l') else '-')!r}"
        )
    if field == "libraries":
        file_name = _SHARED_LIBRARY_FILE.match(value)
        if file_name:
            return (
                f"is a file name; Inductor passes libraries as -l<name>, so write "
                f"{file_name['name']!r} (or ':{value}' for this exact file)"
            )
    return None


def _passthrough_cause(value: str) -> str | None:
    try:
        words = shlex.split(value)
    except ValueError as error:
        return f"cannot be split into compiler arguments ({error})"
    for word in words:
        if word.startswith("@"):
            return (
                f"holds the argument {word!r}, which g++ reads as a response file "
                "(more arguments from that file)"
            )
    return None


__all__ = [
    "invalid_options_error",
    "rule_cause",
    "rule_problems",
    "snapshot",
]
