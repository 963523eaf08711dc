"""The README stays a README, CI runs what it says, and its claims match the project.

The two set-up commands are the README's only examples that the suite does not run (they are
what CI runs): here, ``.ci/run`` is checked to run exactly command 2.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
PYPROJECT = ROOT / "pyproject.toml"
NOXFILE = ROOT / "noxfile.py"

INSTALL = "python3 -m venv .venv && "
#: The issue's limit; about 150 lines is the aim.
MAX_README_LINES = 200


def _set_up_command(number: int) -> str:
    """The command line after ``# N. ...`` in the README's set-up block."""
    lines = README.read_text().splitlines()
    for index, line in enumerate(lines):
        if re.match(rf"# {number}\. ", line):
            return lines[index + 1]
    raise AssertionError(f"README.md has no set-up command {number}")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = [
        line
        for line in CI.read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd ", "trap "))
    ]
    assert commands == [_set_up_command(2)]


def test_the_testing_page_shows_the_same_test_command() -> None:
    page = (ROOT / "docs" / "development" / "testing.md").read_text().splitlines()
    shown = [
        line for line in page if line.startswith("python3 -m venv .venv && ") and "[test]" in line
    ]
    assert shown == [_set_up_command(2)]


def test_the_test_command_builds_the_docs_with_warnings_as_errors_and_runs_pytest() -> None:
    command = _set_up_command(2)
    assert re.search(
        r"\.venv/bin/sphinx-build (-\S+ )*-W --keep-going (-\S+ )*-b html docs ", command
    )
    sphinx_output = command.split("-b html docs ", 1)[1].split()[0]
    assert sphinx_output.startswith("docs/_build/")
    assert "docs/_build/" in (ROOT / ".gitignore").read_text().splitlines()
    assert ".venv/bin/python -m pytest" in command


def test_the_demo_command_installs_the_demo_extra_and_runs_the_demo() -> None:
    command = _set_up_command(1)
    assert "-c constraints.txt -e '.[demo]'" in command
    assert command.endswith(".venv/bin/inductor-device-options demo")


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= MAX_README_LINES


def test_the_readme_names_no_machine() -> None:
    text = README.read_text()
    for machine_specific in ("/work/", "/root/", "/tmp/", "this machine", "Linux-", "glibc"):
        assert machine_specific not in text, machine_specific


def _classified_pythons() -> list[str]:
    return re.findall(r'"Programming Language :: Python :: (3\.\d+)"', PYPROJECT.read_text())


def test_the_python_range_is_what_the_matrix_proves() -> None:
    """requires-python's floor runs in CI's oldest leg, the classifiers list exactly the
    Pythons CI runs, and the README states that range."""
    sys.path.insert(0, str(ROOT))
    try:
        import noxfile
    finally:
        sys.path.remove(str(ROOT))
    floor = re.search(r'^requires-python = ">=(3\.\d+)"', PYPROJECT.read_text(), re.MULTILINE)
    assert floor is not None
    legs = re.findall(r"nox -s ((?:tests-\S+ )+)", _set_up_command(2))[0].split()
    leg_pythons = [
        noxfile.SESSION_PYTHON.get(leg.removeprefix("tests-"), noxfile.DEFAULT_PYTHON)
        for leg in legs
    ]
    assert leg_pythons[0] == floor.group(1)
    # The other sessions, and CI's suite on torch 2.13, run on DEFAULT_PYTHON.
    proven = sorted(
        {*leg_pythons, noxfile.DEFAULT_PYTHON}, key=lambda v: tuple(map(int, v.split(".")))
    )
    assert _classified_pythons() == proven
    oldest, newest = proven[0], proven[-1]
    assert f"Python {oldest} to {newest}" in README.read_text()


def _listed(text: str) -> list[str]:
    """``"a, b and c"`` -> ``["a", "b", "c"]``."""
    return re.split(r", | and ", text)


def test_the_range_the_docs_state_is_what_the_matrix_ran() -> None:
    """README and the docs' index name exactly the torch releases and Pythons of the matrix's
    latest results, and the releases of noxfile's matrix, and say what is inferred."""
    import json

    sessions = json.loads((ROOT / "docs" / "_generated" / "matrix.json").read_text())["sessions"]
    releases = sorted(
        {session["release"] for session in sessions}, key=lambda v: tuple(map(int, v.split(".")))
    )
    pythons = sorted(
        {".".join(session["python"].split(".")[:2]) for session in sessions},
        key=lambda v: tuple(map(int, v.split("."))),
    )
    sys.path.insert(0, str(ROOT))
    try:
        import noxfile
    finally:
        sys.path.remove(str(ROOT))
    assert releases == list(noxfile.TORCH_RELEASES)
    minors = [int(python.split(".")[1]) for python in pythons]
    unrun = [f"3.{minor}" for minor in range(minors[0], minors[-1]) if minor not in minors]
    for page in (README, ROOT / "docs" / "index.md"):
        text = " ".join(page.read_text().split())
        stated = re.search(r"The torch matrix runs torch (.+?), on Python (.+?) \(", text)
        assert stated is not None, page
        assert _listed(stated.group(1)) == releases, page
        assert _listed(stated.group(2)) == pythons, page
        assert f"the releases between and Python {' and '.join(unrun)} are inferred, not run" in (
            text
        ), page
        assert "every torch from" not in text, page
