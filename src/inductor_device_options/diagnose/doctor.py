"""What ``inductor-device-options show`` and ``doctor`` compute: no printing here.

Every command line comes from Inductor's own ``CppBuilder`` with
``CppTorchDeviceOptions(device_type=...)``: nothing is re-assembled by hand, so what
is shown and probed is what Inductor runs for a small source.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import shlex
import shutil
import sys
import sysconfig
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from .. import __version__
from .._errors import (
    CppDeviceOptionsError,
    InvalidCppDeviceOptionsError,
    ProviderLoadError,
    raised_by_provider,
)
from .._torch_names import CPP_BUILDER
from ..hook.asked import AskedDevice, asked_device_type, not_asked_fix
from ..hook.install import (
    DeviceOptionsSource,
    get_cpp_device_options,
    hook_state,
    known_device_options_sources,
    loaded_source,
    package_cpp_device_options,
    served_interface,
)
from ..lookup import registry as _registry
from ..options.freshness import _inside_torch
from ..options.model import FIELDS, CppDeviceOptions, ValueProblem
from ..options.rendering import final_problems, final_value_problem
from .inductor_headers import (
    DeviceHeaders,
    InvalidHeadersDeclarationError,
    device_headers,
    locate,
    shadowed_headers,
    system_include_dirs,
)
from .module_load import FreshPython, missing_library, resolution
from .run import run_tool

if TYPE_CHECKING:
    from torch._inductor.cpp_builder import CppBuilder

#: torch's own function, the one a device without any provider falls through to.
STOCK_FUNCTION = f"{CPP_BUILDER}.get_cpp_torch_device_options"

PROBE_NAME = "inductor_device_options_probe"
PROBE_SOURCE = (
    "// Written by `inductor-device-options`: the smallest shared object Inductor could build.\n"
    f'extern "C" int {PROBE_NAME}(void) {{ return 0; }}\n'
)

Status = Literal["pass", "warn", "fail", "skip"]

#: Every check, in the order doctor runs them: name (stable, JSON) and title. "provider"
#: is there only when a ``--provider`` could not be loaded.
CHECKS: dict[str, str] = {
    "provider": "provider loads",
    "hook": "options reach Inductor",
    "device_asked": "builds ask for the device",
    "options": "options computed",
    "flags": "flags well formed",
    "include_dirs": "include dirs exist",
    "headers": "Inductor's device headers found",
    "shadowed_headers": "no shadowed headers",
    "libraries": "libraries found",
    "probe_build": "probe compiles and links",
    "probe_load": "probe loads",
    # With --aot and without --compile: always a SKIP that says so.
    "aoti_runner": "AOTInductor model runner",
    # doctor --compile (_doctor_compile.py); aoti_load with --aot only.
    "compile_run": "a real compile on the device",
    "builds_asked": "the compile asked for the device",
    "options_reached": "the options reach g++",
    "aoti_load": "the AOTInductor package loads and runs",
}

#: Linked into the probe that is loaded: every -l library becomes a NEEDED entry, as in a
#: module whose code calls into it (the empty probe calls nothing, and many distributions'
#: g++ link --as-needed, which would drop every library from it).
NO_AS_NEEDED = "-Wl,--no-as-needed"


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
    ``problems`` is empty unless ``status`` is ``"fail"`` or ``"warn"`` (a warning does
    not fail doctor)."""

    name: str
    title: str
    status: Status
    summary: str
    problems: tuple[Problem, ...] = ()


# --- where the device stands --------------------------------------------------------------


class ProviderSpec(NamedTuple):
    """``--provider``: ``[DEVICE=]MODULE:CALLABLE`` (the attribute path may be dotted)."""

    device_type: str | None
    module: str
    attribute: str

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}"


def parse_provider_spec(text: str) -> ProviderSpec:
    """Parse ``[DEVICE=]MODULE:CALLABLE``; ValueError when it is not of that form."""
    # No module or attribute name holds "=": one is a DEVICE= prefix.
    device, equals, spec = text.rpartition("=")
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"{text!r} is not of the form [DEVICE=]MODULE:CALLABLE")
    if equals and not device:
        raise ValueError(f"{text!r} names no device before '='")
    return ProviderSpec(
        _registry.normalize_device_type(device) if device else None, module_name, attribute
    )


