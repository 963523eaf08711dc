"""A changed SDK never reuses a stale kernel: real paths and the SDK identity, a digest of
the contents of the device's headers and libraries (the same contents: the same identity,
wherever and whenever they were installed)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import check_python, rewrite_keeping_size_and_mtime

from inductor_device_options import testing
from inductor_device_options._fs import find_library
from inductor_device_options._options import content_memo as _content_memo
from inductor_device_options._options import identity as _identity
from inductor_device_options._options.freshness import fresh_options
from inductor_device_options._options.identity import IDENTITY_DEFINITION
from inductor_device_options._options.model import CppDeviceOptions

HEADER = """\
#pragma once
#ifndef MYDEV_DEVICE
#error "compile with -DMYDEV_DEVICE"
#endif
#define MYDEV_SDK_VALUE {value}
extern "C" int mydev_runtime_version(void);
"""


def write_sdk(root: Path, value: int, runtime_version: int) -> Path:
    """One SDK release: include/mydev/runtime.h and lib64/libmydev_runtime.so."""
    (root / "include" / "mydev").mkdir(parents=True, exist_ok=True)
    (root / "lib64").mkdir(exist_ok=True)
    (root / "include" / "mydev" / "runtime.h").write_text(HEADER.format(value=value))
    source = root / "runtime.c"
    source.write_text(f"int mydev_runtime_version(void) {{ return {runtime_version}; }}\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(source), "-o", str(root / "lib64" / "libmydev_runtime.so")],
        check=True,
    )
    return root


def options_for(sdk: Path) -> CppDeviceOptions:
    return CppDeviceOptions(
        ["MYDEV_DEVICE"],
        [str(sdk / "include")],
        [],
        [],
        [str(sdk / "lib64")],
        ["mydev_runtime"],
        [],
    )


def identity_in_a_new_process(sdk: Path) -> str:
    testing.reset()  # what a new process starts with
    definitions = fresh_options(options_for(sdk)).definitions
    return definitions[-1]


def test_paths_are_resolved_so_a_repointed_symlink_changes_the_command(tmp_path: Path) -> None:
    v1 = write_sdk(tmp_path / "sdk-1.0", 1, 100)
    latest = tmp_path / "latest"
    latest.symlink_to(v1.name)
    options = fresh_options(options_for(latest))
    assert options.include_dirs == [str(v1.resolve() / "include")]
    assert options.libraries_dirs == [str(v1.resolve() / "lib64")]


def test_the_identity_is_one_definition_that_follows_the_contents(tmp_path: Path) -> None:
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    first = identity_in_a_new_process(sdk)
    assert first.startswith(f"{IDENTITY_DEFINITION}=")
    assert len(first) == len(IDENTITY_DEFINITION) + 1 + 32
    assert identity_in_a_new_process(sdk) == first  # nothing changed: same

    header = sdk / "include" / "mydev" / "runtime.h"
    header.write_text(HEADER.format(value=2))
    after_header_edit = identity_in_a_new_process(sdk)
    assert after_header_edit != first

    (sdk / "include" / "mydev" / "extra.h").write_text("#pragma once\n")
    after_new_header = identity_in_a_new_process(sdk)
    assert after_new_header != after_header_edit

    library = sdk / "lib64" / "libmydev_runtime.so"
    stat = library.stat()
    os.utime(library, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # touched only
    assert identity_in_a_new_process(sdk) == after_new_header
    write_sdk(sdk, 2, 200)  # rebuilt: new contents
    assert identity_in_a_new_process(sdk) not in (after_new_header, after_header_edit, first)


def test_the_same_contents_anywhere_and_anytime_have_the_same_identity(tmp_path: Path) -> None:
    """Another machine, another install dir, a reinstall: other paths, inodes and times."""
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    first = identity_in_a_new_process(sdk)
    copy = tmp_path / "elsewhere" / "sdk"
    shutil.copytree(sdk, copy)
    for path in copy.rglob("*"):
        os.utime(path, ns=(1, 1))
    assert identity_in_a_new_process(copy) == first
    shutil.rmtree(sdk)
    shutil.copytree(copy, sdk)
    assert identity_in_a_new_process(sdk) == first


def test_an_edit_that_keeps_size_and_mtime_changes_the_identity(tmp_path: Path) -> None:
    """What an archive unpacked with its recorded times does, or ``rsync -a``: the ctime
    changes, so the file is hashed again, even with its digest remembered."""
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    header = sdk / "include" / "mydev" / "runtime.h"
    with _settled():
        first = identity_in_a_new_process(sdk)
        rewrite_keeping_size_and_mtime(header, HEADER.format(value=7).encode())
        assert identity_in_a_new_process(sdk) != first


def test_a_warm_process_only_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digests of files not changed since are read from the memo in Inductor's cache
    dir: a new process hashes only what changed."""
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    hashed: list[str] = []
    real_digest = _content_memo.content_digest

    def counting_digest(path: str) -> str:
        hashed.append(os.path.basename(path))
        return real_digest(path)

    monkeypatch.setattr(_content_memo, "content_digest", counting_digest)
    with _settled():
        first = identity_in_a_new_process(sdk)
        assert sorted(hashed) == ["libmydev_runtime.so", "runtime.h"]
        hashed.clear()
        assert identity_in_a_new_process(sdk) == first
        assert hashed == []
        (sdk / "include" / "mydev" / "runtime.h").write_text(HEADER.format(value=9))
        assert identity_in_a_new_process(sdk) != first
        assert hashed == ["runtime.h"]


