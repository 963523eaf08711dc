"""regdev, an openreg-shaped third-party PrivateUse1 backend (tests/peers/regdev), built for
real by Inductor in each of its set-ups, with the outcome of every build recorded.

The backend ships as a third party ships it: its own C++ extension, an SDK on disk
(``regdev/runtime.h``, ``libregdev_runtime.so``), an include dir with the headers torch
includes for a wrapper that reports "regdev", and a ``torch.backends`` autoload entry point
(declared by a throwaway dist-info dir on PYTHONPATH), so every process that imports torch
sets it up: the measuring processes, Inductor's compile workers, and ``inductor-device-options
doctor regdev``. Its variants are chosen by environment variables (regdev_backend.py).

Each set-up runs in one fresh process doing all of its real compiles (each Inductor compile
takes 15-25 s here). ``SETUPS`` is the table of expected outcomes; doctor's verdicts are
compared with the measured outcomes by ``test_doctor_verdict_matches_the_real_build``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support import (
    check_python,
    cpp_wrapper_device_header,
    pythonpath_with,
    run_python,
    shared_test_dir,
)

from inductor_device_options._diagnose.doctor import COMPILE_CHECKS

REGDEV_DIR = Path(__file__).resolve().parent / "regdev"
DEVICE = "regdev"
SUBPROCESS_TIMEOUT = 600


# --- the table ----------------------------------------------------------------------------

# What a failed build must show. A key, not a regex, so that a column can be added per
# torch where torch differs (resolved by expected_error()).
RUNTIME_HEADER = "regdev/runtime.h"
MISSING_CPU_CODEGEN_HEADER = "the first regdev header a 'cpu' wrapper includes"
MISSING_DEVICE_HEADER = "the header torch includes for a 'regdev' wrapper"
UNSUPPORTED_DEVICE_KEY = "Unsupported device key found: regdev"
ADDMM_NOT_DECLARED = "aoti_torch_regdev_addmm_out was not declared"
NO_CPP_KERNEL_TYPE = "NotImplementedError, with no message"
WEIGHTS_REFUSED = "the weights on regdev, in the .so, refused"


class Outcome(NamedTuple):
    ok: bool
    error: str | None = None  # for a failure: one of the keys above


PASS = Outcome(True)


def fails(error: str) -> Outcome:
    return Outcome(False, error)


# The real builds a set-up's process can run, in this order (fn: pointwise ops, a reduction,
# and the extern kernels mm, addmm and bmm, which call the device's C shim):
#   cpp_wrapper          torch.compile(fn, options={"cpp_wrapper": True})(x), x on regdev
#   plain                torch.compile(fn)(x): Inductor's Python wrapper, CPU C++ kernels
#   aoti_build           aoti_compile_and_package(torch.export.export(model, (x,)))
#   aoti_load_no_runner  aoti_load_package(path)(x) before the AOTI runner is registered
#   aoti_load            the same after torch.ops.regdev.register_aoti_runner(), which is
#                        what setup() does with REGDEV_AOTI_RUNNER=1
#   aoti_weights         a model with weights on regdev (doctor's own Linear model),
#                        packaged with its weights in the .so (torch's default), loaded, run
#   aoti_weights_user    the same, its weights out of the .so and given to the loaded model
#                        (load_constants(..., user_managed=True): torch 2.13 on)
BUILDS = (
    "cpp_wrapper",
    "plain",
    "aoti_build",
    "aoti_load_no_runner",
    "aoti_load",
    "aoti_weights",
    "aoti_weights_user",
)


def torch_source(relative: str) -> str:
    """A file of the installed torch, as text ("" where this torch has none)."""
    import torch

    path = Path(torch.__file__).parent / relative
    return path.read_text(errors="replace") if path.is_file() else ""


def weights_in_the_so() -> Outcome:
    """What becomes of a model whose weights are on regdev, packaged in its .so. torch 2.6
    loads them as the model container's device ("cpu": regdev memory is host memory). torch
    2.13's runtime refuses them at load (model_base.h: a constant neither of the container's
    device nor the CPU's). torch 2.15 fails first as it packages them: it then frees the
    accelerator's cache (torch.accelerator.empty_cache()), which regdev's allocator, not a
    c10::DeviceAllocator, cannot."""
    if "torch.accelerator.empty_cache()" in torch_source("_inductor/codecache.py"):
        return fails(WEIGHTS_REFUSED)
    runtime = "include/torch/csrc/inductor/aoti_runtime/model_base.h"
    if "Mixed-device constants are only supported" in torch_source(runtime):
        return fails(WEIGHTS_REFUSED)
    return PASS


def user_managed_weights() -> bool:
    """Whether a loaded package takes weights it uses where they are (torch 2.13 on)."""
    return "user_managed" in torch_source("export/pt2_archive/_package.py")


WEIGHTS = weights_in_the_so()


def overrides_without_cpp_kernel_type() -> Outcome:
    """An AOTInductor build with overrides that lack cpp_kernel_type(): torch 2.13 and 2.15
    declare the model's C++ kernels with it (CppScheduling.define_kernel records them in the
    wrapper's src_to_kernel); torch 2.6 calls them directly, and never asks."""
    source = torch_source("_inductor/codegen/cpp.py")
    define_kernel = source[source.find("def define_kernel") :][:4000]
    return fails(NO_CPP_KERNEL_TYPE) if "src_to_kernel" in define_kernel else PASS