def load_provider(spec: ProviderSpec, device_type: str) -> _registry.CppDeviceOptionsCallback:
    """Import ``spec``'s module and get its callable, the current directory importable
    (as ``python -m`` has it, for the console script too).

    Raises ``ProviderLoadError`` naming the module, the exception and where it was raised
    (SystemExit at import included), with a fix after ``"\nFix: "``.
    """
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    what = f"the C++ options provider {spec} for device {device_type!r} (--provider)"
    try:
        target: object = importlib.import_module(spec.module)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: a failed load, never a silent exit
        raise _import_failed(what, spec, device_type, error) from error
    for part in spec.attribute.split("."):
        try:
            target = getattr(target, part)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            where = getattr(sys.modules.get(spec.module), "__file__", None) or spec.module
            raise ProviderLoadError(
                f"cannot load {what}: getting {spec.attribute!r} of module {spec.module!r} "
                f"({where}) raised {_error_line(error)}{_located(error)}\n"
                f"Fix: name a callable that module defines",
                device_type=device_type,
                provider=str(spec),
            ) from error
    if not callable(target):
        raise ProviderLoadError(
            f"cannot load {what}: {spec} is a {type(target).__name__}, not a callable\n"
            "Fix: name the provider function, (device_type, aot_mode, compile_only) -> options",
            device_type=device_type,
            provider=str(spec),
        )
    return target


def _import_failed(
    what: str, spec: ProviderSpec, device_type: str, error: BaseException
) -> ProviderLoadError:
    missing = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
    if missing is not None and (spec.module == missing or spec.module.startswith(missing + ".")):
        fix = (
            f"Python finds no module {missing!r} on its path (the current directory, "
            "PYTHONPATH, site-packages): run from the directory that holds it, or add that "
            f"directory to PYTHONPATH (PYTHONPATH=/path/to/dir {_PROG} ...)"
        )
    else:
        fix = f"fix module {spec.module!r} (or what it imports) so that it imports"
    return ProviderLoadError(
        f"cannot load {what}: importing module {spec.module!r} raised "
        f"{_error_line(error)}{_located(error)}\nFix: {fix}",
        device_type=device_type,
        provider=str(spec),
    )


_PROG = "inductor-device-options"


def _error_line(error: BaseException) -> str:
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _located(error: BaseException) -> str:
    where = raised_at(error, skip=(__file__,))
    return f", at {where}" if where else ""


_IMPORTLIB_DIR = os.path.dirname(importlib.__file__) + os.sep


def raised_at(error: BaseException, skip: Sequence[str] = ()) -> str | None:
    """``file:line`` where ``error`` was raised: a SyntaxError's own position, else the
    innermost frame that is not Python's import machinery nor in ``skip``."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith(("<frozen ", _IMPORTLIB_DIR))
        and frame.filename not in skip
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


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


#: The entry point this package declares for Ascend's npu (pyproject.toml).
BUNDLED_ASCEND_PROVIDER = "inductor_device_options.ascend:cpp_device_options"


def bundled_backend_missing(source: DeviceOptionsSource) -> str | None:
    """Why ``doctor --all`` leaves out a device served by this package's own bundled
    provider (npu, where torch_npu is not installed: not a device of this machine), or
    None: it is checked."""
    if source.source != "entry point":
        return None
    entry_point = _registry.declared_entry_points().get(source.device_type)
    if entry_point is None or entry_point.value != BUNDLED_ASCEND_PROVIDER:
        return None
    from ..ascend import TorchNpuNotFoundError, find_torch_npu

    try:
        find_torch_npu()
    except TorchNpuNotFoundError:
        return (
            "torch_npu is not installed (the bundled Ascend provider's device); "
            f"`{_PROG} doctor {source.device_type}` checks it anyway"
        )
    return None


def all_devices() -> list[DeviceOptionsSource]:
    """What ``doctor --all`` checks: every device this process knows a source for, but
    torch's own (cpu, cuda, xpu, mps)."""
    return [
        source
        for source in known_device_options_sources()
        if source.device_type not in _registry.RESERVED_DEVICE_TYPES
    ]


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
    work: Path
    loader: FreshPython | None = None
    asked: AskedDevice | None = None  # what Inductor's builds ask for, once known
    options: CppDeviceOptions | None = None
    raw: Sequence[object] | None = None  # what the provider returned, when Inductor rejects it
    rejected: InvalidCppDeviceOptionsError | None = None  # and why
    checks: list[Check] = field(default_factory=list)  # those done so far

    @property
    def fix_provider(self) -> str:
        return f"fix the provider ({self.source.description})"

    @property
    def fix_sdk(self) -> str:
        fix = f"install the device SDK or fix its provider ({self.source.description})"
        if self.device_type == "npu":
            fix += "; for Ascend: source CANN's set_env.sh or set ASCEND_HOME_PATH"
        return fix

    def passed(self, name: str) -> bool:
        return any(check.name == name and check.status != "fail" for check in self.checks)


