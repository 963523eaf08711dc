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
hashes it again. A memo is a cache: a missing or broken one is rebuilt, and concurrent
processes each replace it whole (the last one wins).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

#: The bytes of a content digest.
DIGEST_SIZE = 16
#: How recent a change may be and still be remembered (ns).
SETTLE_NS = 2_000_000_000
_CHUNK = 1 << 20
_VERSION = 3

Stat = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


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
    writes what this walk saw, when anything was hashed."""

    def __init__(self, root: str, directory: str) -> None:
        self._path = os.path.join(directory, _file_name(root))
        self._known: dict[str, object] | None = None  # read at the first digest()
        self._seen: dict[str, list[object]] = {}
        self._hashed = False

    def tree(self, stats: str) -> str | None:
        """The content digest remembered for a tree whose stats digest is ``stats``."""
        try:
            with open(f"{self._path}.tree") as file:
                remembered, _, content = file.read().partition(" ")
        except OSError:
            return None
        return content.strip() if remembered == stats and content.strip() else None

    def digest(self, label: str, path: str, status: os.stat_result) -> str:
        """The digest of ``path`` (``label``: its name under the root), whose stat is
        ``status``. Raises ``OSError`` when the file cannot be read."""
        if self._known is None:
            self._known = self._load()
        key = list(stat_key(status))
        known = self._known.get(label)
        if isinstance(known, list) and len(known) == len(key) + 1 and known[:-1] == key:
            digest = str(known[-1])
        else:
            digest = content_digest(path)
            self._hashed = True
        if settled(status):
            self._seen[label] = [*key, digest]
        return digest

    def save(self, tree: tuple[str, str] | None = None) -> None:
        """Write the files seen, if any was hashed, and ``tree`` (stats digest, content
        digest) where given (None: the tree holds a file too recent to remember). Never
        raises: a memo not written is hashed again by the next process."""
        try:
            os.makedirs(os.path.dirname(self._path), exist_ok=True)
            if self._hashed:
                _write(self._path, json.dumps({"version": _VERSION, "files": self._seen}))
            if tree is not None:
                _write(f"{self._path}.tree", " ".join(tree))
        except OSError:
            pass

    def _load(self) -> dict[str, object]:
        try:
            with open(self._path) as file:
                stored = json.load(file)
        except (OSError, ValueError):
            return {}
        if not isinstance(stored, dict) or stored.get("version") != _VERSION:
            return {}
        files = stored.get("files")
        return files if isinstance(files, dict) else {}


def _write(path: str, text: str) -> None:
    descriptor, scratch = tempfile.mkstemp(dir=os.path.dirname(path))
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        os.replace(scratch, path)
    except OSError:
        os.unlink(scratch)
        raise


def _file_name(root: str) -> str:
    name = hashlib.blake2b(root.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f"{name}.json"


def memo_dir() -> str:
    """Where the memos live: ``inductor_device_options/content`` in Inductor's cache dir."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return os.path.join(cache_dir(), "inductor_device_options", "content")
