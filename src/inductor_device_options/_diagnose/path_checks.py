"""The checks of the paths the options name: ``include_dirs`` (each exists) and
``libraries`` (each ``-l`` resolves in the library dirs or the linker's own path)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from .. import _fs, _state
from .._fs import library_file_names
from .._options.model import CppDeviceOptions
from .._options.problems import Problem
from .checks import Check, Context, check, one_cause
from .run import run_tool
from .text import plural, unique


def check_include_dirs(context: Context) -> Check:
    if context.options is None:
        return context.skipped("include_dirs")
    dirs = context.options.include_dirs
    # torch's own defaults may name dirs its wheel lacks (seen with 2.6):
    # reported, but not the device's problem. torch.utils.cpp_extension.include_paths() is
    # where cpp_builder takes torch's own include dirs from (2.6-2.15).
    from torch.utils.cpp_extension import include_paths

    torch_missing = [d for d in dirs if d in include_paths() and not os.path.isdir(d)]
    problems = [
        Problem(cause, context.fix_sdk)
        for cause in (_dir_problem("include dir", d) for d in dirs if d not in torch_missing)
        if cause is not None
    ]
    if problems:
        summary = f"{len(problems)} of {plural(len(dirs), 'include dir')} missing"
        cause = f"{len(problems)} include dirs the options name cannot be searched"
        return check("include_dirs", "fail", summary, *one_cause(problems, cause))
    summary = plural(len(dirs), "dir") if dirs else "none"
    if torch_missing:
        summary += f"; torch's own defaults name missing {', '.join(torch_missing)} (ignored)"
    return check("include_dirs", "pass", summary)


def _dir_problem(kind: str, path: str) -> str | None:
    if not os.path.isabs(path):
        return (
            f"{kind} {path} is relative: Inductor compiles in a directory of its own, "
            "so it points nowhere; make it absolute"
        )
    if not os.path.exists(path):
        return f"{kind} {path} does not exist"
    if not os.path.isdir(path):
        return f"{kind} {path} is not a directory"
    return None


def check_libraries(context: Context) -> Check:
    if context.options is None:
        return context.skipped("libraries")
    dirs, libraries = link_inputs(context.options)
    found = {library: find_library(library, dirs) for library in libraries}
    missing = [library for library, path in found.items() if path is None]
    if not missing:
        listed = "; ".join(f"{library} ({path})" for library, path in found.items())
        return check("libraries", "pass", listed or "none to link")
    where = ", ".join(path if os.path.isdir(path) else f"{path} (does not exist)" for path in dirs)
    searched = f"{where + ' or ' if where else ''}the system linker path"
    files = tuple(library_file_names(library)[0] for library in missing)
    problem = (
        Problem(f"{files[0]} not found in {searched}", context.fix_sdk)
        if len(files) == 1
        else Problem(f"{len(files)} libraries not found in {searched}", context.fix_sdk, (), files)
    )
    summary = f"{len(missing)} of {plural(len(libraries), 'library', 'libraries')} not found"
    return check("libraries", "fail", summary, problem)


def link_inputs(options: CppDeviceOptions) -> tuple[list[str], list[str]]:
    """Library dirs and libraries: the lists, plus -L/-l in ldflags and passthrough args."""
    dirs = list(options.libraries_dirs)
    libraries = list(options.libraries)
    words = [f"-{flag}" for flag in options.ldflags]
    for args in options.passthrough_args:
        try:
            words.extend(shlex.split(args))
        except ValueError:
            continue  # the flags check reports it
    for word in words:
        if word.startswith("-L") and len(word) > 2:
            dirs.append(word[2:])
        elif word.startswith("-l") and len(word) > 2:
            libraries.append(word[2:])
    return unique(dirs), unique(libraries)


def find_library(library: str, dirs: Sequence[str]) -> str | None:
    """The file ``-l<library>`` resolves to in ``dirs``, then where the linker looks."""
    return _fs.find_library(library, [*dirs, *system_library_dirs()])


@_state.cached(1)
def system_library_dirs() -> tuple[str, ...]:
    """Where the linker looks after the -L dirs: the compiler driver's library dirs
    (which include ``$LIBRARY_PATH``) and the linker's own SEARCH_DIRs."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    dirs: list[str] = []
    for line in _output([compiler, "-print-search-dirs"]).splitlines():
        if line.startswith("libraries:"):
            dirs.extend(line.partition("=")[2].split(os.pathsep))
    linker = _output([compiler, "-print-prog-name=ld"]).strip() or "ld"
    dirs.extend(re.findall(r'SEARCH_DIR\("=?([^"]+)"\)', _output([linker, "--verbose"])))
    return tuple(unique(os.path.normpath(path) for path in dirs if path))


def _output(command: list[str]) -> str:
    return run_tool(command).stdout