KERNEL_TYPE = overrides_without_cpp_kernel_type()


@dataclass(frozen=True)
class Setup:
    name: str
    description: str
    env: Mapping[str, str]
    expected: Mapping[str, Outcome]  # build -> outcome; the builds this set-up runs
    doctor: dict[str, Any] = field(default_factory=dict)  # columns to come (doctor's verdicts)


SETUPS = [
    Setup(
        "A",
        "openreg-shaped: the C++ wrapper keeps the inherited 'cpu', package registration",
        {
            "REGDEV_CODEGEN_DEVICE": "cpu",
            "REGDEV_SHIP_WRAPPER_HEADER": "1",
            "REGDEV_REGISTER": "package",
        },
        # AOTInductor asks the builder for the graph's device, whatever the wrapper's.
        {
            "cpp_wrapper": fails(MISSING_CPU_CODEGEN_HEADER),
            "plain": PASS,
            "aoti_build": PASS,
            "aoti_load": PASS,
        },
    ),
    Setup(
        "B",
        "the wrapper reports 'regdev', its wrapper header not shipped, package registration",
        {
            "REGDEV_CODEGEN_DEVICE": "regdev",
            "REGDEV_SHIP_WRAPPER_HEADER": "0",
            "REGDEV_REGISTER": "package",
        },
        {"cpp_wrapper": fails(MISSING_DEVICE_HEADER)},
    ),
    Setup(
        "C",
        "the wrapper reports 'regdev', its wrapper header shipped, package registration",
        {
            "REGDEV_CODEGEN_DEVICE": "regdev",
            "REGDEV_SHIP_WRAPPER_HEADER": "1",
            "REGDEV_REGISTER": "package",
            "REGDEV_RECORD_OVERRIDES": "1",
        },
        {
            "cpp_wrapper": PASS,
            "plain": PASS,
            "aoti_build": PASS,
            "aoti_load_no_runner": fails(UNSUPPORTED_DEVICE_KEY),
            "aoti_load": PASS,
            "aoti_weights": WEIGHTS,
            **({"aoti_weights_user": PASS} if user_managed_weights() else {}),
        },
    ),
    Setup(
        "D",
        "as C, registered through torch._inductor.cpp_builder.register_cpp_device_options",
        {
            "REGDEV_CODEGEN_DEVICE": "regdev",
            "REGDEV_SHIP_WRAPPER_HEADER": "1",
            "REGDEV_REGISTER": "cpp_builder",
        },
        {"cpp_wrapper": PASS},
    ),
    Setup(
        "E",
        "unmigrated openreg-derived: the wrapper keeps 'cpu', a wrapper of Inductor's function "
        "answers 'cpu' (and regdev) with regdev's options",
        {"REGDEV_CODEGEN_DEVICE": "cpu", "REGDEV_REGISTER": "legacy_wrapper"},
        {"cpp_wrapper": PASS},
    ),
    Setup(
        "F",
        "as C, the SDK's C shim without aoti_torch_regdev_addmm_out",
        {"REGDEV_CODEGEN_DEVICE": "regdev", "REGDEV_C_SHIM": "no_addmm"},
        {"cpp_wrapper": fails(ADDMM_NOT_DECLARED)},
    ),
    Setup(
        "G",
        "as C, the DeviceOpOverrides without cpp_kernel_type()",
        {"REGDEV_CODEGEN_DEVICE": "regdev", "REGDEV_OVERRIDES": "no_cpp_kernel_type"},
        {"aoti_build": KERNEL_TYPE},
    ),
]
SETUP_BY_NAME = {setup.name: setup for setup in SETUPS}