def run_doctor(
    device_type: str,
    aot_mode: bool,
    source: DeviceOptionsSource,
    work: Path,
    on_check: Callable[[Check], None] = lambda check: None,
    progress: Callable[[str], Callable[[], None]] | None = None,
    loader: FreshPython | None = None,
    compile: bool = False,
) -> list[Check]:
    """Run every static check in order, handing each to ``on_check`` as soon as it is done
    (``compile``: the checks of ``--compile`` follow, run by the caller).

    ``progress(message)`` is called before each build and returns a function that ends
    the progress display. ``loader`` is the fresh Python the probe is loaded in (started
    as early as possible: its ``import torch`` runs meanwhile; by default, now); it is
    ended when the checks are.
    """
    context = _Context(device_type, aot_mode, source, work)
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{PROBE_NAME}.cpp").write_text(PROBE_SOURCE)
    steps: list[Callable[[_Context], Check]] = [
        _check_hook,
        _check_device_asked,
        _check_options,
        _check_flags,
        _check_include_dirs,
        lambda context: _check_headers(context, progress),
        _check_shadowed_headers,
        _check_libraries,
        lambda context: _check_probe_build(context, progress),
        lambda context: _check_probe_load(context, progress),
    ]
    if aot_mode and not compile:
        steps.append(_aoti_runner_not_checked)
    with loader or FreshPython() as context.loader:
        for step in steps:
            check = step(context)
            context.checks.append(check)
            on_check(check)
    return context.checks


#: The checks ``doctor --compile`` adds after the static ones (``aoti_load``: with --aot).
COMPILE_CHECKS = ("compile_run", "builds_asked", "options_reached", "aoti_load")


def check_names(aot_mode: bool, compile: bool) -> list[str]:
    """The checks a doctor run makes, in order ("provider" only when it fails)."""
    names = [name for name in CHECKS if name != "provider" and name not in COMPILE_CHECKS]
    if not aot_mode or compile:
        names.remove("aoti_runner")
    if compile:
        names += [name for name in COMPILE_CHECKS if aot_mode or name != "aoti_load"]
    return names


def provider_load_failed(error: ProviderLoadError, names: Sequence[str]) -> list[Check]:
    """doctor's checks when ``--provider`` cannot be loaded: that one failed, the others
    (``names``) skipped: they would check another provider than the one asked for."""
    cause, marker, fix = str(error).partition("\nFix: ")
    reason = type(error.__cause__ or error).__name__
    failed = Check(
        "provider",
        CHECKS["provider"],
        "fail",
        f"{error.provider} could not be loaded: {reason}",
        (Problem(cause, fix if marker else f"fix {error.provider}"),),
    )
    return [
        failed,
        *(
            Check(name, CHECKS[name], "skip", "skipped: the provider could not be loaded")
            for name in names
        ),
    ]


def _aoti_runner_not_checked(context: _Context) -> Check:
    """Said, not checked: no static check can tell whether ``aoti_load_package`` finds a
    model runner for the device."""
    return Check(
        "aoti_runner",
        CHECKS["aoti_runner"],
        "skip",
        "skipped: not checked without --compile: torch keeps its AOTInductor model runners "
        "in C++ (RegisterAOTIModelRunner), where Python cannot see them; `inductor-device-"
        f"options doctor {context.device_type} --aot --compile` loads a package",
    )


