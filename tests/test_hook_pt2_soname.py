"""A model's library that needs an SDK library without a SONAME loads where the SDK lies at
another path than where the model was linked (_hook/pt2_libraries.py, _hook/elf_names.py).

Without a SONAME, the model records the library by the file name ld found for ``-l<name>``
(``libfoo.so``), and the loader does not take a library loaded by its path for that name: it
looks for it on the model's runpath, the build machine's library dir. Each scenario here is
an SDK built with real g++ into ``built/lib``, a "model" library linked against it with that
dir as its runpath (as Inductor links a model), the SDK then moved to ``moved/lib``; a fresh
process serves a device whose options name the moved dir, prepares the libraries as loading
a ``.pt2`` does (``load_device_libraries``), then opens the model (tests/e2e/test_pt2_moves.py
does the same with a real AOTInductor package).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import assert_quoted, check_python

from inductor_device_options._hook.elf_names import ElfError, soname

LIBRARY_SOURCE = 'extern "C" int foo(void) { return VALUE; }\n'
MODEL_SOURCE = 'extern "C" int foo(void);\nextern "C" int model(void) { return foo() + 1; }\n'


def build_library(path: Path, value: int = 42, *flags: str) -> Path:
    source = path.parent / f"{path.name}.cpp"
    path.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(LIBRARY_SOURCE.replace("VALUE", str(value)))
    subprocess.run(["g++", "-shared", "-fPIC", *flags, str(source), "-o", str(path)], check=True)
    source.unlink()
    return path


def build_model(root: Path, *link: str) -> Path:
    """The model's library, linked with ``link`` and ``built/lib`` as its runpath."""
    source = root / "model.cpp"
    source.write_text(MODEL_SOURCE)
    model = root / "libmodel.so"
    runpath = f"-Wl,-rpath,{root / 'built' / 'lib'}"
    subprocess.run(
        ["g++", "-shared", "-fPIC", str(source), *link, runpath, "-o", str(model)], check=True
    )
    return model


def needed(path: Path) -> list[str]:
    """The NEEDED entries of ``path``, as readelf shows them."""
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True)
    return [
        line.split("[", 1)[1].rstrip("]")
        for line in dynamic.stdout.splitlines()
        if "NEEDED" in line
    ]


def move_sdk(root: Path) -> Path:
    (root / "built").rename(root / "moved")  # nothing is left where the runpath points
    return root / "moved" / "lib"


