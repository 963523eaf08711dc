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

The fingerprint is computed once per process and set of options: a change made while a
process runs is seen by the next process.
"""

from __future__ import annotations

import hashlib
import os
import threading

from ._options import CppDeviceOptions

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
        for path in own_include_dirs:
            digest.update(f"dir {path}\n".encode())
            _hash_tree(path, digest)
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


def _hash_tree(root: str, digest: hashlib.blake2b) -> None:
    # One stat per file, labels relative to root, one update: ~5 µs a file in all.
    prefix = len(root) + 1
    lines: list[str] = []
    stack = [root]
    visited = {root}  # symlinked dirs (CANN's top-level views) are walked once
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            lines.append(f"unreadable {directory[prefix:]}\n")
            continue
        for entry in entries:
            if entry.is_dir():
                real = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
                if real not in visited:
                    visited.add(real)
                    stack.append(entry.path)
                continue
            try:
                status = entry.stat()
            except OSError:
                lines.append(f"missing {entry.path[prefix:]}\n")
                continue
            lines.append(f"{entry.path[prefix:]}\0{status.st_size}\0{status.st_mtime_ns}\n")
    lines.sort()  # scandir order is the file system's: sort for a stable digest
    digest.update("".join(lines).encode())


def _hash_file(path: str, digest: hashlib.blake2b) -> None:
    try:
        status = os.stat(path)
    except OSError:
        digest.update(f"missing {path}\n".encode())
        return
    digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode())
