"""``inductor-device-options demo``: the whole chain on the sample device.

Builds the "sampledev" backend, shows the C++ options Inductor gets for it,
compiles a small model with ``cpp_wrapper`` and with AOTInductor, shows the
compiler commands Inductor ran with the device's flags marked, checks the
results against eager CPU and the built modules against the options, and
shows that the same compile fails without the device's options. With
``ranks``, it then runs the sample's distributed job with torchrun and shows
what each rank saw.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .. import (
    RESERVED_DEVICE_TYPES,
    CppDeviceOptions,
    default_cpp_device_options,
    get_cpp_device_options,
    hook_state,
    registered_cpp_device_options,
)
from ..sample import (
    AUTOLOAD_ENV,
    DEVICE_MACRO,
    DEVICE_NAME,
    RUNTIME_LIBRARY_FILE,
    SampleDevice,
    default_cache_dir,
    runtime_registered_modules,
    setup,
)
from .compiler_commands import (
    CompilerCommand,
    Flags,
    added_options,
    last_shared_library,
    record_compiler_commands,
    rendered_flags,
)
from .elf import read_dynamic_section

if TYPE_CHECKING:
    import torch

MARK_LEFT, MARK_RIGHT = "[[", "]]"
STEP_COUNT = 6
WRAPPER_MACRO = "DEMO_CHAINING_WRAPPER"


class _Demo:
    """Prints steps and checks as they happen, and counts the checks."""

    def __init__(self, out: TextIO, step_count: int = STEP_COUNT) -> None:
        self.out = out
        self.step_count = step_count
        self.step_number = 0
        self.passed = 0
        self.failed: list[str] = []

    def say(self, text: str = "", indent: int = 4) -> None:
        for line in text.splitlines() or [""]:
            print(" " * indent + line if line else "", file=self.out)
        self.out.flush()

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        self.step_number += 1
        self.say(f"\n[{self.step_number}/{self.step_count}] {title}", indent=0)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.say(f"({time.perf_counter() - started:.1f} s)")

    def check(self, description: str, passed: bool, detail: str = "") -> bool:
        if passed:
            self.passed += 1
        else:
            self.failed.append(description)
        suffix = f": {detail}" if detail else ""
        self.say(f"{'ok  ' if passed else 'FAIL'}  {description}{suffix}")
        return passed


def run_demo(
    out: TextIO = sys.stdout, cache_dir: str | os.PathLike[str] | None = None, ranks: int = 0
) -> int:
    """Run the demo, printing to ``out``; 0 when every check passed, 1 otherwise.

    ``cache_dir`` is where the sample backend is built (default: the sample's
    cache under ``$XDG_CACHE_HOME``). Inductor compiles in a fresh directory: a
    temporary one, removed at the end, unless ``TORCHINDUCTOR_CACHE_DIR`` is set,
    in which case a new directory inside it is used and kept. ``ranks`` > 0 adds a
    step: the distributed job on that many ranks, sharing that directory.
    """
    demo = _Demo(out, STEP_COUNT + (1 if ranks else 0))
    demo.say(f'inductor-device-options demo: the sample PrivateUse1 device "{DEVICE_NAME}"', 0)
    try:
        _run_steps(demo, cache_dir, ranks)
    except Exception as error:  # report, do not hide, what stopped the demo
        demo.say(traceback.format_exc())
        demo.check("the demo ran to the end", False, f"{type(error).__name__}: {error}")
    total = demo.passed + len(demo.failed)
    if demo.failed:
        demo.say(f"\n{len(demo.failed)} of {total} checks FAILED:", 0)
        for description in demo.failed:
            demo.say(f"- {description}", 2)
        return 1
    demo.say(f"\nAll {total} checks passed.", 0)
    return 0


def _run_steps(demo: _Demo, cache_dir: str | os.PathLike[str] | None, ranks: int) -> None:
    # Read first: torch sets the variable to its default once it looks the directory up.
    user_inductor_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with _inductor_cache_base(user_inductor_cache) as inductor_cache_base:
        _run_steps_in(
            demo, cache_dir, inductor_cache_base, kept=user_inductor_cache is not None, ranks=ranks
        )


@contextmanager
def _inductor_cache_base(user_directory: str | None) -> Iterator[str]:
    """The user's Inductor cache, or a temporary one set for the block and then removed."""
    if user_directory is not None:
        os.makedirs(user_directory, exist_ok=True)  # torch 2.6's fresh cache does not
        yield user_directory
        return
    directory = tempfile.mkdtemp(prefix="inductor-device-options-demo-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    try:
        yield directory
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(directory, ignore_errors=True)


def _run_steps_in(
    demo: _Demo,
    cache_dir: str | os.PathLike[str] | None,
    inductor_cache_base: str,
    kept: bool,
    ranks: int,
) -> None:
    with demo.step("Build and register the sample backend"):
        cache_dir, problem = buildable_cache_dir(cache_dir)
        if problem is not None:
            demo.check("the cache dir can be passed to g++", False, problem)
            return
        device = setup(cache_dir)
        demo.say(f"backend and runtime built under {device.cache_dir}")
        demo.say(f"runtime library: {device.runtime_library}")
        # Inductor may compile in child processes (TORCHINDUCTOR_FX_COMPILE_MODE=subprocess):
        # torch's backend autoload sets the device up there too, from this variable.
        os.environ[AUTOLOAD_ENV] = str(device.cache_dir)
        mode = os.environ.get("TORCHINDUCTOR_FX_COMPILE_MODE", "normal")
        demo.say(f"Inductor compile mode: {mode} (TORCHINDUCTOR_FX_COMPILE_MODE)")
        from torch._inductor import compile_fx

        if not hasattr(compile_fx, "fx_compile_mode"):
            demo.say("(this torch has no compile modes: Inductor compiles in this process)")

    import torch
    from torch._inductor.cpp_builder import get_cpp_compiler

    with demo.step(f'C++ options Inductor gets for "{DEVICE_NAME}"'):
        added = _show_options(demo)
    marks = rendered_flags(added)

    model = _make_model()
    inputs = (torch.randn(8, 16), torch.randn(8, 16))
    expected = model(*inputs)
    device_inputs = tuple(tensor.to(DEVICE_NAME) for tensor in inputs)
    linear_model = _make_linear_model()
    linear_expected = linear_model(*inputs)
    linear_model.to(DEVICE_NAME)

    with _fresh_inductor_cache(inductor_cache_base):
        inductor_cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        where = "kept" if kept else "temporary, removed at the end"
        demo.say(f"\nInductor cache: {inductor_cache} ({where})", 0)
        compiler = get_cpp_compiler()

        with demo.step('torch.compile(model, options={"cpp_wrapper": True}), with an nn.Linear'):
            torch._dynamo.reset()
            with record_compiler_commands(compiler) as commands:
                modules_before = runtime_registered_modules()
                compiled = torch.compile(linear_model, options={"cpp_wrapper": True})
                result = compiled(*device_inputs)
            _check_build(demo, commands, marks, modules_before)
            _check_shim_call(demo, commands, "addmm_out")
            _check_result(demo, result, linear_expected)

        with demo.step("AOTInductor: aoti_compile_and_package, then aoti_load_package"):
            with record_compiler_commands(compiler) as commands:
                exported = torch.export.export(model, device_inputs)
                package = torch._inductor.aoti_compile_and_package(
                    exported, package_path=str(inductor_cache / f"{DEVICE_NAME}_demo.pt2")
                )
                modules_before = runtime_registered_modules()
                loaded = torch._inductor.aoti_load_package(package)
                result = loaded(*device_inputs)
            demo.say(f"package: {package}")
            _check_build(demo, commands, marks, modules_before)
            _check_result(demo, result, expected)

    with demo.step(f"Control: the cpp_wrapper compile with torch's own options for {DEVICE_NAME}"):
        _check_fails_without_options(demo, model, device_inputs, inductor_cache_base)

    with demo.step("Other backends assign Inductor's function after the sample registered"):
        _check_other_patchers(demo, model, device_inputs, expected, marks, inductor_cache_base)

    if ranks:
        with demo.step(f"A distributed job: torchrun --standalone --nproc_per_node={ranks}"):
            _check_distributed_job(demo, device, ranks, inductor_cache)


def buildable_cache_dir(cache_dir: str | os.PathLike[str] | None) -> tuple[Path, str | None]:
    """Where to build, and why that cannot work, found before a minute of building: the
    runtime's library dir reaches g++ as the running torch renders it, in -L (unquoted
    before torch 2.15), and ld as a runpath in -Wl,-rpath,<dir> (never quoted, split at
    commas), so a space or a comma in it fails the first compile. The default location
    falls back to a temporary one.
    """
    from .. import RunpathError, runpath
    from ..options.rendering import final_value_problem

    wanted = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    fallback = Path(tempfile.gettempdir()) / f"inductor-device-options-{os.getuid()}" / DEVICE_NAME
    problem = None
    for candidate in [wanted] if cache_dir is not None else [wanted, fallback]:
        library_dir = os.path.realpath(candidate / "sdk" / "lib")
        try:
            problem = final_value_problem("libraries_dirs", library_dir) or final_value_problem(
                "ldflags", runpath(library_dir)
            )
        except RunpathError as error:
            problem = str(error)
        if problem is None:
            return candidate, None
    return wanted, (
        f"{wanted} cannot hold the sample's runtime: its library dir {problem}; "
        "choose another with --cache-dir DIR"
    )


def _make_model() -> torch.nn.Module:
    import torch

    class PointwiseAndReduction(torch.nn.Module):
        # No parameters: torch's AOTInductor runtime cannot hold sampledev constants.
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            hidden = torch.sin(x) * y + 1.0
            return hidden.sum(dim=-1, keepdim=True) * hidden.relu()

    return PointwiseAndReduction()


def _make_linear_model() -> torch.nn.Module:
    import torch

    class LinearLayer(torch.nn.Module):
        # A matrix product is an extern kernel: the module calls the sampledev C shim.
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(16, 8)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.linear(torch.sin(x) * y + 1.0))

    torch.manual_seed(0)
    return LinearLayer().requires_grad_(False)


