"""The content digests of an SDK's files, remembered between processes by each file's stat.

Hashing the contents of a whole SDK (thousands of headers, libraries of tens of MB) in every
process would make the first lookup slow. So the digest of each file is kept on disk, in
Inductor's cache dir, with the file's full ``stat``: device, inode, size, modification time
and change time. A process whose memo is warm only stats. A file is hashed again when any of
those changed; its change time (ctime) cannot be set back, so a rewritten file is always
hashed again, even when its size and modification time were restored.

A file changed within :data:`SETTLE_NS` of being hashed is not remembered (its stat could
still change within the file system's clock tick without showing it): it is hashed again by
the next process. The memo is a cache: a missing or broken one is rebuilt, and concurrent
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
_VERSION = 1

Stat = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns


def stat_key(status: os.stat_result) -> Stat:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def content_digest(path: str) -> str:
    """The hex digest of the file's bytes (read in chunks: libraries are large)."""
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class ContentMemo:
    """The remembered digests of the files under one root (an include dir, a library's
    dir): :meth:`digest` gives a file's digest, hashing it only where its stat changed;
    :meth:`save` writes what this walk saw, when anything was hashed."""

    def __init__(self, root: str, directory: str | None) -> None:
        self._path = None if directory is None else os.path.join(directory, _file_name(root))
        self._known = self._load()
        self._seen: dict[str, list[object]] = {}
        self._hashed = False

    def digest(self, label: str, path: str, status: os.stat_result) -> str:
        """The digest of ``path`` (``label``: its name under the root), whose stat is
        ``status``. Raises ``OSError`` when the file cannot be read."""
        key = list(stat_key(status))
        known = self._known.get(label)
        if isinstance(known, list) and len(known) == 6 and known[:5] == key:
            digest = str(known[5])
        else:
            digest = content_digest(path)
            self._hashed = True
        if time.time_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > SETTLE_NS:
            self._seen[label] = [*key, digest]
        return digest

    def save(self) -> None:
        """Write what this walk saw, if it hashed anything; never raises."""
        if self._path is None or not self._hashed:
            return
        try:
            os.makedirs(os.path.dirname(self._path), exist_ok=True)
            descriptor, scratch = tempfile.mkstemp(dir=os.path.dirname(self._path))
            with os.fdopen(descriptor, "w") as file:
                json.dump({"version": _VERSION, "files": self._seen}, file)
            os.replace(scratch, self._path)
        except OSError:
            pass  # a cache: the next process hashes again

    def _load(self) -> dict[str, object]:
        if self._path is None:
            return {}
        try:
            with open(self._path) as file:
                stored = json.load(file)
        except (OSError, ValueError):
            return {}
        if not isinstance(stored, dict) or stored.get("version") != _VERSION:
            return {}
        files = stored.get("files")
        return files if isinstance(files, dict) else {}


def _file_name(root: str) -> str:
    name = hashlib.blake2b(root.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f"{name}.json"


def memo_dir() -> str:
    """Where the memos live: ``inductor_device_options/content`` in Inductor's cache dir."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return os.path.join(cache_dir(), "inductor_device_options", "content")
