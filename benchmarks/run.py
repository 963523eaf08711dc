"""Benchmarks: the registry costs nothing where it runs.

    python benchmarks/run.py           # everything: prints a table, writes benchmarks/results.json
    python benchmarks/run.py --smoke      # a few seconds: proves the command works (CI)
    python benchmarks/run.py --only import,lookup
    python benchmarks/run.py --table-only # rewrite the docs' table from results.json, run nothing

Each figure is a median over repeated runs; where there is a baseline, the ratio is
measured in the same run, interleaved with it (these machines are noisy). The report
records the date and the load average before and after the run: run it on a quiet machine.
The docs' table (docs/_generated/benchmarks.md) is rendered from results.json by
``markdown_table``; with another ``--json`` path the table goes beside that file instead.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
RESULTS_JSON = HERE / "results.json"
DOCS_TABLE = HERE.parent / "docs" / "_generated" / "benchmarks.md"
#: Every figure the full run produces, in table order (a figure missing from a
#: results.json, e.g. one written before it was added, shows as not measured).
RESULT_KEYS = (
    "import",
    "import_inductor",
    "cpu_lookup",
    "adopted_lookup",
    "registered_lookup",
    "backend_init",
    "ascend_cold",
    "ascend_cached",
    "identity_cold",
    "identity_warm",
    "compile_identity",
    "cache_key",
    "e2e",
    "fleet",
    "doctor_static",
)
sys.path.insert(0, str(HERE))

from doctor_bench import measure_doctor_static  # noqa: E402
from identity_bench import (  # noqa: E402
    measure_cache_key,
    measure_fleet,
    measure_identity,
    measure_per_compile,
)
from synthetic_sdk import write_synthetic_cann  # noqa: E402


class Result(NamedTuple):
    key: str
    what: str
    value: float
    unit: str
    target: str
    met: bool
    detail: str = ""


class Settings(NamedTuple):
    processes: int  # fresh processes per variant
    calls: int  # calls per timing block
    blocks: int  # interleaved blocks
    e2e_runs: int  # cold compiles per variant
    headers: int
    libraries: int
    header_bytes: int  # each header's size: 5,000 of 20 kB are about 100 MB
    doctor_runs: int = 7  # runs of `doctor` on the sample device (none in a smoke run)


FULL = Settings(
    processes=15,
    calls=2000,
    blocks=15,
    e2e_runs=6,
    headers=5000,
    libraries=100,
    header_bytes=20_000,
)
SMOKE = Settings(
    processes=1, calls=50, blocks=3, e2e_runs=0, headers=200, libraries=10, header_bytes=200
)


def median_of_blocks(
    functions: dict[str, Callable[[], object]], settings: Settings
) -> dict[str, float]:
    """Seconds per call of each function: median over blocks, the functions interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(settings.blocks):
        for name, function in functions.items():
            start = time.perf_counter()
            for _ in range(settings.calls):
                function()
            samples[name].append((time.perf_counter() - start) / settings.calls)
    return {name: statistics.median(values) for name, values in samples.items()}


# 1. import time -------------------------------------------------------------------------

# Each script prints two times: `import torch`, then what follows it, measured inside the
# process (the second figure is the package's own cost, free of the process's noise).
IMPORT_SCRIPTS = {
    "torch": "",
    "torch + package + register": (
        "import inductor_device_options as ido\n"
        "ido.register_cpp_device_options('benchdev', lambda d, a, c: ([], [], [], [], [], [], []))"
    ),
    "torch + torch._inductor.cpp_builder": "import torch._inductor.cpp_builder",
}
_TIMED = (
    "import time\n_start = time.perf_counter()\nimport torch\n_torch = time.perf_counter()\n"
    "{body}\n_end = time.perf_counter()\nprint(_torch - _start, _end - _torch)"
)