def _show_options(demo: _Demo) -> CppDeviceOptions:
    """Print the options, marking what the sample's provider adds; return the additions."""
    options = get_cpp_device_options(DEVICE_NAME)
    added = added_options(options, default_cpp_device_options(DEVICE_NAME))
    for field, values, new_values in zip(options._fields, options, added, strict=True):
        for index, value in enumerate(values):
            label = field if index == 0 else ""
            demo.say(f"{label:<17}{'+' if value in new_values else ' '} {value}")
    demo.say("(+: added by sdk_cpp_device_options to torch's defaults; aot_mode=False)")
    return added


def _check_build(
    demo: _Demo, commands: list[CompilerCommand], marks: list[Flags], modules_before: int
) -> None:
    """Show the commands that carried the device's flags; check the module they built."""
    with_flags = [command for command in commands if any(command.has(f) for f in marks)]
    others = len(commands) - len(with_flags)
    demo.say(
        f"compiler runs: {len(commands)}, {len(with_flags)} with {DEVICE_NAME} flags"
        + (f" ({others} others: Inductor's probes of the compiler and the CPU)" if others else "")
    )
    for command in with_flags:
        output = command.output.name if command.output else "?"
        carried = ", ".join(_shorten(" ".join(f), 32) for f in marks if command.has(f))
        where = "" if command.pid == os.getpid() else f" (in compile subprocess {command.pid})"
        demo.say(f"  {command.stage:<18} {_shorten(output, 40):<40} {carried}{where}")

    module_command = last_shared_library(commands)
    if not demo.check("Inductor linked a shared library", module_command is not None):
        return
    assert module_command is not None and module_command.output is not None
    demo.say(
        f"the command that built {module_command.output.name} ({MARK_LEFT} {MARK_RIGHT}: "
        f"flags from the {DEVICE_NAME} options):"
    )
    demo.say(module_command.marked(marks, MARK_LEFT, MARK_RIGHT), indent=6)

    macro = ("-D", DEVICE_MACRO)
    demo.check(f"-D {DEVICE_MACRO} in the compiler commands", any(c.has(macro) for c in commands))
    missing = [" ".join(f) for f in marks if not module_command.has(f)]
    demo.check(
        f"every flag from the {DEVICE_NAME} options in the command that built the module",
        not missing,
        f"missing {', '.join(missing)}" if missing else "",
    )
    dynamic = read_dynamic_section(module_command.output)
    demo.check(
        f"{RUNTIME_LIBRARY_FILE} in the NEEDED entries of {module_command.output.name}",
        RUNTIME_LIBRARY_FILE in dynamic.needed,
        f"NEEDED {', '.join(dynamic.needed)}; RUNPATH {':'.join(dynamic.runpath) or '-'}",
    )
    modules_after = runtime_registered_modules()
    demo.check(
        f"the loaded module registered itself with {RUNTIME_LIBRARY_FILE}",
        modules_after > modules_before,
        f"registered modules {modules_before} -> {modules_after}",
    )


