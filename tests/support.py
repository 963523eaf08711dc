"""Helpers shared by the test modules (tests/ is on sys.path through conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from inductor_device_options import ENTRY_POINT_GROUP

# Set by upstream/verify.py when the suite runs against torch patched with the
# upstream registry: the package must then delegate to it instead of hooking.
NATIVE = os.environ.get("INDUCTOR_DEVICE_OPTIONS_EXPECT_NATIVE") == "1"
hook_mode_only = pytest.mark.skipif(
    NATIVE, reason="hook mode only: with torch's native registry the package does not hook"
)


def pythonpath_with(directory: Path) -> str:
    """PYTHONPATH with ``directory`` first, keeping what is there (upstream/verify.py's
    import overlay lives on PYTHONPATH)."""
    existing = os.environ.get("PYTHONPATH")
    return os.pathsep.join([str(directory), *([existing] if existing else [])])


def run_python(
    code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the same venv) and return the finished process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_python(code: str, **kwargs: object) -> str:
    """Like run_python, but fail the test with its output unless it exits 0; return stdout."""
    finished = run_python(code, **kwargs)  # type: ignore[arg-type]
    assert finished.returncode == 0, f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}"
    return finished.stdout


def write_distribution(
    site: Path, name: str, version: str, entry_points: Mapping[str, str]
) -> None:
    """A distribution's dist-info in ``site`` declaring ``entry_points`` (name = value) in
    the ``inductor_device_options`` group, found by importlib.metadata as an installed one."""
    dist_info = site / f"{name}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n"
        + "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    )
