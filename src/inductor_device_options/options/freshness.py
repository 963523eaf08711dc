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
  The walk is bounded and never raises (see ``_Walk``): a symlink loop or an unreadable
  entry is part of the digest, and a symlinked dir that leads out of those include dirs
  is recorded by its target, not walked.

The fingerprint is computed once per process and set of options: a change made while a
process runs is seen by the next process.
"""

from __future__ import annotations

import hashlib
import os
import threading

from .model import CppDeviceOptions

FINGERPRINT_DEFINITION = "INDUCTOR_DEVICE_OPTIONS_SDK_FINGERPRINT"

_lock = threading.Lock()
_fingerprints: dict[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], str | None] = {}
_torch_dir: str | None = None


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
    with _lock:
        if key in _fingerprints:
            return _fingerprints[key]
    own_include_dirs = _outermost(
        [path for path in include_dirs if os.path.isdir(path) and not _inside_torch(path)]
    )
    library_files = [
        path for path in _library_files(libraries_dirs, libraries) if not _inside_torch(path)
    ]
    fingerprint = None
    if own_include_dirs or library_files:
        digest = hashlib.blake2b(digest_size=8)
        walk = _Walk(own_include_dirs)
        for path in own_include_dirs:
            digest.update(f"dir {path}\n".encode("utf-8", "surrogateescape"))
            walk.hash_tree(path, digest)
        for path in library_files:
            _hash_file(path, digest)
        fingerprint = digest.hexdigest()
    with _lock:
        _fingerprints[key] = fingerprint
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


def _inside_torch(path: str) -> bool:
    global _torch_dir
    if _torch_dir is None:
        import torch

        _torch_dir = os.path.realpath(os.path.dirname(torch.__file__))
    return path == _torch_dir or path.startswith(_torch_dir + os.sep)


def _library_files(libraries_dirs: list[str], libraries: list[str]) -> list[str]:
    """The file each -l<name> resolves to in the given dirs (first match, as ld does)."""
    found = []
    for library in libraries:
        names = (
            [library[1:]] if library.startswith(":") else [f"lib{library}.so", f"lib{library}.a"]
        )
        for directory in libraries_dirs:
            candidates = [os.path.join(directory, name) for name in names]
            match = next((path for path in candidates if os.path.isfile(path)), None)
            if match is not None:
                found.append(os.path.realpath(match))
                break
    return found


#: Entries one fingerprint looks at, at most: an include dir that holds a whole system
#: must not make the first lookup walk it.
MAX_ENTRIES = 100_000


class _Walk:
    """The file-system walk behind one fingerprint. It never raises and never runs away:
    an entry that cannot be read (a symlink loop, a target in a dir that cannot be searched)
    is recorded as such; a symlinked dir is walked only when it leads into one of the SDK
    dirs being fingerprinted, else its target is recorded (re-pointing it still changes
    the digest); and it stops, saying so, after ``MAX_ENTRIES`` entries."""

    def __init__(self, sdk_dirs: list[str]):
        self._sdk_dirs = sdk_dirs
        self._visited = set(sdk_dirs)
        self._entries = 0

    def hash_tree(self, root: str, digest: hashlib.blake2b) -> None:
        # One stat per file, labels relative to root, one update: ~5 µs a file in all.
        prefix = len(root) + 1
        lines: list[str] = []
        stack = [(root, root)]  # (path as walked, real path)
        while stack:
            directory, real_directory = stack.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError as error:
                lines.append(f"unreadable {directory[prefix:]} {error.errno}\n")
                continue
            for entry in entries:
                self._entries += 1
                if self._entries > MAX_ENTRIES:
                    lines.append(f"stopped after {MAX_ENTRIES} entries\n")
                    stack.clear()
                    break
                line, real = self._entry(entry, prefix, real_directory)
                lines.append(line)
                if real is not None:
                    stack.append((entry.path, real))
        lines.sort()  # scandir order is the file system's: sort for a stable digest
        digest.update("".join(lines).encode("utf-8", "surrogateescape"))

    def _entry(
        self, entry: os.DirEntry[str], prefix: int, real_directory: str
    ) -> tuple[str, str | None]:
        """The digest line for ``entry`` and, if it is a dir to walk into, its real path."""
        label = entry.path[prefix:]
        try:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if os.path.isdir(real):
                    if self._inside_sdk(real) and real not in self._visited:
                        self._visited.add(real)
                        return f"dir {label}\n", real
                    return f"link {label} -> {real}\n", None
            elif entry.is_dir(follow_symlinks=False):
                real = os.path.join(real_directory, entry.name)
                if real in self._visited:  # also reached through a link
                    return f"link {label} -> {real}\n", None
                self._visited.add(real)
                return f"dir {label}\n", real
            status = entry.stat()
        except OSError as error:  # ELOOP, EACCES, a file gone meanwhile
            return f"unreadable {label} {error.errno}\n", None
        return f"{label}\0{status.st_size}\0{status.st_mtime_ns}\n", None

    def _inside_sdk(self, path: str) -> bool:
        return any(path == root or path.startswith(root + os.sep) for root in self._sdk_dirs)


def _hash_file(path: str, digest: hashlib.blake2b) -> None:
    try:
        status = os.stat(path)
    except OSError:
        digest.update(f"missing {path}\n".encode("utf-8", "surrogateescape"))
        return
    line = f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n"
    digest.update(line.encode("utf-8", "surrogateescape"))
