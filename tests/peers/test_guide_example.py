"""The backend author's guide's whole backend (its section "A whole backend: acme,
openreg-shaped"), built and run as the page writes it: the README's Quickstart (its SDK, with
the headers Inductor's generated code includes, and its provider), then the section's files
(``// file:`` C++ blocks, ``# file:`` Python blocks) and its commands, whose output is checked
as the docs' examples are (``...`` matches anything).

It is the proof that the Quickstart's headers are real: a C++ extension, a cpp_wrapper build
and an AOTInductor package of a model with weights and extern kernels compile, load and run
with them, and doctor passes the backend.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

from test_docs_examples import console_commands

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guides" / "backend-author.md"
SECTION = "## A whole backend: acme, openreg-shaped"
TIMEOUT = 1200

_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_FILE = re.compile(r"\A(?:#|//) file: (?P<name>[\w./-]+)\n")


def fences(text: str) -> list[tuple[str, str]]:
    """Each fence of ``text``: its language and its source."""
    return [(match.group(1), match.group(2)) for match in _FENCE.finditer(text)]


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def files(blocks: list[tuple[str, str]]) -> dict[str, str]:
    """The blocks that are files (``# file: NAME`` or ``// file: NAME`` first), by name."""
    found = {}
    for language, source in blocks:
        match = _FILE.match(source)
        if match and language in ("python", "cpp"):
            found[match.group("name")] = source
    return found


def test_the_guide_s_whole_backend_builds_compiles_and_runs(tmp_path: Path) -> None:
    readme = fences(section(README.read_text(), "## Quickstart: a device of your own"))
    [sdk] = [source for language, source in readme if "export ACME_HOME=" in source]
    example = fences(section(GUIDE.read_text(), SECTION))
    written = {**files(readme), **files(example)}
    assert {"acme_backend.py", "acme_extension.cpp", "run_acme.py"} <= set(written), written
    for name, source in written.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    [commands] = [console_commands(source) for language, source in example if language == "console"]
    (tmp_path / "home").mkdir()
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PATH": path}
    script = (
        "set -e\n"
        + sdk
        + "\n"
        + "".join(f"{command.command}\nprintf '\\n\\036\\n'\n" for command in commands)
    )
    finished = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert finished.returncode == 0, f"{finished.stdout}\n{finished.stderr[-6000:]}"
    outputs = finished.stdout.split("\n\x1e\n")
    checker = doctest.OutputChecker()
    for command, got in zip(commands, outputs, strict=False):
        want = command.expected.strip() + "\n"
        assert checker.check_output(want, got.strip() + "\n", doctest.ELLIPSIS), (
            f"$ {command.command}\nshown:\n{want}printed:\n{got}\n{finished.stderr[-4000:]}"
        )
