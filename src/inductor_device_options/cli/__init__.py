"""``inductor-device-options``: which devices have C++ options, what they are, and do they work.

Usage (also ``python -m inductor_device_options``)::

    inductor-device-options list [--json]
    inductor-device-options show DEVICE [--aot] [--compile-only]
                                        [--provider MODULE:CALLABLE] [--json]
    inductor-device-options doctor DEVICE [--aot] [--provider MODULE:CALLABLE] [--compile]
                                          [--json]
    inductor-device-options doctor --all [--aot] [--provider DEVICE=MODULE:CALLABLE ...] [--json]
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
    One line per check, ``PASS``/``WARN``/``FAIL``/``SKIP``, and for each failure or
    warning its cause and its fix (a warning does not fail doctor):

    - ``hook``: the options reach Inductor (its real function is asked);
    - ``device_asked``: the device's cpp_wrapper builds ask the builder for DEVICE: its
      registered C++ wrapper codegen reports DEVICE (a ``CppWrapperCpu`` subclass that
      never sets ``self.device`` reports ``"cpu"``, and DEVICE's options are never
      consulted); AOTInductor asks for the graph's device. SKIP where no backend
      registered a codegen for DEVICE in this process;
    - ``options``: they are computed, for compiling and for linking; an error the package
      raises itself is reported as an internal error of inductor-device-options, never as
      the provider's;
    - ``flags``: every value is well formed; ``include_dirs``: each exists;
    - ``headers``: the headers Inductor's generated code includes for DEVICE are in the
      include dirs and preprocess with the compile command Inductor runs (``-M``: every
      nested ``#include`` and ``#error``, not a full compile). Which headers: what the
      device's wrapper codegen class registered in this process names, else what its
      provider declares (a callable attribute ``inductor_headers(device_type, aot_mode)``
      of the provider callback or DeviceInterface, returning header names as written
      between ``<>``; the Ascend provider declares torch_npu's), else torch's default
      (``torch/csrc/inductor/cpp_wrapper/<device>.h``, with ``--aot``
      ``.../aoti_include/<device>.h``; torch 2.6: ``.../aoti_torch/generated/c_shim_<device>.h``);
      and the header torch's own precompile step includes for the device the builds ask
      for (``codecache._get_cpp_wrapper_header``), whatever the codegen names;
    - ``shadowed_headers``: WARN for a header that two or more include dirs provide with
      different contents (every copy, the first in ``-I`` order is the one used), where
      one of them is not torch's own;
    - ``libraries``: each ``-l`` resolves in the library dirs or the system linker path;
    - ``probe_build``: ``CppBuilder`` compiles and links a small shared object;
    - ``probe_load``: that probe, linked so that it needs every library
      (``-Wl,--no-as-needed``), loads in a fresh Python that has imported torch, with this
      environment; a failure names the library, shows how each one resolved (``ldd``)
      and the fix (a runpath, ``LD_LIBRARY_PATH``, CANN's ``set_env.sh``);
    - ``aoti_runner`` (``--aot`` without ``--compile``): SKIP, saying so: whether torch has
      an AOTInductor model runner for DEVICE is seen only by loading a package
      (``--compile``).

    ``TORCHINDUCTOR_CACHE_DIR`` points into a temporary directory when unset.

    ``--compile`` (not with ``--all``): then a real Inductor compile of ``x * 2 + 1`` on
    DEVICE judges them, in a fresh Python with this environment (``sys.executable``, its own
    process group, killed after 900 s; ``TORCHINDUCTOR_COMPILE_THREADS=1``): ``import torch``
    (its backend autoload loads the device's backend), the ``--provider`` registered, then
    ``torch.compile(..., options={"cpp_wrapper": True})`` of a tensor moved to DEVICE, or
    with ``--aot`` ``aoti_compile_and_package`` of its export, each result compared with the
    CPU's. A recording wrapper assigned to ``cpp_builder.get_cpp_torch_device_options`` (the
    hook adopts it) sees every question Inductor's builds ask, an audit hook every compiler
    command. Its checks come after the others:

    - ``compile_run``: the compile runs (a failure: torch's error, its relevant lines);
    - ``builds_asked``: some build asks for DEVICE (with ``aot_mode``); a failure names the
      devices asked instead, the device's C++ wrapper codegen class and the options never
      consulted;
    - ``options_reached``: every include dir, definition and library of the options is in
      a compiler command run (libraries: in a linking one; a module Inductor's cache
      serves is not linked again);
    - ``aoti_load`` (with ``--aot``): the package loads and runs (``aoti_load_package``).
``doctor --all``
    doctor for every device this process knows except torch's own (cpu, cuda, xpu, mps):
    declared (entry points), device interfaces that define ``get_cpp_device_options``,
    and those given with ``--provider DEVICE=MODULE:CALLABLE`` (repeatable); one line
    each. The bundled Ascend provider's ``npu`` is skipped where torch_npu is not
    installed (``doctor npu`` checks it anyway).

A new process does not see registrations made in a program: it sees declared providers
(the ``inductor_device_options`` entry point group). ``--provider module:callable``
registers an undeclared callback for DEVICE first (the current directory is importable).
One that cannot be loaded (its module raises at import, ``SystemExit`` included, or lacks
the callable) is a failed check, exit code 1: ``show`` says why on stderr, ``doctor``
fails its first check, ``provider``, naming the module, the exception and where it was
raised, and the others are skipped.

Colour is used only when stdout is a terminal and ``NO_COLOR`` is unset.

Paths that are not UTF-8 (legal on Linux: ``os.fsdecode`` turns each byte that is not
UTF-8 into a lone surrogate, U+DC80 to U+DCFF) are written with each such byte as
``\\udcXX`` (byte ``0xff`` as ``\\udcff``), in text and in JSON alike: in JSON that is
the json module's escape of a lone surrogate, so ``os.fsencode(json.loads(...))`` gives
back the original bytes.

Exit codes: 0 success (every check passed; warnings allowed); 1 the options could not be
computed, a ``--provider`` could not be loaded or a check failed (a provider that raises
``SystemExit``, even ``SystemExit(0)``, included), or the output could not be written (the
reader of a pipe went away: the command stops quietly); 2 usage error (bad arguments, a
``--provider`` that is not of the form ``MODULE:CALLABLE`` or cannot be registered for
DEVICE); 3 unknown device (nothing provides options for it and torch has none of its
own: declare a provider). With stdout closed the command runs and only its exit code tells.

Entry points of the group whose name is not a device name Inductor can ask for (or is one
of torch's own devices) are ignored: ``list`` shows them, ``show`` and ``doctor`` note them
(on stderr; with ``--json`` in ``notes``). So are devices that several distributions
declare: ``list`` shows which one serves the device and why, ``show`` and ``doctor`` note it.

JSON (``--json``): one object on stdout, nothing on stderr (what would have gone there,
warnings of torch or of a provider included, is in ``notes``). ``schema`` names the
command and the version of its layout; keys are only ever added within a version. Every
document has ``schema`` (str), ``version`` (str, this package) and ``torch_version`` (str);
``list``, ``show``, ``doctor`` and ``doctor-all`` have ``notes`` ([str]). Shared shapes::

    Source  = {"device_type": str,
               "source": "registration" | "cpp_builder registration" | "entry point"
                         | "device interface" | "torch",
               "description": str,
               "guaranteed": bool}    # the package's checks apply to what it gives
    Error   = {"type": str, "message": str, "provider": str | null}
    Asked   = {"device_type": str, "aot_mode": bool,
               "asked": str | null,         # the device type Inductor's builds ask for;
                                            # null: not known in this process ("reason")
               "codegen": str | null,       # the C++ wrapper codegen that decides it
               "reason": str, "precompiled_header": str | null}
    Check   = {"name": "provider" | "hook" | "device_asked" | "options" | "flags"
                       | "include_dirs"
                       | "headers" | "shadowed_headers" | "libraries" | "probe_build"
                       | "probe_load"
                       | "aoti_runner"     # --aot without --compile: always "skip"
                       | "compile_run" | "builds_asked" | "options_reached"
                       | "aoti_load",      # --compile (aoti_load: with --aot)
               "title": str, "status": "pass" | "warn" | "fail" | "skip", "summary": str,
               "problems": [{"cause": str, "fix": str, "details": [str]}]}
               # problems: empty unless "fail" or "warn"; "provider" only when a
               # --provider could not be loaded (then first, and every other check "skip")

``inductor-device-options/list/v1``::

    {"hook": {"mode": "hook" | "native" | "waiting", "chains_to": str | null,
              "replaced_by": str | null, "registrations_apply": bool,
              "adopted": [{"description": str, "behaviour": str}, ...],  # assigned after the hook
              "device_interface_backport": bool | null, "description": str},
     "devices": [Source, ...],                       # sorted by device_type
     "invalid_declarations": [{"name": str, "value": str, "distribution": str | null,
                               "reason": str}],      # entry points ignored
     "declaration_conflicts": [{"device_type": str, "chosen": EntryPoint,
                                "others": [EntryPoint], "reason": str}],
     "not_asked": [Asked]}    # served devices whose cpp_wrapper builds ask for another
     # EntryPoint = {"name": str, "value": str, "distribution": str | null}

``inductor-device-options/show/v1``::

    {"device_type": str, "aot_mode": bool, "compile_only": bool,
     "source": Source,
     "options": {"definitions": [str], "include_dirs": [str], "cflags": [str],
                 "ldflags": [str], "libraries_dirs": [str], "libraries": [str],
                 "passthrough_args": [str]} | null,     # null when "error" is set
     "commands": {"compiler": str, "compile": str, "link": str | null} | null,
     "asked": Asked | null,    # set when "options" is
     "error": Error | null}    # "UnknownDeviceError": exit code 3; any other: the
                               # provider failed (e.g. "CannNotFoundError") or could not
                               # be loaded ("ProviderLoadError"), exit code 1

``inductor-device-options/doctor/v1``::

    {"device_type": str, "aot_mode": bool, "source": Source,
     "ok": bool, "exit_code": 0 | 1 | 3,
     "checks": [Check, ...],
     "error": Error | null}          # set (and "checks" empty) for an unknown device

``details`` holds the first relevant compiler output lines of a failed build (of torch's
error, for ``compile_run`` and ``aoti_load``), the include dirs searched for a missing
header, every copy of a shadowed header, how each library of a probe that does not load
resolved, or the last compiler commands (``options_reached``).

``inductor-device-options/doctor-all/v1``::

    {"aot_mode": bool, "ok": bool, "exit_code": 0 | 1,
     "devices": [{"device_type": str, "source": Source,
                  "status": "pass" | "warn" | "fail" | "skip",  # skip: "skipped" says why
                  "skipped": str | null, "checks": [Check, ...]}, ...]}  # by device_type

``inductor-device-options/error/v1`` (a usage error with ``--json``, exit code 2; the
usage message also goes to stderr)::

    {"command": "list" | "show" | "doctor" | null, "exit_code": 2,
     "error": Error}                                 # "type": "UsageError"
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from .. import __version__
from .._errors import CppDeviceOptionsError, ProviderLoadError, raised_by_provider
from ..diagnose import doctor as _doctor
from ..diagnose import real_compile as _doctor_compile
from ..diagnose.doctor import Check, ProviderSpec, UnknownDeviceError
from ..diagnose.module_load import FreshPython
from ..hook.asked import AskedDevice, asked_device_type
from ..hook.asked import seen as seen_not_asked
from ..hook.install import (
    DeviceOptionsSource,
    device_options_source,
    get_cpp_device_options,
    hook_state,
    known_device_options_sources,
)
from ..lookup import registry as _registry
from ..options.model import FIELDS

if TYPE_CHECKING:
    from importlib import metadata

Document = dict[str, object]
DeviceCommand = Callable[[argparse.Namespace, Path, DeviceOptionsSource, Document], int]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_DEVICE = 3

PROG = "inductor-device-options"
# The documents that carry "notes" (what would have gone to stderr).
_WITH_NOTES = ("list", "show", "doctor", "doctor-all")


def main(argv: Sequence[str] | None = None) -> int:
    global _json_requested
    arguments = list(sys.argv[1:] if argv is None else argv)
    _json_requested = "--json" in arguments
    if sys.stdout is None:  # started with stdout closed: the output goes nowhere
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # a path that is not UTF-8 is written \udcXX
            reconfigure(errors="backslashreplace")
    try:
        args = _parser().parse_args(arguments)
        check_arguments: Callable[[argparse.Namespace], None] | None = getattr(
            args, "check_arguments", None
        )
        if check_arguments is not None:
            check_arguments(args)
        command: Callable[[argparse.Namespace], int] = args.command
        with _only_the_document() if getattr(args, "json", False) else _nothing():
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
# With --json: where the document goes, and what would have gone to stderr meanwhile.
_document_stream: TextIO | None = None
_captured: io.StringIO | None = None


@contextmanager
def _only_the_document() -> Iterator[None]:
    """stdout and stderr into a buffer (torch's warnings, a provider's prints), the JSON
    document alone to stdout; what the buffer holds goes to the document's notes, or to
    stderr if the command ends with an exception (a usage error, a crash)."""
    global _document_stream, _captured
    real_out, real_err = sys.stdout, sys.stderr
    captured = io.StringIO()
    _document_stream, _captured = real_out, captured
    sys.stdout = sys.stderr = captured
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away: nothing more to say
    except BaseException:
        real_err.write(captured.getvalue())
        raise
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        _document_stream = _captured = None


@contextmanager
def _nothing() -> Iterator[None]:
    yield


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
    _add_device(show, required=True)
    show.add_argument(
        "--compile-only",
        action="store_true",
        help="the options for compiling to an object; show no link command",
    )
    _add_json(show)
    show.set_defaults(
        command=_device_command("show", _show, options=None, commands=None, asked=None),
        parser=show,
        all=False,
        check_arguments=_check_device_arguments,
    )

    doctor = commands.add_parser(
        "doctor",
        help="check a device's options: dirs, headers, libraries, a real probe build and load",
    )
    _add_device(doctor, required=False)
    doctor.add_argument(
        "--all",
        action="store_true",
        help="check every device this process knows (not torch's own); with --provider "
        "DEVICE=MODULE:CALLABLE, as often as needed",
    )
    doctor.add_argument(
        "--compile",
        action="store_true",
        help="then a real Inductor compile of a tiny graph on DEVICE in a fresh python "
        "(cpp_wrapper; with --aot AOTInductor, and the package loaded and run)",
    )
    _add_json(doctor)
    doctor.set_defaults(
        command=_doctor_entry,
        parser=doctor,
        check_arguments=_check_device_arguments,
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


def _add_device(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "device",
        metavar="DEVICE",
        type=_device_arg,
        nargs=None if required else "?",
        help="e.g. npu or npu:0",
    )
    parser.add_argument("--aot", action="store_true", help="AOTInductor (aot_mode=True)")
    parser.add_argument(
        "--provider",
        metavar="MODULE:CALLABLE",
        type=_provider_arg,
        action="append",
        default=[],
        help="register this callback for DEVICE first (one that is not declared)",
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object (see the schema)")


def _device_arg(value: str) -> str:
    try:
        return _registry.normalize_device_type(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _provider_arg(text: str) -> ProviderSpec:
    """Only the form is checked here: loading the module is a check of its own."""
    try:
        return _doctor.parse_provider_spec(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _check_device_arguments(args: argparse.Namespace) -> None:
    """DEVICE or --all; --provider once for DEVICE (its DEVICE= prefix, if any, the same),
    with --all any number of DEVICE=MODULE:CALLABLE."""
    parser: argparse.ArgumentParser = args.parser
    specs: list[ProviderSpec] = args.provider
    if args.all:
        if args.device is not None:
            parser.error("give DEVICE or --all, not both")
        if getattr(args, "compile", False):
            parser.error("argument --compile: not with --all (give one DEVICE)")
        for spec in specs:
            if spec.device_type is None:
                parser.error(
                    f"argument --provider: with --all, give DEVICE={spec} (the device it serves)"
                )
        return
    if args.device is None:
        parser.error("the following arguments are required: DEVICE (or --all)")
    if len(specs) > 1:
        parser.error("argument --provider: give it once for DEVICE (or use --all)")
    for spec in specs:
        if spec.device_type not in (None, args.device):
            parser.error(
                f"argument --provider: {spec.device_type}={spec} is for device "
                f"{spec.device_type!r}, not {args.device!r}"
            )


# --- list -----------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    _import_inductor()
    state = hook_state()
    sources = known_device_options_sources()
    ignored = _registry.invalid_declarations()
    conflicts = _registry.declaration_conflicts()
    not_asked = _not_asked(sources)
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
            declaration_conflicts=[_conflict_json(conflict) for conflict in conflicts],
            not_asked=[asked._asdict() for asked in not_asked],
        )
        return EXIT_OK
    style = _Style.for_stream(sys.stdout)
    print(_header(style, "list") + "\n")
    width = max(len("DEVICE"), *(len(source.device_type) for source in sources))
    kinds = max(len("SOURCE"), *(len(source.source) for source in sources))
    print(style.bold(f"{'DEVICE':<{width}}  {'SOURCE':<{kinds}}  FROM"))
    for source in sources:
        print(f"{source.device_type:<{width}}  {source.source:<{kinds}}  {source.description}")
    if ignored:
        print(style.bold("\nIgnored declarations:"))
        for declaration in ignored:
            print(f"  {declaration.describe()}")
    if conflicts:
        print(style.bold("\nDevices declared by several distributions:"))
        for conflict in conflicts:
            print(f"  {conflict.describe()}")
    if not_asked:
        print(
            style.bold(
                "\nNot asked for by their cpp_wrapper builds (their options never reach them):"
            )
        )
        for asked in not_asked:
            print(f"  {asked.device_type}: {asked.describe()}")
    print(
        style.dim(
            "\nRegistrations made in a program are not seen here; check one with "
            f"`{PROG} doctor DEVICE --provider module:callable`."
        )
    )
    return EXIT_OK


def _not_asked(sources: Sequence[DeviceOptionsSource]) -> list[AskedDevice]:
    """The served devices whose cpp_wrapper builds ask for another device type: as their
    registered codegen reports, or as builds of this process asked."""
    found = []
    for source in sources:
        if source.source == "torch" or source.device_type in _registry.RESERVED_DEVICE_TYPES:
            continue
        asked = asked_device_type(source.device_type, aot_mode=False)
        if asked.mismatch:
            found.append(asked)
    for (device_type, asked_type), codegen in sorted(seen_not_asked.items()):
        if all(asked.device_type != device_type for asked in found):
            found.append(
                AskedDevice(device_type, False, asked_type, codegen, "seen in a build", None)
            )
    return found


def _declaration_json(declaration: _registry.InvalidDeclaration) -> Document:
    entry_point = declaration.entry_point
    dist = entry_point.dist
    return {
        "name": entry_point.name,
        "value": entry_point.value,
        "distribution": f"{dist.name} {dist.version}" if dist is not None else None,
        "reason": declaration.reason,
    }


def _conflict_json(conflict: _registry.DeclarationConflict) -> Document:
    def entry(entry_point: metadata.EntryPoint) -> Document:
        dist = entry_point.dist
        return {
            "name": entry_point.name,
            "value": entry_point.value,
            "distribution": f"{dist.name} {dist.version}" if dist is not None else None,
        }

    return {
        "device_type": conflict.device_type,
        "chosen": entry(conflict.chosen),
        "others": [entry(entry_point) for entry_point in conflict.others],
        "reason": conflict.reason,
    }


def _note_invalid_declarations(command: str) -> None:
    """On stderr (with --json: in the notes): the device at hand is not concerned, but the
    user should know."""
    for declaration in _registry.invalid_declarations():
        print(f"{PROG} {command}: note: ignored {declaration.describe()}", file=sys.stderr)
    for conflict in _registry.declaration_conflicts():
        if conflict.warns:
            print(f"{PROG} {command}: note: {conflict.describe()}", file=sys.stderr)


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
    asked = asked_device_type(args.device, args.aot)
    document["options"] = options._asdict()
    document["commands"] = commands._asdict()
    document["asked"] = asked._asdict()
    if args.json:
        _print_json("show", **document)
        return EXIT_OK
    style = _Style.for_stream(sys.stdout)
    print(_header(style, f"show {args.device}", _modes(args)))
    print(f"options from {source.source}: {source.description}")
    line = f"builds: {asked.describe()}"
    print(style.fail(line + "; these options never reach them") if asked.mismatch else line)
    print()
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


def _doctor_entry(args: argparse.Namespace) -> int:
    if args.all:
        return _doctor_all(args)
    command = _device_command(
        "doctor", _doctor_command, ok=False, exit_code=EXIT_UNKNOWN_DEVICE, checks=[]
    )
    return command(args)


def _doctor_command(
    args: argparse.Namespace, work: Path, source: DeviceOptionsSource, document: Document
) -> int:
    style = _Style.for_stream(sys.stdout)
    text = not args.json
    if text:
        print(_header(style, f"doctor {args.device}", _modes(args)))
        print(f"options from {source.source}: {source.description}\n")
    on_check = functools.partial(_print_check, style) if text else _ignore
    load_error: ProviderLoadError | None = args.load_error
    progress = _spinner if text and sys.stdout.isatty() else None
    if load_error is not None:
        names = _doctor.check_names(args.aot, args.compile)
        checks = _doctor.provider_load_failed(load_error, names)
        for check in checks:
            on_check(check)
    else:
        checks = _doctor.run_doctor(
            args.device,
            args.aot,
            source,
            work,
            on_check=on_check,
            progress=progress,
            loader=args.loader,
            compile=args.compile,
        )
        if args.compile:
            provider = str(args.provider[0]) if args.provider else None
            for check in _doctor_compile.compile_checks(
                args.device, args.aot, source, provider, work / "compile", checks, progress
            ):
                checks.append(check)
                on_check(check)
    failed = [check for check in checks if check.status == "fail"]
    exit_code = EXIT_FAILED if failed else EXIT_OK
    if args.json:
        document.update(
            ok=not failed,
            exit_code=exit_code,
            checks=[dataclasses.asdict(check) for check in checks],
        )
        _print_json("doctor", **document)
    else:
        print("\n" + _verdict(style, checks))
    return exit_code


def _verdict(style: _Style, checks: Sequence[Check]) -> str:
    failed = [check for check in checks if check.status == "fail"]
    warned = [check for check in checks if check.status == "warn"]
    if failed:
        return style.fail(f"{len(failed)} of {len(checks)} checks failed.")
    skipped = [check for check in checks if check.status == "skip"]
    with_warnings = f", {len(warned)} with a warning" if warned else ""
    not_run = f"; {len(skipped)} skipped" if skipped else ""
    return style.ok(f"All {len(checks) - len(skipped)} checks passed{with_warnings}{not_run}.")


def _ignore(check: Check) -> None:
    pass


def _label(style: _Style, status: str) -> str:
    return {
        "pass": style.ok("PASS"),
        "warn": style.skip("WARN"),
        "fail": style.fail("FAIL"),
        "skip": style.skip("SKIP"),
    }[status]


def _print_check(style: _Style, check: Check) -> None:
    print(f"{_label(style, check.status)}  {check.title}: {check.summary}")
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


def _doctor_all(args: argparse.Namespace) -> int:
    """doctor for each device this process knows, torch's own left out: one line each."""
    style = _Style.for_stream(sys.stdout)
    loaders = _Loaders()
    with loaders, _doctor.probe_workspace() as work:
        _import_inductor()
        failed_loads = _register_providers(args, args.provider)
        _note_invalid_declarations("doctor")
        sources = {source.device_type: source for source in _doctor.all_devices()}
        sources.update({device: source for device, (source, _) in failed_loads.items()})
        if not args.json:
            print(_header(style, "doctor --all", _modes(args)) + "\n")
        width = max([len(device) for device in sources] or [0])
        results = []
        for index, (device, source) in enumerate(sorted(sources.items())):
            more = index + 1 < len(sources)
            result = _doctor_one(args, device, source, work, failed_loads, loaders, more)
            results.append(result)
            if not args.json:
                print(_device_line(style, result, width))
    failed = [str(result["device_type"]) for result in results if result["status"] == "fail"]
    exit_code = EXIT_FAILED if failed else EXIT_OK
    if args.json:
        _print_json(
            "doctor-all", aot_mode=args.aot, ok=not failed, exit_code=exit_code, devices=results
        )
    elif not results:
        print("No device other than torch's own has C++ options in this process.")
    elif failed:
        print(
            "\n"
            + style.fail(f"{len(failed)} of {len(results)} devices failed: {', '.join(failed)}.")
            + f" `{PROG} doctor DEVICE` shows why."
        )
    else:
        print("\n" + style.ok(f"All {len(results)} devices passed."))
    return exit_code


