"""What the demo checks after a compile for the sample device: the compiler commands that
carried the device's options, the module they built, and the result it computed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import CppDeviceOptions, default_cpp_device_options, get_cpp_device_options
from ..sample import DEVICE_MACRO, DEVICE_NAME, RUNTIME_LIBRARY_FILE, runtime_registered_modules
from .compiler_commands import CompilerCommand, Flags, added_options, last_shared_library
from .elf import read_dynamic_section
from .report import Report, shorten

if TYPE_CHECKING:
    import torch

MARK_LEFT, MARK_RIGHT = "[[", "]]"


def show_options(report: Report) -> CppDeviceOptions:
    """Print the options, marking what the sample's provider adds; return the additions."""
    options = get_cpp_device_options(DEVICE_NAME)
    added = added_options(options, default_cpp_device_options(DEVICE_NAME))
    for field, values, new_values in zip(options._fields, options, added, strict=True):
        for index, value in enumerate(values):
            label = field if index == 0 else ""
            report.say(f"{label:<17}{'+' if value in new_values else ' '} {value}")
    report.say("(+: added by sdk_cpp_device_options to torch's defaults; aot_mode=False)")
    return added


def check_build(
    report: Report, commands: list[CompilerCommand], marks: list[Flags], modules_before: int
) -> None:
    """Show the commands that carried the device's flags; check the module they built."""
    _show_commands_with_flags(report, commands, marks)
    module_command = last_shared_library(commands)
    if not report.check("Inductor linked a shared library", module_command is not None):
        return
    assert module_command is not None and module_command.output is not None
    report.say(
        f"the command that built {module_command.output.name} ({MARK_LEFT} {MARK_RIGHT}: "
        f"flags from the {DEVICE_NAME} options):"
    )
    report.say(module_command.marked(marks, MARK_LEFT, MARK_RIGHT), indent=6)

    macro = ("-D", DEVICE_MACRO)
    report.check(f"-D {DEVICE_MACRO} in the compiler commands", any(c.has(macro) for c in commands))
    missing = [" ".join(f) for f in marks if not module_command.has(f)]
    report.check(
        f"every flag from the {DEVICE_NAME} options in the command that built the module",
        not missing,
        f"missing {', '.join(missing)}" if missing else "",
    )
    _check_module_links_runtime(report, module_command.output, modules_before)


def _show_commands_with_flags(
    report: Report, commands: list[CompilerCommand], marks: list[Flags]
) -> None:
    with_flags = [command for command in commands if any(command.has(f) for f in marks)]
    others = len(commands) - len(with_flags)
    report.say(
        f"compiler runs: {len(commands)}, {len(with_flags)} with {DEVICE_NAME} flags"
        + (f" ({others} others: Inductor's probes of the compiler and the CPU)" if others else "")
    )
    for command in with_flags:
        output = command.output.name if command.output else "?"
        carried = ", ".join(shorten(" ".join(f), 32) for f in marks if command.has(f))
        where = "" if command.pid == os.getpid() else f" (in compile subprocess {command.pid})"
        report.say(f"  {command.stage:<18} {shorten(output, 40):<40} {carried}{where}")


def _check_module_links_runtime(report: Report, module: Path, modules_before: int) -> None:
    """The module names the runtime library, and registered with it when it was loaded."""
    dynamic = read_dynamic_section(module)
    report.check(
        f"{RUNTIME_LIBRARY_FILE} in the NEEDED entries of {module.name}",
        RUNTIME_LIBRARY_FILE in dynamic.needed,
        f"NEEDED {', '.join(dynamic.needed)}; RUNPATH {':'.join(dynamic.runpath) or '-'}",
    )
    modules_after = runtime_registered_modules()
    report.check(
        f"the loaded module registered itself with {RUNTIME_LIBRARY_FILE}",
        modules_after > modules_before,
        f"registered modules {modules_before} -> {modules_after}",
    )


def check_shim_call(report: Report, commands: list[CompilerCommand], operator: str) -> None:
    """Check that the module's C++ source calls the sampledev shim of ``operator``."""
    shim = f"aoti_torch_{DEVICE_NAME}_{operator}"
    module_command = last_shared_library(commands)
    sources = (
        [
            Path(module_command.cwd or ".", word)  # an absolute word stays itself
            for word in module_command.argv
            if word.endswith(".cpp")
        ]
        if module_command is not None
        else []
    )
    calls = any(f"{shim}(" in source.read_text() for source in sources if source.is_file())
    report.check(
        f"the module calls the {DEVICE_NAME} C shim {shim} (sampledev/c_shim.h)",
        calls,
        ", ".join(source.name for source in sources) or "no C++ source in the command",
    )


def check_result(report: Report, result: torch.Tensor, expected: torch.Tensor) -> None:
    """The result lives on the sample device and equals eager CPU's."""
    import torch

    report.check(
        f"result is a {DEVICE_NAME} tensor", result.device.type == DEVICE_NAME, str(result.device)
    )
    on_cpu = result.cpu()
    if on_cpu.shape != expected.shape:
        report.check("result equals eager CPU", False, f"shape {tuple(on_cpu.shape)}")
        return
    report.check(
        "result equals eager CPU",
        torch.allclose(on_cpu, expected, rtol=1e-5, atol=1e-5),
        f"max |difference| {(on_cpu - expected).abs().max().item():.2e}",
    )