def test_a_warm_process_lists_each_dir_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm memo answers from the first walk's stats, as the fingerprint of sizes and
    times this replaced: no second walk (the memo's key must not depend on whether the
    walk's entries are kept)."""
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    (sdk / "include" / "mydev" / "more.h").write_text("#pragma once\n")
    with _settled():
        identity_in_a_new_process(sdk)
    listed: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path: str) -> Any:
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    identity_in_a_new_process(sdk)
    include = (sdk / "include").resolve()
    assert sorted(listed) == [str(include), str(include / "mydev")]


def test_a_file_changed_just_now_is_not_remembered(tmp_path: Path) -> None:
    """Its stat could still change within the clock's tick without showing it."""
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    identity_in_a_new_process(sdk)
    root = str((sdk / "include").resolve())
    memo = Path(_content_memo.memo_dir()) / _content_memo._file_name(root)
    assert json.loads(memo.read_text())["files"] == {}
    with _settled():
        identity_in_a_new_process(sdk)
    assert list(json.loads(memo.read_text())["files"]) == ["mydev/runtime.h"]


@contextlib.contextmanager
def _settled() -> Iterator[None]:
    """Files written by the test count as settled (as the SDK's files of a real install)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_content_memo, "SETTLE_NS", -(10**18))
        yield


def test_the_identity_is_computed_once_per_process(tmp_path: Path) -> None:
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    testing.reset()
    first = fresh_options(options_for(sdk)).definitions
    (sdk / "include" / "mydev" / "runtime.h").write_text(HEADER.format(value=3))
    assert fresh_options(options_for(sdk)).definitions == first


def test_torchs_own_tree_and_missing_paths_are_not_part_of_the_identity(tmp_path: Path) -> None:
    import torch

    torch_dir = Path(torch.__file__).parent
    options = CppDeviceOptions(
        ["USE_X"],
        [str(torch_dir / "include"), str(tmp_path / "absent")],
        [],
        [],
        [str(torch_dir / "lib")],
        ["torch", "c10"],
        [],
    )
    testing.reset()
    assert fresh_options(options).definitions == ["USE_X"]


def test_a_stale_identity_from_a_provider_is_replaced(tmp_path: Path) -> None:
    sdk = write_sdk(tmp_path / "sdk", 1, 100)
    stale = options_for(sdk)._replace(
        definitions=["MYDEV_DEVICE", f"{IDENTITY_DEFINITION}=0000000000000000"]
    )
    definitions = fresh_options(stale).definitions
    assert len(definitions) == 2 and definitions[1] != stale.definitions[1]


LOAD_KERNEL = """
import os, sys
import inductor_device_options as ido
from torch._inductor.codecache import CppCodeCache