def _doctor_one(
    args: argparse.Namespace,
    device: str,
    source: DeviceOptionsSource,
    work: Path,
    failed_loads: dict[str, tuple[DeviceOptionsSource, ProviderLoadError]],
    loaders: _Loaders,
    more: bool,
) -> Document:
    skipped = None if device in failed_loads else _doctor.bundled_backend_missing(source)
    checks: list[Check] = []
    if device in failed_loads:
        names = _doctor.check_names(args.aot, compile=False)  # no --compile with --all
        checks = _doctor.provider_load_failed(failed_loads[device][1], names)
    elif skipped is None:
        device_work = work / device
        device_work.mkdir()
        checks = _doctor.run_doctor(
            device, args.aot, source, device_work, loader=loaders.next(more)
        )
    statuses = {check.status for check in checks}
    status = next(
        (status for status in ("fail", "warn") if status in statuses),
        "skip" if skipped is not None else "pass",
    )
    return {
        "device_type": device,
        "source": source._asdict(),
        "status": status,
        "skipped": skipped,
        "checks": [dataclasses.asdict(check) for check in checks],
    }


class _Loaders:
    """The fresh Pythons of ``doctor --all``, one per device: each starts importing torch
    while the device before it is checked."""

    def __init__(self) -> None:
        self._ready: FreshPython | None = FreshPython()

    def next(self, more: bool) -> FreshPython:
        """The next device's; with ``more`` devices after it, the one after starts."""
        loader = self._ready or FreshPython()
        self._ready = FreshPython() if more else None
        return loader

    def __enter__(self) -> _Loaders:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._ready is not None:
            self._ready.close()
            self._ready = None


