"""doctor --aot's ``cmake_project`` check: whether the C++ project AOTInductor writes for the
device with ``aot_inductor.package_cpp_only`` builds with cmake.

The project is written as AOTInductor writes it, by torch's own CMake writers (the package's
for a device it serves), around a probe that asks for each header Inductor's generated code
includes for the device (``__has_include``: found, not compiled; the ``headers`` check
compiles them). Where a cmake recent enough for the project is installed, it configures and
builds the project against torch's CMake package; elsewhere, or where torch's own package
does not configure (a CUDA wheel on a machine without the CUDA toolkit), what the project
lacks of the device's options is read in its text.
"""

from __future__ import annotations

import os
import re
import shutil
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from .._errors import CppDeviceOptionsError
from .._fs import inside_torch
from .._options.cmake import RUNPATH_PREFIX, escape, own_options
from .._options.model import CppDeviceOptions
from .._options.problems import Problem
from .._torch_names import BUILDER, CMAKE_WRITERS
from .checks import Check, Context, check
from .header_checks import included_headers
from .probe import PROBE_NAME, Progress, with_progress
from .run import Ran, run_tool
from .text import message_and_fix, plural, relevant_lines

NAME = "cmake_project"
PROJECT_DIR = "cmake-project"
_VERSION = re.compile(r"cmake version (\d+)\.(\d+)(?:\.(\d+))?")
_MINIMUM = re.compile(r"cmake_minimum_required\(VERSION (\d+)\.(\d+)")
_ERROR_AT = re.compile(r"^CMake Error at (.+?):\d+", re.MULTILINE)


class Cmake(NamedTuple):
    path: str
    version: tuple[int, ...]

    @property
    def shown(self) -> str:
        return f"cmake {'.'.join(map(str, self.version))} ({self.path})"


def installed_cmakes() -> list[Cmake]:
    """The cmakes a user of this Python would run: on PATH, and beside this Python (the
    ``cmake`` distribution installs it there, off PATH in a venv that is not activated)."""
    found: dict[str, Cmake] = {}
    for candidate in (shutil.which("cmake"), os.path.join(sysconfig.get_path("scripts"), "cmake")):
        if candidate is None or not os.access(candidate, os.X_OK):
            continue
        ran = run_tool([candidate, "--version"], timeout=60)
        version = _VERSION.search(ran.stdout)
        if ran.ok and version is not None:
            numbers = tuple(int(number) for number in version.groups() if number is not None)
            found.setdefault(os.path.realpath(candidate), Cmake(candidate, numbers))
    return list(found.values())


def check_cmake_project(
    context: Context, progress: Progress | None, cmakes: list[Cmake] | None = None
) -> Check:
    """``cmakes``: those to try, the first recent enough for the project builds it (by
    default, :func:`installed_cmakes`; none: the project is read, not built)."""
    if context.unusable():
        return context.skipped(NAME)
    import torch
    from torch._inductor import cpp_builder

    # CppBuilder.save_compile_cmd_to_cmake: torch 2.13-2.15; torch 2.6's AotCodeCompiler
    # writes <wrapper>_compile_flags.json and _linker_flags.json instead.
    if not hasattr(getattr(cpp_builder, BUILDER), CMAKE_WRITERS[0]):
        return check(
            NAME,
            "skip",
            f"skipped: torch {torch.__version__} writes no CMake project: with "
            "package_cpp_only, AOTInductor writes the sources and the compile and link flags "
            "as JSON, which hold the device's options",
        )
    headers = included_headers(context)
    names = () if isinstance(headers, Check) else headers.names
    try:
        project = write_project(context.device_type, context.work / PROJECT_DIR, names)
    except CppDeviceOptionsError as error:
        cause, fix = message_and_fix(error)
        return check(NAME, "fail", "the project cannot be written", Problem(cause, fix or ""))
    text = project.read_text()
    lacks = project_lacks(text, _own_options(context))
    cmakes = installed_cmakes() if cmakes is None else cmakes
    minimum = _minimum(text)
    usable = [cmake for cmake in cmakes if cmake.version >= minimum]
    if not usable:
        shown = ", ".join(cmake.shown for cmake in cmakes)
        why = f"{shown} older than the {'.'.join(map(str, minimum))} it requires"
        return _read(context, lacks, why if cmakes else "no cmake installed")
    return _built(context, project, usable[0], lacks, progress)


def write_project(device_type: str, directory: Path, headers: Sequence[str] = ()) -> Path:
    """The project AOTInductor writes for ``device_type`` in ``directory``, a probe for its
    source that asks for ``headers``: its CMakeLists.txt."""
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f"{PROBE_NAME}.cpp"
    source.write_text(_probe_source(headers))
    cmake_path = str(directory / "CMakeLists.txt")

    def builder(sources: list[str], compile_only: bool) -> CppBuilder:
        options = CppTorchDeviceOptions(
            device_type=device_type, aot_mode=True, compile_only=compile_only
        )
        return CppBuilder(PROBE_NAME, sources, options, output_dir=str(directory))

    # The calls torch 2.13-2.15's AotCodeCompiler.compile makes, in its order.
    wrapper = builder([str(source)], True)  # as AOTInductor's wrapper, then its library
    wrapper.save_compile_cmd_to_cmake(cmake_path, device_type)
    wrapper.save_src_to_cmake(cmake_path, str(source))
    builder([wrapper.get_target_file_path()], False).save_link_cmd_to_cmake(cmake_path)
    return Path(cmake_path)