sdk = sys.argv[1] if len(sys.argv) > 1 else os.environ["MYDEV_SDK"]
def mydev(device_type, aot_mode, compile_only):
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("MYDEV_DEVICE")
    options.include_dirs.append(os.path.join(sdk, "include"))
    options.libraries_dirs.append(os.path.join(sdk, "lib64"))
    options.libraries.append("mydev_runtime")
    options.ldflags.append("Wl,-rpath," + os.path.realpath(os.path.join(sdk, "lib64")))
    return options
ido.register_cpp_device_options("mydev", mydev)
library = CppCodeCache.load(
    '#include <mydev/runtime.h>\\n'
    'extern "C" int answer(void) { return MYDEV_SDK_VALUE * 1000 + mydev_runtime_version(); }\\n',
    device_type="mydev",
)
print(library.answer(), library._name, os.stat(library._name).st_mtime_ns)
"""


def test_inductor_rebuilds_when_the_sdk_changes_and_only_then(tmp_path: Path) -> None:
    """Inductor's own C++ cache (CppCodeCache, keyed by the command line), one process per
    step, one cache dir for all: compile, compile again, edit a header in place,
    re-point the `latest` symlink."""
    write_sdk(tmp_path / "sdk-1.0", 1, 100)
    write_sdk(tmp_path / "sdk-2.0", 7, 200)
    latest = tmp_path / "latest"
    latest.symlink_to("sdk-1.0")
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache"), "MYDEV_SDK": str(latest)}

    def compile_in_new_process() -> tuple[int, str, int]:
        answer, path, mtime = check_python(LOAD_KERNEL, env=env).split()
        return int(answer), path, int(mtime)

    first = compile_in_new_process()
    assert first[0] == 1 * 1000 + 100
    assert compile_in_new_process() == first  # same .so, not rebuilt

    (tmp_path / "sdk-1.0" / "include" / "mydev" / "runtime.h").write_text(HEADER.format(value=5))
    after_edit = compile_in_new_process()
    assert after_edit[0] == 5 * 1000 + 100
    assert after_edit[1] != first[1]

    latest.unlink()
    latest.symlink_to("sdk-2.0")
    after_upgrade = compile_in_new_process()
    assert after_upgrade[0] == 7 * 1000 + 200
    assert after_upgrade[1] not in (first[1], after_edit[1])


# --- the walk never crashes and never runs away --------------------------------------------


def identity_of(include_dir: Path) -> str | None:
    testing.reset()
    return _identity.sdk_identity([str(include_dir)], [], [])


def test_symlink_loops_are_recorded_not_fatal(tmp_path: Path) -> None:
    include = tmp_path / "include"
    (include / "mydev").mkdir(parents=True)
    (include / "mydev" / "runtime.h").write_text("#pragma once\n")
    before = identity_of(include)
    (include / "loop").symlink_to("loop")
    (include / "ping").symlink_to("pong")
    (include / "pong").symlink_to("ping")
    (include / "mydev" / "up").symlink_to("..")  # a dir link back into the tree
    with_loops = identity_of(include)
    assert with_loops is not None and with_loops != before
    assert identity_of(include) == with_loops
    options = fresh_options(options_for(tmp_path)._replace(libraries_dirs=[], libraries=[]))
    assert options.definitions[-1] == f"{IDENTITY_DEFINITION}={with_loops}"


def test_a_dir_link_out_of_the_sdk_is_recorded_by_its_target_not_walked(tmp_path: Path) -> None:
    include = tmp_path / "sdk" / "include"
    include.mkdir(parents=True)
    (include / "a.h").write_text("#pragma once\n")
    elsewhere = [tmp_path / "elsewhere-1", tmp_path / "elsewhere-2"]
    for directory in elsewhere:
        directory.mkdir()
        (directory / "big.h").write_text("#pragma once\n")
    (include / "external").symlink_to(elsewhere[0])
    first = identity_of(include)
    (elsewhere[0] / "big.h").write_text("#pragma once\n// changed outside the SDK\n")
    assert identity_of(include) == first  # not walked
    (include / "external").unlink()
    (include / "external").symlink_to(elsewhere[1])
    assert identity_of(include) != first  # but its target is part of the digest


def test_a_link_to_the_root_of_the_file_system_is_not_walked(tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    (include / "a.h").write_text("#pragma once\n")
    (include / "system").symlink_to("/")
    out = check_python(  # in a process of its own: a walk of "/" would take minutes
        "from inductor_device_options._options import identity as _identity\n"
        f"print(_identity.sdk_identity([{str(include)!r}], [], []))\n",
        timeout=120,
    )
    assert len(out.strip()) == 32


def test_the_walk_stops_after_max_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    include = tmp_path / "include"
    include.mkdir()
    for index in range(120):
        (include / f"h{index}.h").write_text("")
    complete = identity_of(include)
    monkeypatch.setattr(_identity, "MAX_ENTRIES", 50)
    bounded = identity_of(include)
    assert bounded is not None and bounded != complete
    assert identity_of(include) == bounded


# Drops the capabilities that let root read any file, so that permissions apply (as for
# every other user): a target under a dir that cannot be searched cannot be stat()ed.
DROP_ROOT_CAPABILITIES = """
import ctypes, os
if os.geteuid() == 0:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()
    assert libc.capget(ctypes.byref(header), data) == 0
    data[0].effective = data[1].effective = 0
    assert libc.capset(ctypes.byref(header), data) == 0, ctypes.get_errno()
