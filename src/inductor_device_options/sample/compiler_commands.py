"""Observe the compiler commands Inductor runs, and find in them the flags that a
device's C++ options put there.

Commands are seen through Python's audit hook for ``subprocess.Popen``: what is
recorded is the argv Inductor actually executed, nothing in torch is replaced.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import CppDeviceOptions

Flags = tuple[str, ...]


@dataclass(frozen=True)
class CompilerCommand:
    argv: tuple[str, ...]
    cwd: str | None

    @property
    def stage(self) -> str:
        """What the command does: preprocess, precompile header, compile or link."""
        if "-E" in self.argv:
            return "preprocess"
        if "c++-header" in self.argv:
            return "precompile header"
        if "-c" in self.argv:
            return "compile"
        return "link"

    @property
    def output(self) -> Path | None:
        """The file after ``-o``, made absolute against the command's directory."""
        if "-o" not in self.argv[:-1]:
            return None
        output = Path(self.argv[self.argv.index("-o") + 1])
        return output if output.is_absolute() or self.cwd is None else Path(self.cwd) / output

    def has(self, flags: Flags) -> bool:
        """Whether ``flags`` appear in the command, consecutively and in order."""
        width = len(flags)
        return any(self.argv[i : i + width] == flags for i in range(len(self.argv) - width + 1))

    def marked(self, flags: Sequence[Flags], left: str = "[[", right: str = "]]") -> str:
        """The command as a shell line, with every occurrence of ``flags`` bracketed."""
        words: list[str] = []
        position = 0
        while position < len(self.argv):
            match = next(
                (f for f in flags if f and self.argv[position : position + len(f)] == f), None
            )
            if match is None:
                words.append(shlex.quote(self.argv[position]))
                position += 1
            else:
                words.append(left + shlex.join(match) + right)
                position += len(match)
        return " ".join(words)


def last_shared_library(commands: Sequence[CompilerCommand]) -> CompilerCommand | None:
    """The last command that linked a shared library: the module Inductor built."""
    links = [c for c in commands if c.stage == "link" and c.output and c.output.suffix == ".so"]
    return links[-1] if links else None


def added_options(options: CppDeviceOptions, defaults: CppDeviceOptions) -> CppDeviceOptions:
    """The values of ``options`` that are not in ``defaults``, field by field."""
    return CppDeviceOptions(
        *(
            [value for value in values if value not in default]
            for values, default in zip(options, defaults, strict=True)
        )
    )


def rendered_flags(options: CppDeviceOptions) -> list[Flags]:
    """The compiler arguments Inductor's ``CppBuilder`` makes of ``options`` on Linux."""
    flags: list[Flags] = []
    flags += [("-D", value.strip()) for value in options.definitions]
    flags += [(f"-I{value}",) for value in options.include_dirs]
    flags += [(f"-{value}",) for value in options.cflags + options.ldflags]
    flags += [(f"-L{value}",) for value in options.libraries_dirs]
    flags += [(f"-l{value}",) for value in options.libraries]
    flags += [tuple(shlex.split(value)) for value in options.passthrough_args]
    return flags


@dataclass(eq=False)  # compared by identity: two recordings may hold equal commands
class _Recording:
    compiler: str
    commands: list[CompilerCommand]


_lock = threading.Lock()
_recordings: list[_Recording] = []
_hook_installed = False


def _audit(event: str, arguments: tuple[Any, ...]) -> None:
    if event != "subprocess.Popen" or not _recordings:
        return
    _executable, argv, cwd = arguments[:3]
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    words = tuple(os.fsdecode(word) for word in argv)
    if not words:
        return
    command = CompilerCommand(words, None if cwd is None else os.fsdecode(cwd))
    with _lock:
        for recording in _recordings:
            if os.path.basename(words[0]) == recording.compiler:
                recording.commands.append(command)


@contextmanager
def record_compiler_commands(compiler: str) -> Iterator[list[CompilerCommand]]:
    """Collect, for the ``with`` block, the commands this process starts with ``compiler``.

    ``compiler`` is compared by file name (``g++`` matches ``/usr/bin/g++``).
    """
    global _hook_installed
    recording = _Recording(os.path.basename(compiler), [])
    with _lock:
        if not _hook_installed:
            # An audit hook cannot be removed; it does nothing outside a recording.
            sys.addaudithook(_audit)
            _hook_installed = True
        _recordings.append(recording)
    try:
        yield recording.commands
    finally:
        with _lock:
            _recordings.remove(recording)
