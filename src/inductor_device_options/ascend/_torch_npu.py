"""Find torch_npu on disk without importing it (importing it needs the device runtime).

What this relies on: torch_npu's wheel ships ``torch_npu/include`` and
``torch_npu/lib/libtorch_npu.so``; ``torch_npu/utils/cpp_extension.py`` takes the install
dir as ``dirname(realpath(torch_npu.__file__))``, and the library dir may be overridden
with ``LIBTORCH_NPU_PATH``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping
from typing import NamedTuple

from ._cache import cached
from ._errors import TorchNpuNotFoundError

#: Overrides where torch_npu is installed (the ``torch_npu`` package directory).
ENV_TORCH_NPU_INSTALL_PATH = "PYTORCH_NPU_INSTALL_PATH"
#: Overrides the directory holding ``libtorch_npu.so`` (as torch_npu does).
ENV_LIBTORCH_NPU_PATH = "LIBTORCH_NPU_PATH"

_NO_LIBRARY = "no libtorch_npu.so"


class TorchNpuInstall(NamedTuple):
    """A torch_npu install found without importing it (real paths), as
    :func:`~inductor_device_options.ascend.find_torch_npu` returns it.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend():
        ...     found = ascend.find_torch_npu()
        >>> found.source, found.include_dir
        ('PYTORCH_NPU_INSTALL_PATH', None)
    """

    #: The ``torch_npu`` package directory.
    package_dir: str
    #: How it was found: ``PYTORCH_NPU_INSTALL_PATH``, ``find_spec`` or ``metadata``.
    source: str
    #: ``<package_dir>/include`` when it exists, else ``None``.
    include_dir: str | None
    #: The directory holding ``libtorch_npu.so``.
    library_dir: str


def find_torch_npu() -> TorchNpuInstall:
    """Where torch_npu is installed, found without importing it.

    ``$PYTORCH_NPU_INSTALL_PATH`` (the ``torch_npu`` package directory), else
    ``importlib.util.find_spec("torch_npu")`` (which locates a top-level package without
    executing it), else the ``torch_npu`` distribution's metadata; ``$LIBTORCH_NPU_PATH``
    overrides the directory of ``libtorch_npu.so`` as in torch_npu.  A set
    ``$PYTORCH_NPU_INSTALL_PATH`` that is not usable is skipped with a
    :class:`RuntimeWarning`.  Cached per process on those variables and ``sys.path``.
    (Importing torch_npu would need the device's runtime.)

    Returns:
        The install found, with real paths.

    Raises:
        TorchNpuNotFoundError: torch_npu, or its ``libtorch_npu.so``, was not found; the
            message lists every place tried.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend():  # sets $PYTORCH_NPU_INSTALL_PATH while the block runs
        ...     ascend.find_torch_npu().source
        'PYTORCH_NPU_INSTALL_PATH'
    """
    return searched(
        os.environ.get(ENV_TORCH_NPU_INSTALL_PATH, ""),
        os.environ.get(ENV_LIBTORCH_NPU_PATH, ""),
        tuple(sys.path),
    )


@cached
def searched(install_path: str, library_path: str, path: tuple[str, ...]) -> TorchNpuInstall:
    """:func:`find_torch_npu` for these values of ``$PYTORCH_NPU_INSTALL_PATH``,
    ``$LIBTORCH_NPU_PATH`` and ``sys.path`` (which ``find_spec`` reads), kept per process."""
    search = _Search(
        {ENV_TORCH_NPU_INSTALL_PATH: install_path, ENV_LIBTORCH_NPU_PATH: library_path}
    )
    for step in (search.from_override, search.from_spec, search.from_metadata):
        found = step()
        if found is not None:
            return found
    raise TorchNpuNotFoundError(search.tried, search.fix())


class _Search:
    """One search for torch_npu: the places tried so far and why each failed."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.tried: list[tuple[str, str]] = []
        self.seen: set[str] = set()
        self.skipped_override: str | None = None

    def from_override(self) -> TorchNpuInstall | None:
        override = self.environ.get(ENV_TORCH_NPU_INSTALL_PATH, "")
        if not override:
            self.tried.append((ENV_TORCH_NPU_INSTALL_PATH, "not set"))
            return None
        label = f"{ENV_TORCH_NPU_INSTALL_PATH}={override}"
        if not os.path.isdir(override):
            self.tried.append((label, "is not a directory"))
            self.skipped_override = f"{label} (is not a directory)"
            return None
        found = self.attempt(override, ENV_TORCH_NPU_INSTALL_PATH)
        if found is None:
            self.skipped_override = f"{label} ({self.tried[-1][1]})"
        return found

    def from_spec(self) -> TorchNpuInstall | None:
        spec_dir = _spec_dir()
        if spec_dir is None:
            self.tried.append(("importlib.util.find_spec('torch_npu')", "not found on sys.path"))
            return None
        return self.attempt(spec_dir, "find_spec")

    def from_metadata(self) -> TorchNpuInstall | None:
        meta_dir = _metadata_dir()
        if meta_dir is None:
            self.tried.append(("importlib.metadata.distribution('torch_npu')", "not installed"))
            return None
        if not os.path.isdir(meta_dir):
            self.tried.append((meta_dir, "does not exist"))
            return None
        return self.attempt(meta_dir, "metadata")

    def attempt(self, package_dir: str, source: str) -> TorchNpuInstall | None:
        real = os.path.realpath(package_dir)
        if real in self.seen:
            return None  # the same directory by another route: already reported
        self.seen.add(real)
        result = _from_dir(real, source, self.environ)
        if isinstance(result, TorchNpuInstall):
            if self.skipped_override is not None:
                warnings.warn(
                    f"Ignoring {self.skipped_override}; using torch_npu at "
                    f"{result.package_dir} instead",
                    RuntimeWarning,
                    stacklevel=5,  # attempt, from_*, find_torch_npu, its caller, that one's caller
                )
            return result
        if result not in self.tried:
            self.tried.append(result)
        return None

    def fix(self) -> str:
        if any(why == _NO_LIBRARY for _, why in self.tried):
            return (
                f"reinstall torch_npu, or set {ENV_LIBTORCH_NPU_PATH} to the directory "
                "holding libtorch_npu.so."
            )
        return (
            "install torch_npu for this torch version (pip install torch-npu) in this "
            f"Python environment, or set {ENV_TORCH_NPU_INSTALL_PATH} to the torch_npu "
            "package directory."
        )


def _from_dir(
    package_dir: str, source: str, environ: Mapping[str, str]
) -> TorchNpuInstall | tuple[str, str]:
    """A TorchNpuInstall for ``package_dir``, or (where, why) it is not usable."""
    package_dir = os.path.realpath(package_dir)
    include = os.path.join(package_dir, "include")
    lib_override = environ.get(ENV_LIBTORCH_NPU_PATH, "")
    library_dir = lib_override or os.path.join(package_dir, "lib")
    if not os.path.isfile(os.path.join(library_dir, "libtorch_npu.so")):
        where = f"{ENV_LIBTORCH_NPU_PATH}={lib_override}" if lib_override else library_dir
        return where, _NO_LIBRARY
    return TorchNpuInstall(
        package_dir=package_dir,
        source=source,
        include_dir=os.path.realpath(include) if os.path.isdir(include) else None,
        library_dir=os.path.realpath(library_dir),
    )


def _spec_dir() -> str | None:
    try:
        spec = importlib.util.find_spec("torch_npu")  # finds, does not import, the package
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return next(iter(spec.submodule_search_locations))
    return os.path.dirname(spec.origin) if spec.origin else None


def _metadata_dir() -> str | None:
    from importlib import metadata  # ~25 ms to import: only when find_spec did not succeed

    try:
        dist = metadata.distribution("torch_npu")
    except metadata.PackageNotFoundError:
        return None
    return str(dist.locate_file("torch_npu"))
