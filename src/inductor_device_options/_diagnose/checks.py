"""What a doctor check is and what every check works with: its verdict (``Check``), the
names and titles of every check, what is known of the device so far (``Context``) and the
wording of the fixes the checks share. A check's problems are ``_options.problems.Problem``,
the type the validation pipeline's refusals are of too.

A report names the provider once, in its header: a check's words say "the provider", and
a failure with many instances (ten missing headers) is one problem that lists them, with
one fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from .._errors import InvalidCppDeviceOptionsError
from .._lookup.provider_attributes import hints_of
from .._options.model import CppDeviceOptions
from .._options.problems import Problem
from .._source import CppDeviceOptionsCallback, DeviceOptionsSource, FoundSource
from .asked import AskedDevice
from .backend_init_run import BackendInit
from .devices import loaded_source, serving_object
from .module_load import FreshPython
from .probe import ProbeBuilds
from .text import unique

Status = Literal["pass", "warn", "fail", "skip"]

#: Every check, in the order doctor runs them: name (stable, JSON) and title. "provider"
#: is there only when a ``--provider`` could not be loaded.
CHECKS: dict[str, str] = {
    "provider": "provider loads",
    "hook": "options reach Inductor",
    "torch_hooks": "torch 2.15's hooks the backend uses",
    "device_asked": "builds ask for the device",
    "overrides": "DeviceOpOverrides answer what torch asks",
    "options": "options computed",
    "flags": "flags well formed",
    "include_dirs": "include dirs exist",
    "headers": "Inductor's device headers found",
    "c_shim": "C shim functions declared",
    "shadowed_headers": "no shadowed headers",
    "libraries": "libraries found",
    "cache_keys": "the SDK identity keys Inductor's caches",
    "provider_doors": "the provider's per-device doors",
    "probe_build": "probe compiles and links",
    "probe_load": "probe loads",
    # With --aot only (soname_checks.py, cmake_checks.py, aoti_weights.py).
    "library_sonames": "the device's libraries have a SONAME",
    "cmake_project": "the C++ project builds with cmake",
    "aoti_weights": "AOTInductor weights load",
    # With --aot and without --compile: always a SKIP that says so.
    "aoti_runner": "AOTInductor model runner",
    # doctor --compile (real_compile.py, model_checks.py); aoti_load with --aot only,
    # user_model with --model only.
    "compile_run": "a real compile on the device",
    "builds_asked": "the compile asked for the device",
    "options_reached": "the options reach g++",
    "aoti_load": "the AOTInductor package loads and runs",
    "linear_model": "a model with weights and extern kernels",
    "user_model": "your model compiles and runs",
}

#: The checks ``doctor --compile`` adds after the static ones (``aoti_load``: with --aot;
#: ``user_model``: with --model).
COMPILE_CHECKS = (
    "compile_run",
    "builds_asked",
    "options_reached",
    "aoti_load",
    "linear_model",
    "user_model",
)


def check_names(aot_mode: bool, compile: bool, model: bool = False) -> list[str]:
    """The checks a doctor run makes, in order ("provider" only when it fails)."""
    names = [name for name in CHECKS if name != "provider" and name not in COMPILE_CHECKS]
    if not aot_mode:
        names.remove("library_sonames")
        names.remove("cmake_project")
        names.remove("aoti_weights")
    if not aot_mode or compile:
        names.remove("aoti_runner")
    if compile:
        skipped = {"aoti_load"} if not aot_mode else set()
        skipped |= {"user_model"} if not model else set()
        names += [name for name in COMPILE_CHECKS if name not in skipped]
    return names


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


def check(name: str, status: Status, summary: str, *problems: Problem) -> Check:
    """The check ``name``, with its title."""
    return Check(name, CHECKS[name], status, summary, problems)


def one_cause(problems: Sequence[Problem], cause: str) -> tuple[Problem, ...]:
    """Many instances of one failure as one problem: ``cause``, listing each problem's own
    cause, with their one fix and their details; a single problem stays as it is."""
    fixes = unique(problem.fix for problem in problems)
    if len(problems) < 2 or len(fixes) > 1:
        return tuple(problems)
    details = unique(line for problem in problems for line in problem.details)
    return (Problem(cause, fixes[0], tuple(details), tuple(p.cause for p in problems)),)


@dataclass
class Context:
    """What the checks know of the device so far, each check adding what it learnt."""

    found: FoundSource  # the device's source, found once for the run
    aot_mode: bool
    work: Path
    loader: FreshPython | None = None
    backend_init: BackendInit | None = None  # the device module's _inductor_backend_init, run
    asked: AskedDevice | None = None  # what Inductor's builds ask for, once known
    options: CppDeviceOptions | None = None
    raw: Sequence[object] | None = None  # what the provider returned, when Inductor rejects it
    rejected: InvalidCppDeviceOptionsError | None = None  # and why
    probe_builds: ProbeBuilds | None = None  # started before the header checks
    checks: list[Check] = field(default_factory=list)  # those done so far

    @property
    def device_type(self) -> str:
        return self.found.device_type

    @property
    def source(self) -> DeviceOptionsSource:
        return self.found.source

    @cached_property
    def loaded(self) -> FoundSource:
        """The source the run found, its provider loaded once for every check
        (``loaded_source``)."""
        return loaded_source(self.found)

    @property
    def provider(self) -> CppDeviceOptionsCallback | None:
        """The provider the package calls for the device: None where torch serves the
        device, or where the provider cannot be loaded (the options check reports why)."""
        return self.loaded.provider

    @cached_property
    def serving(self) -> object | None:
        """What serves the device (its provider or DeviceInterface), for its attributes."""
        return serving_object(self.loaded)

    @cached_property
    def hints(self) -> Mapping[str, object]:
        """The provider's ``doctor_hints`` (empty when it has none or cannot be loaded)."""
        return hints_of(self.serving)

    def hinted(self, fix: str, key: str) -> str:
        """``fix``, and the provider's hint ``key`` after it, when it gives one."""
        hint = self.hints.get(key)
        return f"{fix}; {hint}" if isinstance(hint, str) and hint else fix

    @property
    def fix_provider(self) -> str:
        return "fix the provider"

    @property
    def fix_sdk(self) -> str:
        return self.hinted("install the device SDK or fix its provider", "setup")

    def passed(self, name: str) -> bool:
        return any(check.name == name and check.status != "fail" for check in self.checks)

    def unusable(self) -> bool:
        """The options are not there to check: not computed, or rejected by Inductor."""
        return self.options is None or self.raw is not None

    def skipped(self, name: str) -> Check:
        """``name`` skipped: the options it checks could not be had."""
        reason = (
            "Inductor rejects the options"
            if self.raw is not None
            else "the options could not be computed"
        )
        return check(name, "skip", f"skipped: {reason}")