def bench_import(settings: Settings) -> list[Result]:
    # Without autoload, `import torch` alone does not import this package (it is declared in
    # torch.backends): the baseline is then torch without the package.
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    # As installed from a wheel: with bytecode. (An editable install under
    # PYTHONDONTWRITEBYTECODE=1 would compile every module's source at each import.)
    import compileall

    import inductor_device_options

    compileall.compile_dir(os.path.dirname(inductor_device_options.__file__), quiet=1)
    totals: dict[str, list[float]] = {name: [] for name in IMPORT_SCRIPTS}
    after_torch: dict[str, list[float]] = {name: [] for name in IMPORT_SCRIPTS}
    names = list(IMPORT_SCRIPTS)
    for round_number in range(settings.processes):
        # Interleaved, the order rotating each round: no variant is always first.
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            script = _TIMED.format(body=IMPORT_SCRIPTS[name])
            out = subprocess.run(
                [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
            ).stdout
            torch_seconds, rest_seconds = (float(word) for word in out.split()[-2:])
            totals[name].append(torch_seconds + rest_seconds)
            after_torch[name].append(rest_seconds)
    torch_alone = statistics.median(totals["torch"])
    with_package = statistics.median(totals["torch + package + register"])
    added_ms = statistics.median(after_torch["torch + package + register"]) * 1000
    inductor_ms = statistics.median(after_torch["torch + torch._inductor.cpp_builder"]) * 1000
    return [
        Result(
            "import",
            "import torch + package + register, over import torch alone",
            added_ms,
            "ms added",
            "< 10 ms",
            added_ms < 10,
            f"timed inside each process after `import torch`; whole imports: torch "
            f"{torch_alone * 1000:.0f} ms, torch + package + register {with_package * 1000:.0f} ms"
            f" (ratio {with_package / torch_alone:.3f}, process noise); "
            f"{settings.processes} fresh processes each, interleaved",
        ),
        Result(
            "import_inductor",
            "for scale: the torch._inductor import registering avoids",
            inductor_ms,
            "ms",
            "-",
            True,
            "import torch._inductor.cpp_builder after import torch",
        ),
    ]


# 2-3. lookups ---------------------------------------------------------------------------


def bench_lookup(settings: Settings) -> list[Result]:
    import torch._inductor.cpp_builder as cpp_builder

    import inductor_device_options as ido
    from inductor_device_options._hook import installation as _installation

    installation = _installation.installed()
    # With torch's native registry there is no hook: torch's function is what Inductor calls.
    stock = installation.function_below
    hooked = cpp_builder.get_cpp_torch_device_options
    timings = median_of_blocks(
        {"stock": lambda: stock("cpu", False, False), "hook": lambda: hooked("cpu", False, False)},
        settings,
    )

    # A backend's replacement (torch_npu's kind: a copy of torch's function), assigned after
    # the hook: the hook adopts it; Inductor calls with keywords.
    def replacement(device_type: str, aot_mode: bool = False, compile_only: bool = False) -> object:
        return stock(device_type, aot_mode, compile_only)

    cpp_builder.get_cpp_torch_device_options = replacement
    adopting = cpp_builder.get_cpp_torch_device_options
    try:
        adopted = median_of_blocks(
            {
                "direct": lambda: replacement(
                    device_type="cpu", aot_mode=False, compile_only=False
                ),
                "adopted": lambda: adopting(device_type="cpu", aot_mode=False, compile_only=False),
            },
            settings,
        )
    finally:
        cpp_builder.get_cpp_torch_device_options = hooked

    options = (["BENCH_DEVICE"], ["/opt/bench/include"], [], [], ["/opt/bench/lib"], ["bench"], [])
    ido.register_cpp_device_options("benchdev", lambda d, a, c: options)
    try:
        registered = median_of_blocks(
            {"registered": lambda: hooked("benchdev", False, False)}, settings
        )["registered"]
    finally:
        ido.unregister_cpp_device_options("benchdev")
    results = _lookup_results(installation.mode, timings, adopted, registered)
    return [*results, _backend_init(settings)]


def _backend_init(settings: Settings) -> Result:
    """What the _inductor_backend_init backport adds to each init_backend_registration call
    of a process with no device module defining the hook (torch's own where torch has it)."""
    from torch._inductor.codegen import common

    from inductor_device_options._hook.backports import BACKPORT_MARK

    wrapped = common.init_backend_registration
    wrapped()
    # torch 2.15 calls the hook itself: nothing of the package to time (its own function has
    # a __wrapped__ too, lru_cache's: not a backport).
    if not getattr(wrapped, BACKPORT_MARK, False):
        return Result(
            "backend_init",
            "init_backend_registration(), no hook: the backport / torch's own",
            0.0,
            "µs added per call",
            "< 1 µs",
            True,
            "torch's own hook: nothing wrapped",
        )
    torchs = wrapped.__wrapped__
    timings = median_of_blocks({"torch": torchs, "wrapped": wrapped}, settings)
    added = (timings["wrapped"] - timings["torch"]) * 1e6
    return Result(
        "backend_init",
        "init_backend_registration(), no hook: the backport / torch's own",
        added,
        "µs added per call",
        "< 1 µs",
        added < 1,
        f"torch's {timings['torch'] * 1e6:.2f} µs, through the backport "
        f"{timings['wrapped'] * 1e6:.2f} µs per call",
    )


def _lookup_results(
    mode: str, timings: dict[str, float], adopted: dict[str, float], registered: float
) -> list[Result]:
    ratio = timings["hook"] / timings["stock"]
    adopted_ratio = adopted["adopted"] / adopted["direct"]
    return [
        Result(
            "cpu_lookup",
            'get_cpp_torch_device_options("cpu"): hook / stock',
            ratio,
            "ratio",
            "<= 1.05",
            ratio <= 1.05,
            f"stock {timings['stock'] * 1e6:.1f} µs, through the hook "
            f"{timings['hook'] * 1e6:.1f} µs per call ({mode} mode)",
        ),
        Result(
            "adopted_lookup",
            'get_cpp_torch_device_options("cpu") with a replacement adopted: hook / replacement',
            adopted_ratio,
            "ratio",
            "<= 1.10",
            adopted_ratio <= 1.10,
            f"the replacement called directly {adopted['direct'] * 1e6:.1f} µs, through the "
            f"hook's chain {adopted['adopted'] * 1e6:.1f} µs per call",
        ),
        Result(
            "registered_lookup",
            "registered device, trivial callback, with validation",
            registered * 1e6,
            "µs per lookup",
            "< 20 µs",
            registered * 1e6 < 20,
        ),
    ]


# 4-5. Ascend provider and fingerprint on a realistic SDK ----------------------------------


def bench_sdk(settings: Settings, workdir: Path) -> list[Result]:
    import inductor_device_options as ido
    from inductor_device_options import ascend

    tree = write_synthetic_cann(
        workdir / "sdk", settings.headers, settings.libraries, settings.header_bytes
    )
    os.environ["ASCEND_HOME_PATH"] = str(tree.cann_home)
    os.environ["PYTORCH_NPU_INSTALL_PATH"] = str(tree.torch_npu)
    cold: list[float] = []
    cached: list[float] = []
    defaults: list[float] = []
    for _ in range(max(settings.blocks, 3)):
        ascend.clear_cache()
        start = time.perf_counter()
        options = ascend.cpp_device_options("npu", False, False)
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(settings.calls):
            ascend.cpp_device_options("npu", False, False)
        cached.append((time.perf_counter() - start) / settings.calls)
        # The provider extends torch's defaults on purpose (it does not copy torch's code):
        # what those cost, in the same run.
        start = time.perf_counter()
        for _ in range(settings.calls):
            ido.default_cpp_device_options("npu", False, False)
        defaults.append((time.perf_counter() - start) / settings.calls)
    size = f"{tree.headers} headers, {tree.libraries} libraries"
    cold_ms = statistics.median(cold) * 1000
    cached_us = statistics.median(cached) * 1e6
    defaults_us = statistics.median(defaults) * 1e6
    return [
        Result(
            "ascend_cold",
            "Ascend provider, first call (discovery)",
            cold_ms,
            "ms",
            "< 50 ms",
            cold_ms < 50,
            size,
        ),
        Result(
            "ascend_cached",
            "Ascend provider, cached call",
            cached_us,
            "µs",
            "< 20 µs",
            cached_us < 20,
            f"of which torch's own defaults {defaults_us:.1f} µs, Ascend's part "
            f"{cached_us - defaults_us:.1f} µs",
        ),
        *bench_identity(settings, options, size),
    ]


def bench_identity(settings: Settings, options: Any, size: str) -> list[Result]:
    figures = measure_identity(
        options.include_dirs, options.libraries_dirs, options.libraries, max(settings.blocks, 3)
    )
    per_compile_ms = measure_per_compile(
        options.include_dirs, options.libraries_dirs, options.libraries, max(settings.blocks, 3)
    )
    megabytes = settings.headers * settings.header_bytes / 1e6
    ratio = figures.warm_ms / figures.replaced_ms
    return [
        Result(
            "identity_cold",
            "SDK identity, a process with no memo (every file hashed)",
            figures.cold_ms,
            "ms",
            "< 1000 ms",
            figures.cold_ms < 1000,
            f"{size}, headers of {megabytes:.0f} MB",
        ),
        Result(
            "identity_warm",
            "SDK identity, a process with a warm memo / the size+mtime fingerprint it replaced",
            ratio,
            "ratio",
            "<= 1.05",
            ratio <= 1.05,
            f"{figures.warm_ms:.1f} ms against {figures.replaced_ms:.1f} ms (medians, "
            f"interleaved); {size}",
        ),
        Result(
            "compile_identity",
            "What each compile adds: the SDK identity computed again, from a warm memo",
            per_compile_ms,
            "ms",
            "< 100 ms",
            per_compile_ms < 100,
            f"{size}; once per compile (the outermost compile_fx), which takes seconds",
        ),
    ]


def bench_cache_key(settings: Settings) -> list[Result]:
    package_us, torch_us = measure_cache_key(settings.calls // 10 or 1, settings.blocks)
    added = package_us - torch_us
    return [
        Result(
            "cache_key",
            "CacheBase.get_system(), what the package adds (one device served)",
            added,
            "µs",
            "< 1000 µs",
            added < 1000,
            f"{package_us:.1f} µs against torch's own {torch_us:.2f} µs; called for each "
            "compile's FX graph and AOTAutograd keys",
        )
    ]


def bench_fleet(settings: Settings, workdir: Path) -> list[Result]:
    from inductor_device_options import sample

    sample_dir = str(sample.default_cache_dir())
    sample.setup(sample_dir)  # builds the backend once, outside the timed runs
    cold, second = measure_fleet(workdir, settings.e2e_runs, sample_dir)
    ratio = second / cold
    return [
        Result(
            "fleet",
            "cpp_wrapper torch.compile on a second machine, a Redis remote hit / a cold compile",
            ratio,
            "ratio",
            "< 1",
            ratio < 1,
            f"second machine {second:.1f} s, cold {cold:.1f} s (medians of {settings.e2e_runs} "
            "pairs; each machine a fresh process with an empty cache dir; its C++ is still "
            "compiled: the remote cache holds the graph, not the module)",
        )
    ]


# 6. end to end --------------------------------------------------------------------------


def bench_e2e(settings: Settings, workdir: Path) -> list[Result]:
    from inductor_device_options import sample

    sample_dir = str(sample.default_cache_dir())
    sample.setup(sample_dir)  # builds the backend once, outside the timed runs
    samples: dict[str, list[float]] = {"registry": [], "replacement": []}
    variants = list(samples)
    for run in range(settings.e2e_runs):
        for variant in variants if run % 2 == 0 else variants[::-1]:  # ABBA: no order bias
            # Cold: a new Inductor cache and a new TMPDIR (precompiled headers live there).
            cold = workdir / f"e2e-{variant}-{run}"
            (cold / "tmp").mkdir(parents=True)
            env = dict(
                os.environ, TORCHINDUCTOR_CACHE_DIR=str(cold / "cache"), TMPDIR=str(cold / "tmp")
            )
            out = subprocess.run(
                [sys.executable, str(HERE / "e2e_compile.py"), variant, sample_dir],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            samples[variant].append(float(out.split()[-1]))
            shutil.rmtree(cold, ignore_errors=True)
    registry = statistics.median(samples["registry"])
    replacement = statistics.median(samples["replacement"])
    ratio = registry / replacement
    return [
        Result(
            "e2e",
            "cpp_wrapper torch.compile, cold cache: registry / direct replacement",
            ratio,
            "ratio",
            "0.97-1.03",
            0.97 <= ratio <= 1.03,
            f"registry {registry:.1f} s, replacement {replacement:.1f} s (medians; runs: "
            f"{', '.join(f'{t:.1f}' for t in samples['registry'])} / "
            f"{', '.join(f'{t:.1f}' for t in samples['replacement'])}); "
            f"{settings.e2e_runs} runs each, interleaved, order alternating",
        )
    ]


# 7. doctor ------------------------------------------------------------------------------


def bench_doctor(settings: Settings, workdir: Path) -> list[Result]:
    median, seconds = measure_doctor_static(settings.doctor_runs, workdir)
    return [
        Result(
            "doctor_static",
            "`inductor-device-options doctor sampledev` (static checks): start to exit",
            median,
            "s",
            "< 5",
            median < 5,
            f"median of {len(seconds)} runs ({', '.join(f'{t:.1f}' for t in seconds)}); "
            "import torch and Inductor, and the backend's registration, are most of it",
        )
    ]


BENCHMARKS: dict[str, Callable[[Settings, Path], list[Result]]] = {
    "import": lambda settings, _: bench_import(settings),
    "lookup": lambda settings, _: bench_lookup(settings),
    "sdk": bench_sdk,
    "cache_key": lambda settings, _: bench_cache_key(settings),
    "e2e": bench_e2e,
    "fleet": bench_fleet,
    "doctor": bench_doctor,
}


def machine() -> dict[str, Any]:
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "system": platform.platform(),
    }


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


def _value(result: dict[str, Any]) -> str:
    return f"{result['value']:.3f}" if result["unit"] == "ratio" else f"{result['value']:.2f}"


def markdown_table(report: dict[str, Any]) -> str:
    """The docs' benchmarks table, from a results.json document."""
    machine_facts = report["machine"]
    run = report.get("run") or {}
    start, end = run.get("load_average_start"), run.get("load_average_end")
    load = (
        f"load average {start[0]} at the start and {end[0]} at the end (1 minute)"
        if start and end
        else "load average not recorded"
    )
    lines = [
        f"Measured {run.get('date', 'on a date not recorded')}"
        f"{' (smoke run: not figures to quote)' if report.get('smoke') else ''}: "
        f"{machine_facts['cores']} cores, {machine_facts['system']}, Python "
        f"{machine_facts['python']}, torch {machine_facts['torch']}; {load}.",
        "",
        "| # | key | what | value | target | met | detail |",
        "|---|---|---|---|---|---|---|",
    ]
    by_key = {result["key"]: result for result in report["results"]}
    keys = [*RESULT_KEYS, *(key for key in by_key if key not in RESULT_KEYS)]
    for index, key in enumerate(keys, 1):
        result = by_key.get(key)
        if result is None:
            lines.append(
                f"| {index} | `{key}` | - | not measured | - | - | not in this results.json: "
                "run `benchmarks/run.py` |"
            )
            continue
        met = "yes" if result["met"] else "**no**"
        lines.append(
            f"| {index} | `{key}` | {result['what']} | {_value(result)} {result['unit']} "
            f"| {result['target']} | {met} | {result['detail']} |"
        )
    return "\n".join(lines) + "\n"


def table(results: list[Result]) -> str:
    lines = ["| # | what | value | target | met | detail |", "|---|---|---|---|---|---|"]
    for index, result in enumerate(results, 1):
        value = f"{result.value:.3f}" if result.unit == "ratio" else f"{result.value:.2f}"
        lines.append(
            f"| {index} | {result.what} | {value} {result.unit} | {result.target} | "
            f"{'yes' if result.met else 'NO'} | {result.detail} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few seconds, to prove it works")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--json", type=Path, default=RESULTS_JSON)
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="run nothing: rewrite the Markdown table from the --json file",
    )
    args = parser.parse_args(argv)
    # The docs render the table of benchmarks/results.json; another report's stays beside it.
    table_path = DOCS_TABLE if args.json == RESULTS_JSON else args.json.with_suffix(".md")
    if args.table_only:
        table_path.write_text(markdown_table(json.loads(args.json.read_text())))
        print(f"wrote {table_path}")
        return 0
    settings = SMOKE if args.smoke else FULL
    names = args.only.split(",") if args.only else list(BENCHMARKS)
    if args.smoke:
        names = [name for name in names if name not in ("e2e", "fleet", "doctor")]
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    results: list[Result] = []
    started = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_start": load_average(),
    }
    with tempfile.TemporaryDirectory(prefix="ido-bench-") as workdir:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(workdir, "inductor-cache"))
        for name in names:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            results.extend(BENCHMARKS[name](settings, Path(workdir)))
    print(f"machine: {machine()}")
    print(table(results))
    report = {
        "machine": machine(),
        "run": {**started, "load_average_end": load_average()},
        "settings": settings._asdict(),
        "smoke": args.smoke,
        "results": [result._asdict() for result in results],
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    table_path.write_text(markdown_table(report))
    print(f"wrote {args.json} and {table_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