def _check_hook(context: _Context) -> Check:
    """Ask Inductor's real function and see that the device's options come back."""
    title = CHECKS["hook"]
    if context.source.source == "torch":
        return Check("hook", title, "pass", hook_state().describe())
    missing: list[str] = []
    try:
        own = package_cpp_device_options(context.device_type, context.aot_mode)
        if own is None and context.source.source == "device interface":
            own = _interface_answer(context)
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


def _check_device_asked(context: _Context) -> Check:
    """Which device type the builder gets for the device's cpp_wrapper (or AOTInductor)
    builds: the device's options reach them only if it is the device itself."""
    name, title = "device_asked", CHECKS["device_asked"]
    try:
        asked = asked_device_type(context.device_type, context.aot_mode)
    except Exception as error:
        return Check(
            name,
            title,
            "fail",
            f"finding the device type asked raised {type(error).__name__}",
            (
                Problem(
                    f"{_error_line(error)}{_located(error)}",
                    "fix the backend's wrapper codegen class (registered with "
                    "torch._inductor.codegen.common.register_backend_for_device)",
                ),
            ),
        )
    context.asked = asked
    if asked.error is not None:
        assert asked.codegen is not None  # only creating a codegen raises
        return Check(
            name,
            title,
            "fail",
            f"creating {asked.codegen} raised {asked.error.partition(':')[0]}",
            (
                Problem(
                    f"{asked.reason}: Inductor creates it the same way for every cpp_wrapper "
                    f"and AOTInductor build of {context.device_type!r}, which would fail there",
                    f"fix {asked.codegen} or register what its __init__ needs (CppWrapperCpu "
                    "asks torch._inductor.codegen.common.get_device_op_overrides(self.device): "
                    "register_device_op_overrides); if it needs a real graph, "
                    f"`inductor-device-options doctor {context.device_type} --compile` judges",
                ),
            ),
        )
    if asked.asked is None:
        return Check(name, title, "skip", f"skipped: {asked.reason}")
    if not asked.mismatch:
        return Check(name, title, "pass", asked.describe())
    assert asked.codegen is not None  # only a codegen reports another device
    return Check(
        name,
        title,
        "fail",
        f"cpp_wrapper builds ask for {asked.asked!r}, not {context.device_type!r}",
        (
            Problem(
                f"{asked.reason}, and Inductor builds the C++ wrapper of a "
                f"{context.device_type!r} graph with CppTorchDeviceOptions(device_type="
                f"{asked.asked!r}): the options of {context.device_type!r} from "
                f"{context.source.description} are never consulted",
                not_asked_fix(context.device_type, asked.codegen),
            ),
        ),
    )


def _interface_answer(context: _Context) -> CppDeviceOptions | None:
    """What the device's DeviceInterface answers, asked directly (None: no answer)."""
    interface = served_interface(context.device_type)
    method = getattr(interface, "get_cpp_device_options", None)
    answer = method(context.aot_mode, False) if method is not None else None
    return None if answer is None else CppDeviceOptions(*(list(values) for values in answer))


def _both_modes(context: _Context) -> CppDeviceOptions:
    """What Inductor gets for compiling (compile_only) and for linking, merged."""
    compiled = get_cpp_device_options(context.device_type, context.aot_mode, True)
    linked = get_cpp_device_options(context.device_type, context.aot_mode, False)
    return CppDeviceOptions(
        *(_unique([*first, *second]) for first, second in zip(compiled, linked, strict=True))
    )


def _check_options(context: _Context) -> Check:
    title = CHECKS["options"]
    fallback = _fallback_failure(context)
    if fallback is not None:
        return fallback
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


