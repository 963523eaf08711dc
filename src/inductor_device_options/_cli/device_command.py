"""What ``show`` and ``doctor`` share: a probe workspace, the ``--provider`` loaded and
registered, where the device's options come from, the JSON document to fill in, and the
failures that stop a command before it starts (an unknown device, a provider that cannot
be loaded)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from .._diagnose.backend_init_run import BackendInit, run_backend_init
from .._diagnose.devices import UnknownDeviceError, unknown_device
from .._diagnose.module_load import FreshPython
from .._diagnose.probe import probe_workspace
from .._diagnose.provider_loading import load_provider
from .._errors import CppDeviceOptionsError, ProviderLoadError, raised_by_provider
from .._hook.sources import found_source
from .._lookup import entry_points as _entry_points
from .._lookup import registry as _registry
from .._source import DeviceOptionsSource, FoundSource
from .output import (
    EXIT_FAILED,
    EXIT_UNKNOWN_DEVICE,
    PROG,
    Document,
    Output,
    Style,
    provider_doors_document,
    source_document,
    torch_hooks_document,
)

#: The providers of ``--provider`` that could not be loaded, by device: the source they
#: would have been (serving nothing), and why.
FailedLoads = dict[str, tuple[FoundSource, ProviderLoadError]]


@dataclass
class DeviceRun:
    """A run of ``show`` or ``doctor`` for one device: its arguments, its output, and what
    the run set up for it."""

    args: argparse.Namespace
    output: Output
    work: Path  # the probe workspace
    found: FoundSource  # where the device's options come from, found once for the run
    document: Document  # the JSON document, filled in by the command
    loader: FreshPython | None = None  # doctor's fresh python, importing torch meanwhile
    load_error: ProviderLoadError | None = None  # the --provider that could not be loaded
    backend_init: BackendInit | None = None  # the device module's _inductor_backend_init, run


DeviceCommand = Callable[[DeviceRun], int]


def device_command(
    name: str, command: DeviceCommand, **placeholders: object
) -> Callable[[argparse.Namespace, Output], int]:
    """``command`` for DEVICE, in a probe workspace, given where the options come from and
    the JSON document to fill in (``placeholders`` stand until it does); an unknown device
    stops here, a ``--provider`` that cannot be loaded too (``show``) or is handed on as
    ``load_error`` (``doctor``). A PrivateUse1 device module's ``_inductor_backend_init``
    runs before the device is looked up, as at a compile (``run_backend_init``).

    The workspace is entered before Inductor is imported: importing it fixes
    ``TORCHINDUCTOR_CACHE_DIR`` (and creates that directory).
    """

    def run(args: argparse.Namespace, output: Output) -> int:
        # doctor's fresh Python imports torch while this process does.
        with FreshPython() if name == "doctor" else nullcontext() as loader:
            return in_workspace(args, output, loader)

    def in_workspace(args: argparse.Namespace, output: Output, loader: FreshPython | None) -> int:
        with probe_workspace() as work:
            import_inductor()
            failed_loads = register_providers(args, args.provider)
            note_invalid_declarations(name)
            backend_init = backend_init_noted(name)
            failed = failed_loads.get(args.device)
            found = failed[0] if failed else found_source(args.device)
            document: Document = {
                "device_type": args.device,
                "aot_mode": args.aot,
                **({"compile_only": args.compile_only} if "compile_only" in args else {}),
                "source": source_document(found.source),
                "torch_hooks": torch_hooks_document(),
                "provider_doors": provider_doors_document(),
                **placeholders,
                "error": None,
            }
            run = DeviceRun(args, output, work, found, document, loader)
            run.load_error = failed[1] if failed else None
            run.backend_init = backend_init
            if failed is not None and name == "show":
                return fail(run, name, failed[1], EXIT_FAILED)
            unknown = None if failed else unknown_device(args.device, found.source)
            if unknown is not None:
                return fail(run, name, unknown, EXIT_UNKNOWN_DEVICE)
            return command(run)

    return run


def import_inductor() -> None:
    """Import cpp_builder, which installs the hook (or registers natively)."""
    import torch._inductor.cpp_builder  # noqa: F401


def register_providers(
    args: argparse.Namespace, specs: Sequence[tuple[str | None, str]]
) -> FailedLoads:
    """Load and register each ``--provider`` (``parse_provider_spec``'s: for DEVICE, or the
    device it names); those that cannot be loaded, by device, with the source they would
    have been. One that cannot be registered for its device is a usage error."""
    failed: FailedLoads = {}
    for device_named, spec in specs:
        device = device_named or args.device
        try:
            with redirect_stdout(sys.stderr):  # what the module prints is not the output
                callback = load_provider(spec, device)
        except ProviderLoadError as error:
            source = DeviceOptionsSource(device, "registration", spec, guaranteed=True)
            failed[device] = (FoundSource(source, served=False), error)  # never registered
            continue
        try:
            _registry.register_cpp_device_options(device, callback)
        except CppDeviceOptionsError as error:
            args.parser.error(f"argument --provider: {error}")
    return failed


def note_invalid_declarations(command: str) -> None:
    """On stderr (with --json: in the notes): the device at hand is not concerned, but the
    user should know."""
    for declaration in _entry_points.invalid_declarations():
        print(f"{PROG} {command}: note: ignored {declaration.describe()}", file=sys.stderr)
    for conflict in _entry_points.declaration_conflicts():
        if conflict.warns:
            print(f"{PROG} {command}: note: {conflict.describe()}", file=sys.stderr)


def backend_init_noted(command: str) -> BackendInit | None:
    """``run_backend_init``; a hook that raised is noted on stderr (doctor's check fails)."""
    backend_init = run_backend_init()
    if backend_init is not None and backend_init.error is not None:
        print(
            f"{PROG} {command}: note: {backend_init.function} raised {backend_init.error}",
            file=sys.stderr,
        )
    return backend_init


def fail(run: DeviceRun, command: str, error: BaseException, exit_code: int) -> int:
    """The command stops on ``error``: the document says why, or stderr does."""
    description = (
        error.description if isinstance(error, CppDeviceOptionsError) else None
    ) or raised_by_provider(error)
    if run.args.json:
        document = run.document
        if "exit_code" in document:
            document["exit_code"] = exit_code
        document["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "provider": description,  # the schema's v1 name for it
        }
        run.output.print_json(command, **document)
    else:
        style = Style.for_stream(sys.stderr)
        kind = "" if isinstance(error, UnknownDeviceError) else f"{type(error).__name__}: "
        print(f"{PROG} {command}: {style.fail('error')}: {kind}{error}", file=sys.stderr)
    return exit_code


def modes(args: argparse.Namespace) -> str:
    """``aot_mode=...`` (and ``compile_only=...``), as the report's header gives them."""
    shown = [f"aot_mode={args.aot}"]
    if "compile_only" in args:
        shown.append(f"compile_only={args.compile_only}")
    return ", ".join(shown)
