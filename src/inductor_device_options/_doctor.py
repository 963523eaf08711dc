"""What ``inductor-device-options show`` and ``doctor`` compute: no printing here.

Every command line comes from Inductor's own ``CppBuilder`` with
``CppTorchDeviceOptions(device_type=...)``: nothing is re-assembled by hand, so what
is shown and probed is what Inductor runs for a small source.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from . import _registry
from ._errors import CppDeviceOptionsError, InvalidCppDeviceOptionsError
from ._hook import (
    DeviceOptionsSource,
    get_cpp_device_options,
    hook_state,
    known_device_options_sources,
    package_cpp_device_options,
    served_interface,
)
from ._options import FIELDS, CppDeviceOptions, ValueProblem, value_problems
from ._rendering import final_value_problem, rendering_problems
from ._torch_names import CPP_BUILDER

if TYPE_CHECKING:
    from torch._inductor.cpp_builder import CppBuilder

#: torch's own function, the one a device without any provider falls through to.
STOCK_FUNCTION = f"{CPP_BUILDER}.get_cpp_torch_device_options"

PROBE_NAME = "inductor_device_options_probe"
PROBE_SOURCE = (
    "// Written by `inductor-device-options`: the smallest shared object Inductor could build.\n"
    f'extern "C" int {PROBE_NAME}(void) {{ return 0; }}\n'
)

Status = Literal["pass", "fail", "skip"]


class UnknownDeviceError(CppDeviceOptionsError):
    """No provider, declaration, device interface or torch itself knows the device."""


@dataclass(frozen=True)
class Problem:
    """One failure: what is wrong, what to do, and supporting lines (compiler output)."""

    cause: str
    fix: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """One doctor line: ``name`` is stable (JSON), ``title`` and ``summary`` are for people;
    ``problems`` is empty unless ``status`` is ``"fail"``."""

    name: str
    title: str
    status: Status
    summary: str
    problems: tuple[Problem, ...] = ()


# --- where the device stands --------------------------------------------------------------


def load_provider(spec: str) -> _registry.CppDeviceOptionsCallback:
    """Import ``module:callable`` (attribute path may be dotted); ValueError if it fails."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"{spec!r} is not of the form module:callable")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, for the console script
    try:
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: a usage error, never a silent exit
        raise ValueError(f"cannot load {spec!r}: {type(error).__name__}: {error}") from error
    if not callable(target):
        raise ValueError(f"{spec!r} is a {type(target).__name__}, not a callable")
    return target


def unknown_device(device_type: str, source: DeviceOptionsSource) -> UnknownDeviceError | None:
    """The error to report when nothing provides options for ``device_type``, else None.

    Unknown: no registration, entry point or device interface, not a device torch knows
    (cpu, cuda, xpu, mps), and torch's own function is the one Inductor calls (a
    replacement of it may well serve the device).
    """
    known = [known.device_type for known in known_device_options_sources()]
    if device_type in known or source.source != "torch":
        return None
    if source.description != STOCK_FUNCTION or hook_state().replaced_by is not None:
        return None
    return UnknownDeviceError(
        f"unknown device {device_type!r}: no provider is registered or declared for it and "
        "torch computes no options of its own for it, so Inductor would compile it with "
        f"torch's defaults only. Known devices: {', '.join(known)}.\n"
        "Declare a provider in the distribution of the device's backend (pyproject.toml):\n"
        f"    [project.entry-points.{_registry.ENTRY_POINT_GROUP}]\n"
        f'    {device_type} = "your_backend.module:cpp_device_options"\n'
        "or check a callback that is not declared with --provider module:callable.",
        device_type=device_type,
    )


def probe_builder(
    device_type: str, aot_mode: bool, compile_only: bool, source: Path, output_dir: Path
) -> CppBuilder:
    """Inductor's ``CppBuilder`` for ``source`` with the device's options."""
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    options = CppTorchDeviceOptions(
        device_type=device_type, aot_mode=aot_mode, compile_only=compile_only
    )
    return CppBuilder(source.stem, [str(source)], options, output_dir=str(output_dir))


class Commands(NamedTuple):
    compiler: str
    compile: str
    link: str | None