def _fallback_failure(context: _Context) -> Check | None:
    """A bundled provider gives way to the function below when it cannot compute the
    options: Inductor then gets torch's (or a replacement's), which is worth a FAIL here."""
    try:
        source = loaded_source(context.device_type)
    except Exception:  # the checks below report it
        return None
    if source is None or not source.fallback or source.call is None:
        return None
    try:
        source.call(context.device_type, context.aot_mode, False)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        failed = _options_failed(context, error)
        (problem,) = failed.problems
        note = (
            "; meanwhile Inductor gets what the device gets without inductor-device-options "
            "(the bundled provider gives way, with a warning)"
        )
        return dataclasses.replace(
            failed, problems=(dataclasses.replace(problem, cause=problem.cause + note),)
        )
    return None


def _options_failed(context: _Context, error: BaseException) -> Check:
    if not _blames_source(context, error):
        return _internal_error(error)
    # A provider that says what to do ("...\nFix: source CANN's set_env.sh") is quoted.
    cause, marker, fix = str(error).partition("\nFix: ")
    return Check(
        "options",
        CHECKS["options"],
        "fail",
        f"the provider raised {type(error).__name__}",
        (Problem(f"{type(error).__name__}: {cause}", fix if marker else context.fix_provider),),
    )


def _blames_source(context: _Context, error: BaseException) -> bool:
    """Whether ``error`` is the provider's: raised by its call, a verdict of the package on
    it (a ``CppDeviceOptionsError`` names the provider), a ``SystemExit`` (the package
    raises none), or, for options torch computes, raised outside this package."""
    if raised_by_provider(error) is not None or isinstance(error, CppDeviceOptionsError):
        return True
    if not isinstance(error, Exception):
        return True
    return context.source.source == "torch" and not _raised_in_package(error)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _raised_in_package(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and os.path.abspath(frames[-1].filename).startswith(_PACKAGE_DIR + os.sep)


def _internal_error(error: BaseException) -> Check:
    frames = traceback.extract_tb(error.__traceback__)
    where = f", at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return Check(
        "options",
        CHECKS["options"],
        "fail",
        f"inductor-device-options failed (internal error {type(error).__name__})",
        (
            Problem(
                f"inductor-device-options {__version__} raised {_error_line(error)}{where}: "
                "the error is the package's own, raised outside any call of the provider",
                "this is a bug of inductor-device-options, not of the provider: please "
                "report it to its maintainers with this output",
            ),
        ),
    )


def _raw_options(context: _Context) -> Sequence[object] | None:
    """The provider's result before validation, or None when it cannot be had again."""
    raw: object
    try:
        source = loaded_source(context.device_type)
        if source is None or source.call is None:
            return None
        raw = source.call(context.device_type, context.aot_mode, False)
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
    title = CHECKS["flags"]
    if context.raw is not None:
        problems, count = _raw_problems(context, context.raw)
    elif context.options is not None:
        # For torch's doors (what Inductor gets is exactly the backend's): findings only.
        problems = [_value_problem(context, problem) for problem in final_problems(context.options)]
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
    fix = context.fix_provider
    if not context.source.guaranteed:
        fix += (
            f"; Inductor gets it as the {context.source.source} gives it (this package "
            "checks torch's doors only with inductor_device_options."
            f"guarantee_cpp_device_options({context.device_type!r}))"
        )
    return Problem(
        f"{problem.field}[{problem.position}] = {problem.value!r} {problem.problem}", fix
    )


def _check_include_dirs(context: _Context) -> Check:
    title = CHECKS["include_dirs"]
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
    title = CHECKS["libraries"]
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
    return run_tool(command).stdout


# --- what Inductor's generated code includes ------------------------------------------------


def _compile_include_dirs(context: _Context) -> list[str]:
    """Every ``-I`` dir of the compile command, in order: torch's and Python's, the device's."""
    from torch._inductor.cpp_builder import CppTorchDeviceOptions

    options = CppTorchDeviceOptions(
        device_type=context.device_type, aot_mode=context.aot_mode, compile_only=True
    )
    return list(options.get_include_dirs())


