"""``inductor-device-options doctor DEVICE``: the checks ``_diagnose/`` computes, printed
as they are done, or one JSON document.

The report names the provider once, in its header; each check is one line, and each
failure (or warning) its cause, the instances it lists, its one fix and its details."""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from collections.abc import Callable, Sequence

from .._diagnose import real_compile
from .._diagnose.checks import Check, check_names
from .._diagnose.doctor import provider_load_failed, run_doctor
from .._diagnose.probe import Progress
from .._diagnose.torch_hook_checks import backend_registered
from .._options.problems import Problem
from .device_command import DeviceRun, device_command, modes
from .doctor_all import check_document, doctor_all, label
from .output import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNKNOWN_DEVICE,
    Output,
    Style,
    header,
    options_from,
    torch_hooks_line,
    torch_hooks_lines,
)


def doctor_entry(args: argparse.Namespace, output: Output) -> int:
    if args.all:
        return doctor_all(args, output)
    return _one_device(args, output)


def doctor_command(run: DeviceRun) -> int:
    args = run.args
    style = Style.for_stream(sys.stdout)
    text = not args.json
    if text:
        print(header(style, f"doctor {args.device}", modes(args)))
        print(options_from(run.found.source))
        registered = backend_registered(args.device)
        hooks = torch_hooks_lines(style) if registered else [torch_hooks_line(style, args.device)]
        print("\n".join(hooks) + "\n")

    def on_check(check: Check) -> None:
        if text:
            print_check(style, check)

    checks = _checks(run, on_check, spinner if text and sys.stdout.isatty() else None)
    failed = [check for check in checks if check.status == "fail"]
    exit_code = EXIT_FAILED if failed else EXIT_OK
    if args.json:
        run.document.update(
            ok=not failed,
            exit_code=exit_code,
            checks=[check_document(check) for check in checks],
        )
        run.output.print_json("doctor", **run.document)
    else:
        print("\n" + verdict(style, checks))
    return exit_code


def _checks(
    run: DeviceRun, on_check: Callable[[Check], None], progress: Progress | None
) -> list[Check]:
    """Every check of the run, each handed to ``on_check`` as soon as it is done."""
    args = run.args
    if run.load_error is not None:
        names = check_names(args.aot, args.compile, model=bool(args.model))
        checks = provider_load_failed(run.load_error, names)
        for check in checks:
            on_check(check)
        return checks
    checks = run_doctor(
        run.found,
        args.aot,
        run.work,
        on_check=on_check,
        progress=progress,
        loader=run.loader,
        compile=args.compile,
        backend_init=run.backend_init,
    )
    if args.compile:
        provider_spec = args.provider[0][1] if args.provider else None  # MODULE:CALLABLE
        work = run.work / "compile"
        for check in real_compile.compile_checks(
            args.device,
            args.aot,
            provider_spec,
            work,
            checks,
            progress,
            model=args.model,
        ):
            checks.append(check)
            on_check(check)
    return checks


_one_device = device_command(
    "doctor", doctor_command, ok=False, exit_code=EXIT_UNKNOWN_DEVICE, checks=[]
)


def verdict(style: Style, checks: Sequence[Check]) -> str:
    failed = [check for check in checks if check.status == "fail"]
    warned = [check for check in checks if check.status == "warn"]
    if failed:
        return style.fail(f"{len(failed)} of {len(checks)} checks failed.")
    skipped = [check for check in checks if check.status == "skip"]
    with_warnings = f", {len(warned)} with a warning" if warned else ""
    not_run = f"; {len(skipped)} skipped" if skipped else ""
    return style.ok(f"All {len(checks) - len(skipped)} checks passed{with_warnings}{not_run}.")


def print_check(style: Style, check: Check) -> None:
    print(f"{label(style, check.status)}  {check.title}: {check.summary}")
    for problem in check.problems:
        _print_problem(style, problem)


def _print_problem(style: Style, problem: Problem) -> None:
    """Its cause and the instances the cause stands for, one a line; its fix; its details."""
    _print_indented("cause: ", problem.cause + (":" if problem.instances else ""))
    for instance in problem.instances:
        _print_indented("", f"{' ' * len('cause: ')}- {instance}")
    _print_indented("fix:   ", problem.fix)
    for line in problem.details:
        print(style.dim(f"      | {line}"))


def _print_indented(label: str, text: str) -> None:
    lines = text.splitlines() or [""]
    print(f"      {label}{lines[0]}")
    for line in lines[1:]:
        print(f"      {' ' * len(label)}{line}")


def spinner(message: str) -> Callable[[], None]:
    """A spinner and the seconds spent, on the terminal, until the returned function is
    called."""
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
