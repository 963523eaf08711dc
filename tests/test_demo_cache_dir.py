"""The demo's cache dir: one g++ cannot be given (a space: -L is not quoted before torch
2.15, -Wl,-rpath never; a comma, where g++ cuts the runpath's -Wl, word) is found out before
anything is built, and the default location falls back to one that works."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support import cpp_builder_keeps_whole

import inductor_device_options as ido
from inductor_device_options._demo.cache_dir import buildable_cache_dir
from inductor_device_options._options.pipeline import check_value, finish
from inductor_device_options.sample import DEVICE_NAME
from inductor_device_options.sample._sdk import sdk_options_for


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
    if not cpp_builder_keeps_whole("libraries_dirs"):
        assert "renders libraries_dirs as -L{value} (not quoted)" in finished.stdout
    else:
        library_dir = os.path.realpath(cache_dir / "sdk" / "lib")
        assert f"runpath {library_dir!r} holds ' '" in finished.stdout
    assert "choose another with --cache-dir DIR" in finished.stdout
    assert not cache_dir.exists()  # nothing was built


@pytest.mark.parametrize("cache_home", ["my cache", "my,cache", "my,@cache"])
def test_the_default_cache_dir_g_plus_plus_cannot_be_given_falls_back_to_one_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_home: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / cache_home))
    chosen, problem = buildable_cache_dir(None)
    assert problem is None
    assert not set(" ,") & set(str(chosen)) and chosen.name == "sampledev"
    assert chosen.parent.parent == Path(tempfile.gettempdir())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "plain"))
    plain = tmp_path / "plain" / "inductor-device-options" / "sampledev"
    assert buildable_cache_dir(None) == (plain, None)


@pytest.mark.parametrize("name", ["c,@{tmp}/r", "c,d", "trailing,", "with:colon"])
def test_a_cache_dir_whose_runpath_the_loader_would_not_get_whole_is_refused(
    tmp_path: Path, name: str
) -> None:
    cache_dir = tmp_path / name.format(tmp=tmp_path) / "sampledev"
    library_dir = os.path.realpath(cache_dir / "sdk" / "lib")
    chosen, problem = buildable_cache_dir(cache_dir)
    assert chosen == cache_dir and problem is not None
    character = "," if "," in name else ":"
    assert problem.startswith(f"{cache_dir} cannot hold the sample's runtime: its library dir ")
    assert repr(library_dir) in problem and f"holds {character!r}" in problem
    assert problem.endswith("choose another with --cache-dir DIR")
    assert not cache_dir.exists()  # nothing was made


def test_a_runpath_written_as_an_ldflag_would_give_ld_a_response_file(tmp_path: Path) -> None:
    """Why the comma is refused: the sample's runpath, were it written as -Wl,-rpath,<dir>
    (as it was), would give ld ``@<tmp>/r/sdk/lib``, which ld reads as a response file."""
    library_dir = f"{tmp_path}/c,@{tmp_path}/r/sdk/lib"
    problem = check_value("ldflags", f"Wl,-rpath,{library_dir}")
    assert problem is not None
    assert f"gives ld the argument '@{tmp_path}/r/sdk/lib'" in problem
    assert f"ld receives {['-rpath', f'{tmp_path}/c', f'@{tmp_path}/r/sdk/lib']!r}" in problem


@pytest.mark.parametrize("name", ["at@home", "@lead", "plain"])
def test_a_cache_dir_with_an_at_sign_works_and_the_runpath_reaches_ld_whole(
    tmp_path: Path, name: str
) -> None:
    """'@' starts no piece of the runpath's -Wl, word: the path is one piece."""
    cache_dir = tmp_path / name / "sampledev"
    assert buildable_cache_dir(cache_dir) == (cache_dir, None)
    library_dir = cache_dir / "sdk" / "lib"
    options = finish(
        sdk_options_for(library_dir, DEVICE_NAME, False, False),
        device_type=DEVICE_NAME,
        description="sample",
    )
    assert options.ldflags[-1:] == [f"Wl,-rpath,{os.path.realpath(library_dir)}"]
    assert options.ldflags[-1] == ido.runpath(library_dir)