def _check_headers(
    context: _Context, progress: Callable[[str], Callable[[], None]] | None
) -> Check:
    """The headers Inductor's generated code includes for the device: each found in the
    include dirs, then all of them preprocessed with the compile command Inductor runs.

    Preprocessed (``-M``), not compiled: the preprocessor includes every header and
    evaluates every ``#if``/``#error`` of the real build (a missing nested header, a
    macro the options fail to define) in a tenth of a second, where compiling them takes
    one to four (they pull in most of torch) and proves little more about the options.
    """
    name, title = "headers", CHECKS["headers"]
    if context.options is None or context.raw is not None:
        return _skipped(name, title, context)
    declared, declared_by = _declaring_object(context)
    try:
        reported = context.asked.reported if context.asked is not None else None
        headers = device_headers(
            context.device_type, context.aot_mode, declared, declared_by, reported
        )
    except InvalidHeadersDeclarationError as error:
        return Check(
            name,
            title,
            "fail",
            "the provider's declaration failed",
            (Problem(str(error), context.fix_provider),),
        )
    except Exception as error:  # a backend's wrapper codegen class that cannot say
        return Check(
            name,
            title,
            "fail",
            f"asking the device's wrapper codegen class raised {type(error).__name__}",
            (
                Problem(
                    f"what Inductor's generated code includes for {context.device_type!r} "
                    f"cannot be known: {_error_line(error)}{_located(error)}",
                    "fix the backend's wrapper codegen class (registered with "
                    "torch._inductor.codegen.common.register_backend_for_device)",
                ),
            ),
        )
    headers = _with_precompiled_header(headers, context.asked)
    if not headers.names:
        return Check(name, title, "pass", f"none ({headers.origin} names none)")
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    include_dirs = _compile_include_dirs(context)
    found = {header: locate(header, include_dirs, compiler) for header in headers.names}
    missing = [header for header, path in found.items() if path is None]
    if missing:
        searched = (
            *(f"-I {directory}" for directory in include_dirs),
            *(f"{compiler}'s own: {d}" for d in system_include_dirs(compiler)),
        )
        sdk_dirs = [d for d in context.options.include_dirs if not _is_torch_dir(d)]
        problems = tuple(
            Problem(
                f"Inductor's generated code will `#include <{header}>` ({headers.origin}), "
                f"and none of the {len(searched)} include dirs has it",
                (
                    f"ship {header} in the device SDK, in an include dir the provider adds "
                    f"(e.g. {os.path.join(sdk_dirs[0], header)}), or add the dir that holds it "
                    f"to the include_dirs of {context.source.description}"
                    if sdk_dirs
                    else f"ship {header} in the device SDK, under an include dir of its own, "
                    f"and add that dir to the include_dirs of {context.source.description}"
                )
                + ("; for Ascend: install torch_npu" if context.device_type == "npu" else ""),
                searched,
            )
            for header in missing
        )
        return Check(
            name, title, "fail", f"{len(missing)} of {len(headers.names)} not found", problems
        )
    source = context.work / "inductor_device_headers.cpp"
    source.write_text(
        "// Written by `inductor-device-options`: what Inductor's generated code includes\n"
        f"// for {context.device_type} ({headers.origin}).\n{headers.text}"
    )
    _, output = _run_probe_command(context, source, ["-M", "-MF", os.devnull], progress)
    where = _where_found(found)
    if output is not None:
        lines = [line.rstrip() for line in output.splitlines() if line.strip()]
        relevant = [line for line in lines if _RELEVANT.search(line)] or lines[-6:]
        return Check(
            name,
            title,
            "fail",
            f"{compiler} cannot include them",
            (
                Problem(
                    f"{compiler}'s preprocessor could not include what Inductor's generated code "
                    f"includes ({headers.origin}: {where}) with the device's options",
                    context.fix_sdk,
                    tuple(_shorten(line) for line in relevant[:6]),
                ),
            ),
        )
    return Check(name, title, "pass", f"{where} ({headers.origin}); preprocessed with the options")


def _with_precompiled_header(headers: DeviceHeaders, asked: AskedDevice | None) -> DeviceHeaders:
    """``headers`` and the header torch's own precompile step includes for the device its
    builds ask for, whatever the codegen includes."""
    if asked is None or asked.precompiled_header is None:
        return headers
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


