"""The benchmark command works (a smoke run of a few seconds; the figures are in the README)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_benchmark_smoke_run_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    report_path = tmp_path / "results.json"
    finished = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--smoke",
            "--json",
            str(report_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr
    assert "| # | what | value | target | met | detail |" in finished.stdout
    report = json.loads(report_path.read_text())
    assert report["smoke"] is True
    assert {result["key"] for result in report["results"]} == {
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
    }
    for result in report["results"]:
        # import and backend_init are differences (backend_init: 0 where nothing is wrapped)
        assert result["value"] > 0 or result["key"] in ("import", "backend_init")