"""


def test_an_unsearchable_link_target_is_recorded_not_fatal(tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    (include / "a.h").write_text("#pragma once\n")
    locked = tmp_path / "locked"
    (locked / "dir").mkdir(parents=True)
    (locked / "header.h").write_text("")
    (include / "to-file").symlink_to(locked / "header.h")
    (include / "to-dir").symlink_to(locked / "dir")
    locked.chmod(0)
    try:
        out = check_python(
            DROP_ROOT_CAPABILITIES
            + "from inductor_device_options._options import identity as _identity\n"
            + f"print(_identity.sdk_identity([{str(include)!r}], [], []))\n"
            + "try:\n"
            + f"    os.stat({str(locked / 'header.h')!r})\n"
            + "    print('readable')\n"
            + "except PermissionError:\n"
            + "    print('denied')\n"
        )
    finally:
        locked.chmod(0o755)
    identity, access = out.split()
    assert len(identity) == 32
    assert access == "denied"  # the permissions did apply


def test_a_library_is_the_file_ld_takes_first(tmp_path: Path) -> None:
    """``-l<name>``: the first dir holding lib<name>.so or lib<name>.a, .so first in a dir;
    ``:<file>`` that file. The SDK identity and doctor find libraries this one way."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "libacme.a").write_text("")
    (second / "libacme.so").write_text("")
    (second / "libacme.so.1").write_text("")
    dirs = [str(first), str(second)]
    assert find_library("acme", dirs) == str(first / "libacme.a")
    (first / "libacme.so").write_text("")
    assert find_library("acme", dirs) == str(first / "libacme.so")
    assert find_library(":libacme.so.1", dirs) == str(second / "libacme.so.1")
    assert find_library("other", dirs) is None


def test_the_identities_kept_are_bounded(tmp_path: Path) -> None:
    testing.reset()
    for index in range(_identity._identities.limit + 10):
        _identity.sdk_identity([str(tmp_path / f"missing{index}")], [], [])
    assert len(_identity._identities) == _identity._identities.limit
    testing.reset()
    assert len(_identity._identities) == 0
