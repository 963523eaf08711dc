"""The SDK identity: a digest of what a build of a device's code reads, by content.

It covers the files under the device's own include dirs (not torch's tree, which torch's
version covers) and each library the options name, and nothing of where they lie, when they
were written or which inode holds them: the same contents give the same identity on every
machine and in every install, and any change of contents gives a new one. A provider may
add an identity of its own (``sdk_identity``, such as an SDK's version), which joins the
digest.

The walk is bounded and never raises (``_fs.BoundedWalk``): a symlink loop or an unreadable
entry is part of the digest, and a symlinked dir that leads out of those include dirs is
recorded by where it points (as written in the link), not walked. Contents are hashed once
per file and stat (``content_memo``): a process whose memo is warm only stats. The identity
of a set of options is computed once per compile (``_hook/compile_boundary``): a change made
while a process runs is seen by its next compile.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Iterable

from .. import _state
from .._fs import BoundedWalk, WalkEntry, find_library, inside_torch, within
from .content_memo import DIGEST_SIZE, ContentMemo, memo_dir, settled

#: The definition that carries a device's SDK identity to the compiler: the C++ code cache
#: keys on the command line.
IDENTITY_DEFINITION = "INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY"

#: Entries one identity looks at, at most: an include dir that holds a whole system must
#: not make the first lookup walk it.
MAX_ENTRIES = 100_000

_Key = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], "str | None"]
# (include dirs, library dirs, libraries, the provider's own identity) -> the identity:
# computed once per compile and set of options (the compile boundary and _state.reset()
# clear it).
_identities: _state.BoundedCache[_Key, str | None] = _state.cache(256, _state.PER_COMPILE)


def sdk_identity(
    include_dirs: list[str],
    libraries_dirs: list[str],
    libraries: list[str],
    own: str | None = None,
) -> str | None:
    """The hex digest of the device's own headers and libraries (real paths expected) and
    of ``own``, the provider's identity; None when there is none of these."""
    key: _Key = (tuple(include_dirs), tuple(libraries_dirs), tuple(libraries), own)
    known = _identities.get(key, _state.MISSING)
    if known is not _state.MISSING:
        return known
    return _identities.put(key, _compute(include_dirs, libraries_dirs, libraries, own))