def probe_commands(device_type: str, aot_mode: bool, compile_only: bool, work: Path) -> Commands:
    """The compile command (to an object, as Inductor's AOT path does) and, unless
    ``compile_only``, the command that links that object into a shared library."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = probe_builder(device_type, aot_mode, True, work / f"{PROBE_NAME}.cpp", work)
    link = None
    if not compile_only:
        obj = Path(compiler.get_target_file_path())
        link = probe_builder(device_type, aot_mode, False, obj, work).get_command_line()
    return Commands(get_cpp_compiler(), compiler.get_command_line(), link)


@contextmanager
def probe_workspace() -> Iterator[Path]:
    """A temporary directory holding the probe source, removed afterwards.

    ``TORCHINDUCTOR_CACHE_DIR`` points inside it unless the user set it.
    """
    work = Path(tempfile.mkdtemp(prefix="inductor-device-options-"))
    user_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if user_cache is None:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
    try:
        (work / f"{PROBE_NAME}.cpp").write_text(PROBE_SOURCE)
        yield work
    finally:
        if user_cache is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(work, ignore_errors=True)


# --- doctor -------------------------------------------------------------------------------


@dataclass
class _Context:
    device_type: str
    aot_mode: bool
    source: DeviceOptionsSource
    options: CppDeviceOptions | None = None
    raw: Sequence[object] | None = None  # what the provider returned, when Inductor rejects it
    rejected: InvalidCppDeviceOptionsError | None = None  # and why

    @property
    def fix_provider(self) -> str:
        return f"fix the provider ({self.source.description})"

    @property
    def fix_sdk(self) -> str:
        fix = f"install the device SDK or fix its provider ({self.source.description})"
        if self.device_type == "npu":
            fix += "; for Ascend: source CANN's set_env.sh or set ASCEND_HOME_PATH"
        return fix


def run_doctor(
    device_type: str,
    aot_mode: bool,
    source: DeviceOptionsSource,
    work: Path,
    on_check: Callable[[Check], None] = lambda check: None,
    progress: Callable[[str], Callable[[], None]] | None = None,
) -> list[Check]:
    """Run every check in order, handing each to ``on_check`` as soon as it is done.

    ``progress(message)`` is called before the probe build and returns a function
    that ends the progress display.
    """
    context = _Context(device_type, aot_mode, source)
    checks: list[Check] = []
    steps: list[Callable[[_Context], Check]] = [
        _check_hook,
        _check_options,
        _check_flags,
        _check_include_dirs,
        _check_libraries,
        lambda context: _check_probe_build(context, work, progress, checks),
    ]
    for step in steps:
        check = step(context)
        checks.append(check)
        on_check(check)
    return checks


def _check_hook(context: _Context) -> Check:
    """Ask Inductor's real function and see that the device's options come back."""
    title = "options reach Inductor"
    if context.source.source == "torch":
        return Check("hook", title, "pass", hook_state().describe())
    missing: list[str] = []
    try:
        own = package_cpp_device_options(context.device_type, context.aot_mode)
        received = get_cpp_device_options(context.device_type, context.aot_mode)
    except KeyboardInterrupt:
        raise
    except BaseException:  # the next check reports why (SystemExit included)
        pass
    else:
        missing = [
            f"{field} {value}"
            for field, values, got in zip(
                FIELDS, own or CppDeviceOptions.empty(), received, strict=True
            )
            for value in values
            if value not in got
        ]
    state = hook_state()  # after the lookup: it says how each adopted function behaved
    if not missing and state.replaced_by is None:
        return Check("hook", title, "pass", state.describe())
    if state.replaced_by is not None:
        cause = (
            f"{state.replaced_by} was written to {CPP_BUILDER}.__dict__ directly, past the "
            "hook, so Inductor no longer asks this package"
        )
        fix = (
            f"assign the function as an attribute ({CPP_BUILDER}.get_cpp_torch_device_options "
            "= ...), which the hook adopts, or call inductor_device_options.arm() after writing it"
        )
    else:
        wrappers = [f.description for f in state.adopted if f.behaviour != "replacement"]
        cause = "a function adopted after the hook dropped them from what it got: " + (
            ", ".join(wrappers) or "none seen wrapping the hook"
        )
        fix = "make that function keep the options it receives and only add its own"
    summary = (
        f"{len(missing)} of the options of {context.source.description} do not reach Inductor"
        if missing
        else f"{CPP_BUILDER}.get_cpp_torch_device_options was written past the hook"
    )
    detail = f"missing: {', '.join(missing[:5])}; " if missing else ""
    return Check("hook", title, "fail", summary, (Problem(detail + cause, fix),))


def _both_modes(context: _Context) -> CppDeviceOptions:
    """What Inductor gets for compiling (compile_only) and for linking, merged."""
    compiled = get_cpp_device_options(context.device_type, context.aot_mode, True)
    linked = get_cpp_device_options(context.device_type, context.aot_mode, False)
    return CppDeviceOptions(
        *(_unique([*first, *second]) for first, second in zip(compiled, linked, strict=True))
    )


def _check_options(context: _Context) -> Check:
    title = "options computed"
    try:
        context.options = _both_modes(context)
    except InvalidCppDeviceOptionsError as error:
        if error.field is None:
            return _options_failed(context, error)
        context.raw = _raw_options(context)  # the flags check names every bad value
        context.rejected = error
        if context.raw is None:
            return _options_failed(context, error)
        return Check("options", title, "pass", "returned by the provider")
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit(0) from a provider is a failure, not success
        return _options_failed(context, error)
    counts = ", ".join(
        f"{name} {len(values)}"
        for name, values in zip(FIELDS, context.options, strict=True)
        if values
    )
    return Check("options", title, "pass", f"for compiling and linking: {counts or 'none'}")


def _options_failed(context: _Context, error: BaseException) -> Check:
    # A provider that says what to do ("...\nFix: source CANN's set_env.sh") is quoted.
    cause, marker, fix = str(error).partition("\nFix: ")
    return Check(
        "options",
        "options computed",
        "fail",
        f"the provider raised {type(error).__name__}",
        (Problem(f"{type(error).__name__}: {cause}", fix if marker else context.fix_provider),),
    )


def _raw_options(context: _Context) -> Sequence[object] | None:
    """The provider's result before validation, or None when it cannot be had again."""
    raw: object
    try:
        provider = _registry.find_provider(context.device_type)
        if provider is not None:
            raw = provider.callback(context.device_type, context.aot_mode, False)
        else:
            interface = served_interface(context.device_type)
            if interface is None:
                return None
            raw = interface.get_cpp_device_options(context.aot_mode, False)  # type: ignore[attr-defined]
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None
    if not isinstance(raw, (tuple, list)) or len(raw) != len(FIELDS):
        return None
    return raw


