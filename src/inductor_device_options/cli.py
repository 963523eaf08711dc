"""``inductor-device-options``: which devices have C++ options, what they are, and do they work.

Usage (also ``python -m inductor_device_options``)::

    inductor-device-options list [--json]
    inductor-device-options show DEVICE [--aot] [--compile-only]
                                        [--provider MODULE:CALLABLE] [--json]
    inductor-device-options doctor DEVICE [--aot] [--provider MODULE:CALLABLE] [--json]
    inductor-device-options demo [--cache-dir DIR] [--ranks N]

``list``
    torch's version, the hook's state in ``torch._inductor.cpp_builder`` and every device
    this process knows a source of options for (``registration``, ``entry point``,
    ``device interface`` or ``torch``).
``show``
    The seven lists Inductor gets for DEVICE (``get_cpp_device_options``) and the commands
    Inductor's own ``CppBuilder`` renders with ``CppTorchDeviceOptions(device_type=DEVICE)``
    for a small source: ``compile`` (to an object, ``compile_only=True``) and ``link`` (that
    object into a shared library, ``compile_only=False``; omitted with ``--compile-only``).
    The lists shown are those of ``--compile-only`` (default: the linking call). Paths in
    the commands are in a temporary directory that is removed afterwards.
``doctor``
    One line per check, ``PASS``/``FAIL``/``SKIP``, and for each failure its cause and its
    fix: ``hook`` (the options reach Inductor), ``options`` (the provider computes them, for
    compiling and for linking), ``flags`` (every value is well formed), ``include_dirs``
    (each exists), ``libraries`` (each ``-l`` resolves in the library dirs or the system
    linker path), ``probe_build`` (``CppBuilder`` compiles and links a small shared object
    with the options). ``TORCHINDUCTOR_CACHE_DIR`` points into a temporary directory when
    unset.

A new process does not see registrations made in a program: it sees declared providers
(the ``inductor_device_options`` entry point group). ``--provider module:callable``
registers an undeclared callback for DEVICE first (the current directory is importable).

Colour is used only when stdout is a terminal and ``NO_COLOR`` is unset.

Exit codes: 0 success (every check passed); 1 the options could not be computed or a
check failed (a provider that raises ``SystemExit``, even ``SystemExit(0)``, included), or
the output could not be written (the reader of a pipe went away: the command stops
quietly); 2 usage error (bad arguments, a ``--provider`` that cannot be loaded or
registered); 3 unknown device (nothing provides options for it and torch has none of its
own: declare a provider). With stdout closed the command runs and only its exit code tells.

Entry points of the group whose name is not a device name (or is one of torch's own
devices) are ignored: ``list`` shows them, ``show`` and ``doctor`` note them on stderr.

JSON (``--json``): one object on stdout. ``schema`` names the command and the version of
its layout; keys are only ever added within a version. Every document has
``schema`` (str), ``version`` (str, this package) and ``torch_version`` (str). Shared shapes::

    Source  = {"device_type": str,
               "source": "registration" | "entry point" | "device interface" | "torch",
               "description": str}
    Error   = {"type": str, "message": str, "provider": str | null}

``inductor-device-options/list/v1``::

    {"hook": {"mode": "hook" | "native" | "waiting", "chains_to": str | null,
              "replaced_by": str | null, "registrations_apply": bool,
              "adopted": [{"description": str, "behaviour": str}, ...],  # assigned after the hook
              "device_interface_backport": bool | null, "description": str},
     "devices": [Source, ...],                       # sorted by device_type
     "invalid_declarations": [{"name": str, "value": str, "distribution": str | null,
                               "reason": str}]}      # entry points ignored

``inductor-device-options/show/v1``::

    {"device_type": str, "aot_mode": bool, "compile_only": bool,
     "source": Source,
     "options": {"definitions": [str], "include_dirs": [str], "cflags": [str],
                 "ldflags": [str], "libraries_dirs": [str], "libraries": [str],
                 "passthrough_args": [str]} | null,     # null when "error" is set
     "commands": {"compiler": str, "compile": str, "link": str | null} | null,
     "error": Error | null}    # "UnknownDeviceError": exit code 3; any other: the
                               # provider failed (e.g. "CannNotFoundError"), exit code 1

``inductor-device-options/doctor/v1``::

    {"device_type": str, "aot_mode": bool, "source": Source,
     "ok": bool, "exit_code": 0 | 1 | 3,
     "checks": [{"name": "hook" | "options" | "flags" | "include_dirs" | "libraries"
                         | "probe_build",
                 "title": str, "status": "pass" | "fail" | "skip", "summary": str,
                 "problems": [{"cause": str, "fix": str, "details": [str]}]}],
     "error": Error | null}          # set (and "checks" empty) for an unknown device

``details`` holds the first relevant compiler output lines of a failed probe build.

``inductor-device-options/error/v1`` (a usage error with ``--json``, exit code 2; the
usage message also goes to stderr)::

    {"command": "list" | "show" | "doctor" | null, "exit_code": 2,
     "error": Error}                                 # "type": "UsageError"
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from . import __version__, _doctor, _registry
from ._doctor import Check, UnknownDeviceError
from ._errors import CppDeviceOptionsError
from ._hook import (
    DeviceOptionsSource,
    device_options_source,
    get_cpp_device_options,
    hook_state,
    known_device_options_sources,
)
from ._options import FIELDS

Document = dict[str, object]
DeviceCommand = Callable[[argparse.Namespace, Path, DeviceOptionsSource, Document], int]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_DEVICE = 3

PROG = "inductor-device-options"


def main(argv: Sequence[str] | None = None) -> int:
    global _json_requested
    arguments = list(sys.argv[1:] if argv is None else argv)
    _json_requested = "--json" in arguments
    if sys.stdout is None:  # started with stdout closed: the output goes nowhere
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    try:
        args = _parser().parse_args(arguments)
        command: Callable[[argparse.Namespace], int] = args.command
        exit_code = command(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`list | head -1`): stop quietly. What is still buffered,
        # and the flush at exit, go to /dev/null instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_FAILED
    return exit_code


_json_requested = False


class _Parser(argparse.ArgumentParser):
    """A usage error is also a JSON document on stdout when --json was given."""

    def error(self, message: str) -> NoReturn:
        if _json_requested:
            command = self.prog.removeprefix(PROG).strip() or None
            _print_json(
                "error",
                command=command,
                exit_code=EXIT_USAGE,
                error={"type": "UsageError", "message": message, "provider": None},
            )
        super().error(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="The C++ compile options TorchInductor gets for each device: "
        "list the devices, show a device's options and compiler commands, check them.",
        epilog="Exit codes: 0 ok, 1 failed, 2 usage error, 3 unknown device.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    listing = commands.add_parser(
        "list", help="torch, the hook and every known device with where its options come from"
    )
    _add_json(listing)
    listing.set_defaults(command=_list)

    show = commands.add_parser(
        "show", help="a device's options and the compile and link commands Inductor runs"
    )
    _add_device(show)
    show.add_argument(
        "--compile-only",
        action="store_true",
        help="the options for compiling to an object; show no link command",
    )
    _add_json(show)
    show.set_defaults(
        command=_device_command("show", _show, options=None, commands=None), parser=show
    )

    doctor = commands.add_parser(
        "doctor", help="check a device's options: dirs, libraries and a real probe build"
    )
    _add_device(doctor)
    _add_json(doctor)
    doctor.set_defaults(
        command=_device_command(
            "doctor", _doctor_command, ok=False, exit_code=EXIT_UNKNOWN_DEVICE, checks=[]
        ),
        parser=doctor,
    )

    demo = commands.add_parser(
        "demo", help="the whole chain on the sample device: build, compile a model, check"
    )
    demo.add_argument(
        "--cache-dir", type=Path, help="where the sample backend is built (default: a cache)"
    )
    demo.add_argument(
        "--ranks",
        type=_ranks_arg,
        default=0,
        metavar="N",
        help="then run the sample's distributed job on N ranks (torchrun, gloo)",
    )
    demo.set_defaults(command=_demo)
    return parser


def _add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("device", metavar="DEVICE", type=_device_arg, help="e.g. npu or npu:0")
    parser.add_argument("--aot", action="store_true", help="AOTInductor (aot_mode=True)")
    parser.add_argument(
        "--provider",
        metavar="MODULE:CALLABLE",
        type=_provider_arg,
        help="register this callback for DEVICE first (one that is not declared)",
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object (see the schema)")


def _device_arg(value: str) -> str:
    try:
        return _registry.normalize_device_type(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _provider_arg(spec: str) -> _registry.CppDeviceOptionsCallback:
    try:
        return _doctor.load_provider(spec)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


# --- list -----------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    _import_inductor()
    state = hook_state()
    sources = known_device_options_sources()
    ignored = _registry.invalid_declarations()
    if args.json:
        _print_json(
            "list",
            hook={
                **{key: value for key, value in state._asdict().items() if key != "torch_version"},
                "adopted": [function._asdict() for function in state.adopted],
                "registrations_apply": state.registrations_apply,
                "description": state.describe(),
            },
            devices=[source._asdict() for source in sources],
            invalid_declarations=[_declaration_json(declaration) for declaration in ignored],
        )
        return EXIT_OK
    style = _Style.for_stream(sys.stdout)
    print(_header(style, "list") + "\n")
    width = max(len("DEVICE"), *(len(source.device_type) for source in sources))
    print(style.bold(f"{'DEVICE':<{width}}  {'SOURCE':<16}  FROM"))
    for source in sources:
        print(f"{source.device_type:<{width}}  {source.source:<16}  {source.description}")
    if ignored:
        print(style.bold("\nIgnored declarations:"))
        for declaration in ignored:
            print(f"  {declaration.describe()}")
    print(
        style.dim(
            "\nRegistrations made in a program are not seen here; check one with "
            f"`{PROG} doctor DEVICE --provider module:callable`."
        )
    )
    return EXIT_OK


def _declaration_json(declaration: _registry.InvalidDeclaration) -> Document:
    entry_point = declaration.entry_point
    dist = entry_point.dist
    return {
        "name": entry_point.name,
        "value": entry_point.value,
        "distribution": f"{dist.name} {dist.version}" if dist is not None else None,
        "reason": declaration.reason,
    }


def _note_invalid_declarations(command: str) -> None:
    """On stderr: the device at hand is not concerned, but the user should know."""
    for declaration in _registry.invalid_declarations():
        print(f"{PROG} {command}: note: ignored {declaration.describe()}", file=sys.stderr)


# --- show -----------------------------------------------------------------------------------


def _show(
    args: argparse.Namespace, work: Path, source: DeviceOptionsSource, document: Document
) -> int:
    try:
        options = get_cpp_device_options(args.device, args.aot, args.compile_only)
        commands = _doctor.probe_commands(args.device, args.aot, args.compile_only, work)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit(0) from a provider is a failure, not success
        return _fail(args, "show", document, error, EXIT_FAILED)
    document["options"] = options._asdict()
    document["commands"] = commands._asdict()
    if args.json:
        _print_json("show", **document)
        return EXIT_OK
    style = _Style.for_stream(sys.stdout)
    print(_header(style, f"show {args.device}", _modes(args)))
    print(f"options from {source.source}: {source.description}\n")
    width = max(len(name) for name in FIELDS)
    for name, values in zip(FIELDS, options, strict=True):
        lines = [repr(value) for value in values] or [style.dim("(none)")]
        print(f"{style.bold(name)}{' ' * (width - len(name))}  {lines[0]}")
        for line in lines[1:]:
            print(f"{' ' * width}  {line}")
    print(f"\n{style.bold('compile')} ({commands.compiler}, compile_only=True):")
    print(f"  {commands.compile}")
    if commands.link is not None:
        print(f"{style.bold('link')} (compile_only=False):")
        print(f"  {commands.link}")
    return EXIT_OK


# --- doctor ---------------------------------------------------------------------------------


def _doctor_command(
    args: argparse.Namespace, work: Path, source: DeviceOptionsSource, document: Document
) -> int:
    style = _Style.for_stream(sys.stdout)
    text = not args.json
    if text:
        print(_header(style, f"doctor {args.device}", _modes(args)))
        print(f"options from {source.source}: {source.description}\n")
    checks = _doctor.run_doctor(
        args.device,
        args.aot,
        source,
        work,
        on_check=functools.partial(_print_check, style) if text else _ignore,
        progress=_spinner if text and sys.stdout.isatty() else None,
    )
    failed = [check for check in checks if check.status == "fail"]
    exit_code = EXIT_FAILED if failed else EXIT_OK
    if args.json:
        document.update(
            ok=not failed,
            exit_code=exit_code,
            checks=[dataclasses.asdict(check) for check in checks],
        )
        _print_json("doctor", **document)
    elif failed:
        print("\n" + style.fail(f"{len(failed)} of {len(checks)} checks failed."))
    else:
        print("\n" + style.ok(f"All {len(checks)} checks passed."))
    return exit_code


def _ignore(check: Check) -> None:
    pass


def _print_check(style: _Style, check: Check) -> None:
    label = {"pass": style.ok("PASS"), "fail": style.fail("FAIL"), "skip": style.skip("SKIP")}
    print(f"{label[check.status]}  {check.title}: {check.summary}")
    for problem in check.problems:
        _print_indented("cause: ", problem.cause)
        _print_indented("fix:   ", problem.fix)
        for line in problem.details:
            print(style.dim(f"      | {line}"))


def _print_indented(label: str, text: str) -> None:
    lines = text.splitlines() or [""]
    print(f"      {label}{lines[0]}")
    for line in lines[1:]:
        print(f"      {' ' * len(label)}{line}")


def _spinner(message: str) -> Callable[[], None]:
    stop = threading.Event()

    def spin() -> None:
        started = time.monotonic()
        for frame in itertools.cycle("|/-\\"):
            sys.stdout.write(f"\r{frame} {message} {time.monotonic() - started:.1f} s")
            sys.stdout.flush()
            if stop.wait(0.1):
                break
        sys.stdout.write("\r\033[K")
        sys.stdout.flush()

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()

    def done() -> None:
        stop.set()
        thread.join()

    return done


# --- demo -----------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from .sample.demo import run_demo

    return run_demo(sys.stdout, cache_dir=args.cache_dir, ranks=args.ranks)


def _ranks_arg(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of ranks >= 1, got {text!r}")
    return int(text)


# --- shared ---------------------------------------------------------------------------------


def _device_command(
    name: str, command: DeviceCommand, **placeholders: object
) -> Callable[[argparse.Namespace], int]:
    """``command`` for DEVICE, in a probe workspace, given where the options come from and
    the JSON document to fill in (``placeholders`` stand until it does); an unknown device
    stops here.

    The workspace is entered before Inductor is imported: importing it fixes
    ``TORCHINDUCTOR_CACHE_DIR`` (and creates that directory).
    """

    def run(args: argparse.Namespace) -> int:
        with _doctor.probe_workspace() as work:
            source, unknown = _prepare(args)
            _note_invalid_declarations(name)
            document: Document = {
                "device_type": args.device,
                "aot_mode": args.aot,
                **({"compile_only": args.compile_only} if "compile_only" in args else {}),
                "source": source._asdict(),
                **placeholders,
                "error": None,
            }
            if unknown is not None:
                return _fail(args, name, document, unknown, EXIT_UNKNOWN_DEVICE)
            return command(args, work, source, document)

    return run


def _import_inductor() -> None:
    """Import cpp_builder, which installs the hook (or registers natively)."""
    import torch._inductor.cpp_builder  # noqa: F401


def _prepare(args: argparse.Namespace) -> tuple[DeviceOptionsSource, UnknownDeviceError | None]:
    """Install the hook, register ``--provider``, and find where the options come from."""
    _import_inductor()
    if args.provider is not None:
        try:
            _registry.register_cpp_device_options(args.device, args.provider)
        except CppDeviceOptionsError as error:
            args.parser.error(f"argument --provider: {error}")
    source = device_options_source(args.device)
    return source, _doctor.unknown_device(args.device, source)


def _fail(
    args: argparse.Namespace,
    command: str,
    document: Document,
    error: BaseException,
    exit_code: int,
) -> int:
    if args.json:
        if "exit_code" in document:
            document["exit_code"] = exit_code
        document["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "provider": getattr(error, "provider", None),
        }
        _print_json(command, **document)
    else:
        style = _Style.for_stream(sys.stderr)
        kind = "" if isinstance(error, UnknownDeviceError) else f"{type(error).__name__}: "
        print(f"{PROG} {command}: {style.fail('error')}: {kind}{error}", file=sys.stderr)
    return exit_code


def _modes(args: argparse.Namespace) -> str:
    modes = [f"aot_mode={args.aot}"]
    if "compile_only" in args:
        modes.append(f"compile_only={args.compile_only}")
    return ", ".join(modes)


def _header(style: _Style, command: str, detail: str = "") -> str:
    state = hook_state()
    lines = [
        style.bold(f"{PROG} {__version__} {command}") + (f" ({detail})" if detail else ""),
        f"torch {state.torch_version}; {state.describe()}",
    ]
    return "\n".join(lines)


def _print_json(schema: str, **fields: object) -> None:
    import torch

    document = {
        "schema": f"{PROG}/{schema}/v1",
        "version": __version__,
        "torch_version": torch.__version__,
        **fields,
    }
    print(json.dumps(document, indent=2))


class _Style:
    """ANSI colour when writing to a terminal and NO_COLOR is unset, else plain text."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO) -> _Style:
        return cls(
            stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        )

    def _paint(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def ok(self, text: str) -> str:
        return self._paint("32", text)

    def fail(self, text: str) -> str:
        return self._paint("31;1", text)

    def skip(self, text: str) -> str:
        return self._paint("33", text)

    def bold(self, text: str) -> str:
        return self._paint("1", text)

    def dim(self, text: str) -> str:
        return self._paint("2", text)


if __name__ == "__main__":
    sys.exit(main())