def _probe_source(headers: Sequence[str]) -> str:
    lines = ["// Written by `inductor-device-options doctor`: the probe of a C++ project."]
    for header in headers:
        lines += [
            f"#if !__has_include(<{header}>)",
            f'#error "{header}: not found in the include dirs of the project"',
            "#endif",
        ]
    return "\n".join([*lines, f'extern "C" int {PROBE_NAME}(void) {{ return 0; }}', ""])


def project_lacks(text: str, own: CppDeviceOptions) -> list[str]:
    """What of the device's options (``own``: what torch's defaults lack) the project's
    CMakeLists.txt does not carry as cmake passes it on: an include or library dir it does
    not name, an ldflag it does not write with its leading '-'."""

    def written(value: str) -> bool:  # as one argument, or one element of a list
        return any(
            re.search(rf'(?<![^\s";(]){re.escape(form)}(?![^\s";)])', text)
            for form in {value, escape(value)}
        )

    def runpath_variable(flag: str) -> bool:  # a runpath the package writes from a variable
        runpath = flag.startswith(RUNPATH_PREFIX) and "-Wl,-rpath,${" in text
        return runpath and written(flag[len(RUNPATH_PREFIX) :])

    lacks = []
    for field, what in (("include_dirs", "include dirs"), ("libraries_dirs", "library dirs")):
        missing = [value for value in getattr(own, field) if not written(value)]
        if missing:
            lacks.append(f"its {what} {', '.join(missing)}")
    dashless = [f for f in own.ldflags if not written(f"-{f}") and not runpath_variable(f)]
    if dashless:
        lacks.append(f"its ldflags written with their '-' ({', '.join(dashless)})")
    return lacks


def _own_options(context: Context) -> CppDeviceOptions:
    """The device's options torch's defaults lack: to compile (include dirs) and to link."""
    from .._defaults import default_cpp_device_options
    from .._hook.lookups import get_cpp_device_options

    def own(compile_only: bool) -> CppDeviceOptions:
        return own_options(
            get_cpp_device_options(context.device_type, True, compile_only),
            default_cpp_device_options(context.device_type, True, compile_only),
        )

    linked = own(False)
    return linked._replace(include_dirs=own(True).include_dirs)


def _minimum(text: str) -> tuple[int, ...]:
    found = _MINIMUM.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else (0,)


def _read(context: Context, lacks: list[str], why: str) -> Check:
    """The verdict of the project's text, where cmake cannot build it: ``why``."""
    if lacks:
        problem = Problem(_lacks_cause(context, lacks), _fix(context, lacks))
        return check(NAME, "fail", f"the project lacks {plural(len(lacks), 'part')}", problem)
    return check(
        NAME,
        "pass",
        f"read, not built ({why}): the project has the device's include dirs, library dirs "
        "and ldflags",
    )


def _built(
    context: Context, project: Path, cmake: Cmake, lacks: list[str], progress: Progress | None
) -> Check:
    import torch.utils

    build = project.parent / "build"
    prefix = f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}"
    ran: list[Ran] = []

    def run() -> None:
        ran.append(
            run_tool([cmake.path, "-S", str(project.parent), "-B", str(build), prefix], timeout=600)
        )
        if ran[-1].ok:
            ran.append(run_tool([cmake.path, "--build", str(build)], timeout=600))

    started = time.perf_counter()
    with_progress(progress, f"building the C++ project with {cmake.shown} ...", run)
    output = ran[-1].stdout + ran[-1].stderr
    if ran[-1].ok:
        seconds = time.perf_counter() - started
        return check(NAME, "pass", f"{cmake.shown} configured and built it in {seconds:.1f} s")
    at = _ERROR_AT.search(output)
    if len(ran) == 1 and at is not None and inside_torch(os.path.realpath(at.group(1))):
        # torch's own CMake package, not the device: every project fails here alike.
        first = next(iter(relevant_lines(output, 1)), "")
        return _read(context, lacks, f"torch's CMake package does not configure here: {first}")
    cause = f"{cmake.shown} could not build the C++ project AOTInductor writes for the device"
    if lacks:
        cause += f"; {_lacks_cause(context, lacks)}"
    fix = _fix(context, lacks)
    return check(NAME, "fail", "cmake failed", Problem(cause, fix, relevant_lines(output)))


def _lacks_cause(context: Context, lacks: list[str]) -> str:
    return (
        f"the CMakeLists.txt AOTInductor writes for {context.device_type!r} "
        f"(aot_inductor.package_cpp_only) lacks {'; '.join(lacks)}"
    )


def _fix(context: Context, lacks: list[str]) -> str:
    if not lacks or context.source.guaranteed:
        return context.fix_sdk
    device = repr(context.device_type)
    source = context.source
    return (
        "torch's CMake writers leave them out for every device the package does not serve "
        f"through its own door (here the {source.kind} {source.description} serves it); serve "
        f"{device} through the package's: inductor_device_options.guarantee_cpp_device_options"
        f"({device}) (or INDUCTOR_DEVICE_OPTIONS_GUARANTEE), a registration with "
        "inductor_device_options.register_cpp_device_options, or an entry point"
    )
