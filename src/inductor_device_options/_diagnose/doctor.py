"""doctor's run: the static checks in the order Inductor meets what they check, each
handed on as soon as it is done; and the run of a ``--provider`` that cannot be loaded.
Computes only: ``_cli/`` prints.

The checks themselves are in ``hook_checks``, ``torch_hook_checks``, ``overrides_checks``,
``options_checks``, ``path_checks``, ``header_checks``, ``shim_checks``, ``cache_key_checks``,
``door_checks``, ``probe_checks``, ``soname_checks``, ``cmake_checks`` and ``aoti_weights``;
what a check is, in ``checks``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._errors import ProviderLoadError
from .._options.problems import Problem
from .._source import FoundSource
from .aoti_weights import check_aoti_weights
from .backend_init_run import BackendInit, run_backend_init
from .cache_key_checks import check_cache_keys
from .checks import COMPILE_CHECKS, Check, Context, check, check_names
from .cmake_checks import check_cmake_project
from .door_checks import check_provider_doors
from .header_checks import check_headers, check_shadowed_headers
from .hook_checks import check_device_asked, check_hook
from .module_load import FreshPython
from .options_checks import check_flags, check_options
from .overrides_checks import check_overrides
from .path_checks import check_include_dirs, check_libraries
from .probe import Progress, write_probe_source
from .probe_checks import check_probe_build, check_probe_load, start_probe_builds
from .shim_checks import check_c_shim
from .soname_checks import check_library_sonames
from .text import message_and_fix
from .torch_hook_checks import check_torch_hooks

__all__ = ["COMPILE_CHECKS", "Check", "check_names", "provider_load_failed", "run_doctor"]


def run_doctor(
    found: FoundSource,
    aot_mode: bool,
    work: Path,
    *,
    on_check: Callable[[Check], None] = lambda check: None,
    progress: Progress | None = None,
    loader: FreshPython | None = None,
    compile: bool = False,
    backend_init: BackendInit | None = None,
) -> list[Check]:
    """Run every static check of ``found``'s device in order, handing each to ``on_check``
    as soon as it is done (``compile``: the checks of ``--compile`` follow, run by the
    caller).

    ``found``: the device's source as the caller found it, once for the run
    (``_hook.sources.found_source``); the checks load its provider from it.

    ``progress(message)`` is called before each build and returns a function that ends
    the progress display. ``loader`` is the fresh Python the probe is loaded in (started
    as early as possible: its ``import torch`` runs meanwhile; by default, now); it is
    ended when the checks are. ``backend_init``: what came of the device module's
    ``_inductor_backend_init``, when the caller ran it (``run_backend_init``) before it
    looked the device up; by default, doctor runs it first, as a compile does.
    """
    context = Context(found, aot_mode, work)
    context.backend_init = backend_init or run_backend_init()
    write_probe_source(work)
    # A step that returns None checks nothing: it starts the probes' builds early.
    steps: list[Callable[[Context], Check | None]] = [
        check_hook,
        check_torch_hooks,
        check_device_asked,
        check_overrides,
        check_options,
        check_flags,
        check_include_dirs,
        lambda context: start_probe_builds(context, pool),
        lambda context: check_headers(context, progress),
        lambda context: check_c_shim(context, progress),
        check_shadowed_headers,
        check_libraries,
        check_cache_keys,
        check_provider_doors,
        lambda context: check_probe_build(context, progress),
        lambda context: check_probe_load(context, progress),
    ]
    if aot_mode:
        steps += [check_library_sonames, lambda c: check_cmake_project(c, progress)]
        steps.append(check_aoti_weights)
    if aot_mode and not compile:
        steps.append(_aoti_runner_not_checked)
    with ThreadPoolExecutor(2) as pool, loader or FreshPython() as context.loader:
        for step in steps:
            done = step(context)
            if done is None:
                continue
            context.checks.append(done)
            on_check(done)
    return context.checks


def provider_load_failed(error: ProviderLoadError, names: Sequence[str]) -> list[Check]:
    """doctor's checks when ``--provider`` cannot be loaded: that one failed, the others
    (``names``) skipped: they would check another provider than the one asked for."""
    cause, fix = message_and_fix(error)
    reason = type(error.__cause__ or error).__name__
    failed = check(
        "provider",
        "fail",
        f"{error.description} could not be loaded: {reason}",
        Problem(cause, fix or f"fix {error.description}"),
    )
    skipped = "skipped: the provider could not be loaded"
    return [failed, *(check(name, "skip", skipped) for name in names)]


def _aoti_runner_not_checked(context: Context) -> Check:
    """Said, not checked: no static check can tell whether ``aoti_load_package`` finds a
    model runner for the device."""
    return check(
        "aoti_runner",
        "skip",
        "skipped: not checked without --compile: torch keeps its AOTInductor model runners "
        "in C++ (RegisterAOTIModelRunner), where Python cannot see them; `inductor-device-"
        f"options doctor {context.device_type} --aot --compile` loads a package",
    )
