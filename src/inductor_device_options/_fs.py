"""The file-system helpers every room shares: the file ld takes for ``-l<name>``, whether a
path is torch's own, and a walk of dir trees that is bounded and never raises.

Each was written twice before (the SDK identity and doctor): one meaning, one place.
Nothing here imports another module of the package but ``_state`` (for its cache); torch
only when asked where it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, NamedTuple

from . import _state


def library_file_names(library: str) -> tuple[str, ...]:
    """The file names ld takes for ``-l<library>``, in the order it tries them in one dir:
    ``lib<name>.so`` then ``lib<name>.a``; ``:<file>`` names the file itself."""
    if library.startswith(":"):
        return (library[1:],)
    return (f"lib{library}.so", f"lib{library}.a")


def find_library(library: str, directories: Iterable[str]) -> str | None:
    """The file ``-l<library>`` resolves to in ``directories`` (the first dir holding one
    of its file names, as ld searches), or None. The path as found, not resolved."""
    names = library_file_names(library)
    for directory in directories:
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
    return None


def within(path: str, directories: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``directories`` or inside one (as written: resolve first
    to compare real paths)."""
    return any(path == parent or path.startswith(parent + os.sep) for parent in directories)


@_state.cached(1)  # torch never moves, but a reset costs one realpath: it forgets all
def torch_dir() -> str:
    """torch's real install dir (importing torch, if nobody has)."""
    import torch

    return os.path.realpath(os.path.dirname(torch.__file__))


def inside_torch(path: str) -> bool:
    """Whether the real path ``path`` is torch's install dir or inside it."""
    return within(path, (torch_dir(),))


WalkKind = Literal["file", "dir", "link", "unreadable", "stopped"]


class WalkEntry(NamedTuple):
    """One entry a :class:`BoundedWalk` meets, ``label`` its path relative to the root.

    ``kind``: ``"file"`` (``status``: its ``stat``, symlinks followed), ``"dir"`` (walked
    into), ``"link"`` (a dir not walked into: reached already, or a symlink the walk does
    not follow; ``real``: where it leads), ``"unreadable"`` (a dir that cannot be listed or
    an entry that cannot be read, such as a symlink loop; ``errno``), or ``"stopped"``
    (the walk's limit was reached: the last entry).
    """

    kind: WalkKind
    label: str
    real: str | None = None
    status: os.stat_result | None = None
    errno: int | None = None


def _always(real: str) -> bool:
    return True


class BoundedWalk:
    """Walks of dir trees that never raise and never run away: every real dir is walked
    once (a dir reached again, through a symlink or not, is a ``"link"``), a symlinked dir
    only when ``follow(real path)`` says so, and after ``limit`` entries, counted over
    every root this walk is given, it stops, saying so. Errors are entries, not raised.
    """

    def __init__(
        self, roots: Sequence[str], *, limit: int, follow: Callable[[str], bool] = _always
    ) -> None:
        self._visited = {os.path.realpath(root) for root in roots}
        self._follow = follow
        self._limit = limit
        self._entries = 0

    def walk(self, root: str) -> Iterator[WalkEntry]:
        """The entries under ``root`` (one of the roots), depth first, each dir's by name."""
        prefix = len(root) + 1
        stack = [(root, os.path.realpath(root))]  # (path as walked, real path)
        while stack:
            directory, real_directory = stack.pop()
            try:
                with os.scandir(directory) as listing:
                    # By name: which path reaches a dir first, and where the limit stops,
                    # do not depend on the order the file system lists entries in.
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                yield WalkEntry("unreadable", directory[prefix:], errno=error.errno)
                continue
            for entry in entries:
                self._entries += 1
                if self._entries > self._limit:
                    yield WalkEntry("stopped", "")
                    return
                found = self._entry(entry, prefix, real_directory)
                yield found
                if found.kind == "dir" and found.real is not None:
                    stack.append((entry.path, found.real))

    def _entry(self, entry: os.DirEntry[str], prefix: int, real_directory: str) -> WalkEntry:
        label = entry.path[prefix:]
        try:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if os.path.isdir(real):
                    if self._follow(real) and real not in self._visited:
                        self._visited.add(real)
                        return WalkEntry("dir", label, real)
                    return WalkEntry("link", label, real)
            elif entry.is_dir(follow_symlinks=False):
                real = os.path.join(real_directory, entry.name)
                if real in self._visited:  # also reached through a link
                    return WalkEntry("link", label, real)
                self._visited.add(real)
                return WalkEntry("dir", label, real)
            return WalkEntry("file", label, status=entry.stat())
        except OSError as error:  # ELOOP, EACCES, a file gone meanwhile
            return WalkEntry("unreadable", label, errno=error.errno)
