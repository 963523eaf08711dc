"""The command line's arguments: one sub-command each for ``list``, ``show``, ``doctor``
and ``demo``, and the checks argparse cannot make (DEVICE or ``--all``, which
``--provider`` for which device). The docs' CLI reference is generated from it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from .._diagnose.provider_loading import parse_provider_spec
from .._lookup.device_types import normalize_device_type
from .demo import demo_command, ranks_arg
from .doctor_report import doctor_entry
from .listing import list_command
from .output import EXIT_USAGE, PROG, Output
from .show import show_entry


class _Parser(argparse.ArgumentParser):
    """A usage error is also a JSON document on stdout when --json was given."""

    def __init__(self, *args: Any, output: Output | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.output = output or Output()

    def error(self, message: str) -> NoReturn:
        if self.output.json_requested:
            command = self.prog.removeprefix(PROG).strip() or None
            self.output.print_json(
                "error",
                command=command,
                exit_code=EXIT_USAGE,
                error={"type": "UsageError", "message": message, "provider": None},
            )
        super().error(message)


def build_parser(output: Output | None = None) -> argparse.ArgumentParser:
    """The parser of ``inductor-device-options`` and its sub-commands; a usage error is
    written to ``output`` too."""
    output = output or Output()
    parser = _Parser(
        prog=PROG,
        description="The C++ compile options TorchInductor gets for each device: "
        "list the devices, show a device's options and compiler commands, check them.",
        epilog="Exit codes: 0 ok, 1 failed, 2 usage error, 3 unknown device.",
        output=output,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    _add_list(commands, output)
    _add_show(commands, output)
    _add_doctor(commands, output)
    _add_demo(commands, output)
    return parser


Commands = Any  # argparse's _SubParsersAction, private in typeshed's eyes


def _add_list(commands: Commands, output: Output) -> None:
    listing = commands.add_parser(
        "list",
        help="torch, the hook and every known device with where its options come from",
        output=output,
    )
    _add_json(listing)
    listing.set_defaults(command=list_command)


def _add_show(commands: Commands, output: Output) -> None:
    show = commands.add_parser(
        "show",
        help="a device's options and the compile and link commands Inductor runs",
        output=output,
    )
    _add_device(show, required=True)
    show.add_argument(
        "--compile-only",
        action="store_true",
        help="the options for compiling to an object; show no link command",
    )
    _add_json(show)
    show.set_defaults(
        command=show_entry, parser=show, all=False, check_arguments=check_device_arguments
    )


def _add_doctor(commands: Commands, output: Output) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check a device's options: dirs, headers, libraries, a real probe build and load",
        output=output,
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
        help="then real Inductor compiles on DEVICE in a fresh python: a tiny graph, and a "
        "model with weights and extern kernels (cpp_wrapper; with --aot AOTInductor, each "
        "package loaded and run)",
    )
    doctor.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        type=_model_arg,
        help="with --compile, then your own model: FUNCTION() returns the module and a tuple "
        "of its inputs (MODULE importable from the current directory)",
    )
    _add_json(doctor)
    doctor.set_defaults(command=doctor_entry, parser=doctor, check_arguments=check_device_arguments)


def _add_demo(commands: Commands, output: Output) -> None:
    demo = commands.add_parser(
        "demo",
        help="the whole chain on the sample device: build, compile a model, check",
        output=output,
    )
    demo.add_argument(
        "--cache-dir", type=Path, help="where the sample backend is built (default: a cache)"
    )
    demo.add_argument(
        "--ranks",
        type=ranks_arg,
        default=0,
        metavar="N",
        help="then run the sample's distributed job on N ranks (torchrun, gloo)",
    )
    demo.set_defaults(command=demo_command)


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
        return normalize_device_type(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _provider_arg(text: str) -> tuple[str | None, str]:
    """Only the form is checked here: loading the module is a check of its own."""
    try:
        return parse_provider_spec(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _model_arg(text: str) -> str:
    module, colon, function = text.partition(":")
    if not colon or not module or not function:
        raise argparse.ArgumentTypeError(f"{text!r} is not of the form MODULE:FUNCTION")
    return text


def check_device_arguments(args: argparse.Namespace) -> None:
    """DEVICE or --all; --provider once for DEVICE (its DEVICE= prefix, if any, the same),
    with --all any number of DEVICE=MODULE:CALLABLE."""
    parser: argparse.ArgumentParser = args.parser
    specs: list[tuple[str | None, str]] = args.provider
    if getattr(args, "model", None) and not getattr(args, "compile", False):
        parser.error("argument --model: only with --compile (it compiles your model)")
    if args.all:
        if args.device is not None:
            parser.error("give DEVICE or --all, not both")
        if getattr(args, "compile", False):
            parser.error("argument --compile: not with --all (give one DEVICE)")
        for device, spec in specs:
            if device is None:
                parser.error(
                    f"argument --provider: with --all, give DEVICE={spec} (the device it serves)"
                )
        return
    if args.device is None:
        parser.error("the following arguments are required: DEVICE (or --all)")
    if len(specs) > 1:
        parser.error("argument --provider: give it once for DEVICE (or use --all)")
    for device, spec in specs:
        if device not in (None, args.device):
            parser.error(
                f"argument --provider: {device}={spec} is for device {device!r}, "
                f"not {args.device!r}"
            )