def _check_shim_call(demo: _Demo, commands: list[CompilerCommand], operator: str) -> None:
    """Check that the module's C++ source calls the sampledev shim of ``operator``."""
    shim = f"aoti_torch_{DEVICE_NAME}_{operator}"
    module_command = last_shared_library(commands)
    sources = (
        [
            Path(module_command.cwd or ".", word)  # an absolute word stays itself
            for word in module_command.argv
            if word.endswith(".cpp")
        ]
        if module_command is not None
        else []
    )
    calls = any(f"{shim}(" in source.read_text() for source in sources if source.is_file())
    demo.check(
        f"the module calls the {DEVICE_NAME} C shim {shim} (sampledev/c_shim.h)",
        calls,
        ", ".join(source.name for source in sources) or "no C++ source in the command",
    )


def _check_result(demo: _Demo, result: torch.Tensor, expected: torch.Tensor) -> None:
    import torch

    demo.check(
        f"result is a {DEVICE_NAME} tensor", result.device.type == DEVICE_NAME, str(result.device)
    )
    on_cpu = result.cpu()
    if on_cpu.shape != expected.shape:
        demo.check("result equals eager CPU", False, f"shape {tuple(on_cpu.shape)}")
        return
    demo.check(
        "result equals eager CPU",
        torch.allclose(on_cpu, expected, rtol=1e-5, atol=1e-5),
        f"max |difference| {(on_cpu - expected).abs().max().item():.2e}",
    )


