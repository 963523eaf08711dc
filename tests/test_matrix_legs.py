"""CI's legs run the modules tests/matrix_legs.py names, marked ``leg`` at collection."""

from __future__ import annotations

import subprocess
import sys

import pytest
from matrix_legs import LEG_MODULES, TESTS_DIR, in_leg, missing_leg_modules

PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0")


def test_every_leg_module_exists() -> None:
    assert missing_leg_modules() == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("test_hook.py", True),
        ("e2e/test_extern_kernels.py", True),
        ("test_cli.py", False),
        ("test_docs_examples.py", False),
        ("peers/test_regdev.py", False),
    ],
)
def test_in_leg_is_the_table(name: str, expected: bool) -> None:
    assert in_leg(TESTS_DIR / name) is expected
    assert (name in LEG_MODULES) is expected


def test_dash_m_leg_collects_exactly_the_leg_modules() -> None:
    collected = subprocess.run(
        [*PYTEST, "--collect-only", "-q", "-m", "leg", str(TESTS_DIR)],
        capture_output=True,
        text=True,
        cwd=TESTS_DIR.parent,
        timeout=300,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    modules = {
        line.split("::")[0].removeprefix("tests/")
        for line in collected.stdout.splitlines()
        if "::" in line
    }
    assert modules == LEG_MODULES