def expected_error(key: str) -> str:
    """The regex a failed build's error must match, on the running torch."""
    if key == UNSUPPORTED_DEVICE_KEY:
        # torch 2.6 says "Unsupported device found: regdev".
        return r"Unsupported device (key )?found: regdev"
    if key == ADDMM_NOT_DECLARED:
        return r"aoti_torch_regdev_addmm_out\W{1,3} was not declared"
    if key == NO_CPP_KERNEL_TYPE:
        return r"NotImplementedError: ?$"
    if key == WEIGHTS_REFUSED:
        # torch 2.15 while packaging; 2.13's runtime says why on stderr (checked there).
        return r"Allocator for regdev is not a DeviceAllocator|create_func_.* API call failed"
    if key == MISSING_DEVICE_HEADER:
        header = cpp_wrapper_device_header(DEVICE)
    elif key == MISSING_CPU_CODEGEN_HEADER:
        header = cpu_codegen_missing_header()
    else:
        header = key
    return rf"fatal error: {re.escape(header)}: No such file or directory"


def cpu_codegen_missing_header() -> str:
    """The header a cpp_wrapper build of a wrapper left at "cpu" fails on: torch 2.6's wrapper
    includes only its own device's header (``c_shim_cpu.h``, found), so the SDK's
    ``regdev/runtime.h`` is the first one missing; later torch (``add_device_include``)
    includes the header of every device of the graph, ``cpp_wrapper/regdev.h`` first."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    if hasattr(CppWrapperCpu, "add_device_include"):
        return cpp_wrapper_device_header(DEVICE)
    return RUNTIME_HEADER


def includes_regdev_device_header(setup: Setup) -> bool:
    """Whether the code Inductor generates for the set-up includes a regdev device header,
    the one that references (and so loads) the runtime: always when the wrapper reports
    "regdev"; for a "cpu" wrapper, only on torch that includes the header of every device
    of the graph (2.13+). torch 2.6's "cpu" wrapper includes c_shim_cpu.h alone, so its
    AOTInductor model for regdev builds and runs without any regdev header or library
    (the linker, --as-needed as gcc here is by default, drops the unused -lregdev_runtime)."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    reports_regdev = setup.env.get("REGDEV_CODEGEN_DEVICE") == DEVICE
    return reports_regdev or hasattr(CppWrapperCpu, "add_device_include")


# --- the backend, built once a session ----------------------------------------------------


class Regdev(NamedTuple):
    build_dir: Path  # REGDEV_BUILD_DIR: the extension and the SDK
    site_dir: Path  # the dist-info declaring the torch.backends entry point

    def env(self, variant: Mapping[str, str]) -> dict[str, str]:
        """A set-up's environment: regdev autoloads in every process started with it."""
        return {
            "PYTHONPATH": pythonpath_with(self.site_dir, REGDEV_DIR),
            "REGDEV_BUILD_DIR": str(self.build_dir),
            "REGDEV_CODEGEN_DEVICE": "cpu",
            "REGDEV_SHIP_WRAPPER_HEADER": "1",
            "REGDEV_REGISTER": "package",
            "REGDEV_AOTI_RUNNER": "1",
            # torch's compile workers must not outlive the test.
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            # Every set-up builds for real: no compiled graph from another set-up's process
            # (the session shares one Inductor cache dir). The C++ code cache stays: it is
            # keyed by the source and the whole compiler command.
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
            **variant,
        }


def write_backend_distribution(site: Path) -> None:
    """A dist-info declaring regdev's ``torch.backends`` entry point (what its wheel would)."""
    dist_info = site / "regdev_backend-0.1.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: regdev-backend\nVersion: 0.1\n"
    )
    (dist_info / "entry_points.txt").write_text("[torch.backends]\nregdev = regdev_backend:setup\n")


