"""``inductor-device-options show DEVICE``: the seven lists Inductor gets for the device,
the commands Inductor's own ``CppBuilder`` renders with them, the device's SDK identity
with the caches that key on it, and the per-device doors its provider declares."""

from __future__ import annotations

import sys

from .._diagnose.asked import asked_device_type
from .._diagnose.cache_keying import cache_keying
from .._diagnose.probe import probe_commands
from .._hook.lookups import get_cpp_device_options
from .._options.model import FIELDS, CppDeviceOptions
from ..introspection import declared_doors
from .device_command import DeviceRun, device_command, fail, modes
from .output import (
    EXIT_FAILED,
    EXIT_OK,
    Style,
    header,
    options_from,
    provider_doors_lines,
    torch_hooks_lines,
)


def show(run: DeviceRun) -> int:
    args = run.args
    try:
        options = get_cpp_device_options(args.device, args.aot, args.compile_only)
        commands = probe_commands(args.device, args.aot, args.compile_only, run.work)
        keying = cache_keying(args.device)
        declared = declared_doors(args.device)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit(0) from a provider is a failure, not success
        return fail(run, "show", error, EXIT_FAILED)
    asked = asked_device_type(args.device, args.aot)
    run.document.update(
        options=options._asdict(),
        commands=commands._asdict(),
        asked=asked._asdict(),
        sdk_identity=keying.document(),
        declared_doors=declared,
    )
    if args.json:
        run.output.print_json("show", **run.document)
        return EXIT_OK
    style = Style.for_stream(sys.stdout)
    print(header(style, f"show {args.device}", modes(args)))
    print(options_from(run.found.source))
    line = f"builds: {asked.describe()}"
    print(style.fail(line + "; these options never reach them") if asked.mismatch else line)
    print()
    _print_options(style, options)
    print(f"\n{style.bold('compile')} ({commands.compiler}, compile_only=True):")
    print(f"  {commands.compile}")
    if commands.link is not None:
        print(f"{style.bold('link')} (compile_only=False):")
        print(f"  {commands.link}")
    print("\n" + "\n".join(keying.describe()))
    print(style.bold("\nper-device doors the provider declares:"))
    for name, said in declared.items() or [("", style.dim("(none)"))]:
        print(f"  {name}: {said}" if name else f"  {said}")
    print("\n" + "\n".join(torch_hooks_lines(style)))
    print("\n" + "\n".join(provider_doors_lines(style)))
    return EXIT_OK


def _print_options(style: Style, options: CppDeviceOptions) -> None:
    width = max(len(name) for name in FIELDS)
    for name, values in zip(FIELDS, options, strict=True):
        lines = [repr(value) for value in values] or [style.dim("(none)")]
        print(f"{style.bold(name)}{' ' * (width - len(name))}  {lines[0]}")
        for line in lines[1:]:
            print(f"{' ' * width}  {line}")


show_entry = device_command(
    "show",
    show,
    options=None,
    commands=None,
    asked=None,
    sdk_identity=None,
    declared_doors=None,
)
