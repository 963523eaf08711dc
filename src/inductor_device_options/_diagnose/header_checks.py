"""The checks of what Inductor's generated code includes: ``headers`` (each found in the
include dirs, then all preprocessed with the compile command Inductor runs) and
``shadowed_headers`` (no header two include dirs provide with other contents)."""

from __future__ import annotations

import os
import sysconfig

from .._fs import inside_torch
from .._options.problems import Problem
from .asked import AskedDevice
from .checks import Check, Context, check
from .hook_checks import FIX_CODEGEN
from .inductor_headers import (
    DeviceHeaders,
    InvalidHeadersDeclarationError,
    device_headers,
    locate,
    shadowed_headers,
    system_include_dirs,
)
from .probe import Progress, run_probe_command
from .text import error_line, located, plural, relevant_lines

MAX_SHADOWED_SHOWN = 20


def compile_include_dirs(context: Context) -> list[str]:
    """Every ``-I`` dir of the compile command, in order: torch's and Python's, the device's."""
    from torch._inductor.cpp_builder import CppTorchDeviceOptions

    # torch's own object, as the build makes it: its -I order is the order g++ searches in.
    options = CppTorchDeviceOptions(
        device_type=context.device_type, aot_mode=context.aot_mode, compile_only=True
    )
    return list(options.get_include_dirs())


def is_torch_dir(path: str) -> bool:
    # Python's own include dir comes with torch's in every build: not the device's either.
    real = os.path.realpath(path)
    return inside_torch(real) or real == os.path.realpath(sysconfig.get_paths()["include"])


def check_headers(context: Context, progress: Progress | None) -> Check:
    """The headers Inductor's generated code includes for the device: each found in the
    include dirs, then all of them preprocessed with the compile command Inductor runs.

    Preprocessed (``-M``), not compiled: the preprocessor includes every header and
    evaluates every ``#if``/``#error`` of the real build (a missing nested header, a
    macro the options fail to define) in a tenth of a second, where compiling them takes
    one to four (they pull in most of torch) and proves little more about the options.
    """
    if context.unusable():
        return context.skipped("headers")
    headers = included_headers(context)
    if isinstance(headers, Check):
        return headers
    if not headers.names:
        return check("headers", "pass", f"none ({headers.origin} names none)")
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    include_dirs = compile_include_dirs(context)
    found = {header: locate(header, include_dirs, compiler) for header in headers.names}
    missing = [header for header, path in found.items() if path is None]
    if missing:
        problem = _missing_headers(context, headers, include_dirs, missing, compiler)
        return check(
            "headers", "fail", f"{len(missing)} of {len(headers.names)} not found", problem
        )
    source = context.work / "inductor_device_headers.cpp"
    source.write_text(
        "// Written by `inductor-device-options`: what Inductor's generated code includes\n"
        f"// for {context.device_type} ({headers.origin}).\n{headers.text}"
    )
    # -M: dependencies only, into nothing: every #include and #if is evaluated, nothing is
    # compiled (see the docstring).
    args = (context.device_type, context.aot_mode, source, ["-M", "-MF", os.devnull], progress)
    _, output = run_probe_command(*args)
    where = _where_found(found)
    if output is None:
        summary = f"{where} ({headers.origin}); preprocessed with the options"
        return check("headers", "pass", summary)
    problem = Problem(
        f"{compiler}'s preprocessor could not include what Inductor's generated code "
        f"includes ({headers.origin}: {where}) with the device's options",
        context.fix_sdk,
        relevant_lines(output),
    )
    return check("headers", "fail", f"{compiler} cannot include them", problem)


def included_headers(context: Context) -> DeviceHeaders | Check:
    """What Inductor's generated code includes for the device, or the failed check when
    that cannot be known."""
    declarer = (
        "the device interface" if context.source.kind == "device interface" else ("the provider")
    )
    try:
        reported = context.asked.reported if context.asked is not None else None
        declared = context.serving
        headers = device_headers(
            context.device_type, context.aot_mode, declared, declarer, reported
        )
    except InvalidHeadersDeclarationError as error:
        problem = Problem(str(error), context.fix_provider)
        return check("headers", "fail", "the provider's declaration failed", problem)
    except Exception as error:  # a backend's wrapper codegen class that cannot say
        return check(
            "headers",
            "fail",
            f"asking the device's wrapper codegen class raised {type(error).__name__}",
            Problem(
                f"what Inductor's generated code includes for {context.device_type!r} "
                f"cannot be known: {error_line(error)}{located(error)}",
                FIX_CODEGEN,
            ),
        )
    return _with_precompiled_header(headers, context.asked)