def _compute(
    include_dirs: list[str], libraries_dirs: list[str], libraries: list[str], own: str | None
) -> str | None:
    roots = _outermost(
        [path for path in include_dirs if os.path.isdir(path) and not inside_torch(path)]
    )
    library_files = [
        path for path in _library_files(libraries_dirs, libraries) if not inside_torch(path)
    ]
    if not roots and not library_files and own is None:
        return None
    directory = memo_dir()
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for index, tree in enumerate(_tree_digests(roots, directory)):
        digest.update(f"include dir {index} {tree}\n".encode())
    if library_files:
        entries = [_library_entry(path) for path in library_files]
        memo = ContentMemo("\0".join(library_files), directory)
        digest.update(f"libraries {_tree_digest(entries, '', memo)}\n".encode())
    if own is not None:
        digest.update(f"provider {own}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _walk(roots: list[str]) -> BoundedWalk:
    return BoundedWalk(roots, limit=MAX_ENTRIES, follow=lambda real: within(real, roots))


def _tree_digests(roots: list[str], directory: str) -> list[str]:
    """The content digest of each root's tree. A warm memo answers from the stats alone, so
    the first walk keeps no entries (as the fingerprint this replaced did not); where any
    root misses, all are walked again and the entries kept, so that the stats the memo
    remembers and the contents it pairs them with are one walk's."""
    memos = {root: ContentMemo(root, directory) for root in roots}
    walk = _walk(roots)
    remembered = [memos[root].tree(_stats_digest(walk.walk(root), root)) for root in roots]
    if all(tree is not None for tree in remembered):
        return [tree for tree in remembered if tree is not None]
    walk = _walk(roots)
    return [_tree_digest(list(walk.walk(root)), root, memos[root]) for root in roots]


def _outermost(directories: list[str]) -> list[str]:
    """Drop dirs inside another listed dir (CANN lists include/ and include/experiment/...):
    the outer walk covers them."""
    outer: list[str] = []
    for path in sorted(set(directories)):
        if not any(path.startswith(parent + os.sep) for parent in outer):
            outer.append(path)
    return outer


def _library_files(libraries_dirs: list[str], libraries: list[str]) -> list[str]:
    """The real path of the file each -l<name> resolves to in the given dirs (as ld)."""
    found = (find_library(library, libraries_dirs) for library in libraries)
    return [os.path.realpath(path) for path in found if path is not None]


def _library_entry(path: str) -> WalkEntry:
    """A library file as the walk would give it: its name for a label (not where it lies),
    its path in ``real``."""
    name = os.path.basename(path)
    try:
        return WalkEntry("file", name, path, os.stat(path))
    except OSError as error:
        return WalkEntry("unreadable", name, path, errno=error.errno)


def _tree_digest(entries: list[WalkEntry], root: str, memo: ContentMemo) -> str:
    """The digest of the contents of ``entries`` (under ``root``): one line per entry,
    labels relative to it, sorted (scandir's order is the file system's). Where every
    entry's stat is what the memo remembers, its digest, without reading a file."""
    stats = _stats_digest(entries, root)
    remembered = memo.tree(stats)
    if remembered is not None:
        return remembered
    content = _digest(_line(entry, root, memo) for entry in entries)
    all_settled = all(entry.status is None or settled(entry.status) for entry in entries)
    memo.save((stats, content) if all_settled else None)
    return content


def _digest(lines: Iterable[str]) -> str:
    text = "".join(sorted(lines))
    return hashlib.blake2b(
        text.encode("utf-8", "surrogateescape"), digest_size=DIGEST_SIZE
    ).hexdigest()


def _stats_digest(entries: Iterable[WalkEntry], root: str) -> str:
    """What the memo's tree is keyed by: each file's :func:`~.content_memo.stat_key`, the
    rest as in the digest, in the walk's order (a directory listed in another order is a
    miss, not a wrong answer)."""
    # Flat, and stat_key's fields read inline: this runs for every file of the SDK in every
    # process, where it is all the identity adds to the walk.
    keys: list[object] = []
    add = keys.extend
    for entry in entries:
        status = entry.status
        if status is not None:
            add(
                (entry.label, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
            )
        elif entry.kind == "link":
            add((entry.label, entry.kind, _link_text(os.path.join(root, entry.label))))
        else:
            add((entry.label, entry.kind, entry.errno))
    # Version 2: bytes by value alone. Later versions mark objects referenced more than once,
    # so the same stats would give other bytes when the walk's entries are kept or not.
    # SHA-256, which most current CPUs compute in hardware: here twice BLAKE2b's speed.
    return hashlib.sha256(marshal.dumps(keys, 2)).hexdigest()[: 2 * DIGEST_SIZE]


def _line(entry: WalkEntry, root: str, memo: ContentMemo) -> str:
    if entry.kind == "file":
        assert entry.status is not None
        try:
            path = entry.real or os.path.join(root, entry.label)
            content = memo.digest(entry.label, path, entry.status)
        except OSError as error:
            return f"unreadable {entry.label} {error.errno}\n"
        return f"{entry.label}\0{content}\n"
    if entry.kind == "dir":
        return f"dir {entry.label}\n"
    if entry.kind == "link":
        return f"link {entry.label} -> {_link_text(os.path.join(root, entry.label))}\n"
    if entry.kind == "unreadable":
        return f"unreadable {entry.label} {entry.errno}\n"
    return f"stopped after {MAX_ENTRIES} entries\n"


def _link_text(path: str) -> str:
    """Where a link points as written (a relative link reads the same on every machine);
    a dir reached again without a link is one of the tree's own dirs."""
    try:
        return os.readlink(path)
    except OSError:
        return "(a dir of the tree)"
