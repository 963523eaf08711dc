"""``inductor-device-options``: which devices have C++ options, what they are, and do they
work (also ``python -m inductor_device_options``).

``main`` runs a command in the calling process; ``run_and_exit``, the console script, then
ends the process without torch's teardown. What each
command prints, its exit codes and the layout of its ``--json`` documents are in the docs'
command-line reference (docs/reference/cli.md). This package prints; ``_diagnose/``
computes what doctor finds.

Modules: ``parser`` (the arguments), ``output`` (text, colour, the JSON document),
``device_command`` (what ``show`` and ``doctor`` share), ``listing``, ``show``,
``doctor_report``, ``doctor_all`` and ``demo`` (one command each).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from typing import NoReturn

from .output import EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN_DEVICE, EXIT_USAGE, PROG, Output, Style
from .parser import build_parser

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_UNKNOWN_DEVICE",
    "EXIT_USAGE",
    "PROG",
    "Style",
    "build_parser",
    "main",
    "run_and_exit",
]

#: The parser, under the name the docs' CLI reference and its test read.
_parser = build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    output = Output(json_requested="--json" in arguments)
    _prepare_streams()
    try:
        args = build_parser(output).parse_args(arguments)
        check_arguments: Callable[..., None] | None = getattr(args, "check_arguments", None)
        if check_arguments is not None:
            check_arguments(args)
        command: Callable[..., int] = args.command
        with output.only_the_document() if getattr(args, "json", False) else nullcontext():
            exit_code = command(args, output)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`list | head -1`): stop quietly. What is still buffered,
        # and the flush at exit, go to /dev/null instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_FAILED
    return exit_code


def run_and_exit() -> NoReturn:
    """The console script (and ``python -m inductor_device_options``): ``main``, then the
    exit, less the interpreter's teardown.

    Freeing torch's modules at interpreter shutdown takes about a second, as long as a
    static doctor's checks: once the command is done, the atexit handlers run (logging's
    flush, ``weakref.finalize``, torch's own), the streams are flushed and the
    process ends. While another thread runs, the exit is Python's own, which waits for it.
    """
    exit_code = main()
    if threading.active_count() > 1:
        sys.exit(exit_code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # the reader went away, or the stream is closed
            stream.flush()
    os._exit(exit_code)


def _prepare_streams() -> None:
    """stdout usable even when closed, and a path that is not UTF-8 written ``\\udcXX``."""
    if sys.stdout is None:  # started with stdout closed: the output goes nowhere
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    run_and_exit()
