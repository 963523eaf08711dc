"""The checks of the options themselves: ``options`` (they can be computed, and whose
fault it is when they cannot) and ``flags`` (every value reaches g++ as the arguments
meant)."""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections.abc import Sequence

from .. import __version__
from .._errors import (
    CppDeviceOptionsError,
    InvalidCppDeviceOptionsError,
    ProviderLoadError,
    ProviderRecursionError,
    raised_by_provider,
)
from .._hook.lookups import get_cpp_device_options
from .._options.model import FIELDS, CppDeviceOptions
from .._options.pipeline import check_value, final_problems
from .._options.problems import Problem
from .checks import Check, Context, check, one_cause
from .text import error_line, message_and_fix, plural, unique

#: The package's own code: an error raised there, outside a provider call, is its bug.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check_options(context: Context) -> Check:
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
        return check("options", "pass", "returned by the provider")
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit(0) from a provider is a failure, not success
        return _options_failed(context, error)
    counts = ", ".join(
        f"{name} {len(values)}"
        for name, values in zip(FIELDS, context.options, strict=True)
        if values
    )
    return check("options", "pass", f"for compiling and linking: {counts or 'none'}")


def _both_modes(context: Context) -> CppDeviceOptions:
    """What Inductor gets for compiling (compile_only) and for linking, merged."""
    compiled = get_cpp_device_options(context.device_type, context.aot_mode, True)
    linked = get_cpp_device_options(context.device_type, context.aot_mode, False)
    return CppDeviceOptions(
        *(unique([*first, *second]) for first, second in zip(compiled, linked, strict=True))
    )


def _fallback_failure(context: Context) -> Check | None:
    """A bundled provider gives way to the function below when it cannot compute the
    options: Inductor then gets torch's (or a replacement's), which is worth a FAIL here."""
    provider = context.provider
    if not context.source.fallback or provider is None:  # None: the checks below report it
        return None
    try:
        provider(context.device_type, context.aot_mode, False)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        failed = _options_failed(context, error, provider_called=True)
        (problem,) = failed.problems
        note = (
            "; meanwhile Inductor gets what the device gets without inductor-device-options "
            "(the bundled provider gives way, with a warning)"
        )
        return dataclasses.replace(
            failed, problems=(dataclasses.replace(problem, cause=problem.cause + note),)
        )
    return None


def _options_failed(context: Context, error: BaseException, provider_called: bool = False) -> Check:
    """``provider_called``: ``error`` came out of a direct call of the provider."""
    if not provider_called and not _blames_source(context, error):
        return _internal_error(error)
    # A provider that says what to do (an error's fix, or "...\nFix: ...") is quoted.
    cause, fix = message_and_fix(error)
    kind = type(error).__name__
    problem = Problem(f"{kind}: {cause}", fix or context.fix_provider)
    if not provider_called and _verdict_of_package(context, error):
        # The package's verdict on the provider (what it returned, its import, a call back
        # into itself), raised outside the provider's call: not the provider's exception.
        return check("options", "fail", f"inductor-device-options raised {kind}", problem)
    return check("options", "fail", f"the provider raised {kind}", problem)


def _verdict_of_package(context: Context, error: BaseException) -> bool:
    """Whether ``error`` is the package's verdict on the provider rather than its own
    exception. Only the package's door checks what a provider returns; through torch's
    doors an unmarked error is the provider's (the package calls it as torch does)."""
    if raised_by_provider(error) is not None:
        return False
    if isinstance(error, (ProviderLoadError, ProviderRecursionError)):
        return True
    return context.source.guaranteed and isinstance(error, CppDeviceOptionsError)


def _blames_source(context: Context, error: BaseException) -> bool:
    """Whether ``error`` is the provider's: raised by its call, a verdict of the package on
    it (a ``CppDeviceOptionsError`` names the provider), a ``SystemExit`` (the package
    raises none), or, for options torch or torch's doors compute (where the package marks
    no call), raised outside this package."""
    if raised_by_provider(error) is not None or isinstance(error, CppDeviceOptionsError):
        return True
    if not isinstance(error, Exception):
        return True
    return not context.source.guaranteed and not _raised_in_package(error)


def _raised_in_package(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and os.path.abspath(frames[-1].filename).startswith(_PACKAGE_DIR + os.sep)


def _internal_error(error: BaseException) -> Check:
    frames = traceback.extract_tb(error.__traceback__)
    where = f", at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return check(
        "options",
        "fail",
        f"inductor-device-options failed (internal error {type(error).__name__})",
        Problem(
            f"inductor-device-options {__version__} raised {error_line(error)}{where}: "
            "the error is the package's own, raised outside any call of the provider",
            "this is a bug of inductor-device-options, not of the provider: please "
            "report it to its maintainers with this output",
        ),
    )


def _raw_options(context: Context) -> Sequence[object] | None:
    """The provider's result before validation, or None when it cannot be had again."""
    raw: object
    provider = context.provider
    if provider is None:
        return None
    try:
        raw = provider(context.device_type, context.aot_mode, False)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None
    if not isinstance(raw, (tuple, list)) or len(raw) != len(FIELDS):
        return None
    return raw


def check_flags(context: Context) -> Check:
    """Every value as g++ will get it: the final options (after real paths,
    custom_op_libs and the SDK identity) against the running CppBuilder, or, when the
    pipeline refused them, each value the provider returned."""
    if context.raw is not None:
        problems, count = _raw_problems(context, context.raw)
    elif context.options is not None:
        # For torch's doors (what Inductor gets is exactly the backend's): findings only.
        problems = [_with_fix(context, problem) for problem in final_problems(context.options)]
        count = sum(len(values) for values in context.options)
    else:
        return context.skipped("flags")
    if problems:
        cause = f"{len(problems)} values do not reach g++ as the arguments meant"
        summary = plural(len(problems), "bad value")
        return check("flags", "fail", summary, *one_cause(problems, cause))
    return check(
        "flags", "pass", f"{plural(count, 'value')}, each reaching g++ as the arguments meant"
    )


def _raw_problems(context: Context, raw: Sequence[object]) -> tuple[list[Problem], int]:
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
                cause = check_value(name, value)
            else:
                cause = f"is a {type(value).__name__}, not a str"
            if cause is not None:
                problems.append(
                    Problem(f"{name}[{index}] = {value!r} {cause}", context.fix_provider)
                )
    if not problems and context.rejected is not None:
        # Each value is fine as written: what is not is its real path or custom_op_libs.
        problems.append(Problem(str(context.rejected), context.fix_sdk))
    return problems, count


def _with_fix(context: Context, problem: Problem) -> Problem:
    """A problem the pipeline found in the final options, stated with what to do about it."""
    fix = context.fix_provider
    if not context.source.guaranteed:
        fix += (
            f"; Inductor gets it as the {context.source.kind} gives it (this package "
            "checks torch's doors only with inductor_device_options."
            f"guarantee_cpp_device_options({context.device_type!r}))"
        )
    return Problem(problem.stated(), fix)
