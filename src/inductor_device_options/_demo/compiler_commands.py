"""Observe the compiler commands Inductor runs, and find in them the flags that a
device's C++ options put there.

Commands are seen through Python's audit hook for ``subprocess.Popen``: what is
recorded is the argv Inductor actually executed, nothing in torch is replaced.
Inductor may compile in child processes (``TORCHINDUCTOR_FX_COMPILE_MODE=subprocess``):
a recording also names a log file in ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_COMMAND_LOG``, where
children that set the sample device up (torch's backend autoload) append their commands.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import CppDeviceOptions

Flags = tuple[str, ...]

COMMAND_LOG_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_COMMAND_LOG"


@dataclass(frozen=True)
class CompilerCommand:
    argv: tuple[str, ...]
    cwd: str | None
    pid: int  # the process that ran it: this one, or one of Inductor's compile subprocesses
    rank: int | None = None  # $RANK of that process: a rank of a distributed job, or its child

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


class _Recorder:
    """What this process records: the recordings open now, whether the audit hook is
    installed, and the log its children append to. The demo's state, not the package's:
    it lives here, outside what a process that only looks options up imports."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.recordings: list[_Recording] = []
        self.hook_installed = False
        self.log_path: Path | None = None


_recorder = _Recorder()


def _audit(event: str, arguments: tuple[Any, ...]) -> None:
    if event != "subprocess.Popen" or not _recorder.recordings:
        return
    _executable, argv, cwd = arguments[:3]
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    words = tuple(os.fsdecode(word) for word in argv)
    if not words:
        return
    command = CompilerCommand(words, None if cwd is None else os.fsdecode(cwd), os.getpid())
    with _recorder.lock:
        for recording in _recorder.recordings:
            if os.path.basename(words[0]) == recording.compiler:
                recording.commands.append(command)


@contextmanager
def record_compiler_commands(compiler: str) -> Iterator[list[CompilerCommand]]:
    """Collect, for the ``with`` block, the commands started with ``compiler`` by this
    process and by the child processes that log to it (see the module docstring).

    ``compiler`` is compared by file name (``g++`` matches ``/usr/bin/g++``).
    """
    recording = _Recording(os.path.basename(compiler), [])
    log = _command_log()
    start = log.stat().st_size
    with _recorder.lock:
        if not _recorder.hook_installed:
            # An audit hook cannot be removed; it does nothing outside a recording.
            sys.addaudithook(_audit)
            _recorder.hook_installed = True
        _recorder.recordings.append(recording)
    try:
        yield recording.commands
    finally:
        with _recorder.lock:
            _recorder.recordings.remove(recording)
        recording.commands.extend(_logged_commands(log, start, recording.compiler))


def _command_log() -> Path:
    """This process's log for its children's commands, created once, named in the env."""
    with _recorder.lock:
        if _recorder.log_path is None:
            handle, name = tempfile.mkstemp(prefix="sampledev-compiler-commands-", suffix=".log")
            os.close(handle)
            _recorder.log_path = Path(name)
            atexit.register(_recorder.log_path.unlink, missing_ok=True)
        # Named again at every recording: whatever restores os.environ after a block (torch
        # 2.6's utils.fresh_inductor_cache, which uses mock.patch.dict(os.environ, ...)) takes
        # out a name set inside it.
        os.environ[COMMAND_LOG_ENV] = str(_recorder.log_path)
        return _recorder.log_path


def _logged_commands(log: Path, start: int, compiler: str) -> list[CompilerCommand]:
    with log.open("rb") as lines:
        lines.seek(start)
        records = [json.loads(line) for line in lines.read().splitlines() if line.strip()]
    return [
        CompilerCommand(tuple(record["argv"]), record["cwd"], record["pid"], record.get("rank"))
        for record in records
        if os.path.basename(record["argv"][0]) == compiler
    ]


def log_commands_for_parent() -> None:
    """In a child process: append every command it starts to the parent's log, if any."""
    path = os.environ.get(COMMAND_LOG_ENV)
    if not path or _recorder.log_path is not None:  # the log's own process records in memory
        return
    # Set by torchrun in each rank and inherited by the rank's compile subprocesses.
    rank = int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None

    def append(event: str, arguments: tuple[Any, ...]) -> None:
        if event != "subprocess.Popen":
            return
        argv = arguments[1]
        if isinstance(argv, (str, bytes, os.PathLike)):
            argv = [argv]
        words = [os.fsdecode(word) for word in argv]
        cwd = None if arguments[2] is None else os.fsdecode(arguments[2])
        if words:
            record = json.dumps({"argv": words, "cwd": cwd, "pid": os.getpid(), "rank": rank})
            with open(path, "a") as log:  # one short append: atomic between processes
                log.write(record + "\n")

    sys.addaudithook(append)
