"""Where the demo builds the sample device, refused before a minute of building when g++
and ld cannot be given its path as meant."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..sample import DEVICE_NAME, default_cache_dir


def buildable_cache_dir(cache_dir: str | os.PathLike[str] | None) -> tuple[Path, str | None]:
    """Where to build, and why that cannot work, found before a minute of building: the
    runtime's library dir reaches g++ as the running torch renders it, in -L (unquoted
    before torch 2.14), and ld as a runpath in -Wl,-rpath,<dir> (never quoted, split at
    commas), so a space or a comma in it fails the first compile. The default location
    falls back to a temporary one.
    """
    from .. import RunpathError, runpath
    from .._options.pipeline import check_value

    wanted = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    fallback = Path(tempfile.gettempdir()) / f"inductor-device-options-{os.getuid()}" / DEVICE_NAME
    problem = None
    for candidate in [wanted] if cache_dir is not None else [wanted, fallback]:
        library_dir = os.path.realpath(candidate / "sdk" / "lib")
        try:
            problem = check_value("libraries_dirs", library_dir) or check_value(
                "ldflags", runpath(library_dir)
            )
        except RunpathError as error:
            problem = str(error)
        if problem is None:
            return candidate, None
    return wanted, (
        f"{wanted} cannot hold the sample's runtime: its library dir {problem}; "
        "choose another with --cache-dir DIR"
    )
