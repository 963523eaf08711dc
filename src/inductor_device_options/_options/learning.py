"""What the running torch's ``CppBuilder`` does with each field, learned from it.

``CppBuilder`` turns the seven lists into one command line and ``shlex.split``s it into
g++'s arguments. How it renders a field depends on the torch — torch 2.13 quotes include
dirs (``-I{shlex.quote(dir)}``), torch 2.6 does not — so nothing here is a table of
versions: the running ``CppBuilder`` renders marker values once per ``CppBuilder`` class,
through a ``BuildOptionsBase`` subclass that answers exactly the given lists, which gives
each field's words, whether it quotes, and where each field goes on the line
(:class:`Rendering`). ``rendering`` checks options against it.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .. import _state
from .._torch_names import CPP_BUILDER
from .model import FIELDS, MULTI_WORD_FIELDS, CppDeviceOptions
from .tools import Argument

_VALUE = "{value}"
_PROBE = "inductor_device_options_probe"
# Values that need quoting: a field renders them as one word only if torch quotes it.
_NEED_QUOTING = ("inductor device options probe", "inductor_device_options's_\"probe\\")
# Getter names: torch 2.6-2.9 spell two of them differently (2.6's BuildOptionsBase has
# get_definations and get_passthough_args, which CppBuilder.__init__ calls; 2.13's and 2.15's
# get_definitions and get_passthrough_args). The probe class answers under both spellings.
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


# What was learned from each CppBuilder class (a reloaded cpp_builder has another), and
# the probe options class made for it: a handful in a process. _state.reset() clears them.
_learned: _state.BoundedCache[type, Rendering | None] = _state.cache(8)
_probe_classes: _state.BoundedCache[type, type] = _state.cache(8)


def builder_class() -> type:
    """The running torch's ``CppBuilder`` (importing cpp_builder if nobody has)."""
    module = sys.modules.get(CPP_BUILDER)
    if module is not None:
        builder: type = module.CppBuilder
        return builder
    from torch._inductor.cpp_builder import CppBuilder

    return CppBuilder


def running_rendering() -> Rendering | None:
    """What the running ``CppBuilder`` does with each field; None if not recognised."""
    builder = builder_class()
    try:
        return _learned[builder]
    except KeyError:
        pass
    try:
        learned: Rendering | None = _learn(builder)
    except Exception:  # a CppBuilder unlike any known: the safest rules instead
        learned = None
    return _learned.put(builder, learned)


class NotRecognised(Exception):
    """The running CppBuilder renders in a way the learning does not recognise."""


def _marker(field: str) -> str:
    return f"{_PROBE}_{field}"


def alone(field: str, value: str) -> CppDeviceOptions:
    return CppDeviceOptions(*([value] if name == field else [] for name in FIELDS))


def _learn(builder: type) -> Rendering:
    # The running CppBuilder renders a line with no options, then each field holding one
    # marker value: the words the marker adds are that field's rendering (torch 2.6's
    # "-I{dir}" and 2.13's "-I{shlex.quote(dir)}" alike; -D's "-D {value}" is two words).
    base = split(command_line(builder, CppDeviceOptions.empty()))
    fields: dict[str, FieldRendering] = {}
    for field in FIELDS:
        marker = _marker(field)
        words = inserted(base, split(command_line(builder, alone(field, marker))))
        if sum(word.count(marker) for word in words) != 1:
            raise NotRecognised(f"{field}: {words}")
        template = tuple(word.replace(marker, _VALUE) for word in words)
        if field in MULTI_WORD_FIELDS and template != (_VALUE,):
            raise NotRecognised(f"{field}: {words}")
        quoted = all(_kept_whole(builder, base, field, template, value) for value in _NEED_QUOTING)
        fields[field] = FieldRendering(field, template, quoted)
    every = CppDeviceOptions(*([_marker(field)] for field in FIELDS))
    layout = _layout(split(command_line(builder, every)), fields)
    return Rendering(fields, tuple(base), layout)


def _kept_whole(
    builder: type, base: list[str], field: str, template: tuple[str, ...], value: str
) -> bool:
    """Whether ``value`` in ``field`` reaches g++ intact, where it goes in ``template``."""
    try:
        received = inserted(base, split(command_line(builder, alone(field, value))))
    except NotRecognised:
        return False
    return received == [word.replace(_VALUE, value) for word in template]


def _layout(
    words: list[str], fields: Mapping[str, FieldRendering]
) -> tuple[str | tuple[str, ...], ...]:
    # Where each field lands on a full line, in the running torch's order: the literal
    # words between fields are kept as they are (compiler, sources, -o, torch's own flags).
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
        raise NotRecognised(f"layout: {words}")
    return tuple(layout)


def inserted(base: Sequence[str], words: Sequence[str]) -> list[str]:
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
        raise NotRecognised(f"{words} is not {list(base)} with words inserted")
    return list(words[prefix : len(words) - suffix])


def split(command_line: str) -> list[str]:
    try:
        return shlex.split(command_line)
    except ValueError as error:
        raise NotRecognised(str(error)) from error


def command_line(builder: type, options: CppDeviceOptions) -> str:
    """What ``builder`` renders for one source with exactly ``options``, compiled and
    linked (the link step renders every field)."""
    probe_class = _probe_classes.get(builder)
    if probe_class is None:
        made = _probe_options_class(builder)
        probe_class = _probe_classes.put(builder, made)
    # CppBuilder(name, sources, BuildOption, output_dir) and get_command_line() are public on
    # torch 2.6-2.15; nothing is compiled.
    command: str = builder(
        _PROBE, [f"{_PROBE}.cpp"], probe_class(options), output_dir=f"/{_PROBE}"
    ).get_command_line()
    return command


def _probe_options_class(builder: type) -> type:
    """A subclass of the running torch's ``BuildOptionsBase`` whose getters, under each
    spelling torch has used, answer the given lists and nothing else."""
    base: type = sys.modules[builder.__module__].BuildOptionsBase

    # BuildOptionsBase() with no arguments: every list empty (torch 2.6-2.15); its other
    # getters (compile_only, aot_mode, ...) keep torch's defaults.
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
