"""``inductor-device-options doctor --all``: doctor for every device this process knows,
torch's own left out, one line each (or one JSON document)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypedDict

from .._diagnose.backend_init_run import BackendInit
from .._diagnose.checks import Check, check_names
from .._diagnose.devices import absent_device, all_devices, loaded_source
from .._diagnose.doctor import provider_load_failed, run_doctor
from .._diagnose.module_load import FreshPython
from .._diagnose.probe import probe_workspace
from .._source import FoundSource
from .device_command import (
    FailedLoads,
    backend_init_noted,
    import_inductor,
    modes,
    note_invalid_declarations,
    register_providers,
)
from .output import (
    EXIT_FAILED,
    EXIT_OK,
    PROG,
    Document,
    Output,
    Style,
    header,
    source_document,
)


class _DeviceResult(TypedDict):
    """One device's entry in doctor --all's JSON (schema v1)."""

    device_type: str
    source: Document
    status: str
    skipped: str | None
    checks: list[Document]


def doctor_all(args: argparse.Namespace, output: Output) -> int:
    """doctor for each device this process knows, torch's own left out: one line each."""
    style = Style.for_stream(sys.stdout)
    with _Loaders() as loaders, probe_workspace() as work:
        import_inductor()
        failed_loads = register_providers(args, args.provider)
        note_invalid_declarations("doctor")
        backend_init = backend_init_noted("doctor")  # as a compile would, before the lookup
        sources = {found.device_type: found for found in all_devices()}
        sources.update({device: found for device, (found, _) in failed_loads.items()})
        if not args.json:
            print(header(style, "doctor --all", modes(args)) + "\n")
        width = max([len(device) for device in sources] or [0])
        results: list[_DeviceResult] = []
        for index, (device, found) in enumerate(sorted(sources.items())):
            more = index + 1 < len(sources)
            result = _doctor_one(
                args, device, found, work, failed_loads, loaders, more, backend_init
            )
            results.append(result)
            if not args.json:
                print(_device_line(style, result, width))
    failed = [str(result["device_type"]) for result in results if result["status"] == "fail"]
    exit_code = EXIT_FAILED if failed else EXIT_OK
    if args.json:
        document = {"aot_mode": args.aot, "ok": not failed, "exit_code": exit_code}
        output.print_json("doctor-all", **document, devices=results)
    else:
        print(_closing_line(style, results, failed))
    return exit_code


def _closing_line(style: Style, results: list[_DeviceResult], failed: list[str]) -> str:
    if not results:
        return "No device other than torch's own has C++ options in this process."
    if failed:
        return (
            "\n"
            + style.fail(f"{len(failed)} of {len(results)} devices failed: {', '.join(failed)}.")
            + f" `{PROG} doctor DEVICE` shows why."
        )
    skipped = [str(result["device_type"]) for result in results if result["status"] == "skip"]
    if skipped:
        passed = len(results) - len(skipped)
        return "\n" + style.skip(
            f"{passed} of {len(results)} devices passed; skipped: {', '.join(skipped)}."
        )
    return "\n" + style.ok(f"All {len(results)} devices passed.")


def _doctor_one(
    args: argparse.Namespace,
    device: str,
    found: FoundSource,
    work: Path,
    failed_loads: FailedLoads,
    loaders: _Loaders,
    more: bool,
    backend_init: BackendInit | None,
) -> _DeviceResult:
    # Loaded once: the provider's absent hint and the device's checks share it.
    loaded = found if device in failed_loads else loaded_source(found)
    skipped = None if device in failed_loads else absent_device(loaded)
    checks: list[Check] = []
    if device in failed_loads:
        names = check_names(args.aot, compile=False)  # no --compile with --all
        checks = provider_load_failed(failed_loads[device][1], names)
    elif skipped is None:
        device_work = work / device
        device_work.mkdir()
        loader = loaders.next(more)
        checks = run_doctor(loaded, args.aot, device_work, loader=loader, backend_init=backend_init)
    statuses = {check.status for check in checks}
    status = next(
        (status for status in ("fail", "warn") if status in statuses),
        "skip" if skipped is not None else "pass",
    )
    return {
        "device_type": device,
        "source": source_document(found.source),
        "status": status,
        "skipped": skipped,
        "checks": [check_document(check) for check in checks],
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


def check_document(check: Check) -> Document:
    """``check`` in doctor's JSON (schema v1): its name, title, status and summary, and each
    problem's cause, fix, details and instances (a problem's place is in its cause)."""
    return {
        "name": check.name,
        "title": check.title,
        "status": check.status,
        "summary": check.summary,
        "problems": [
            {
                "cause": problem.cause,
                "fix": problem.fix,
                "details": list(problem.details),
                "instances": list(problem.instances),
            }
            for problem in check.problems
        ],
    }


def label(style: Style, status: str) -> str:
    return {
        "pass": style.ok("PASS"),
        "warn": style.skip("WARN"),
        "fail": style.fail("FAIL"),
        "skip": style.skip("SKIP"),
    }[status]


def _device_line(style: Style, result: _DeviceResult, width: int) -> str:
    checks, source = result["checks"], result["source"]
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
    return f"{label(style, status)}  {device}  {source['source']}: {summary}"