@pytest.fixture(scope="session")
def regdev() -> Regdev:
    """The extension and the SDK, built once a test run (in a process of its own: loading the
    extension takes the PrivateUse1 slot, which the sample device wants in this one)."""
    root = shared_test_dir() / "regdev"
    built = Regdev(build_dir=root / "build", site_dir=root / "site")
    check_python(
        "import regdev_backend; regdev_backend.build()",
        env={"PYTHONPATH": pythonpath_with(REGDEV_DIR), "REGDEV_BUILD_DIR": str(built.build_dir)},
        timeout=SUBPROCESS_TIMEOUT,
    )
    if not built.site_dir.exists():
        write_backend_distribution(built.site_dir)
    return built


# --- measuring a set-up: one process, every build it runs ---------------------------------

MEASURE = """
    import inspect, json, os, sys, time
    import torch  # regdev autoloads here
    import regdev_backend
    from torch._inductor import cpp_builder

    builds = sys.argv[1:]
    asked = []  # the device types Inductor asked the builder for
    init = cpp_builder.CppTorchDeviceOptions.__init__
    signature = inspect.signature(init)

    def recording_init(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        entry = [bound.arguments["device_type"], bool(bound.arguments.get("aot_mode"))]
        if entry not in asked:
            asked.append(entry)
        init(self, *args, **kwargs)

    cpp_builder.CppTorchDeviceOptions.__init__ = recording_init

    def fn(x):
        hidden = torch.cos(x) * 2 - 0.5
        pooled = hidden.amax(dim=0, keepdim=True) + hidden.sigmoid()
        weight = x.t() * 0.5
        product = hidden @ weight  # mm
        biased = torch.addmm(product[0], pooled, weight)  # addmm
        return torch.bmm(product.unsqueeze(0), biased.unsqueeze(0)).squeeze(0) + 1  # bmm

    class Model(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    x = torch.randn(6, 32, generator=torch.Generator().manual_seed(0))
    expected = fn(x)
    outcomes = {}

    def check(result, expected=expected):
        result = result[0] if isinstance(result, (list, tuple)) else result
        assert result.device.type == "regdev", result.device
        torch.testing.assert_close(result.cpu(), expected)

    def run(name, call):
        asked.clear()
        start = time.monotonic()
        try:
            call()
            outcome = {"ok": True}
        except Exception as error:
            outcome = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        outcome["seconds"] = round(time.monotonic() - start, 1)
        outcome["asked"] = list(asked)
        outcome["overrides"] = sorted(set(regdev_backend.overrides_called))
        regdev_backend.overrides_called.clear()
        # Only modules built with the regdev headers need (and so load) the runtime.
        with open("/proc/self/maps") as maps:
            outcome["runtime_loaded"] = "libregdev_runtime.so" in maps.read()
        outcomes[name] = outcome

    def cpp_wrapper():
        torch._dynamo.reset()
        check(torch.compile(fn, options={"cpp_wrapper": True})(x.to("regdev")))

    def plain():
        torch._dynamo.reset()
        check(torch.compile(fn)(x.to("regdev")))

    package = []

    def aoti_build():
        exported = torch.export.export(Model(), (x.to("regdev"),))
        path = os.path.join(os.environ["REGDEV_PACKAGE_DIR"], "model.pt2")
        package.append(torch._inductor.aoti_compile_and_package(exported, package_path=path))

    def aoti_load():
        if not package:
            raise RuntimeError("no package: aoti_build failed")
        check(torch._inductor.aoti_load_package(package[0])(x.to("regdev")))

    def weights_model(packaged):
        # doctor --compile's own model with weights, built as a user builds it (the C++ of
        # doctor's build and this one is the same, which Inductor's code cache shares).
        from inductor_device_options._diagnose.compile_models import linear_model

        module, inputs, eager = linear_model()
        want = eager()
        module = module.to("regdev")
        inputs = tuple(tensor.to("regdev") for tensor in inputs)
        exported = torch.export.export(module, inputs)
        name = "weights.pt2" if packaged else "weights-out-of-the-so.pt2"
        path = os.path.join(os.environ["REGDEV_PACKAGE_DIR"], name)
        configs = {} if packaged else {"aot_inductor.package_constants_in_so": False}
        built = torch._inductor.aoti_compile_and_package(
            exported, package_path=path, inductor_configs=configs
        )
        compiled = torch._inductor.aoti_load_package(built)
        if not packaged:
            weights = dict(module.state_dict())
            compiled.load_constants(weights, check_full_update=True, user_managed=True)
        check(compiled(*inputs), want)

    def aoti_weights():
        weights_model(packaged=True)

    def aoti_weights_user():
        weights_model(packaged=False)

    for name in builds:
        if name == "aoti_load" and "aoti_load_no_runner" in builds:
            torch.ops.regdev.register_aoti_runner()  # what setup() does with the runner
        function = {"aoti_load_no_runner": aoti_load}.get(name) or globals()[name]
        run(name, function)
    print("REGDEV_OUTCOMES " + json.dumps(outcomes))
"""


