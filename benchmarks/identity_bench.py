"""Measurements of the SDK identity and what it costs Inductor's caches (benchmarks/run.py
turns them into rows).

* the identity of a large SDK, in a process with no memo (every file hashed) and in one with
  a warm memo, against the fingerprint of sizes and modification times it replaced (kept
  here, as it was, for the comparison), interleaved;
* what each compile adds: the identity computed again, from a warm memo, at its start;
* what the package adds to each ``CacheBase.get_system()`` (called for each compile's FX
  graph and AOTAutograd keys), with one device served;
* a fleet: a second machine's compile that gets the graph from torch's Redis remote cache,
  against a cold compile (each a fresh process with an empty cache dir).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"


class IdentityFigures(NamedTuple):
    cold_ms: float  # no memo: every file read and hashed
    warm_ms: float  # a warm memo: walked and statted
    replaced_ms: float  # the size + mtime fingerprint the identity replaced


def stat_fingerprint(
    include_dirs: Sequence[str], libraries_dirs: Sequence[str], libraries: Sequence[str]
) -> str:
    """The SDK fingerprint before the identity (release 0.1.0's ``sdk_fingerprint``): the
    same walk, each file's size and modification time instead of its contents."""
    from inductor_device_options._fs import BoundedWalk, within
    from inductor_device_options._options import identity

    roots = identity._outermost([path for path in include_dirs if os.path.isdir(path)])
    digest = hashlib.blake2b(digest_size=8)
    walk = BoundedWalk(roots, limit=identity.MAX_ENTRIES, follow=lambda real: within(real, roots))
    for root in roots:
        lines = []
        for entry in walk.walk(root):
            status = entry.status
            if status is not None:
                lines.append(f"{entry.label}\0{status.st_size}\0{status.st_mtime_ns}\n")
            else:
                lines.append(f"{entry.kind} {entry.label} {entry.real}\n")
        digest.update(f"dir {root}\n{''.join(sorted(lines))}".encode("utf-8", "surrogateescape"))
    for path in identity._library_files(list(libraries_dirs), list(libraries)):
        status = os.stat(path)
        digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def measure_identity(
    include_dirs: list[str], libraries_dirs: list[str], libraries: list[str], blocks: int
) -> IdentityFigures:
    from inductor_device_options import testing
    from inductor_device_options._options import content_memo, identity

    arguments = (include_dirs, libraries_dirs, libraries)
    # The synthetic SDK was just written: its files count as settled, as an installed SDK's.
    content_memo.SETTLE_NS = -(10**18)
    cold: list[float] = []
    for _ in range(blocks):
        shutil.rmtree(content_memo.memo_dir(), ignore_errors=True)
        testing.reset()  # what a new process starts with
        start = time.perf_counter()
        identity.sdk_identity(*arguments)
        cold.append(time.perf_counter() - start)

    def warm_identity() -> None:
        testing.reset()
        identity.sdk_identity(*arguments)

    timed: dict[str, list[float]] = {"warm": [], "replaced": []}
    functions = {"warm": warm_identity, "replaced": lambda: stat_fingerprint(*arguments)}
    for block in range(2 * blocks):  # interleaved, the order alternating (ABBA)
        for name in functions if block % 2 == 0 else reversed(functions):
            start = time.perf_counter()
            functions[name]()
            timed[name].append(time.perf_counter() - start)
    warm, replaced = timed["warm"], timed["replaced"]
    return IdentityFigures(*(statistics.median(times) * 1000 for times in (cold, warm, replaced)))


def measure_per_compile(
    include_dirs: list[str], libraries_dirs: list[str], libraries: list[str], blocks: int
) -> float:
    """ms each compile adds: at its start the package forgets the identities it computed
    (``compile_boundary.begin_compile``), and the compile's first question computes the SDK's
    again from a warm memo (walked and statted). Runs after ``measure_identity``."""
    from inductor_device_options._hook.compile_boundary import begin_compile
    from inductor_device_options._options import identity

    arguments = (include_dirs, libraries_dirs, libraries)
    identity.sdk_identity(*arguments)  # the memo warm, as in any process after the first
    times: list[float] = []
    for _ in range(blocks):
        start = time.perf_counter()
        begin_compile()
        identity.sdk_identity(*arguments)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure_cache_key(calls: int, blocks: int) -> tuple[float, float]:
    """(µs per CacheBase.get_system() with one device served, µs of torch's own)."""
    from torch._inductor.codecache import CacheBase

    import inductor_device_options as ido

    include = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]) / "cache-key-sdk" / "include"
    include.mkdir(parents=True, exist_ok=True)
    (include / "keydev.h").write_text("#define KEYDEV 1\n")

    def keydev(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [str(include)], [], [], [], [], [])

    ido.register_cpp_device_options("keydev", keydev)
    try:
        wrapped = CacheBase.get_system
        torch_own: Callable[[], object] = wrapped.__wrapped__  # type: ignore[attr-defined]
        times: dict[str, list[float]] = {"package": [], "torch": []}
        for _ in range(blocks):
            for name, function in (("package", wrapped), ("torch", torch_own)):
                start = time.perf_counter()
                for _ in range(calls):
                    function()
                times[name].append((time.perf_counter() - start) / calls)
    finally:
        ido.unregister_cpp_device_options("keydev")
    return statistics.median(times["package"]) * 1e6, statistics.median(times["torch"]) * 1e6


def measure_fleet(workdir: Path, runs: int, sample_dir: str) -> tuple[float, float]:
    """(median s of a cold compile, median s of a second machine's compile with a remote
    hit), each a fresh process with an empty cache dir, on one Redis server."""
    sys.path.insert(0, str(TESTS))
    from redis_server import redis_server

    cold: list[float] = []
    second: list[float] = []
    for run in range(runs):
        with redis_server(workdir / f"redis-{run}") as server:
            for machine, times in (("first", cold), ("second", second)):
                directory = workdir / f"fleet-{run}-{machine}"
                (directory / "tmp").mkdir(parents=True)
                env = {
                    **os.environ,
                    **server.torch_env,
                    "TORCHINDUCTOR_CACHE_DIR": str(directory / "cache"),
                    "TMPDIR": str(directory / "tmp"),
                }
                out = subprocess.run(
                    [sys.executable, str(HERE / "e2e_compile.py"), "registry", sample_dir],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                times.append(float(out.split()[-1]))
                shutil.rmtree(directory, ignore_errors=True)
    return statistics.median(cold), statistics.median(second)
