"""A memo is a cache, and a broken cache only costs time: a damaged memo file gives the
identity computed without it, is logged once and replaced by a good one; the temp files of
writers killed mid-write are removed once stale."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from inductor_device_options import _state
from inductor_device_options._options import content_memo as _content_memo
from inductor_device_options._options import identity as _identity
from inductor_device_options._options.identity import sdk_identity

Damage = Callable[[Path, bytes], None]


@pytest.fixture
def sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A synthetic SDK, a cache dir of its own (no memo yet), and its files settled (as the
    files of a real install are)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    monkeypatch.setattr(_content_memo, "SETTLE_NS", -(10**18))
    root = tmp_path / "sdk"
    (root / "include" / "mydev" / "detail").mkdir(parents=True)
    (root / "lib64").mkdir()
    (root / "include" / "mydev" / "runtime.h").write_text("#define MYDEV_SDK_VALUE 1\n")
    (root / "include" / "mydev" / "detail" / "types.h").write_text("typedef int mydev_t;\n")
    (root / "lib64" / "libmydev_runtime.so").write_bytes(b"\x7fELF not really\n" * 64)
    return root.resolve()


def identity_in_a_new_process(sdk: Path) -> str:
    _state.reset()  # what a new process starts with: no identity, no warning given
    return identity_again(sdk)


def identity_again(sdk: Path) -> str:
    """The identity computed again in this process (not the one it remembers)."""
    _identity._identities.clear()
    identity = sdk_identity([str(sdk / "include")], [str(sdk / "lib64")], ["mydev_runtime"])
    assert identity is not None
    return identity


def memo_path(sdk: Path, target: str) -> Path:
    """The include dir's memo: ``files`` (``<hash>.json``) or ``tree`` (``.json.tree``)."""
    files = Path(_content_memo.memo_dir()) / _content_memo._file_name(str(sdk / "include"))
    return files if target == "files" else files.with_name(f"{files.name}.tree")


@dataclass
class Work:
    hashed: list[str] = field(default_factory=list)  # files whose contents were read
    asked: list[str] = field(default_factory=list)  # files the tree memo did not answer

    def clear(self) -> None:
        self.hashed.clear()
        self.asked.clear()


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Work:
    done = Work()
    real_digest = _content_memo.content_digest
    real_memo_digest = _content_memo.ContentMemo.digest

    def counting_digest(path: str) -> str:
        done.hashed.append(os.path.basename(path))
        return real_digest(path)

    def counting_memo_digest(
        memo: _content_memo.ContentMemo, label: str, path: str, status: os.stat_result
    ) -> str:
        done.asked.append(label)
        return real_memo_digest(memo, label, path, status)

    monkeypatch.setattr(_content_memo, "content_digest", counting_digest)
    monkeypatch.setattr(_content_memo.ContentMemo, "digest", counting_memo_digest)
    return done


def memo_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == _content_memo.__name__ and record.levelno >= logging.WARNING
    ]


# --- the forms of damage: each gets (the memo file, its good bytes) ----------------------


def truncated(path: Path, good: bytes) -> None:
    path.write_bytes(good[: len(good) // 2])


def empty(path: Path, good: bytes) -> None:
    path.write_bytes(b"")


def not_utf8(path: Path, good: bytes) -> None:
    path.write_bytes(good[:8] + b"\xff\xfe\xc3" + good[8:])


def a_directory(path: Path, good: bytes) -> None:
    path.unlink()
    path.mkdir()
    (path / "left-here").write_text("anything\n")


def unreadable(path: Path, good: bytes) -> None:
    path.chmod(0)


def nested_too_deep(path: Path, good: bytes) -> None:
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)


def not_a_memo_of_files(path: Path, good: bytes) -> None:
    path.write_text(json.dumps(["version", 3, "files"]))


def files_not_a_dict(path: Path, good: bytes) -> None:
    path.write_text(json.dumps({"version": 3, "files": [["mydev/runtime.h", 1, 2, 3, 4]]}))


def another_version(path: Path, good: bytes) -> None:
    path.write_text(json.dumps({**json.loads(good), "version": 2}))


def _with_digests(path: Path, good: bytes, digest: object) -> None:
    stored = json.loads(good)
    assert stored["files"], "the memo remembers no file: nothing to damage"
    stored["files"] = {label: [*entry[:-1], digest] for label, entry in stored["files"].items()}
    path.write_text(json.dumps(stored))


def digests_of_another_type(path: Path, good: bytes) -> None:
    _with_digests(path, good, 0)


def digests_not_hex(path: Path, good: bytes) -> None:
    _with_digests(path, good, "not a digest")


def stats_of_another_type(path: Path, good: bytes) -> None:
    stored = json.loads(good)
    stored["files"] = {
        label: [str(entry[0]), *entry[1:]] for label, entry in stored["files"].items()
    }
    path.write_text(json.dumps(stored))


def three_words(path: Path, good: bytes) -> None:
    path.write_text("one two three")


def content_not_a_digest(path: Path, good: bytes) -> None:
    stats, _ = good.decode().split()
    path.write_text(f"{stats} not-a-digest")


_ROOT = "tests run as root, whom chmod 000 does not stop reading (the directory rows cover it)"
_AS_ROOT = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason=_ROOT)