@dataclass
class Measured:
    outcomes: dict[str, dict[str, Any]]
    seconds: float
    stderr: str


@pytest.fixture(scope="module")
def measure(
    regdev: Regdev, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Setup], Measured]:
    """Runs a set-up's builds in a fresh process, once a module."""
    measured: dict[str, Measured] = {}

    def measure_setup(setup: Setup) -> Measured:
        if setup.name not in measured:
            builds = [name for name in BUILDS if name in setup.expected]
            env = regdev.env(setup.env)
            env["REGDEV_PACKAGE_DIR"] = str(tmp_path_factory.mktemp(f"regdev-{setup.name}"))
            if "aoti_load_no_runner" in builds:
                env["REGDEV_AOTI_RUNNER"] = "0"  # MEASURE registers it before aoti_load
            start = time.monotonic()
            finished = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(MEASURE), *builds],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=SUBPROCESS_TIMEOUT,
            )
            seconds = time.monotonic() - start
            lines = [
                line for line in finished.stdout.splitlines() if line.startswith("REGDEV_OUTCOMES ")
            ]
            assert finished.returncode == 0 and lines, (
                f"set-up {setup.name}: exit {finished.returncode}\n"
                f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr[-5000:]}"
            )
            outcomes = json.loads(lines[-1].removeprefix("REGDEV_OUTCOMES "))
            measured[setup.name] = Measured(outcomes, seconds, finished.stderr)
        return measured[setup.name]

    return measure_setup


@pytest.mark.parametrize("setup", SETUPS, ids=[setup.name for setup in SETUPS])
def test_real_build_outcome(setup: Setup, measure: Callable[[Setup], Measured]) -> None:
    import torch

    measured = measure(setup)
    print(
        f"\ntorch {torch.__version__}, set-up {setup.name} ({setup.description}): "
        f"{measured.seconds:.0f} s"
    )
    for build, outcome in measured.outcomes.items():
        error = (outcome.get("error") or "").strip()
        missing = re.search(r"fatal error: (\S+): No such file", error)
        detail = missing.group(0) if missing else error.splitlines()[0][:120] if error else ""
        print(
            f"  {build:20} {'PASS' if outcome['ok'] else 'FAIL'} {outcome['seconds']:5.1f} s"
            f"  asked {outcome['asked']}"
            f"{'  runtime loaded' if outcome['runtime_loaded'] else ''}  {detail}"
        )

    problems = []
    for build, expected in setup.expected.items():
        outcome = measured.outcomes[build]
        if outcome["ok"] != expected.ok:
            problems.append(
                f"{build}: expected {'PASS' if expected.ok else 'FAIL'}, got "
                f"{'PASS' if outcome['ok'] else 'FAIL'}: {outcome.get('error')}"
            )
        elif not expected.ok:
            assert expected.error is not None
            pattern = expected_error(expected.error)
            if not re.search(pattern, outcome["error"]):
                problems.append(f"{build}: error does not match {pattern!r}: {outcome['error']}")
    if includes_regdev_device_header(setup):
        for build in ("cpp_wrapper", "aoti_load"):
            outcome = measured.outcomes.get(build)
            if outcome and outcome["ok"] and not outcome["runtime_loaded"]:
                problems.append(f"{build} passed, but no module loaded libregdev_runtime.so")
    refused = measured.outcomes.get("aoti_weights", {}).get("error") or ""
    if "API call failed" in refused and "Mixed-device constants are only" not in measured.stderr:
        problems.append("aoti_weights: the AOTI runtime did not say why it refused the weights")
    assert not problems, "\n".join(problems)
    # A served device's graph built with another device's options: said at run time, once
    # (a legacy wrapper's device is not served by the package: nothing to say).
    warned = measured.stderr.count("DeviceNotAskedWarning")
    served = setup.env.get("REGDEV_REGISTER", "package") != "legacy_wrapper"
    if (
        setup.env.get("REGDEV_CODEGEN_DEVICE") == "cpu"
        and "cpp_wrapper" in setup.expected
        and served
    ):
        assert warned == 1 and "RegdevCppWrapperCodegen.__init__, set self.device = 'regdev'" in (
            measured.stderr
        ), measured.stderr[-3000:]
    else:
        assert warned == 0, measured.stderr[-3000:]


