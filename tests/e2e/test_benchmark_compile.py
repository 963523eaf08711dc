"""The end-to-end benchmark's two variants compile (the smoke run leaves them out: each is a
cold Inductor compile): through the registry, and through a replacement written past the
hook, as backends do today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inductor_device_options.sample import SampleDevice

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "e2e_compile.py"


@pytest.mark.parametrize("variant", ["registry", "replacement"])
def test_the_e2e_benchmark_variant_compiles_and_times_itself(
    sample_build: SampleDevice, variant: str
) -> None:
    finished = subprocess.run(
        [sys.executable, str(SCRIPT), variant, str(sample_build.cache_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert float(finished.stdout.split()[-1]) > 0
