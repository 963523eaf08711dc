"""CppDeviceOptions and its validation. Pure: no torch import.

The rules follow how ``torch._inductor.cpp_builder.CppBuilder`` renders each list on
Linux before it ``shlex.split``s the command line::

    definitions       -D {value}
    include_dirs      -I{shlex.quote(value)}
    cflags            -{value}
    ldflags           -{value}
    libraries_dirs    -L{value}          (not quoted)
    libraries         -l{value}
    passthrough_args  {value}            (verbatim, may hold several flags)

so a value that is not quoted must be exactly one shell word, or g++ receives
something else than the provider meant.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import NamedTuple

from ._errors import InvalidCppDeviceOptionsError


class CppDeviceOptions(NamedTuple):
    """The seven lists ``get_cpp_torch_device_options`` returns, by name."""

    definitions: list[str]
    include_dirs: list[str]
    cflags: list[str]
    ldflags: list[str]
    libraries_dirs: list[str]
    libraries: list[str]
    passthrough_args: list[str]

    @classmethod
    def empty(cls) -> CppDeviceOptions:
        return cls([], [], [], [], [], [], [])

    def copy(self) -> CppDeviceOptions:
        """Fresh lists, so that a caller appending to them cannot change ours."""
        return CppDeviceOptions(*(list(values) for values in self))

    def as_tuple(
        self,
    ) -> tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]:
        """The plain 7-tuple of fresh lists, the type torch's function returns."""
        copied = self.copy()
        return (
            copied.definitions,
            copied.include_dirs,
            copied.cflags,
            copied.ldflags,
            copied.libraries_dirs,
            copied.libraries,
            copied.passthrough_args,
        )


FIELDS: tuple[str, ...] = CppDeviceOptions._fields

# Characters that end a line or a C string: invalid in every field.
_LINE_BREAKING = re.compile(r"[\n\r\x00]")
# Characters shlex.split would consume or split on, in a value that is not quoted.
_NOT_ONE_WORD = re.compile(r"""[\s'"\\]""")
# torch itself writes definitions with a leading space (" USE_CUDA"); -D then takes the
# next word, so leading whitespace is harmless there and nowhere else.
_LEADING_SPACES = re.compile(r"^ +")
_SHARED_LIBRARY_FILE = re.compile(r"^lib(?P<name>.+?)\.(so|a|dylib)(\.\d+)*$")

_UNQUOTED_FIELDS = ("definitions", "cflags", "ldflags", "libraries_dirs", "libraries")
_DASH_ADDED_BY_INDUCTOR = {"cflags": "-", "ldflags": "-", "libraries": "-l"}


def validate_cpp_device_options(
    result: object, *, device_type: str, provider: str
) -> CppDeviceOptions:
    """Check what a provider returned and give it back as ``CppDeviceOptions``.

    Raises ``InvalidCppDeviceOptionsError`` naming the device, the provider, the
    field and the value at fault, before anything reaches the compiler.
    """
    lists = _seven_lists(result, device_type=device_type, provider=provider)
    for field, values in zip(FIELDS, lists, strict=True):
        for index, value in enumerate(values):
            problem = value_problem(field, value)
            if problem is not None:
                raise InvalidCppDeviceOptionsError(
                    f"C++ options for device {device_type!r} from {provider}: "
                    f"{field}[{index}] = {value!r} {problem}",
                    device_type=device_type,
                    provider=provider,
                    field=field,
                    value=value,
                )
    return CppDeviceOptions(*(list(values) for values in lists))


def _seven_lists(result: object, *, device_type: str, provider: str) -> list[Sequence[str]]:
    def malformed(detail: str, field: str | None = None, value: object = result) -> Exception:
        return InvalidCppDeviceOptionsError(
            f"C++ options for device {device_type!r} from {provider}: {detail}; expected "
            f"CppDeviceOptions or a 7-tuple of lists of str ({', '.join(FIELDS)})",
            device_type=device_type,
            provider=provider,
            field=field,
            value=value,
        )

    if not isinstance(result, (tuple, list)) or len(result) != len(FIELDS):
        shape = f"{type(result).__name__}"
        if isinstance(result, (tuple, list)):
            shape += f" of length {len(result)}"
        raise malformed(f"got {shape}")
    for field, values in zip(FIELDS, result, strict=True):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise malformed(
                f"{field} is a {type(values).__name__}, not a list", field=field, value=values
            )
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise malformed(
                    f"{field}[{index}] is a {type(value).__name__} ({value!r}), not a str",
                    field=field,
                    value=value,
                )
    return list(result)


def value_problem(field: str, value: str) -> str | None:
    """Why ``value`` cannot stand in ``field`` of the compiler command line, or None."""
    if _LINE_BREAKING.search(value):
        return "contains a newline or NUL character, which would cut the compiler command line"
    if field == "passthrough_args":
        return _passthrough_problem(value)
    if value.strip() == "":
        return "is empty"
    if field == "include_dirs":
        return None  # Inductor quotes include dirs: spaces and quotes are safe.
    if field == "definitions":
        value = _LEADING_SPACES.sub("", value)
    if _NOT_ONE_WORD.search(value):
        return (
            "contains whitespace, a quote or a backslash; Inductor does not quote "
            f"{field}, so the compiler would receive it split or altered"
        )
    if field in _DASH_ADDED_BY_INDUCTOR and value.startswith("-"):
        dash = _DASH_ADDED_BY_INDUCTOR[field]
        return (
            f"starts with '-'; Inductor adds {dash!r} itself, so write "
            f"{value.removeprefix(dash if value.startswith(dash) else '-')!r}"
        )
    if field == "definitions" and value.startswith("-D"):
        return f"starts with '-D'; Inductor adds '-D' itself, so write {value[2:]!r}"
    if field == "libraries":
        file_name = _SHARED_LIBRARY_FILE.match(value)
        if file_name:
            return (
                f"is a file name; Inductor passes libraries as -l<name>, so write "
                f"{file_name['name']!r} (or ':{value}' for this exact file)"
            )
    return None


def _passthrough_problem(value: str) -> str | None:
    if not _NOT_ONE_WORD.search(value.replace(" ", "")):
        return None  # Plain words separated by spaces: the common case, no shlex needed.
    try:
        shlex.split(value)
    except ValueError as error:
        return f"cannot be split into compiler arguments ({error})"
    return None


__all__ = ["FIELDS", "CppDeviceOptions", "validate_cpp_device_options", "value_problem"]
