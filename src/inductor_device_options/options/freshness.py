"""Keep Inductor from reusing a kernel built against another version of a device SDK.

Inductor keys compiled C++ by its command line. Two changes leave that line unchanged:
a symlink such as ``ascend-toolkit/latest`` re-pointed to another release, and files
changed in place (an in-place CANN upgrade, a rebuilt runtime library, an edited header).
So the options a provider returns are made *fresh*:

* include and library dirs are resolved to their real paths (a re-pointed symlink then
  changes the command line);
* one definition, ``INDUCTOR_DEVICE_OPTIONS_SDK_FINGERPRINT=<hex>``, hashes the size and
  modification time of every file under the device's own include dirs and of each
  library the options name — not torch's own tree, which torch's version already covers.
  The walk is bounded and never raises (``_fs.BoundedWalk``): a symlink loop or an unreadable
  entry is part of the digest, and a symlinked dir that leads out of those include dirs
  is recorded by its target, not walked.

The fingerprint is computed once per process and set of options: a change made while a
process runs is seen by the next process. Step 4 of the validation pipeline (``pipeline``).
"""

from __future__ import annotations

import hashlib
import os

from .. import _state
from .._fs import BoundedWalk, WalkEntry, find_library, inside_torch, within
from .model import CppDeviceOptions

FINGERPRINT_DEFINITION = "INDUCTOR_DEVICE_OPTIONS_SDK_FINGERPRINT"


# (include dirs, library dirs, libraries) -> the fingerprint: computed once per process
# and set of options. _state.reset() clears it.
_fingerprints: _state.BoundedCache[
    tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], str | None
] = _state.cache(256)

_UNKNOWN = object()  # not in the cache (None is a value it holds)

def fresh_options(options: CppDeviceOptions) -> CppDeviceOptions:
    """``options`` with real paths and the SDK fingerprint definition added."""
    include_dirs = [os.path.realpath(path) for path in options.include_dirs]
    libraries_dirs = [os.path.realpath(path) for path in options.libraries_dirs]
    fingerprint = sdk_fingerprint(include_dirs, libraries_dirs, options.libraries)
    definitions = [d for d in options.definitions if not _is_fingerprint(d)]
    if fingerprint is not None:
        definitions.append(f"{FINGERPRINT_DEFINITION}={fingerprint}")
    return options._replace(
        definitions=definitions, include_dirs=include_dirs, libraries_dirs=libraries_dirs
    )


def _is_fingerprint(definition: str) -> bool:
    """``NAME`` or ``NAME=...`` with NAME exactly ours (a provider's older one is replaced);
    a macro that merely starts like it is the provider's own."""
    return definition.lstrip(" ").partition("=")[0] == FINGERPRINT_DEFINITION


def sdk_fingerprint(
    include_dirs: list[str], libraries_dirs: list[str], libraries: list[str]
) -> str | None:
    """A hex digest of the device's own headers and libraries; None if none exist."""
    key = (tuple(include_dirs), tuple(libraries_dirs), tuple(libraries))
    known = _fingerprints.get(key, _UNKNOWN)
    if known is not _UNKNOWN:
        return known  # type: ignore[return-value]
    own_include_dirs = _outermost(
        [path for path in include_dirs if os.path.isdir(path) and not inside_torch(path)]
    )
    library_files = [
        path for path in _library_files(libraries_dirs, libraries) if not inside_torch(path)
    ]
    fingerprint = None
    if own_include_dirs or library_files:
        digest = hashlib.blake2b(digest_size=8)
        walk = BoundedWalk(
            own_include_dirs, limit=MAX_ENTRIES, follow=lambda real: within(real, own_include_dirs)
        )
        for path in own_include_dirs:
            digest.update(f"dir {path}\n".encode("utf-8", "surrogateescape"))
            _hash_tree(walk, path, digest)
        for path in library_files:
            _hash_file(path, digest)
        fingerprint = digest.hexdigest()
    _fingerprints.put(key, fingerprint)
    return fingerprint


def _outermost(directories: list[str]) -> list[str]:
    """Drop dirs inside another listed dir (CANN lists include/ and include/experiment/...):
    the outer walk covers them."""
    chosen = sorted(set(directories))
    outer: list[str] = []
    for path in chosen:
        if not any(path.startswith(parent + os.sep) for parent in outer):
            outer.append(path)
    return outer


def _library_files(libraries_dirs: list[str], libraries: list[str]) -> list[str]:
    """The real path of the file each -l<name> resolves to in the given dirs (as ld)."""
    found = (find_library(library, libraries_dirs) for library in libraries)
    return [os.path.realpath(path) for path in found if path is not None]


#: Entries one fingerprint looks at, at most: an include dir that holds a whole system
#: must not make the first lookup walk it.
MAX_ENTRIES = 100_000


def _hash_tree(walk: BoundedWalk, root: str, digest: hashlib.blake2b) -> None:
    """One line per entry under ``root``, labels relative to it, in one update: one stat
    per file, ~5 µs a file in all. The walk is bounded and never raises (``_fs``): a
    symlinked dir is walked only when it leads into one of the SDK dirs fingerprinted,
    else its target is recorded (re-pointing it still changes the digest)."""
    lines = [_line(entry) for entry in walk.walk(root)]
    lines.sort()  # scandir order is the file system's: sort for a stable digest
    digest.update("".join(lines).encode("utf-8", "surrogateescape"))


def _line(entry: WalkEntry) -> str:
    if entry.kind == "file":
        assert entry.status is not None
        return f"{entry.label}\0{entry.status.st_size}\0{entry.status.st_mtime_ns}\n"
    if entry.kind == "dir":
        return f"dir {entry.label}\n"
    if entry.kind == "link":
        return f"link {entry.label} -> {entry.real}\n"
    if entry.kind == "unreadable":
        return f"unreadable {entry.label} {entry.errno}\n"
    return f"stopped after {MAX_ENTRIES} entries\n"


def _hash_file(path: str, digest: hashlib.blake2b) -> None:
    try:
        status = os.stat(path)
    except OSError:
        digest.update(f"missing {path}\n".encode("utf-8", "surrogateescape"))
        return
    line = f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n"
    digest.update(line.encode("utf-8", "surrogateescape"))