DAMAGE = [
    # target, damage, warnings given
    pytest.param("files", truncated, 1, id="files-truncated"),
    pytest.param("files", empty, 1, id="files-empty"),
    pytest.param("files", not_utf8, 1, id="files-not-utf8"),
    pytest.param("files", nested_too_deep, 1, id="files-nested-100000-deep"),
    pytest.param("files", a_directory, 1, id="files-a-directory"),
    pytest.param("files", unreadable, 1, id="files-unreadable", marks=_AS_ROOT),
    pytest.param("files", not_a_memo_of_files, 1, id="files-wrong-shape"),
    pytest.param("files", files_not_a_dict, 1, id="files-wrong-shape-of-files"),
    pytest.param("files", digests_of_another_type, 1, id="files-wrong-type-digest"),
    pytest.param("files", digests_not_hex, 1, id="files-wrong-digest"),
    pytest.param("files", stats_of_another_type, 1, id="files-wrong-type-stat"),
    # Not damage: another version of the package wrote it. Replaced without a word.
    pytest.param("files", another_version, 0, id="files-wrong-version"),
    pytest.param("tree", truncated, 1, id="tree-truncated"),
    pytest.param("tree", empty, 1, id="tree-empty"),
    pytest.param("tree", not_utf8, 1, id="tree-not-utf8"),
    pytest.param("tree", a_directory, 1, id="tree-a-directory"),
    pytest.param("tree", unreadable, 1, id="tree-unreadable", marks=_AS_ROOT),
    pytest.param("tree", three_words, 1, id="tree-wrong-shape"),
    pytest.param("tree", content_not_a_digest, 1, id="tree-wrong-digest"),
]


@pytest.mark.parametrize(("target", "damage", "warnings"), DAMAGE)
def test_a_damaged_memo_is_missing_and_replaced(
    target: str,
    damage: Damage,
    warnings: int,
    sdk: Path,
    work: Work,
    caplog: pytest.LogCaptureFixture,
) -> None:
    without_memo = identity_in_a_new_process(sdk)
    path = memo_path(sdk, target)
    damage(path, path.read_bytes())
    tree = memo_path(sdk, "tree")
    if target == "files":
        tree.unlink()  # a warm tree answers without reading the files' memo

    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == without_memo
    given = memo_warnings(caplog)
    assert len(given) == warnings, given
    assert all(str(path) in message for message in given)
    assert path.is_file()

    # The next process reads the good memo written in the damaged one's place.
    caplog.clear()
    work.clear()
    if target == "files":
        tree.unlink()
    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == without_memo
    assert memo_warnings(caplog) == []
    assert work.hashed == []
    if target == "tree":
        assert work.asked == []  # the tree answered: no file was looked up


def test_a_memo_that_cannot_be_replaced_is_logged_once_per_process(
    sdk: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A cache dir that cannot be written (read-only, full): every identity computed in the
    process finds the same damaged memo."""
    without_memo = identity_in_a_new_process(sdk)
    path = memo_path(sdk, "tree")
    not_utf8(path, path.read_bytes())

    def cannot_write(path: str, text: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(_content_memo, "_write", cannot_write)
    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == without_memo
        for _ in range(3):
            assert identity_again(sdk) == without_memo
    assert len(memo_warnings(caplog)) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == without_memo
    assert len(memo_warnings(caplog)) == 1  # a new process learns it too


def test_a_damaged_tree_is_removed_when_a_file_is_too_recent_to_remember(
    sdk: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No tree can be written then; the damaged one must not warn every later process."""
    identity_in_a_new_process(sdk)
    path = memo_path(sdk, "tree")
    truncated(path, path.read_bytes())
    monkeypatch.setattr(_content_memo, "SETTLE_NS", 10**18)  # nothing is settled
    with caplog.at_level(logging.WARNING):
        first = identity_in_a_new_process(sdk)
    assert len(memo_warnings(caplog)) == 1
    assert not path.exists()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == first
    assert memo_warnings(caplog) == []


WRITER = """
import json, sys
from inductor_device_options._options import content_memo

path = sys.argv[1]
# Large, so that the process spends nearly all its time between mkstemp and the rename.
files = {f"f{index}": [index, 0, 0, 0, "0" * 32] for index in range(400_000)}
text = json.dumps({"version": 3, "files": files})
print("writing", flush=True)
while True:
    content_memo._write(path, text)
"""


def test_a_writer_killed_mid_write_leaves_a_temp_file_that_a_later_save_removes(
    sdk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    without_memo = identity_in_a_new_process(sdk)
    path = memo_path(sdk, "files")
    content = path.parent
    left = _kill_a_writer_mid_write(path)
    hours_ago = time.time() - 2 * _content_memo.STALE_TEMP_S
    os.utime(left, (hours_ago, hours_ago))
    young = content / f".{path.name}.aq5x_9zk.tmp"  # a live writer's, of the same shape
    young.write_text("{")
    kept = [young]
    for name in ("notes.tmp", f".{path.name}.tmp", f"{path.name}.tmp", ".0123.json.abcdefgh.tmp"):
        (content / name).write_text("not the memo's\n")
        kept.append(content / name)
    (content / f".{path.name}.dir12345.tmp").mkdir()
    kept.append(content / f".{path.name}.dir12345.tmp")
    for foreign in kept[1:]:
        os.utime(foreign, (hours_ago, hours_ago))
    memo_path(sdk, "tree").unlink()  # so that the next process saves

    with caplog.at_level(logging.WARNING):
        assert identity_in_a_new_process(sdk) == without_memo
    assert not left.exists()
    assert all(each.exists() for each in kept)
    assert memo_warnings(caplog) == []


def _kill_a_writer_mid_write(path: Path) -> Path:
    """SIGKILL a process writing ``path`` in a loop, until one leaves its temp file."""
    for _ in range(5):
        process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == "writing\n"
            deadline = time.monotonic() + 20
            while not _temps(path) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # mid-way through a write of several MB
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
        if left := _temps(path):
            assert len(left) == 1, left
            return left[0]
    raise AssertionError("no writer was killed between writing its temp file and renaming it")


def _temps(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))