def _check_flags(context: _Context) -> Check:
    """Every value as g++ will get it: the final options (after real paths,
    custom_op_libs and the fingerprint) against the running CppBuilder, or, when the
    pipeline refused them, each value the provider returned."""
    title = "flags well formed"
    if context.raw is not None:
        problems, count = _raw_problems(context, context.raw)
    elif context.options is not None:
        final = value_problems(context.options) + rendering_problems(context.options)
        problems = [_value_problem(context, problem) for problem in final]
        count = sum(len(values) for values in context.options)
    else:
        return _skipped("flags", title, context)
    if problems:
        return Check(
            "flags", title, "fail", f"{_plural(len(problems), 'bad value')}", tuple(problems)
        )
    return Check(
        "flags",
        title,
        "pass",
        f"{_plural(count, 'value')}, each reaching g++ as the arguments meant",
    )


def _raw_problems(context: _Context, raw: Sequence[object]) -> tuple[list[Problem], int]:
    problems: list[Problem] = []
    count = 0
    for name, values in zip(FIELDS, raw, strict=True):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            problems.append(
                Problem(f"{name} is a {type(values).__name__}, not a list", context.fix_provider)
            )
            continue
        for index, value in enumerate(list(values)):
            count += 1
            if isinstance(value, str):
                value = str.__str__(value)
                problem = final_value_problem(name, value)
            else:
                problem = f"is a {type(value).__name__}, not a str"
            if problem is not None:
                problems.append(
                    Problem(f"{name}[{index}] = {value!r} {problem}", context.fix_provider)
                )
    if not problems and context.rejected is not None:
        # Each value is fine as written: what is not is its real path or custom_op_libs.
        problems.append(Problem(str(context.rejected), context.fix_sdk))
    return problems, count


def _value_problem(context: _Context, problem: ValueProblem) -> Problem:
    return Problem(
        f"{problem.field}[{problem.position}] = {problem.value!r} {problem.problem}",
        context.fix_provider,
    )


def _check_include_dirs(context: _Context) -> Check:
    title = "include dirs exist"
    if context.options is None:
        return _skipped("include_dirs", title, context)
    dirs = context.options.include_dirs
    # torch's own defaults may name dirs its wheel lacks (2.6: include/TH, include/THC):
    # reported, but not the device's problem.
    from torch.utils.cpp_extension import include_paths

    torch_missing = [d for d in dirs if d in include_paths() and not os.path.isdir(d)]
    problems = [
        Problem(cause, context.fix_sdk)
        for cause in (_dir_problem("include dir", d) for d in dirs if d not in torch_missing)
        if cause is not None
    ]
    if problems:
        return Check(
            "include_dirs",
            title,
            "fail",
            f"{len(problems)} of {_plural(len(dirs), 'include dir')} missing",
            tuple(problems),
        )
    summary = _plural(len(dirs), "dir") if dirs else "none"
    if torch_missing:
        summary += f"; torch's own defaults name missing {', '.join(torch_missing)} (ignored)"
    return Check("include_dirs", title, "pass", summary)


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


