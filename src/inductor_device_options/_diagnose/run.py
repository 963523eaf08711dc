"""Running the tools ``doctor`` asks (the compiler, the linker, ``ldd``): never raising, the
output as text that keeps the bytes of paths that are not UTF-8 (``surrogateescape``)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple


class Ran(NamedTuple):
    """``ok``: the tool ran and exited 0; ``stderr`` says why it could not run, if so."""

    ok: bool
    stdout: str
    stderr: str


def run_tool(command: Sequence[str], *, cwd: Path | None = None, timeout: float = 60) -> Ran:
    try:
        finished = subprocess.run(
            list(command),
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return Ran(False, "", f"{type(error).__name__}: {error}")
    return Ran(finished.returncode == 0, finished.stdout, finished.stderr)