def load(
    lib_dir: Path, library: str, model: Path, times: int = 1, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """In a fresh process: serve ``sonamedev`` with ``library`` in ``lib_dir``, prepare its
    libraries ``times`` times, open ``model``; what it returned or the error, how many stubs
    the process mapped and which ``libfoo`` files."""
    code = f"""
        import ctypes, json
        import inductor_device_options as ido
        from inductor_device_options._hook.pt2_libraries import (
            load_device_libraries, not_found_error)

        def options(device_type, aot_mode, compile_only):
            options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
            options.libraries_dirs.append({str(lib_dir)!r})
            options.libraries.append({library!r})
            return options

        ido.register_cpp_device_options("sonamedev", options)
        seen = {{}}
        for _ in range({times}):
            seen["loaded"] = load_device_libraries("sonamedev", "model.pt2")
        try:
            seen["model"] = ctypes.CDLL({str(model)!r}).model()
        except OSError as error:
            seen["error"] = str(not_found_error("sonamedev", "model.pt2", error))
        with open("/proc/self/maps") as maps:
            mapped = {{line.split(maxsplit=5)[-1].strip() for line in maps if "/" in line}}
        seen["stubs"] = len([path for path in mapped if "ido-needs-" in path])
        seen["foo"] = sorted(path for path in mapped if "/libfoo." in path)
        print(json.dumps(seen))
    """
    return json.loads(check_python(code, env=env).splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("library", "file", "symlink"),
    [
        ("foo", "libfoo.so", None),  # -lfoo
        (":libfoo.so.1", "libfoo.so.1", None),  # -l:libfoo.so.1
        ("foo", "libfoo.so", "libfoo.so.1.0"),  # libfoo.so a link to the file
    ],
    ids=["-lfoo", "-l:libfoo.so.1", "-lfoo-a-link"],
)
def test_a_library_without_a_soname_is_taken_for_its_file_name_where_the_sdk_moved(
    tmp_path: Path, library: str, file: str, symlink: str | None
) -> None:
    lib_dir = tmp_path / "built" / "lib"
    built = build_library(lib_dir / (symlink or file))
    if symlink:
        (lib_dir / file).symlink_to(symlink)
    assert soname(str(built)) is None
    model = build_model(tmp_path, f"-L{lib_dir}", f"-l{library}")
    assert file in needed(model)  # recorded by its file name
    moved = move_sdk(tmp_path)
    # Twice, as a process loading two packages of the device: one stub does for both.
    seen = load(moved, library, model, times=2)
    assert (seen.get("error"), seen.get("model"), seen["stubs"]) == (None, 43, 1), seen
    assert seen["loaded"] == [str((moved / (symlink or file)).resolve())]


def test_the_library_taken_is_the_one_the_options_name_not_another_on_ld_library_path(
    tmp_path: Path,
) -> None:
    """As for a library with a SONAME: the one loaded from the options' dirs is taken."""
    lib_dir = tmp_path / "built" / "lib"
    build_library(lib_dir / "libfoo.so")
    model = build_model(tmp_path, f"-L{lib_dir}", "-lfoo")
    moved = move_sdk(tmp_path)
    decoy = build_library(tmp_path / "decoy" / "libfoo.so", 7)
    seen = load(moved, "foo", model, env={"LD_LIBRARY_PATH": str(decoy.parent)})
    assert (seen.get("error"), seen.get("model")) == (None, 43), seen
    assert seen["foo"] == [str((moved / "libfoo.so").resolve())], seen  # the decoy not loaded


def test_a_model_that_records_the_library_by_its_path_fails_naming_the_missing_soname(
    tmp_path: Path,
) -> None:
    """Linked by its path (an ldflag naming the file), a library without a SONAME is recorded
    by that path, which no library loaded here can stand in for: the error says so, not that
    the library is missing, and gives the fix."""
    lib_dir = tmp_path / "built" / "lib"
    build_library(lib_dir / "libfoo.so")
    model = build_model(tmp_path, str(lib_dir / "libfoo.so"))
    assert str(lib_dir / "libfoo.so") in needed(model)
    moved = move_sdk(tmp_path)
    seen = load(moved, "foo", model)
    message = seen.get("error", "")
    assert "does not find here" not in message and "not in the library dirs" not in message
    assert f"lies here as {moved / 'libfoo.so'}" in message, seen
    assert f"the path it was linked by, {lib_dir / 'libfoo.so'}" in message, seen
    assert_quoted(
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which lies here as ..., in a "
        "library dir the options of 'DEVICE' name, but the loader does not take it: LIBRARY has "
        "no SONAME, so the model records it by ...",
        [message],
    )
    assert_quoted(
        "Fix: give the library a SONAME (link it with -Wl,-soname,NAME, <N> its ABI version) "
        "and build the package again, or put DIR on LD_LIBRARY_PATH before the process starts, "
        "or keep the SDK at the path the package was built at",
        [message],
    )


def test_the_soname_is_read_from_the_library_and_a_linker_script_is_no_elf(
    tmp_path: Path,
) -> None:
    named = build_library(tmp_path / "libnamed.so", 1, "-Wl,-soname,libnamed.so.3")
    unnamed = build_library(tmp_path / "libunnamed.so")
    script = tmp_path / "libscript.so"
    script.write_text("GROUP ( libnamed.so )\n")
    assert (soname(str(named)), soname(str(unnamed))) == ("libnamed.so.3", None)
    with pytest.raises(ElfError, match="is not an ELF file"):
        soname(str(script))
