"""The docs' tables are what the measurements say: each is rendered again from its JSON with
the producer's own function (noxfile.compatibility_table, benchmarks/run.py's
markdown_table) and must equal the committed file, and every row of the JSON is in it."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "docs" / "_generated"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def noxfile() -> ModuleType:
    # Imported once per process (nox registers the sessions when the module runs).
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("noxfile")
    finally:
        sys.path.remove(str(ROOT))


@pytest.fixture(scope="module")
def benchmarks() -> ModuleType:
    return _load("benchmarks_run", ROOT / "benchmarks" / "run.py")


def _sessions() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((GENERATED / "matrix.json").read_text())["sessions"]
    return rows


def test_the_compatibility_table_is_rendered_from_the_sessions_results(
    noxfile: ModuleType,
) -> None:
    assert (GENERATED / "compatibility.md").read_text() == noxfile.compatibility_table(
        _sessions()
    ), "docs/_generated/compatibility.md was edited by hand: run nox -s matrix-summary"


def test_every_claimed_release_has_a_row_with_its_python_and_tests(noxfile: ModuleType) -> None:
    table = (GENERATED / "compatibility.md").read_text().splitlines()
    sessions = {row["session"]: row for row in _sessions()}
    assert sorted(sessions) == sorted(f"tests-{release}" for release in noxfile.TORCH_RELEASES)
    for row in sessions.values():
        (line,) = [line for line in table if line.startswith(f"| {row['torch']}")]
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1] == row["python"]
        assert cells[6].startswith(f"{row['tests']['passed']} passed")


def test_the_compatibility_page_includes_the_generated_table() -> None:
    page = (ROOT / "docs" / "tables" / "compatibility.md").read_text()
    assert "```{include} ../_generated/compatibility.md\n```" in page


def test_matrix_summary_keeps_the_sessions_it_did_not_run(noxfile: ModuleType) -> None:
    old = [{"session": "tests-2.6.0", "torch": "old"}, {"session": "tests-2.13.0", "torch": "a"}]
    new = [{"session": "tests-2.6.0", "torch": "new"}, {"session": "tests-2.15.0", "torch": "b"}]
    merged = noxfile.merged_results(old, new)
    assert [(row["session"], row["torch"]) for row in merged] == [
        ("tests-2.6.0", "new"),
        ("tests-2.13.0", "a"),
        ("tests-2.15.0", "b"),
    ]


def test_the_benchmarks_table_is_rendered_from_results_json(benchmarks: ModuleType) -> None:
    report = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    assert (GENERATED / "benchmarks.md").read_text() == benchmarks.markdown_table(report), (
        "docs/_generated/benchmarks.md differs from results.json: "
        "run benchmarks/run.py --table-only"
    )
    page = (ROOT / "docs" / "tables" / "benchmarks.md").read_text()
    assert "```{include} ../_generated/benchmarks.md\n```" in page


def test_the_benchmarks_table_has_a_row_for_every_figure_the_run_produces(
    benchmarks: ModuleType,
) -> None:
    report = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    rows = [
        line for line in (GENERATED / "benchmarks.md").read_text().splitlines() if line[:2] == "| "
    ]
    assert len(rows) - 1 == len(benchmarks.RESULT_KEYS)  # the header, then one row per figure
    for result in report["results"]:  # the notes under the table name rows by key
        assert any(f"| `{result['key']}` | {result['what']} |" in row for row in rows), result[
            "key"
        ]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (
            {
                "date": "2031-01-02 03:04 UTC",
                "load_average_start": [0.1, 0.2, 0.3],
                "load_average_end": [0.4, 0.5, 0.6],
            },
            "Measured 2031-01-02 03:04 UTC: 2 cores, Linux-x, Python 3.10.1, torch 2.6.0; "
            "load average 0.1 at the start and 0.4 at the end (1 minute).",
        ),
        (
            None,
            "Measured on a date not recorded: 2 cores, Linux-x, Python 3.10.1, torch 2.6.0; "
            "load average not recorded.",
        ),
    ],
)
def test_the_benchmarks_table_says_when_and_under_what_load(
    benchmarks: ModuleType, run: dict[str, Any] | None, expected: str
) -> None:
    report: dict[str, Any] = {
        "machine": {"cores": 2, "system": "Linux-x", "python": "3.10.1", "torch": "2.6.0"},
        "smoke": False,
        "results": [],
        **({"run": run} if run else {}),
    }
    assert benchmarks.markdown_table(report).splitlines()[0] == expected


def test_the_benchmark_notes_name_only_rows_of_the_table(benchmarks: ModuleType) -> None:
    """Each note under the table is about a row, by the key the table shows."""
    page = (ROOT / "docs" / "tables" / "benchmarks.md").read_text()
    notes = page.split("Notes, by benchmark key:", 1)[1]
    keys = re.findall(r"^- `(\w+)`", notes, re.MULTILINE)
    assert keys, "no notes found"
    assert set(keys) <= set(benchmarks.RESULT_KEYS), set(keys) - set(benchmarks.RESULT_KEYS)


@pytest.mark.parametrize(
    ("scope", "cell"),
    [
        (None, "5 passed, 1 skipped"),
        ("suite", "5 passed, 1 skipped"),
        ("leg", "5 passed, 1 skipped (CI's leg tests)"),
    ],
)
def test_a_session_s_tests_cell_says_when_it_ran_the_leg_tests_only(
    noxfile: ModuleType, scope: str | None, cell: str
) -> None:
    summary: dict[str, Any] = {
        "tests": {"passed": 5, "failed": 0, "errors": 0, "skipped": 1},
        **({"test_scope": scope} if scope else {}),
    }
    assert noxfile._cell_tests(summary) == cell