def _fresh_inductor_cache(inductor_cache_base: str) -> AbstractContextManager[None]:
    """A new Inductor cache directory under ``inductor_cache_base``, kept afterwards, so that
    Inductor compiles (and the commands are seen) instead of reusing an earlier run's."""
    # fresh_inductor_cache: the name on every torch of the matrix (2.6 has no fresh_cache).
    from torch._inductor.utils import fresh_inductor_cache

    return fresh_inductor_cache(dir=inductor_cache_base, delete=False)


@contextmanager
def _compiling_in_this_process() -> Iterator[None]:
    """Inductor compiles in this process, where what the demo registers or assigns applies
    (a compile subprocess sets the device up afresh, through the autoload). torch 2.6 has no
    compile modes: it always compiles in this process."""
    from torch._inductor import compile_fx

    compile_mode = getattr(compile_fx, "fx_compile_mode", None)
    if compile_mode is not None:
        compile_fx.fx_compile_mode = compile_fx.FxCompileMode.NORMAL
    try:
        yield
    finally:
        if compile_mode is not None:
            compile_fx.fx_compile_mode = compile_mode


def _check_fails_without_options(
    demo: _Demo, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], inductor_cache_base: str
) -> None:
    import torch

    torch._dynamo.reset()
    # The control compiles in this process, where the registration below applies.
    with (
        _compiling_in_this_process(),
        registered_cpp_device_options(DEVICE_NAME, default_cpp_device_options),
        _fresh_inductor_cache(inductor_cache_base),
    ):
        try:
            torch.compile(model, options={"cpp_wrapper": True})(*inputs)
        except Exception as error:  # Inductor wraps the compiler's error
            message = str(error)
        else:
            message = ""
    torch._dynamo.reset()
    first_error = next((line.strip() for line in message.splitlines() if "error:" in line), "")
    demo.check(
        f"the build fails: the compiler cannot find the {DEVICE_NAME} headers",
        f"{DEVICE_NAME}.h: No such file or directory" in message,
        first_error or "it did not fail",
    )


