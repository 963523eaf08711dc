"""The demo's cache dir: one g++ cannot be given (a space: -L is not quoted before torch
2.15, -Wl,-rpath never) is found out before anything is built, and the default location
falls back to one that works."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support import cpp_builder_keeps_whole

from inductor_device_options.sample.demo import buildable_cache_dir


def test_a_cache_dir_with_a_space_fails_before_building_and_says_what_to_do(
    tmp_path: Path,
) -> None:
    cache_dir = tmp_path / "with space" / "sampledev"
    finished = subprocess.run(
        [sys.executable, "-m", "inductor_device_options", "demo", "--cache-dir", str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert f"FAIL  the cache dir can be passed to g++: {cache_dir} cannot hold" in finished.stdout
    # -L where this torch does not quote it (before 2.15), else the runpath ldflag.
    field = (
        "libraries_dirs as -L" if not cpp_builder_keeps_whole("libraries_dirs") else "ldflags as -"
    )
    assert f"renders {field}{{value}} (not quoted)" in finished.stdout
    assert "choose another with --cache-dir DIR" in finished.stdout
    assert not cache_dir.exists()  # nothing was built


def test_the_default_cache_dir_with_a_space_falls_back_to_one_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "my cache"))
    chosen, problem = buildable_cache_dir(None)
    assert problem is None
    assert " " not in str(chosen) and chosen.name == "sampledev"
    assert chosen.parent.parent == Path(tempfile.gettempdir())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "plain"))
    plain = tmp_path / "plain" / "inductor-device-options" / "sampledev"
    assert buildable_cache_dir(None) == (plain, None)