def _device_line(style: _Style, result: Document, width: int) -> str:
    checks: list[Document] = result["checks"]  # type: ignore[assignment]
    source: Document = result["source"]  # type: ignore[assignment]
    status = str(result["status"])
    failed = [str(check["title"]) for check in checks if check["status"] == "fail"]
    warned = [str(check["title"]) for check in checks if check["status"] == "warn"]
    if status == "skip":
        summary = f"skipped: {result['skipped']}"
    elif failed:
        summary = f"{len(failed)} of {len(checks)} checks failed: {', '.join(failed)}"
    else:
        skipped = sum(check["status"] == "skip" for check in checks)
        summary = f"all {len(checks) - skipped} checks passed"
        if warned:
            summary += f", with a warning: {', '.join(warned)}"
        if skipped:
            summary += f"; {skipped} skipped"
    device = f"{result['device_type']:<{width}}"
    return f"{_label(style, status)}  {device}  {source['source']}: {summary}"


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
    from ..demo import run_demo

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
    stops here, a ``--provider`` that cannot be loaded too (``show``) or is handed on as
    ``args.load_error`` (``doctor``).

    The workspace is entered before Inductor is imported: importing it fixes
    ``TORCHINDUCTOR_CACHE_DIR`` (and creates that directory).
    """

    def run(args: argparse.Namespace) -> int:
        # doctor's fresh Python imports torch while this process does.
        with FreshPython() if name == "doctor" else _nothing() as args.loader:
            return in_workspace(args)

    def in_workspace(args: argparse.Namespace) -> int:
        with _doctor.probe_workspace() as work:
            _import_inductor()
            failed_loads = _register_providers(args, args.provider)
            _note_invalid_declarations(name)
            failed = failed_loads.get(args.device)
            source = failed[0] if failed else device_options_source(args.device)
            args.load_error = failed[1] if failed else None
            document: Document = {
                "device_type": args.device,
                "aot_mode": args.aot,
                **({"compile_only": args.compile_only} if "compile_only" in args else {}),
                "source": source._asdict(),
                **placeholders,
                "error": None,
            }
            if failed is not None and name == "show":
                return _fail(args, name, document, failed[1], EXIT_FAILED)
            unknown = None if failed else _doctor.unknown_device(args.device, source)
            if unknown is not None:
                return _fail(args, name, document, unknown, EXIT_UNKNOWN_DEVICE)
            return command(args, work, source, document)

    return run


def _import_inductor() -> None:
    """Import cpp_builder, which installs the hook (or registers natively)."""
    import torch._inductor.cpp_builder  # noqa: F401


def _register_providers(
    args: argparse.Namespace, specs: Sequence[ProviderSpec]
) -> dict[str, tuple[DeviceOptionsSource, ProviderLoadError]]:
    """Load and register each ``--provider`` (for DEVICE, or the device it names); those
    that cannot be loaded, by device, with the source they would have been. One that
    cannot be registered for its device is a usage error."""
    failed: dict[str, tuple[DeviceOptionsSource, ProviderLoadError]] = {}
    for spec in specs:
        device = spec.device_type or args.device
        try:
            with redirect_stdout(sys.stderr):  # what the module prints is not the output
                callback = _doctor.load_provider(spec, device)
        except ProviderLoadError as error:
            failed[device] = (
                DeviceOptionsSource(device, "registration", str(spec), guaranteed=True),
                error,
            )
            continue
        try:
            _registry.register_cpp_device_options(device, callback)
        except CppDeviceOptionsError as error:
            args.parser.error(f"argument --provider: {error}")
    return failed


def _fail(
    args: argparse.Namespace,
    command: str,
    document: Document,
    error: BaseException,
    exit_code: int,
) -> int:
    provider = getattr(error, "provider", None) or raised_by_provider(error)
    if args.json:
        if "exit_code" in document:
            document["exit_code"] = exit_code
        document["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "provider": provider,
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
    if schema in _WITH_NOTES:
        document["notes"] = _captured.getvalue().splitlines() if _captured is not None else []
    # ensure_ascii: a lone surrogate (a path byte that is not UTF-8) is written \udcXX.
    print(json.dumps(document, indent=2, ensure_ascii=True), file=_document_stream or sys.stdout)


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