def _check_other_patchers(
    demo: _Demo,
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    expected: torch.Tensor,
    marks: list[Flags],
    inductor_cache_base: str,
) -> None:
    """A wholesale replacement (torch_npu 2.14's kind) and a chaining wrapper (openreg's
    kind), assigned after the registration: the sample still builds with its options."""
    import inspect

    import torch
    import torch._inductor.cpp_builder as cpp_builder
    from torch._inductor.cpp_builder import get_cpp_compiler

    saved = cpp_builder.get_cpp_torch_device_options
    torch_function = inspect.unwrap(saved)

    def legacy_replacement(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> Any:
        # A backend's own copy of torch's function, assigned for every device: it knows
        # torch's devices, and gives any other one torch's generic options.
        known = device_type if device_type in RESERVED_DEVICE_TYPES else "legacy_backend_device"
        return torch_function(known, aot_mode, compile_only)

    cpp_builder.get_cpp_torch_device_options = legacy_replacement
    captured = cpp_builder.get_cpp_torch_device_options

    def chaining_wrapper(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: object
    ) -> Any:
        options = captured(device_type, aot_mode, compile_only, **kwargs)
        if device_type == DEVICE_NAME:
            options[0].append(WRAPPER_MACRO)
        return options

    cpp_builder.get_cpp_torch_device_options = chaining_wrapper
    demo.say(
        "cpp_builder.get_cpp_torch_device_options = legacy_replacement  # never calls through\n"
        "cpp_builder.get_cpp_torch_device_options = chaining_wrapper    # adds -D "
        f"{WRAPPER_MACRO}"
    )
    try:
        torch._dynamo.reset()
        # In this process, where the two were assigned (a compile subprocess has neither).
        with (
            _compiling_in_this_process(),
            _fresh_inductor_cache(inductor_cache_base),
            record_compiler_commands(get_cpp_compiler()) as commands,
        ):
            result = torch.compile(model, options={"cpp_wrapper": True})(*inputs)
        state = hook_state()
    finally:
        cpp_builder.get_cpp_torch_device_options = saved
        torch._dynamo.reset()
    demo.say(state.describe())
    module = last_shared_library(commands)
    missing = [" ".join(f) for f in marks if module is None or not module.has(f)]
    demo.check(
        f"every flag from the {DEVICE_NAME} options still in the command that built the module",
        not missing,
        f"missing {', '.join(missing)}" if missing else "",
    )
    demo.check(
        f"the wrapper's -D {WRAPPER_MACRO} reached the compiler too",
        module is not None and module.has(("-D", WRAPPER_MACRO)),
    )
    demo.check(
        "both adopted by the hook: a replacement, then a wrapper of the hook",
        [function.behaviour for function in state.adopted] == ["replacement", "wraps the hook"]
        and state.registrations_apply,
    )
    _check_result(demo, result, expected)


def _check_distributed_job(
    demo: _Demo, device: SampleDevice, ranks: int, inductor_cache: Path
) -> None:
    """Run the sample's torchrun job and show, rank by rank, what it saw."""
    from .distributed import built_by, run_job

    demo.say(
        "each rank runs sample/distributed_job.py, which imports only torch: the device and its\n"
        "options come from torch's backend autoload; the ranks share the Inductor cache above"
    )
    job = run_job(device, ranks, inductor_cache)
    demo.say(f"$ {shlex.join(job.command)}")
    demo.say(f"exit code {job.returncode} after {job.seconds:.1f} s")
    if not demo.check("torchrun ran the job to the end", job.returncode == 0):
        demo.say("\n".join(job.output.splitlines()[-30:]), indent=6)
    demo.check(
        f"every rank reported ({ranks})",
        [report.rank for report in job.reports] == list(range(ranks)),
        f"ranks {', '.join(str(report.rank) for report in job.reports) or 'none'}",
    )
    rank_pids = {report.pid for report in job.reports}
    defaults = default_cpp_device_options(DEVICE_NAME)
    for report in job.reports:
        name = f"rank {report.rank}"
        demo.say(
            f"\n{name} (pid {report.pid}, compile mode {report.compile_mode or '?'}), "
            f"compiled in {report.compile_seconds:.1f} s",
            indent=2,
        )
        if report.error is not None:
            demo.say(report.error)
        added = added_options(report.device_options, defaults)
        flags = rendered_flags(added)
        demo.say(f"options its Inductor got, beyond torch's: {' '.join(map(shlex.join, flags))}")
        ran = [c for c in job.commands if c.rank == report.rank and any(map(c.has, flags))]
        in_child = sum(1 for c in ran if c.pid not in rank_pids)
        demo.say(
            f"compiler runs with {DEVICE_NAME} flags: {len(ran)}"
            + (f", {in_child} of them in its compile subprocesses" if in_child else "")
        )
        demo.check(
            f"{name}: its Inductor gets the {DEVICE_NAME} options (from torch's backend autoload)",
            DEVICE_MACRO in report.device_options.definitions,
        )
        demo.check(
            f"{name}: result on {DEVICE_NAME} equals eager CPU, the all-reduce adds up",
            report.result_device.startswith(DEVICE_NAME)
            and report.max_difference <= 1e-5
            and report.all_reduce_max_difference <= 1e-5,
            f"{report.result_device or 'no result'}; max |difference| {report.max_difference:.2e},"
            f" after all-reduce {report.all_reduce_max_difference:.2e}",
        )
        problems: list[str] = []
        for module in report.loaded_modules:
            command = built_by(module, job.commands)
            if command is None:
                problems.append(f"{module.name} was not built in this job")
                demo.say(f"runs {module.name}: not built in this job")
                continue
            builder = (
                f"rank {command.rank}"
                if command.pid in rank_pids
                else (f"a compile subprocess of rank {command.rank}")
            )
            needed = read_dynamic_section(module).needed
            missing = [" ".join(flag) for flag in flags if not command.has(flag)]
            demo.say(
                f"runs {_shorten(module.name, 40)}: built by {builder} (pid {command.pid}), "
                f"{'with every' if not missing else 'WITHOUT some'} {DEVICE_NAME} flag; "
                f"NEEDED {', '.join(n for n in needed if DEVICE_NAME in n) or '-'}"
            )
            problems += [f"{module.name} built without {flag}" for flag in missing]
            if RUNTIME_LIBRARY_FILE not in needed:
                problems.append(f"{module.name} does not link {RUNTIME_LIBRARY_FILE}")
        demo.check(
            f"{name}: every module it runs was built in this job with its {DEVICE_NAME} options"
            f" and links {RUNTIME_LIBRARY_FILE}",
            bool(report.loaded_modules) and not problems,
            "; ".join(problems) if report.loaded_modules else "it runs no compiled module",
        )


def _shorten(text: str, width: int) -> str:
    return (
        text if len(text) <= width else text[: width // 2 - 2] + "..." + text[-(width // 2) + 1 :]
    )
