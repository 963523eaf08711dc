"""How the running torch's ``CppBuilder`` renders each list, learned from it.

``CppBuilder`` turns the seven lists into one command line and ``shlex.split``s it into
g++'s arguments. What a value may hold depends on how that torch renders its field — torch
2.13 quotes include dirs (``-I{shlex.quote(dir)}``), torch 2.6 does not — so nothing here is
a table of versions: the running ``CppBuilder`` renders marker values once (per
``CppBuilder`` class), which gives each field's words and whether it quotes, and then each
set of final options is rendered for real and split as Inductor splits it. The options pass
when g++ gets exactly the words meant — one argument per value (a passthrough value: the
words it splits into) — and none that starts with ``@`` (g++ reads ``@file`` as a response
file: arguments from that file).

If this torch renders in a way the learning does not recognise, every single-word value
must be a plain word (no whitespace, quote or backslash), which any rendering keeps whole.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .._torch_names import CPP_BUILDER
from .compiler import CompilerQuestion, compiler_problems, questions
from .model import (
    FIELDS,
    MULTI_WORD_FIELDS,
    CppDeviceOptions,
    ValueProblem,
    value_problems,
)
from .tools import Argument, tool_problems

_VALUE = "{value}"
_PROBE = "inductor_device_options_probe"
# Values that need quoting: a field renders them as one word only if torch quotes it.
_NEED_QUOTING = ("inductor device options probe", "inductor_device_options's_\"probe\\")
_NOT_ONE_WORD = re.compile(r"""[\s'"\\]""")
# Getter names: torch 2.6-2.9 spell two of them differently.
_GETTERS: dict[str, tuple[str, ...]] = {
    "definitions": ("get_definitions", "get_definations"),
    "include_dirs": ("get_include_dirs",),
    "cflags": ("get_cflags",),
    "ldflags": ("get_ldflags",),
    "libraries_dirs": ("get_libraries_dirs",),
    "libraries": ("get_libraries",),
    "passthrough_args": ("get_passthrough_args", "get_passthough_args"),
}


class FieldRendering(NamedTuple):
    """How one value of ``field`` is rendered: ``words`` with ``{value}`` where it goes."""

    field: str
    words: tuple[str, ...]
    quoted: bool

    def describe(self) -> str:
        return f"{' '.join(self.words)} ({'quoted' if self.quoted else 'not quoted'})"

    def expected(self, value: str) -> list[str]:
        """The arguments g++ should get for ``value``."""
        if self.field in MULTI_WORD_FIELDS:
            return shlex.split(value)
        if self.words[-1] == _VALUE:
            value = value.lstrip(" ")  # -D then the next word: leading spaces separate
        return [word.replace(_VALUE, value) for word in self.words]


class Rendering(NamedTuple):
    """What was learned from one ``CppBuilder`` class.

    ``base``: the arguments of a command line with no options. ``layout``: those of one
    with every field holding one value, each field's place given by its name, the words
    between fields as tuples.
    """

    fields: Mapping[str, FieldRendering]
    base: tuple[str, ...]
    layout: tuple[str | tuple[str, ...], ...]

    def describe(self, field: str) -> str:
        return f"this torch's CppBuilder renders {field} as {self.fields[field].describe()}"

    def expected_words(self, options: CppDeviceOptions) -> list[str] | None:
        """The arguments g++ should get for ``options``; None when a value cannot get
        what it means (it does not split, or a word would be a response file)."""
        words: list[str] = []
        for segment in self.layout:
            if isinstance(segment, tuple):
                words.extend(segment)
                continue
            arguments = _arguments_of(self.fields[segment], getattr(options, segment))
            if arguments is None:
                return None
            words.extend(argument.text for argument in arguments)
        return words

    def arguments(self, options: CppDeviceOptions) -> list[Argument] | None:
        """The arguments g++ gets from ``options``, in order, each with its value; None
        as for :meth:`expected_words`."""
        found: list[Argument] = []
        for segment in self.layout:
            if isinstance(segment, tuple):
                continue
            arguments = _arguments_of(self.fields[segment], getattr(options, segment))
            if arguments is None:
                return None
            found.extend(arguments)
        return found


def _arguments_of(rendering: FieldRendering, values: Sequence[str]) -> list[Argument] | None:
    arguments: list[Argument] = []
    for position, value in enumerate(values):
        try:
            expected = rendering.expected(value)
        except ValueError:
            return None
        if any(word.startswith("@") for word in expected):
            return None
        arguments.extend(Argument(word, rendering.field, position) for word in expected)
    return arguments


_learned: dict[type, Rendering | None] = {}


def builder_class() -> type:
    """The running torch's ``CppBuilder`` (importing cpp_builder if nobody has)."""
    module = sys.modules.get(CPP_BUILDER)
    if module is not None:
        builder: type = module.CppBuilder
        return builder
    from torch._inductor.cpp_builder import CppBuilder

    return CppBuilder


def rendering() -> Rendering | None:
    """What the running ``CppBuilder`` does with each field; None if not recognised."""
    builder = builder_class()
    if builder not in _learned:
        try:
            _learned[builder] = _learn(builder)
        except Exception:  # a CppBuilder unlike any known: the safest rules instead
            _learned[builder] = None
    return _learned[builder]


def rendering_problems(options: CppDeviceOptions) -> list[ValueProblem]:
    """The values of ``options`` that would not reach g++ as the arguments meant.

    One rendering of the whole options, split as Inductor splits it; only when that is
    not what was meant is each value rendered alone, to say which.
    """
    learned = rendering()
    if learned is None:
        return _plain_word_problems(options)
    expected = learned.expected_words(options)
    if expected is not None:
        try:
            if _split(_command_line(builder_class(), options)) == expected:
                return []
        except _NotRecognised:
            pass
    problems = [
        ValueProblem(field, index, value, problem)
        for field, values in zip(FIELDS, options, strict=True)
        for index, value in enumerate(values)
        if (problem := _value_problem(learned, field, value)) is not None
    ]
    return problems or [_whole_line_problem(options)]


def final_problems(options: CppDeviceOptions) -> list[ValueProblem]:
    """Every value of the final ``options`` that would not reach g++, or a tool behind it,
    as meant, or that the compiler rejects: the rules of ``_options``, then this torch's
    rendering, then what ld and the other tools receive and what the compiler takes."""
    problems = value_problems(options) or rendering_problems(options)
    if problems:
        return problems
    arguments = _final_arguments(options)
    return _tool_problems(arguments, options) or _compiler_problems(arguments, options)


def final_value_problem(field: str, value: str) -> str | None:
    """Why ``value`` alone in ``field`` would not reach g++ (or a tool behind it) as meant,
    or be rejected by the compiler. None when it would reach it and be taken."""
    problems = final_problems(_alone(field, value))
    return problems[0].problem if problems else None


def _final_arguments(options: CppDeviceOptions) -> list[Argument]:
    """What g++ receives from options that render as meant."""
    learned = rendering()
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


_CONVENTIONAL: dict[str, tuple[str, ...]] = {
    "definitions": ("-D", ""),
    "include_dirs": ("-I",),
    "cflags": ("-",),
    "ldflags": ("-",),
    "libraries_dirs": ("-L",),
    "libraries": ("-l",),
}


def _tool_problems(arguments: list[Argument], options: CppDeviceOptions) -> list[ValueProblem]:
    return [
        ValueProblem(
            found.argument.field,
            found.argument.position,
            getattr(options, found.argument.field)[found.argument.position],
            f"reaches g++ as {found.argument.text!r}, which {found.problem}",
        )
        for found in tool_problems(arguments)
    ]


def _compiler_problems(arguments: list[Argument], options: CppDeviceOptions) -> list[ValueProblem]:
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
    for question, error in compiler_problems(compiler, asked):
        problem = f"reaches g++ as {list(question.words)!r}, which {compiler} rejects: {error}"
        problems.append(
            ValueProblem(
                question.field, question.position, question.value, problem + _dash_hint(question)
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

    compiler: str = cpp_builder.get_cpp_compiler()
    return compiler


def _value_problem(learned: Rendering, field: str, value: str) -> str | None:
    rendering = learned.fields[field]
    hint = ""
    if not rendering.quoted and field not in MULTI_WORD_FIELDS:
        hint = ", so a value must be one word: no whitespace, quotes or backslashes"
    try:
        expected = rendering.expected(value)
    except ValueError as error:
        return f"cannot be split into compiler arguments ({error})"
    try:
        words = _split(_command_line(builder_class(), _alone(field, value)))
    except _NotRecognised as error:
        return f"cannot be split into compiler arguments ({error}): {learned.describe(field)}{hint}"
    try:
        received = _inserted(learned.base, words)
    except _NotRecognised:
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


def _whole_line_problem(options: CppDeviceOptions) -> ValueProblem:
    field = next(name for name, values in zip(FIELDS, options, strict=True) if values)
    return ValueProblem(
        field,
        0,
        getattr(options, field)[0],
        "and the values after it do not split into the compiler arguments meant",
    )


def _plain_word_problems(options: CppDeviceOptions) -> list[ValueProblem]:
    return [
        ValueProblem(
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


# --- learning ---------------------------------------------------------------------------


class _NotRecognised(Exception):
    pass


def _marker(field: str) -> str:
    return f"{_PROBE}_{field}"


def _alone(field: str, value: str) -> CppDeviceOptions:
    return CppDeviceOptions(*([value] if name == field else [] for name in FIELDS))


def _learn(builder: type) -> Rendering:
    base = _split(_command_line(builder, CppDeviceOptions.empty()))
    fields: dict[str, FieldRendering] = {}
    for field in FIELDS:
        marker = _marker(field)
        words = _inserted(base, _split(_command_line(builder, _alone(field, marker))))
        if sum(word.count(marker) for word in words) != 1:
            raise _NotRecognised(f"{field}: {words}")
        template = tuple(word.replace(marker, _VALUE) for word in words)
        if field in MULTI_WORD_FIELDS and template != (_VALUE,):
            raise _NotRecognised(f"{field}: {words}")
        quoted = all(_kept_whole(builder, base, field, template, value) for value in _NEED_QUOTING)
        fields[field] = FieldRendering(field, template, quoted)
    every = CppDeviceOptions(*([_marker(field)] for field in FIELDS))
    layout = _layout(_split(_command_line(builder, every)), fields)
    return Rendering(fields, tuple(base), layout)


def _kept_whole(
    builder: type, base: list[str], field: str, template: tuple[str, ...], value: str
) -> bool:
    """Whether ``value`` in ``field`` reaches g++ intact, where it goes in ``template``."""
    try:
        received = _inserted(base, _split(_command_line(builder, _alone(field, value))))
    except _NotRecognised:
        return False
    return received == [word.replace(_VALUE, value) for word in template]


def _layout(
    words: list[str], fields: Mapping[str, FieldRendering]
) -> tuple[str | tuple[str, ...], ...]:
    instances = {
        field: [word.replace(_VALUE, _marker(field)) for word in rendering.words]
        for field, rendering in fields.items()
    }
    layout: list[str | tuple[str, ...]] = []
    literal: list[str] = []
    index = 0
    while index < len(words):
        field = next(
            (
                name
                for name, instance in instances.items()
                if words[index : index + len(instance)] == instance
            ),
            None,
        )
        if field is None:
            literal.append(words[index])
            index += 1
            continue
        layout.extend([tuple(literal), field])
        literal = []
        index += len(instances[field])
    layout.append(tuple(literal))
    if sorted(segment for segment in layout if isinstance(segment, str)) != sorted(FIELDS):
        raise _NotRecognised(f"layout: {words}")
    return tuple(layout)


def _inserted(base: Sequence[str], words: Sequence[str]) -> list[str]:
    """The words ``words`` has where ``base`` has none (one contiguous run)."""
    prefix = 0
    while prefix < min(len(base), len(words)) and base[prefix] == words[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(base), len(words)) - prefix
        and base[len(base) - 1 - suffix] == words[len(words) - 1 - suffix]
    ):
        suffix += 1
    if prefix + suffix != len(base):
        raise _NotRecognised(f"{words} is not {list(base)} with words inserted")
    return list(words[prefix : len(words) - suffix])


def _split(command_line: str) -> list[str]:
    try:
        return shlex.split(command_line)
    except ValueError as error:
        raise _NotRecognised(str(error)) from error


_probe_classes: dict[type, type] = {}


def _command_line(builder: type, options: CppDeviceOptions) -> str:
    """What ``builder`` renders for one source with exactly ``options``, compiled and
    linked (the link step renders every field)."""
    probe_class = _probe_classes.get(builder)
    if probe_class is None:
        probe_class = _probe_classes[builder] = _probe_options_class(builder)
    command: str = builder(
        _PROBE, [f"{_PROBE}.cpp"], probe_class(options), output_dir=f"/{_PROBE}"
    ).get_command_line()
    return command


def _probe_options_class(builder: type) -> type:
    """A subclass of the running torch's ``BuildOptionsBase`` whose getters, under each
    spelling torch has used, answer the given lists and nothing else."""
    base: type = sys.modules[builder.__module__].BuildOptionsBase

    class ProbeOptions(base):  # type: ignore[misc]
        def __init__(self, options: CppDeviceOptions) -> None:
            super().__init__()
            self.probe_lists = dict(zip(FIELDS, options, strict=True))

        def get_compiler(self) -> str:
            return "c++"

    for field, names in _GETTERS.items():
        for name in names:
            setattr(ProbeOptions, name, _getter(field))
    return ProbeOptions


def _getter(field: str) -> Callable[[Any], list[str]]:
    def get(self: Any) -> list[str]:
        return list(self.probe_lists[field])

    return get
