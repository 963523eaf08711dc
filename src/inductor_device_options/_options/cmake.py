"""A device's options as CMake commands, for the C++ project AOTInductor writes
(``aot_inductor.package_cpp_only``): every value one quoted argument, as g++ would get it,
and the SDK's paths as cache variables whose defaults are the paths of the machine that
wrote the project. Pure: no torch import (``_hook/cmake.py`` writes what this renders).

The cache variables of a device ``sampledev``:

``SAMPLEDEV_SDK_INCLUDE_DIRS``
    the include dirs of its options that torch's own defaults do not have;
``SAMPLEDEV_SDK_LIBRARY_DIRS``
    its library dirs, likewise;
``SAMPLEDEV_SDK_RUNPATH_DIRS``
    the dirs of its runpath ldflags (``Wl,-rpath,DIR``, what ``runpath()`` gives), each
    linked as ``-Wl,-rpath,DIR``; by default the library dirs, where the options give a
    runpath for each of them and no other, so that one variable moves both.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from .._errors import InvalidCppDeviceOptionsError
from .._source import DeviceOptionsSource
from .model import CppDeviceOptions

#: An ldflag of this form, a dir after it, is a runpath (``runpath()``'s shape).
RUNPATH_PREFIX = "Wl,-rpath,"
#: The first line of what the package writes into a project: names the device it serves.
_SECTION = "# inductor-device-options: device '{device}', served by the {kind}\n# {description}:"
_SECTION_DEVICE = re.compile(r"^# inductor-device-options: device '([A-Za-z0-9_]+)'", re.MULTILINE)
# What a CMake argument cannot carry as one value: ';' splits lists, '$<' starts a generator
# expression that the target commands evaluate, a line end cuts the command.
_UNREPRESENTABLE = (
    (";", "CMake splits a list at ';'"),
    ("$<", "CMake evaluates '$<' as a generator expression"),
    ("\n", "it would cut the CMake command"),
    ("\r", "it would cut the CMake command"),
    ("\x00", "CMake files cannot hold NUL"),
)


def own_options(served: CppDeviceOptions, defaults: CppDeviceOptions) -> CppDeviceOptions:
    """The values of ``served`` that ``defaults`` (what torch gives the device) lack."""
    lacking = []
    for values, default in zip(served, defaults, strict=True):
        torch_gives = set(default)
        lacking.append([value for value in values if value not in torch_gives])
    return CppDeviceOptions.of(lacking)


def variable(device_type: str, what: str) -> str:
    """``SAMPLEDEV_SDK_INCLUDE_DIRS`` for ``("sampledev", "INCLUDE_DIRS")``."""
    return f"{re.sub(r'[^A-Za-z0-9]', '_', device_type).upper()}_SDK_{what}"


def device_of_project(text: str) -> str | None:
    """The device whose section the package wrote into a CMakeLists.txt, or None."""
    found = _SECTION_DEVICE.search(text)
    return found.group(1) if found else None


def argument(source: DeviceOptionsSource, field: str, value: str) -> str:
    """``value`` as one quoted CMake argument; raises InvalidCppDeviceOptionsError, naming
    the device and ``source`` (its provider), for a value CMake cannot carry."""
    return f'"{_escaped(source, field, value)}"'


def _list_argument(source: DeviceOptionsSource, field: str, values: Sequence[str]) -> str:
    """``values`` as one quoted CMake list (a cache variable's default)."""
    return '"' + ";".join(_escaped(source, field, value) for value in values) + '"'


def _escaped(source: DeviceOptionsSource, field: str, value: str) -> str:
    for text, why in _UNREPRESENTABLE:
        if text in value:
            raise InvalidCppDeviceOptionsError(
                f"device {source.device_type!r}: {field} value {value!r} (from "
                f"{source.description}) cannot be written into the C++ project AOTInductor "
                f"writes (aot_inductor.package_cpp_only): it holds {text!r}, and {why}",
                device_type=source.device_type,
                description=source.description,
                field=field,
                value=value,
            )
    return escape(value)


def escape(value: str) -> str:
    """``value`` as it is written inside a quoted CMake argument."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def _arguments(
    source: DeviceOptionsSource, field: str, values: Sequence[str], prefix: str = ""
) -> str:
    return " ".join(argument(source, field, prefix + value) for value in values)


def compile_section(
    target: str, source: DeviceOptionsSource, own: CppDeviceOptions, *, standalone: bool
) -> str:
    """What the package appends to torch's compile commands for a device ``source`` serves
    (``own``: the device's values torch's defaults lack, :func:`own_options`): the include
    dirs; in torch's standalone branch (``compile_standalone``, which writes none of them),
    also the definitions, cflags and passthrough args."""
    lines = [
        "",
        _SECTION.format(
            device=source.device_type, kind=source.kind, description=source.description
        ),
        "# what torch's CMake leaves out of its options. The SDK's paths are cache variables:",
        "# on another machine, configure with that machine's (cmake -D<VARIABLE>=<dirs>).",
    ]
    lines += _dirs_variable(target, source, own.include_dirs, "include_dirs", "INCLUDE_DIRS")
    if standalone and own.definitions:
        # torch 2.6-2.15's CppBuilder renders "-D {value}": the spaces around the value are
        # not the macro's.
        definitions = [value.strip() for value in own.definitions]
        arguments = _arguments(source, "definitions", definitions)
        lines.append(f"target_compile_definitions({target} PRIVATE {arguments})")
    if standalone and own.cflags:
        arguments = _arguments(source, "cflags", own.cflags, prefix="-")
        lines.append(f"target_compile_options({target} PRIVATE {arguments})")
    if standalone and own.passthrough_args:
        # SHELL: keeps each value's words together (CMake de-duplicates options otherwise).
        words = [f"SHELL:{shlex.join(shlex.split(value))}" for value in own.passthrough_args]
        arguments = _arguments(source, "passthrough_args", words)
        lines.append(f"target_compile_options({target} PRIVATE {arguments})")
    return "\n".join(lines) + "\n\n"


def link_section(
    target: str,
    source: DeviceOptionsSource,
    own: CppDeviceOptions,
    ldflags: Sequence[str],
    libraries: Sequence[str],
) -> str:
    """torch's link commands for a device ``source`` serves, rendered as g++ gets them
    (``ldflags`` and ``libraries``: every one the build has), then the device's library
    dirs and runpaths (``own``'s) as cache variables."""
    # The device's runpaths are left out of the literal flags: the cache variable below
    # writes them, so another machine moves them with one -D.
    runpaths = _runpath_dirs(own.ldflags)
    flags = [flag for flag in ldflags if flag not in runpaths]
    lines = [
        "",
        "# Add linker flags",
        f"target_link_options({target} PRIVATE {_arguments(source, 'ldflags', flags, '-')})",
        "",
        "# Add libraries",
        f"target_link_libraries({target} PRIVATE {_libraries(source, libraries)})",
        "",
        f"# inductor-device-options: device {source.device_type!r}: its library dirs and runpaths.",
    ]
    lines += _dirs_variable(target, source, own.libraries_dirs, "libraries_dirs", "LIBRARY_DIRS")
    if runpaths:
        lines += _runpath_lines(target, source, own, list(runpaths.values()))
    return "\n".join(lines) + "\n"


def _dirs_variable(
    target: str, source: DeviceOptionsSource, dirs: Sequence[str], field: str, what: str
) -> list[str]:
    """The cache variable ``what`` of the device's ``dirs`` (its ``field``), and the target
    command that uses it."""
    if not dirs:
        return []
    name = variable(source.device_type, what)
    default = _list_argument(source, field, dirs)
    kind, command = ("include", "include") if field == "include_dirs" else ("library", "link")
    return [
        f"set({name} {default} CACHE STRING \"Device {source.device_type}: its SDK's {kind} "
        'dirs (a ;-list)")',
        f"target_{command}_directories({target} PRIVATE ${{{name}}})",
    ]


def _runpath_dirs(ldflags: Sequence[str]) -> dict[str, str]:
    """The device's runpath ldflags, each with its dir."""
    return {
        flag: flag[len(RUNPATH_PREFIX) :]
        for flag in ldflags
        if flag.startswith(RUNPATH_PREFIX) and not re.search(r"[,:]", flag[len(RUNPATH_PREFIX) :])
    }


def _runpath_lines(
    target: str, source: DeviceOptionsSource, own: CppDeviceOptions, dirs: list[str]
) -> list[str]:
    name = variable(source.device_type, "RUNPATH_DIRS")
    library_dirs = variable(source.device_type, "LIBRARY_DIRS")
    dirs_variable = f"_{name.lower()}"
    each = f"${{{dirs_variable}_dir}}"
    why = "g++ splits -Wl, at commas, the loader splits a runpath at ':' and expands '$'"
    # Empty, the default: the library dirs, as configured (a default taken from them would
    # stay in the cache when they are configured anew).
    follows = dirs == list(own.libraries_dirs)
    default = '""' if follows else _list_argument(source, "ldflags", dirs)
    lines = [
        f'set({name} {default} CACHE STRING "Device {source.device_type}: the dirs the loader '
        "searches for its libraries (RUNPATH, a ;-list"
        + (f"; empty: {library_dirs})" if follows else ")")
        + '")',
        f"set({dirs_variable} ${{{name}}})",
    ]
    if follows:
        lines += [
            f"if(NOT {dirs_variable})",
            f"  set({dirs_variable} ${{{library_dirs}}})",
            "endif()",
        ]
    return [
        *lines,
        f"foreach({each[2:-1]} IN LISTS {dirs_variable})",
        f'  if(NOT IS_ABSOLUTE "{each}" OR "{each}" MATCHES "[,:$]")',
        f"    message(FATAL_ERROR \"{name}: '{each}' is not an absolute dir free of ',', ':' "
        f"and '$' ({why})\")",
        "  endif()",
        f'  target_link_options({target} PRIVATE "-Wl,-rpath,{each}")',
        "endforeach()",
    ]


def _libraries(source: DeviceOptionsSource, libraries: Sequence[str]) -> str:
    # A name is a library (or torch's imported target); ":file" is ld's exact file name,
    # which target_link_libraries would take for a target name, so it goes as "-l:file".
    return " ".join(
        argument(source, "libraries", f"-l{name}" if name.startswith(":") else name)
        for name in libraries
    )
