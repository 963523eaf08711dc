"""``doctor`` on the sample device, static checks only, timed as a user meets it: the
console script in a fresh process, from its start to its exit (the target: under 5 s)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def measure_doctor_static(runs: int, workdir: Path) -> tuple[float, list[float]]:
    """The median wall time of ``runs`` runs, and each run's; the sample device is built
    by a first run, not timed."""
    from inductor_device_options import sample

    script = Path(sys.executable).with_name("inductor-device-options")
    (workdir / "doctor-tmp").mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR=str(workdir / "doctor-sample"),
        TORCHINDUCTOR_CACHE_DIR=str(workdir / "doctor-cache"),
        TMPDIR=str(workdir / "doctor-tmp"),
    )
    command = [str(script), "doctor", sample.DEVICE_NAME]
    subprocess.run(command, env=env, capture_output=True, check=True)  # builds the sample
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), seconds
