"""The content digests of an SDK's files, remembered between processes by each file's stat.

Hashing the contents of a whole SDK (thousands of headers, libraries of tens of MB) in every
process would make the first lookup slow. So what was hashed is kept on disk, in Inductor's
cache dir, one memo per root (an include dir, a library's dir):

* the **tree**: the digest of every entry's ``stat`` under the root (:func:`stat_key`: inode,
  size, modification time, change time) with the content digest it gave. A process that
  finds the same stats takes the content digest as it is: it only walked and statted, as
  the fingerprint of sizes and times this replaced did;
* the **files**: each file's content digest by its stat, so that where the tree
  changed only the files whose stat changed are hashed again.

A file's change time (ctime) cannot be set back: a rewritten file is always hashed again,
even when its size and modification time were restored. A file changed within
:data:`SETTLE_NS` of being hashed is not remembered (its stat could still change within the
file system's clock tick without showing it), nor the tree that holds it: the next process
hashes it again.

A memo is a cache, and a broken cache only costs time. Reading one never raises: a memo that
cannot be read or parsed (truncated, not UTF-8, nested too deep, of the wrong shape or types,
a directory in its place, unreadable) counts as missing. It is logged once per process and
file, hashed again and replaced; a damaged tree that cannot be rewritten yet (a file too
recent) is removed. A memo written by another version of the package is replaced silently.
Concurrent processes each replace a memo whole, through a temp file (the last one wins); a
save removes the temp files that writers killed mid-write left, once :data:`STALE_TEMP_S`
old.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

from .. import _state

#: The bytes of a content digest.
DIGEST_SIZE = 16
#: How recent a change may be and still be remembered (ns).
SETTLE_NS = 2_000_000_000
#: How old a memo's temp file must be to count as a killed writer's (s). A live writer's
#: lives for one write and a rename, milliseconds: an hour never takes a write under way,
#: even one stalled on a slow network file system.
STALE_TEMP_S = 3600
_CHUNK = 1 << 20
_VERSION = 3
_HEX_DIGEST = re.compile(f"[0-9a-f]{{{2 * DIGEST_SIZE}}}")
# What _write names its temp files (mkstemp's random part between the name and the suffix):
# nothing else in the dir is ever taken for one.
_TEMP_NAME = re.compile(r"\.[0-9a-f]{16}\.json(?:\.tree)?\.[a-z0-9_]+\.tmp")

log = logging.getLogger(__name__)

# The memo files found damaged in this process: each is logged once. _state.reset() clears it.
_warned: _state.BoundedCache[str, bool] = _state.cache(256)

Stat = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
Files = dict[str, list[object]]  # a file's label -> [*its stat_key, its content digest]
_Parsed = TypeVar("_Parsed")


def stat_key(status: os.stat_result) -> Stat:
    """What says a file is the one hashed before: its inode, size, modification and change
    times. The change time is set by the kernel on every write and every change of the
    others, and cannot be set back. (A memo is one root's, so the device adds nothing.)"""
    return (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def settled(status: os.stat_result) -> bool:
    """Whether the file's last change is old enough to be remembered."""
    return time.time_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > SETTLE_NS


def content_digest(path: str) -> str:
    """The hex digest of the file's bytes (read in chunks: libraries are large)."""
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class ContentMemo:
    """The memo of one root: :meth:`tree` gives the content digest remembered for the
    root's stats, :meth:`digest` a file's (hashing it where its stat changed), :meth:`save`
    writes what this walk saw, when anything was hashed or a memo must be replaced."""

    def __init__(self, root: str, directory: str) -> None:
        self._path = os.path.join(directory, _file_name(root))
        self._known: Files | None = None  # read at the first digest()
        self._seen: Files = {}
        self._hashed = False
        self._tree: tuple[str, str] | None = None  # (stats digest, content digest)
        self._tree_read = False
        self._replace_tree = False  # damaged: rewrite it, or remove it
        self._replace_files = False  # damaged or another version's: rewrite it

    def tree(self, stats: str) -> str | None:
        """The content digest remembered for a tree whose stats digest is ``stats``."""
        if not self._tree_read:
            # Read once: the identity asks again after its second walk, and one damaged file
            # is one problem.
            self._tree, self._replace_tree = _read(f"{self._path}.tree", _parse_tree)
            self._tree_read = True
        if self._tree is not None and self._tree[0] == stats:
            return self._tree[1]
        return None

    def digest(self, label: str, path: str, status: os.stat_result) -> str:
        """The digest of ``path`` (``label``: its name under the root), whose stat is
        ``status``. Raises ``OSError`` when the file cannot be read."""
        if self._known is None:
            known, self._replace_files = _read(self._path, _parse_files)
            self._known = known if known is not None else {}
        key: list[object] = list(stat_key(status))
        known_entry = self._known.get(label)
        if known_entry is not None and known_entry[:-1] == key:
            digest = str(known_entry[-1])
        else:
            digest = content_digest(path)
            self._hashed = True
        if settled(status):
            self._seen[label] = [*key, digest]
        return digest

    def save(self, tree: tuple[str, str] | None = None) -> None:
        """Write the files seen, if any was hashed or the memo read was damaged, and
        ``tree`` (stats digest, content digest) where given (None: the tree holds a file too
        recent to remember; a damaged tree is then removed). Never raises: a memo not
        written is hashed again by the next process."""
        directory = os.path.dirname(self._path)
        with contextlib.suppress(OSError):
            os.makedirs(directory, exist_ok=True)
            _remove_stale_temps(directory)
        if self._hashed or self._replace_files:
            _try(lambda: _write(self._path, json.dumps({"version": _VERSION, "files": self._seen})))
        if tree is not None:
            _try(lambda: _write(f"{self._path}.tree", " ".join(tree)))
        elif self._replace_tree:
            _try(lambda: _discard(f"{self._path}.tree"))


def _read(path: str, parse: Callable[[str], _Parsed]) -> tuple[_Parsed | None, bool]:
    """The memo at ``path`` parsed (None: there is none to use) and whether it must be
    replaced. Never raises: whatever fails in reading it makes it missing."""
    try:
        with open(path, "rb") as file:
            return parse(file.read().decode("utf-8")), False
    except FileNotFoundError:
        return None, False
    except _OtherVersion:
        return None, True
    except Exception as error:
        # Anything at all (RecursionError from deep nesting included): a read that raised
        # would fail every compile for the device, and the memo would never be rewritten.
        _warn_damaged(path, error)
        return None, True


class _OtherVersion(Exception):
    """A memo written by another version of the package: missing, not damaged."""


def _parse_tree(text: str) -> tuple[str, str]:
    stats, content = text.split()  # ValueError unless exactly two
    if not (_HEX_DIGEST.fullmatch(stats) and _HEX_DIGEST.fullmatch(content)):
        raise ValueError("not a stats digest and a content digest")
    return stats, content


def _parse_files(text: str) -> Files:
    stored = json.loads(text)
    if not isinstance(stored, dict) or type(stored.get("version")) is not int:
        raise ValueError("not a memo of files")
    if stored["version"] != _VERSION:
        raise _OtherVersion
    files = stored.get("files")
    if not isinstance(files, dict):
        raise ValueError("no files")
    if not all(map(_valid_entry, files.values())):
        raise ValueError("an entry is not a file's stat and content digest")
    return files


def _valid_entry(entry: object) -> bool:
    # A digest of another type would be taken as the file's, and give a wrong identity.
    # (Unrolled: this runs for every file of the SDK where the tree missed.)
    if not isinstance(entry, list) or len(entry) != 5:
        return False
    inode, size, mtime, ctime, digest = entry
    return (
        type(inode) is int
        and type(size) is int
        and type(mtime) is int
        and type(ctime) is int
        and type(digest) is str
        and _HEX_DIGEST.fullmatch(digest) is not None
    )


def _warn_damaged(path: str, error: Exception) -> None:
    if path in _warned:
        return
    _warned.put(path, True)
    reason = f"{type(error).__name__}: {error}"
    log.warning(
        "inductor-device-options: the content memo %s is damaged (%s); it is ignored, the "
        "SDK's files are hashed again and the memo is replaced",
        path,
        reason[:200],
    )


def _try(action: Callable[[], None]) -> None:
    with contextlib.suppress(OSError):
        action()


def _write(path: str, text: str) -> None:
    """Replace ``path`` whole: a reader sees the old memo or the new one, never a part."""
    directory, name = os.path.split(path)
    descriptor, scratch = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        _replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise


def _replace(scratch: str, path: str) -> None:
    try:
        os.replace(scratch, path)
    except IsADirectoryError:
        # Nothing but a memo is ever put under a memo's name: a dir there is damage.
        _discard(path)
        os.replace(scratch, path)


def _discard(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _remove_stale_temps(directory: str) -> None:
    """Remove the temp files of writers killed between creating and renaming them (kill -9,
    a crash, a power cut): nothing else would, and each may be as large as a memo."""
    oldest = time.time() - STALE_TEMP_S
    with os.scandir(directory) as entries:
        for entry in entries:
            if not _TEMP_NAME.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                status = entry.stat(follow_symlinks=False)
                if entry.is_file(follow_symlinks=False) and status.st_mtime < oldest:
                    os.unlink(entry.path)


def _file_name(root: str) -> str:
    name = hashlib.blake2b(root.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f"{name}.json"


def memo_dir() -> str:
    """Where the memos live: ``inductor_device_options/content`` in Inductor's cache dir."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return os.path.join(cache_dir(), "inductor_device_options", "content")