def _declaring_object(context: _Context) -> tuple[object | None, str]:
    """What serves the device's options (a provider callback or a DeviceInterface), which
    may declare the headers Inductor includes for it, and its description."""
    description = context.source.description
    if context.source.source in ("registration", "entry point"):
        provider = _registry.find_provider(context.device_type)
        return (provider.callback if provider is not None else None), description
    if context.source.source == "device interface":
        return served_interface(context.device_type), description
    if context.source.source == "cpp_builder registration":
        source = loaded_source(context.device_type)
        return (source.call if source is not None else None), description
    return None, description


def _is_torch_dir(path: str) -> bool:
    real = os.path.realpath(path)
    return _inside_torch(real) or real == os.path.realpath(sysconfig.get_paths()["include"])


def _check_shadowed_headers(context: _Context) -> Check:
    name, title = "shadowed_headers", CHECKS["shadowed_headers"]
    if context.options is None or context.raw is not None:
        return _skipped(name, title, context)
    include_dirs = _compile_include_dirs(context)
    own = [directory for directory in include_dirs if _is_torch_dir(directory)]
    shadowed = shadowed_headers(include_dirs, own)
    if not shadowed:
        return Check(
            name,
            title,
            "pass",
            f"no header is in two of the {len(include_dirs)} include dirs with other contents",
        )
    fix = (
        "remove the stale copy, or order the include dirs so that the right one comes first "
        f"({context.source.description})"
    )
    problems = [
        Problem(
            f"{header.name} is in {len(header.copies)} include dirs, with different "
            "contents: g++ uses the first (-I order)",
            fix,
            tuple(
                f"{copy} ({'used' if index == 0 else 'same as used' if same else 'differs'})"
                for index, (copy, same) in enumerate(
                    zip(header.copies, header.same_as_used, strict=True)
                )
            ),
        )
        for header in shadowed[:MAX_SHADOWED_SHOWN]
    ]
    if len(shadowed) > MAX_SHADOWED_SHOWN:
        rest = [header.name for header in shadowed[MAX_SHADOWED_SHOWN:]]
        problems.append(Problem(f"and {len(rest)} more: {', '.join(rest)}", fix))
    return Check(
        name,
        title,
        "warn",
        f"{_plural(len(shadowed), 'header')} in more than one include dir, with other contents",
        tuple(problems),
    )


MAX_SHADOWED_SHOWN = 20


# --- building and loading a probe -------------------------------------------------------------


