"""The checks that build and load the probe as Inductor builds and loads a module:
``probe_build`` (``CppBuilder`` compiles and links it) and ``probe_load`` (linked so
that it needs every library, it loads in a fresh Python that imported torch)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from .._options.problems import Problem
from .checks import CHECKS, Check, Context, check
from .module_load import LoadResult, missing_library, resolution
from .path_checks import find_library, link_inputs
from .probe import (
    NO_AS_NEEDED,
    PROBE_NAME,
    ProbeBuilds,
    Progress,
    probe_builder,
    probe_command,
    run_probe,
    with_progress,
)
from .text import relevant_lines, shorten

# The checks whose failure makes the probe's build fail.
_BUILD_CHECKS = ("flags", "include_dirs", "libraries")


def start_probe_builds(context: Context, pool: Executor) -> None:
    """Both probes' builds, started before the header checks so that the compiler runs them
    meanwhile, on another core (a second of a static doctor's five); ``check_probe_build``
    and ``check_probe_load`` each wait for their own. The commands are rendered here, in
    the thread that asks for the options. Nothing where the options are not there."""
    if context.unusable():
        return
    device, aot_mode, work = context.device_type, context.aot_mode, context.work
    builder = probe_builder(device, aot_mode, False, work / f"{PROBE_NAME}.cpp", work)
    loadable_source = work / f"{PROBE_NAME}_loaded.cpp"
    shutil.copyfile(work / f"{PROBE_NAME}.cpp", loadable_source)
    loadable = probe_command(device, aot_mode, loadable_source, [NO_AS_NEEDED], False)
    context.probe_builds = ProbeBuilds(
        builder, pool.submit(_seconds, builder.build), loadable, pool.submit(run_probe, loadable)
    )


def _seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def check_probe_build(context: Context, progress: Progress | None) -> Check:
    builds = context.probe_builds
    if context.unusable() or builds is None:
        return context.skipped("probe_build")
    from torch._inductor.cpp_builder import get_cpp_compiler
    from torch._inductor.exc import CppCompileError

    compiler = get_cpp_compiler()
    seconds: list[float] = []
    try:
        message = f"building a probe with {compiler} ..."
        with_progress(progress, message, lambda: seconds.append(builds.built.result()))
    except CppCompileError as error:
        # torch 2.6's CppCompileError keeps the compiler's output only in its message;
        # torch._inductor.exc.CppCompileError has an .output attribute on 2.13 and 2.15.
        output = getattr(error, "output", None) or str(error).partition("Output:")[2]
        return _probe_failed(context, compiler, output)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return _probe_failed(context, compiler, f"{type(error).__name__}: {error}")
    built = Path(builds.builder.get_target_file_path()).name
    return check(
        "probe_build", "pass", f"{compiler} compiled and linked {built} in {seconds[0]:.1f} s"
    )


def _probe_failed(context: Context, compiler: str, output: str) -> Check:
    failed_before = [
        check.title
        for check in context.checks
        if check.status == "fail" and check.name in _BUILD_CHECKS
    ]
    fix = (
        f"fix what the checks above report ({', '.join(failed_before)})"
        if failed_before
        else f"{context.fix_sdk}; `inductor-device-options show {context.device_type}` "
        "prints the full command"
    )
    problem = Problem(
        f"{compiler} could not compile and link a probe with the device's options",
        fix,
        relevant_lines(output),
    )
    return check("probe_build", "fail", f"{compiler} failed", problem)


def check_probe_load(context: Context, progress: Progress | None) -> Check:
    """The probe, linked so that it needs every library, loaded in a fresh Python that
    has imported torch, with the user's environment: where Inductor loads a module."""
    name = "probe_load"
    if context.unusable() or context.options is None:
        return context.skipped(name)
    if not context.passed("probe_build"):
        return check(name, "skip", "skipped: the probe does not build")
    builds = context.probe_builds
    assert builds is not None  # the probe built
    linked: list[str | None] = []
    message = f"running {builds.loadable.compiler} on {PROBE_NAME}_loaded.cpp ..."
    with_progress(progress, message, lambda: linked.append(builds.linked.result()))
    built, output = builds.loadable.target, linked[0]
    if output is not None:
        failed = _probe_failed(context, builds.loadable.compiler, output)
        return dataclasses.replace(failed, name=name, title=CHECKS[name])
    assert context.loader is not None
    loader = context.loader
    results: list[LoadResult] = []
    message = "loading the probe in a fresh python ..."
    with_progress(progress, message, lambda: results.append(loader.load(str(built))))
    [result] = results
    dirs, libraries = link_inputs(context.options)
    if result.error is None:
        return check(name, "pass", _loaded_summary(libraries, dirs, result.loaded))
    missing = missing_library(result.error)
    details = tuple(shorten(line) for line in resolution(str(built), result.loaded))
    if missing is None:
        cause = f"loading a module built with the device's options fails: {result.error}"
        return check(
            name, "fail", "the loader refused it", Problem(cause, context.fix_sdk, details)
        )
    problem = Problem(
        f"a fresh python that imported torch cannot load a module built with the "
        f"device's options: the loader finds no {missing} ({result.error})",
        _runtime_fix(context, missing, dirs),
        details,
    )
    return check(name, "fail", f"{missing} is not found at run time", problem)


def _loaded_summary(libraries: Sequence[str], dirs: Sequence[str], loaded: Sequence[str]) -> str:
    """Where each of the device's shared libraries was loaded from."""
    mapped = set(loaded)
    by_name = {os.path.basename(path): path for path in loaded}
    parts = []
    for library in libraries:
        linked = find_library(library, dirs)
        if linked is None or not linked.endswith(".so"):
            continue
        real = os.path.realpath(linked)
        if real in mapped:
            parts.append(f"{os.path.basename(linked)} ({real})")
        elif os.path.basename(real) in by_name:
            other = by_name[os.path.basename(real)]
            parts.append(f"{os.path.basename(linked)} ({other}, not {real}, which it linked)")
    shown = "; ".join(parts) if parts else "no library of the device's own"
    return f"in a fresh python that imported torch: {shown}"


def _runtime_fix(context: Context, missing: str, dirs: Sequence[str]) -> str:
    """The ways to let the loader find ``missing``: a runpath, LD_LIBRARY_PATH, and what
    the provider's hints add (an SDK's environment script)."""
    holding = next((d for d in dirs if os.path.isfile(os.path.join(d, missing))), None)
    if holding is None:
        fix = (
            f"install {missing}, or put the dir that holds it on LD_LIBRARY_PATH or in the "
            "runpath of the library that needs it"
        )
    else:
        real = os.path.realpath(holding)
        fix = (
            f"give modules a runpath to {real}: in the provider, "
            f"options.ldflags.append(inductor_device_options.runpath({real!r})); "
            f"or run the model with {shlex.quote(real)} first on LD_LIBRARY_PATH"
        )
    return context.hinted(fix, "loader")