def _missing_headers(
    context: Context,
    headers: DeviceHeaders,
    include_dirs: list[str],
    missing: list[str],
    compiler: str,
) -> Problem:
    """One problem for every header none of the include dirs has, with one fix. The dirs
    searched are its details: each ``-I`` on a line, the compiler's own on one (they are
    the same for every build, and rarely where a device's header belongs)."""
    own = system_include_dirs(compiler)
    searched = (
        *(f"-I {directory}" for directory in include_dirs),
        *([f"{compiler}'s own: {', '.join(own)}"] if own else []),
    )
    count = len(include_dirs) + len(own)
    sdk_dirs = (
        [d for d in context.options.include_dirs if not is_torch_dir(d)]
        if (context.options is not None)
        else []
    )
    one = len(missing) == 1
    them, it = (missing[0], "it") if one else ("them", "them")
    if sdk_dirs:
        fix = (
            f"ship {them} in the device SDK, in an include dir the provider adds (e.g. "
            f"{os.path.join(sdk_dirs[0], missing[0])}), or add the dir that holds {it} to the "
            "provider's include_dirs"
        )
    else:
        fix = (
            f"ship {them} in the device SDK, under an include dir of its own, and add that dir "
            "to the provider's include_dirs"
        )
    fix = context.hinted(fix, "headers")
    if one:
        cause = (
            f"Inductor's generated code will `#include <{missing[0]}>` ({headers.origin}), "
            f"and none of the {count} include dirs has it"
        )
        return Problem(cause, fix, searched)
    cause = (
        f"Inductor's generated code will #include {len(missing)} headers ({headers.origin}) "
        f"that none of the {count} include dirs has"
    )
    return Problem(cause, fix, searched, tuple(missing))


def _with_precompiled_header(headers: DeviceHeaders, asked: AskedDevice | None) -> DeviceHeaders:
    """``headers`` and the header torch's own precompile step includes for the device its
    builds ask for, whatever the codegen includes."""
    if asked is None or asked.precompiled_header is None:
        return headers
    # torch 2.13-2.15 force-include the precompiled header in the device's builds, so it
    # must be found with the device's options too, even where the codegen includes others.
    header = asked.precompiled_header
    if header in headers.names:
        return headers
    return DeviceHeaders(
        f"{headers.text}#include <{header}>\n",
        (*headers.names, header),
        f"{headers.origin}; {header}: torch precompiles it for {asked.asked!r} "
        "(codecache._get_cpp_wrapper_header)",
    )


def _where_found(found: dict[str, str | None]) -> str:
    """``a.h in /dir``, or for many headers the last (the device's own) and the dirs."""
    dirs = {header: _include_dir(str(path), header) for header, path in found.items()}
    if len(dirs) <= 2:
        return "; ".join(f"{header} in {directory}" for header, directory in dirs.items())
    *others, last = dirs
    counts: dict[str, int] = {}
    for directory in dirs.values():
        counts[directory] = counts.get(directory, 0) + 1
    return f"{last} and {len(others)} more, in " + ", ".join(
        f"{directory} ({count})" for directory, count in counts.items()
    )


def _include_dir(path: str, header: str) -> str:
    """The include dir in which ``header`` was found at ``path``."""
    suffix = os.sep + header
    return path[: -len(suffix)] if path.endswith(suffix) else os.path.dirname(path)


def check_shadowed_headers(context: Context) -> Check:
    if context.unusable():
        return context.skipped("shadowed_headers")
    include_dirs = compile_include_dirs(context)
    # torch's dirs are passed as its own: a header torch and the SDK both ship is the SDK's
    # business only where the copies differ.
    own = [directory for directory in include_dirs if is_torch_dir(directory)]
    shadowed = shadowed_headers(include_dirs, own)
    if not shadowed:
        summary = f"no header is in two of the {len(include_dirs)} include dirs with other contents"
        return check("shadowed_headers", "pass", summary)
    summary = f"{plural(len(shadowed), 'header')} in more than one include dir, with other contents"
    fix = "remove the stale copy, or order the include dirs so that the right one comes first"
    copies = [
        tuple(
            f"{copy} ({'used' if index == 0 else 'same as used' if same else 'differs'})"
            for index, (copy, same) in enumerate(
                zip(header.copies, header.same_as_used, strict=True)
            )
        )
        for header in shadowed
    ]
    if len(shadowed) == 1:
        [header] = shadowed
        problem = Problem(
            f"{header.name} is in {len(header.copies)} include dirs, with different "
            "contents: g++ uses the first (-I order)",
            fix,
            copies[0],
        )
        return check("shadowed_headers", "warn", summary, problem)
    instances = [
        f"{header.name}: {', '.join(found)}"
        for header, found in zip(shadowed[:MAX_SHADOWED_SHOWN], copies, strict=False)
    ]
    if len(shadowed) > MAX_SHADOWED_SHOWN:
        rest = [header.name for header in shadowed[MAX_SHADOWED_SHOWN:]]
        instances.append(f"and {len(rest)} more: {', '.join(rest)}")
    cause = (
        f"{len(shadowed)} headers are each in more than one include dir, with different "
        "contents: g++ uses the first copy (-I order)"
    )
    return check("shadowed_headers", "warn", summary, Problem(cause, fix, (), tuple(instances)))