# --- doctor's verdicts --------------------------------------------------------------------


# What real builds ask of the device's DeviceOpOverrides: what doctor's check asks them.
OVERRIDES_BUILDS = {False: ("cpp_wrapper",), True: ("aoti_build", "aoti_weights_user")}


@pytest.mark.parametrize("aot", [False, True], ids=["cpp_wrapper", "aot"])
def test_doctor_asks_the_overrides_what_real_builds_ask(
    aot: bool, measure: Callable[[Setup], Measured]
) -> None:
    from torch._inductor.codegen.common import DeviceOpOverrides

    from inductor_device_options._diagnose.overrides_checks import asked_methods

    measured = measure(SETUP_BY_NAME["C"])
    called = {
        method
        for build in OVERRIDES_BUILDS[aot]
        if build in measured.outcomes
        for method in measured.outcomes[build]["overrides"]
    }
    asked = {question.method for question in asked_methods(aot, DEVICE, DEVICE)}
    assert ("cpp_kernel_type" in asked) == (aot and not KERNEL_TYPE.ok)
    if not hasattr(DeviceOpOverrides, "aten_device_type"):
        # Before torch 2.15 regdev's own cpp_utils.DEVICE_TO_ATEN entry answers first, as
        # openreg-derived backends write it; doctor asks device_to_aten, which reads it.
        asked.discard("aten_device_type")
    assert called == asked, measured.outcomes


class DoctorVerdict(NamedTuple):
    ok: bool | None  # None: doctor gave no verdict (see output)
    failed: list[str]  # names of the checks that failed
    output: str
    skipped: tuple[str, ...] = ()  # names of the checks skipped
    warned: tuple[str, ...] = ()  # names of the checks that passed with a warning