def _check_libraries(context: _Context) -> Check:
    title = "libraries found"
    if context.options is None:
        return _skipped("libraries", title, context)
    dirs, libraries = _link_inputs(context.options)
    found: list[str] = []
    problems: list[Problem] = []
    for library in libraries:
        path = _find_library(library, dirs)
        if path is not None:
            found.append(f"{library} ({path})")
            continue
        where = ", ".join(
            path if os.path.isdir(path) else f"{path} (does not exist)" for path in dirs
        )
        problems.append(
            Problem(
                f"{_library_files(library)[0]} not found in "
                f"{where + ' or ' if where else ''}the system linker path",
                context.fix_sdk,
            )
        )
    if problems:
        return Check(
            "libraries",
            title,
            "fail",
            f"{len(problems)} of {_plural(len(libraries), 'library', 'libraries')} not found",
            tuple(problems),
        )
    return Check("libraries", title, "pass", "; ".join(found) if found else "none to link")


def _link_inputs(options: CppDeviceOptions) -> tuple[list[str], list[str]]:
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
    return _unique(dirs), _unique(libraries)


def _library_files(library: str) -> list[str]:
    """The file names the linker accepts for ``-l{library}``."""
    if library.startswith(":"):
        return [library[1:]]
    return [f"lib{library}.so", f"lib{library}.a"]


def _find_library(library: str, dirs: Sequence[str]) -> str | None:
    for directory in [*dirs, *system_library_dirs()]:
        for name in _library_files(library):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
    return None


@cache
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
    return tuple(_unique(os.path.normpath(path) for path in dirs if path))


def _output(command: list[str]) -> str:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _check_probe_build(
    context: _Context,
    work: Path,
    progress: Callable[[str], Callable[[], None]] | None,
    earlier: Sequence[Check],
) -> Check:
    title = "probe compiles and links"
    if context.options is None or context.raw is not None:
        return _skipped("probe_build", title, context)
    from torch._inductor.cpp_builder import get_cpp_compiler
    from torch._inductor.exc import CppCompileError

    compiler = get_cpp_compiler()
    source = work / f"{PROBE_NAME}.cpp"
    done = progress(f"building a probe with {compiler} ...") if progress else None
    started = time.perf_counter()
    try:
        builder = probe_builder(context.device_type, context.aot_mode, False, source, work)
        builder.build()
    except CppCompileError as error:
        # torch 2.6's CppCompileError keeps the compiler's output only in its message.
        output = getattr(error, "output", None) or str(error).partition("Output:")[2]
        return _probe_failed(context, compiler, output, earlier)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return _probe_failed(context, compiler, f"{type(error).__name__}: {error}", earlier)
    finally:
        if done is not None:
            done()
    seconds = time.perf_counter() - started
    built = Path(builder.get_target_file_path()).name
    return Check(
        "probe_build",
        title,
        "pass",
        f"{compiler} compiled and linked {built} in {seconds:.1f} s",
    )


_RELEVANT = re.compile(
    r"error|fatal|cannot find|undefined reference|no such file|not found", re.IGNORECASE
)


def _probe_failed(context: _Context, compiler: str, output: str, earlier: Sequence[Check]) -> Check:
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    relevant = [line for line in lines if _RELEVANT.search(line)] or lines[-6:]
    failed_before = [check.title for check in earlier if check.status == "fail"]
    fix = (
        f"fix what the checks above report ({', '.join(failed_before)})"
        if failed_before
        else f"{context.fix_sdk}; `inductor-device-options show {context.device_type}` "
        "prints the full command"
    )
    return Check(
        "probe_build",
        "probe compiles and links",
        "fail",
        f"{compiler} failed",
        (
            Problem(
                f"{compiler} could not compile and link a probe with the device's options",
                fix,
                tuple(_shorten(line) for line in relevant[:6]),
            ),
        ),
    )


def _skipped(name: str, title: str, context: _Context) -> Check:
    reason = (
        "Inductor rejects the options"
        if context.raw is not None
        else ("the options could not be computed")
    )
    return Check(name, title, "skip", f"skipped: {reason}")


def _shorten(line: str, width: int = 300) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def _unique(values: Iterator[str] | Sequence[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