def _run_probe_command(
    context: _Context,
    source: Path,
    extra: Sequence[str],
    progress: Callable[[str], Callable[[], None]] | None,
    compile_only: bool = True,
) -> tuple[Path, str | None]:
    """Run the command ``CppBuilder`` renders for ``source`` (to an object, or linked when
    not ``compile_only``) with ``extra`` arguments after the compiler's name: the file it
    builds, and None when it succeeds, else its output."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    output_dir = context.work / source.stem
    builder = probe_builder(context.device_type, context.aot_mode, compile_only, source, output_dir)
    command = builder.get_command_line()
    target = Path(builder.get_target_file_path())
    if command.startswith(compiler + " "):
        command = f"{compiler} {shlex.join(extra)}{command[len(compiler) :]}"
    else:  # a compiler spelled otherwise: the extra arguments last
        command = f"{command} {shlex.join(extra)}"
    output_dir.mkdir(parents=True, exist_ok=True)
    done = progress(f"running {compiler} on {source.name} ...") if progress else None
    try:
        ran = run_tool(shlex.split(command), cwd=output_dir, timeout=600)  # as CppBuilder does
    finally:
        if done is not None:
            done()
    return target, None if ran.ok else ran.stdout + ran.stderr


def _check_probe_build(
    context: _Context, progress: Callable[[str], Callable[[], None]] | None
) -> Check:
    title = CHECKS["probe_build"]
    if context.options is None or context.raw is not None:
        return _skipped("probe_build", title, context)
    from torch._inductor.cpp_builder import get_cpp_compiler
    from torch._inductor.exc import CppCompileError

    compiler = get_cpp_compiler()
    source = context.work / f"{PROBE_NAME}.cpp"
    done = progress(f"building a probe with {compiler} ...") if progress else None
    started = time.perf_counter()
    try:
        builder = probe_builder(context.device_type, context.aot_mode, False, source, context.work)
        builder.build()
    except CppCompileError as error:
        # torch 2.6's CppCompileError keeps the compiler's output only in its message.
        output = getattr(error, "output", None) or str(error).partition("Output:")[2]
        return _probe_failed(context, compiler, output)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return _probe_failed(context, compiler, f"{type(error).__name__}: {error}")
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
# The checks whose failure makes the probe's build fail.
_BUILD_CHECKS = ("flags", "include_dirs", "libraries")


def _probe_failed(context: _Context, compiler: str, output: str) -> Check:
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    relevant = [line for line in lines if _RELEVANT.search(line)] or lines[-6:]
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
    return Check(
        "probe_build",
        CHECKS["probe_build"],
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


def _check_probe_load(
    context: _Context, progress: Callable[[str], Callable[[], None]] | None
) -> Check:
    """The probe, linked so that it needs every library, loaded in a fresh Python that
    has imported torch, with the user's environment: where Inductor loads a module."""
    name, title = "probe_load", CHECKS["probe_load"]
    if context.options is None or context.raw is not None:
        return _skipped(name, title, context)
    if not context.passed("probe_build"):
        return Check(name, title, "skip", "skipped: the probe does not build")
    source = context.work / f"{PROBE_NAME}_loaded.cpp"
    shutil.copyfile(context.work / f"{PROBE_NAME}.cpp", source)
    built, output = _run_probe_command(
        context, source, [NO_AS_NEEDED], progress, compile_only=False
    )
    if output is not None:
        from torch._inductor.cpp_builder import get_cpp_compiler

        failed = _probe_failed(context, get_cpp_compiler(), output)
        return dataclasses.replace(failed, name=name, title=title)
    assert context.loader is not None
    done = progress("loading the probe in a fresh python ...") if progress else None
    try:
        result = context.loader.load(str(built))
    finally:
        if done is not None:
            done()
    dirs, libraries = _link_inputs(context.options)
    if result.error is None:
        return Check(name, title, "pass", _loaded_summary(libraries, dirs, result.loaded))
    missing = missing_library(result.error)
    details = tuple(_shorten(line) for line in resolution(str(built), result.loaded))
    if missing is None:
        return Check(
            name,
            title,
            "fail",
            "the loader refused it",
            (
                Problem(
                    f"loading a module built with the device's options fails: {result.error}",
                    context.fix_sdk,
                    details,
                ),
            ),
        )
    return Check(
        name,
        title,
        "fail",
        f"{missing} is not found at run time",
        (
            Problem(
                f"a fresh python that imported torch cannot load a module built with the "
                f"device's options: the loader finds no {missing} ({result.error})",
                _runtime_fix(context, missing, dirs),
                details,
            ),
        ),
    )


def _loaded_summary(libraries: Sequence[str], dirs: Sequence[str], loaded: Sequence[str]) -> str:
    """Where each of the device's shared libraries was loaded from."""
    mapped = set(loaded)
    by_name = {os.path.basename(path): path for path in loaded}
    parts = []
    for library in libraries:
        linked = _find_library(library, dirs)
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


def _runtime_fix(context: _Context, missing: str, dirs: Sequence[str]) -> str:
    """The ways to let the loader find ``missing``: a runpath, LD_LIBRARY_PATH, CANN's
    environment script."""
    holding = next((d for d in dirs if os.path.isfile(os.path.join(d, missing))), None)
    if holding is None:
        fix = (
            f"install {missing}, or put the dir that holds it on LD_LIBRARY_PATH or in the "
            "runpath of the library that needs it"
        )
    else:
        real = os.path.realpath(holding)
        fix = (
            f"give modules a runpath to {real}: in the provider ({context.source.description}), "
            f"options.ldflags.append(inductor_device_options.runpath({real!r})); "
            f"or run the model with {shlex.quote(real)} first on LD_LIBRARY_PATH"
        )
    if context.device_type == "npu":
        fix += "; for Ascend: source CANN's set_env.sh, which sets LD_LIBRARY_PATH"
    return fix


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