def doctor_verdict(
    setup_env: Mapping[str, str], aot: bool, compile: bool, *, regdev: Regdev
) -> DoctorVerdict:
    """``inductor-device-options doctor regdev [--aot] [--compile] --json`` in a fresh process
    with the set-up's environment (regdev autoloads there: no --provider)."""
    command = [sys.executable, "-m", "inductor_device_options", "doctor", DEVICE, "--json"]
    command += ["--aot"] if aot else []
    command += ["--compile"] if compile else []
    finished = subprocess.run(
        command,
        env={**os.environ, **regdev.env(setup_env)},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    output = f"exit {finished.returncode}\nstdout:\n{finished.stdout}\nstderr:\n{finished.stderr}"
    try:
        document = json.loads(finished.stdout)
    except json.JSONDecodeError:
        return DoctorVerdict(None, [], output)
    if not isinstance(document, dict) or not isinstance(document.get("ok"), bool):
        return DoctorVerdict(None, [], output)
    checks = [check for check in document.get("checks", []) if isinstance(check, dict)]

    def named(status: str) -> list[str]:
        return [str(check.get("name")) for check in checks if check.get("status") == status]

    return DoctorVerdict(
        document["ok"], named("fail"), output, tuple(named("skip")), tuple(named("warn"))
    )


class DoctorCase(NamedTuple):
    """One row of the table in docs/guides/backend-author.md: a set-up, the real builds
    doctor's verdict must agree with (all pass, or one fails), the checks that fail, static
    and with --compile (None: that run is left out, for CI's time), and the checks that pass
    with a warning (static; with --compile, those of the compile's own checks).

    The row of the model with weights (``weights``) is written for torch 2.13 and 2.15, whose
    AOTInductor refuses regdev weights in the .so: on a torch that loads them (2.6), its
    compile verdict passes, as its real build does (``for_this_torch``)."""

    setup: str
    aot: bool
    env: Mapping[str, str]  # on top of the set-up's
    builds: tuple[str, ...]
    static_fails: tuple[str, ...]
    compile_fails: tuple[str, ...] | None
    static_warns: tuple[str, ...] = ()
    compile_warns: tuple[str, ...] = ()
    weights: bool = False
    kernel_type: bool = False  # the row of the overrides without cpp_kernel_type()

    def for_this_torch(self) -> DoctorCase:
        """The row's verdicts on the running torch: with --aot, the static checks warn of
        the weights wherever torch refuses them; the rows whose failure torch 2.6 does not
        have (weights, cpp_kernel_type()) pass there, as their real builds do."""
        refused = not WEIGHTS.ok
        warns = tuple(w for w in self.static_warns if w != "aoti_weights" or refused)
        case = self._replace(static_warns=warns)
        if self.weights and not refused:
            return case._replace(compile_fails=())
        if self.kernel_type and KERNEL_TYPE.ok:
            return case._replace(static_fails=(), compile_fails=())
        return case


NO_RUNNER = {"REGDEV_AOTI_RUNNER": "0"}
AOTI_WEIGHTS = ("aoti_weights",)  # --aot: the static check that warns of weights in the .so
# The real builds a static verdict is judged on: it builds nothing, so it says nothing of
# the AOTI model runner, which only loading a package shows; it says so (aoti_runner SKIP);
# nor of a model's weights, which it warns of where torch refuses them (aoti_weights WARN).
STATIC_LEAVES_OUT = ("aoti_load_no_runner", "aoti_weights")
DOCTOR_CASES = [
    DoctorCase(
        "A", False, {}, ("cpp_wrapper",), ("device_asked",), ("compile_run", "builds_asked")
    ),
    DoctorCase("A", True, {}, ("aoti_build", "aoti_load"), (), None, AOTI_WEIGHTS),
    DoctorCase("B", False, {}, ("cpp_wrapper",), ("headers",), ("compile_run",)),
    DoctorCase("C", False, {}, ("cpp_wrapper",), (), ()),
    DoctorCase("C", True, {}, ("aoti_build", "aoti_load"), (), None, AOTI_WEIGHTS),
    DoctorCase(
        "C",
        True,
        NO_RUNNER,
        ("aoti_build", "aoti_load_no_runner"),
        (),
        ("aoti_load",),
        AOTI_WEIGHTS,
    ),
    DoctorCase(
        "C",
        True,
        {},
        ("aoti_build", "aoti_load", "aoti_weights"),
        (),
        ("linear_model",),
        AOTI_WEIGHTS,
        weights=True,
    ),
    DoctorCase("D", False, {}, ("cpp_wrapper",), (), None),
    DoctorCase(
        "E", False, {}, ("cpp_wrapper",), (), (), ("device_asked", "cache_keys"), ("builds_asked",)
    ),
    DoctorCase("F", False, {}, ("cpp_wrapper",), ("c_shim",), ("linear_model",)),
    DoctorCase(
        "G",
        True,
        {},
        ("aoti_build",),
        ("overrides",),
        ("compile_run",),
        AOTI_WEIGHTS,
        kernel_type=True,
    ),
]


def _case_id(case: DoctorCase) -> str:
    mode = ("-aot" if case.aot else "") + ("-no-runner" if case.env else "")
    return case.setup + mode + ("-weights" if case.weights else "")


DOCTOR_RUNS = [
    (case, compile)
    for case in DOCTOR_CASES
    for compile in (False, True)
    if not compile or case.compile_fails is not None
]


@pytest.mark.parametrize(
    ("case", "compile"),
    DOCTOR_RUNS,
    ids=[_case_id(case) + ("-compile" if compile else "-static") for case, compile in DOCTOR_RUNS],
)
def test_doctor_verdict_matches_the_real_build(
    case: DoctorCase, compile: bool, regdev: Regdev, measure: Callable[[Setup], Measured]
) -> None:
    case = case.for_this_torch()
    setup = SETUP_BY_NAME[case.setup]
    measured = measure(setup)
    static_builds = tuple(build for build in case.builds if build not in STATIC_LEAVES_OUT)
    builds = case.builds if compile else static_builds
    real_ok = all(measured.outcomes[build]["ok"] for build in builds)
    start = time.monotonic()
    verdict = doctor_verdict({**setup.env, **case.env}, case.aot, compile, regdev=regdev)
    print(
        f"\ndoctor {_case_id(case)}{' --compile' if compile else ''}: ok={verdict.ok} "
        f"failed {verdict.failed} warned {verdict.warned} ({time.monotonic() - start:.0f} s); "
        f"real: {real_ok}"
    )
    assert verdict.ok == real_ok, (
        f"real build {'passes' if real_ok else 'fails'} ({builds}), doctor says "
        f"ok={verdict.ok}, failed checks {verdict.failed}\n{verdict.output[-5000:]}"
    )
    # The static checks fail alike with --compile; the table's column shows the compile's.
    shown = [name for name in verdict.failed if not compile or name in COMPILE_CHECKS]
    expected = case.compile_fails if compile else case.static_fails
    assert tuple(shown) == expected, verdict.output[-5000:]
    warns = case.static_warns + (case.compile_warns if compile else ())
    assert verdict.warned == warns, verdict.output[-5000:]
    if compile:
        assert [name for name in verdict.failed if name not in COMPILE_CHECKS] == list(
            case.static_fails
        )
    if case.aot and not compile:
        assert "aoti_runner" in verdict.skipped, verdict.output[-5000:]


def test_backend_autoloads_in_a_fresh_process(regdev: Regdev) -> None:
    """The torch.backends entry point sets regdev up on ``import torch``: the device, its
    Inductor backend and, with the package registration, its C++ options."""
    finished = run_python(
        """
        import torch
        import inductor_device_options as ido
        from torch._inductor.codegen.common import get_wrapper_codegen_for_device

        x = torch.arange(4.0).to("regdev") * 2
        print(x.device, x.cpu().tolist(), ido.introspection.device_options_source("regdev").kind,
              get_wrapper_codegen_for_device("regdev", cpp_wrapper=True).__name__)
        """,
        env=regdev.env({}),
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert finished.returncode == 0, finished.stderr
    last_line = finished.stdout.strip().splitlines()[-1]
    assert last_line == "regdev:0 [0.0, 2.0, 4.0, 6.0] registration RegdevCppWrapperCodegen"


# --- the table the docs show ----------------------------------------------------------------

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "backend-author.md"
SETUP_SHORT = {
    "A": 'codegen keeps `"cpu"`, provider registered for regdev',
    "B": "codegen reports regdev, its `cpp_wrapper/regdev.h` not shipped",
    "C": "codegen reports regdev, header shipped, provider registered",
    "D": "as C, registered through `cpp_builder.register_cpp_device_options`",
    "E": 'codegen keeps `"cpu"`, a legacy wrapper answers `"cpu"` with regdev\'s options',
    "F": "as C, the SDK's C shim lacks `addmm`",
    "G": "as C, the overrides lack `cpp_kernel_type()`",
}


def _verdict_cell(fails: tuple[str, ...] | None, warns: tuple[str, ...], aot_static: bool) -> str:
    if fails is None:
        return "not run in CI"
    if fails:
        return "FAIL " + ", ".join(f"`{name}`" for name in fails)
    warned = "".join(f", WARN `{name}`" for name in warns)
    return "PASS" + warned + (" (`aoti_runner` SKIP: not checked)" if aot_static else "")


def _real_cell(case: DoctorCase) -> str:
    """The real build, as on torch 2.13 and 2.15 (the docs say what 2.6 does differently)."""
    if case.weights:
        return "builds; weights refused"
    if case.kernel_type:
        return "build fails"
    expected = SETUP_BY_NAME[case.setup].expected
    if not case.aot:
        return "passes" if expected["cpp_wrapper"].ok else "fails"
    if not expected["aoti_build"].ok:
        return "build fails"
    return (
        "builds, loads"
        if all(expected[build].ok for build in case.builds)
        else ("builds; load fails")
    )


def markdown_table() -> str:
    """DOCTOR_CASES as the docs show them (torch 2.13 and 2.15): each row checked by the
    tests above on every torch."""
    rows = [
        "| setup | build | real build | `doctor` | `doctor --compile` |",
        "|---|---|---|---|---|",
    ]
    for case in DOCTOR_CASES:
        if case.aot:
            build = "AOTInductor" + (", no model runner" if case.env else "")
            build += ", a model with weights in the .so" if case.weights else ""
        else:
            build = "cpp_wrapper"
        compile_warns = case.static_warns + case.compile_warns
        rows.append(
            f"| {case.setup}: {SETUP_SHORT[case.setup]} | {build} | {_real_cell(case)} | "
            f"{_verdict_cell(case.static_fails, case.static_warns, case.aot)} | "
            f"{_verdict_cell(case.compile_fails, compile_warns, False)} |"
        )
    return "\n".join(rows) + "\n"


def test_the_backend_author_guide_shows_this_table() -> None:
    assert markdown_table() in DOCS_PAGE.read_text(), markdown_table()
