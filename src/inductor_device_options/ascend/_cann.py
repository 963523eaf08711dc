"""Find the Ascend CANN toolkit on disk, without torch or the device runtime.

A function of the environment variables, the default roots and the files on disk, cached
per process on the first two (and the machine).

What the layouts look like (what this module relies on)
-------------------------------------------------------
* torch_npu 2.14.0 ``torch_npu/_inductor/cpp_builder.py`` uses
  ``$ASCEND_HOME_PATH`` only and adds ``include``, ``pkg_inc``,
  ``pkg_inc/profiling``, ``include/experiment``, ``include/experiment/msprof``
  and ``lib64`` under it; it links ``torch_npu``, ``runtime`` and ``ascendcl``.
* CANN's ``set_env.sh`` exports both ``ASCEND_TOOLKIT_HOME`` and
  ``ASCEND_HOME_PATH`` (the same directory).  Up to 8.3 the toolkit installs
  to ``/usr/local/Ascend/ascend-toolkit/<version>`` with a ``latest`` link;
  from 8.5 on it installs to ``/usr/local/Ascend/cann`` (a link to
  ``cann-<version>``), non-root installs to ``$HOME/Ascend/...`` (CANN
  installation guide, "File Paths", 8.0.0 and 8.5.0).
* The real files live in the ``<arch>-linux/`` sub-tree (``x86_64-linux``,
  ``aarch64-linux``): the npu-runtime package (``hicann/runtime``
  ``cmake/package.cmake``) installs ``<arch>-linux/include/acl``,
  ``<arch>-linux/pkg_inc/{runtime,profiling,...}`` and
  ``<arch>-linux/lib64/lib{acl_rt,runtime,...}.so``; ``include``, ``lib64`` and
  ``pkg_inc`` at the top are views (links) of those.  Both are searched.
* ``runtime/rt.h`` was ``include/experiment/runtime/runtime/rt.h`` in the
  classic toolkit and is ``pkg_inc/runtime/runtime/rt.h`` from 8.5 on, so
  ``include/experiment/runtime`` and ``pkg_inc/runtime`` are added when present
  (as Ascend's own samples and CMake modules do).  CANN 9.1 keeps
  ``prof_common.h`` in ``include/experiment/msprof/toolchain``.
* ``libascendcl.so`` is being replaced by split libraries: the runtime part of
  AscendCL (``aclrt*``, what Inductor-generated code calls) is
  ``libacl_rt.so``.  When ``libascendcl.so`` is absent, the split libraries in
  :data:`ACL_SPLIT_LIBRARIES` that the release ships are linked instead.
"""

from __future__ import annotations

import errno
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ._cache import cached
from ._errors import CannNotFoundError

#: Environment variables naming the CANN install, in the order they are tried.
CANN_ENV_VARS: tuple[str, ...] = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")

#: Install locations tried after the environment variables ("~" is expanded when tried):
#: root installs of 8.5+ and of the classic toolkit, then the same for non-root installs.
#: Read at each uncached discovery, so a test may point it at a synthetic tree.
DEFAULT_CANN_ROOTS: tuple[str, ...] = (
    "/usr/local/Ascend/cann",
    "/usr/local/Ascend/ascend-toolkit/latest",
    "~/Ascend/cann",
    "~/Ascend/ascend-toolkit/latest",
)

#: Include directories under a CANN home, in ``-I`` order; each is used when
#: it exists at the top or in the ``<arch>-linux`` sub-tree.  The first five
#: are torch_npu 2.14.0's list.
CANN_INCLUDE_SUBDIRS: tuple[str, ...] = (
    "include",
    "pkg_inc",
    "pkg_inc/profiling",
    "include/experiment",
    "include/experiment/msprof",
    "include/experiment/runtime",
    "pkg_inc/runtime",
    "include/experiment/msprof/toolchain",
)

#: Libraries linked instead of ``ascendcl`` when a release has no
#: ``libascendcl.so`` (those present are used, in this order).
ACL_SPLIT_LIBRARIES: tuple[str, ...] = ("acl_rt",)

#: Reasons ``_missing`` gives for a symlink that leads nowhere.
_BROKEN_LINK = ("is a symlink loop", "is a broken symlink")


class CannInstall(NamedTuple):
    """A CANN toolkit found on disk (all paths are real paths), as
    :func:`~inductor_device_options.ascend.find_cann` returns it.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend() as install:
        ...     cann = ascend.find_cann(default_roots=())
        >>> cann.home == install.cann, cann.libraries
        (True, ('runtime', 'ascendcl'))
    """

    #: The candidate as found (e.g. ``/usr/local/Ascend/ascend-toolkit/latest``).
    root: str
    #: Where it came from: an environment variable name or ``"default"``.
    source: str
    #: ``root`` with every symlink resolved (the versioned directory).
    home: str
    #: ``<arch>-linux`` sub-tree name that was searched.
    arch_dir: str
    include_dirs: tuple[str, ...]
    library_dirs: tuple[str, ...]
    #: CANN libraries to link: ``runtime`` and ``ascendcl`` (or the split ones).
    libraries: tuple[str, ...]


def find_cann(default_roots: Sequence[str] | None = None) -> CannInstall:
    """The CANN toolkit Inductor compiles ``npu`` kernels against.

    Tried in order: ``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME``, then ``default_roots``
    (by default ``/usr/local/Ascend/cann``, ``/usr/local/Ascend/ascend-toolkit/latest`` and
    the same under ``~/Ascend``); the first that holds ``acl/acl.h`` and an AscendCL
    runtime library wins.  A set variable that does not point at a usable toolkit is
    skipped with a :class:`RuntimeWarning` naming it (a stale ``set_env.sh`` after an
    upgrade is the usual cause).  Cached per process on the values of those variables, the
    roots and the machine architecture.

    Args:
        default_roots: The install locations tried after the environment variables
            (``~`` is expanded); ``None`` means the default install locations.

    Returns:
        The install found, with real paths (a ``latest`` link resolved).

    Raises:
        CannNotFoundError: No candidate holds CANN; the message lists every place tried,
            and says so when a ``latest`` link loops or leads nowhere.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend():  # sets $ASCEND_HOME_PATH while the block runs
        ...     cann = ascend.find_cann(default_roots=())
        >>> cann.source, cann.libraries
        ('ASCEND_HOME_PATH', ('runtime', 'ascendcl'))
    """
    roots = tuple(DEFAULT_CANN_ROOTS if default_roots is None else default_roots)
    arch_dir = cann_arch()
    return searched(tuple(os.environ.get(var, "") for var in CANN_ENV_VARS), roots, arch_dir)


@cached
def searched(
    environment: tuple[str, ...], default_roots: tuple[str, ...], arch_dir: str
) -> CannInstall:
    """:func:`find_cann` for the values of :data:`CANN_ENV_VARS` (``environment``, in
    order), kept per process."""
    return _search(dict(zip(CANN_ENV_VARS, environment, strict=True)), default_roots, arch_dir)


#: The file of a CANN release that says which it is (``version=8.5.0``), in the ``<arch>-linux``
#: sub-tree (the installation guide's "check the CANN installation").
VERSION_FILE = "ascend_toolkit_install.info"


def cann_version(cann: CannInstall) -> str | None:
    """The release ``version=`` of the toolkit's install info, or None where there is none."""
    for directory in (os.path.join(cann.home, cann.arch_dir), cann.home):
        try:
            with open(os.path.join(directory, VERSION_FILE), encoding="utf-8") as info:
                for line in info:
                    key, _, value = line.strip().partition("=")
                    if key == "version" and value:
                        return value
        except (OSError, UnicodeDecodeError):
            continue
    return None


@cached
def machine() -> str:
    """``platform.machine()`` without importing platform (CANN is Linux-only)."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def cann_arch(machine_name: str | None = None) -> str:
    """The ``<arch>-linux`` directory name CANN uses for this machine."""
    m = (machine_name if machine_name is not None else machine()).lower()
    m = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(m, m)
    return f"{m}-linux"


def _candidates(
    environ: Mapping[str, str], default_roots: Sequence[str]
) -> list[tuple[str, str, str]]:
    """``(label, path or "" if unset, source)`` for each place to try, in order."""
    candidates: list[tuple[str, str, str]] = []
    for var in CANN_ENV_VARS:
        value = environ.get(var, "")
        candidates.append((f"{var}={value}" if value else var, value, var))
    for root in default_roots:
        path = os.path.expanduser(root)
        candidates.append((path, path, "default"))
    return candidates


def _search(environ: Mapping[str, str], default_roots: Sequence[str], arch_dir: str) -> CannInstall:
    """The first usable candidate; else :class:`CannNotFoundError` listing every place
    tried and why it failed."""
    tried: list[tuple[str, str]] = []
    skipped_env: list[str] = []
    broken_links: list[str] = []
    seen: set[str] = set()
    for label, path, source in _candidates(environ, default_roots):
        if not path:
            tried.append((label, "not set"))
            continue
        key = os.path.abspath(path)
        if key in seen:
            tried.append((label, "already tried"))
            continue
        seen.add(key)
        found = _probe(path, arch_dir)
        if isinstance(found, CannInstall):
            if skipped_env:
                warnings.warn(
                    f"Ignoring {'; '.join(skipped_env)}; using the CANN toolkit at "
                    f"{found.home} instead",
                    RuntimeWarning,
                    stacklevel=4,  # _search, find_cann, its caller, that one's caller
                )
            return found._replace(root=path, source=source)
        tried.append((label, found))
        if found.startswith(_BROKEN_LINK):
            broken_links.append(path)
        if source != "default":
            skipped_env.append(f"{label} ({found})")
    raise CannNotFoundError(tried, broken_links)


def _existing_real_dirs(candidates: Iterable[str]) -> list[str]:
    out: list[str] = []
    for c in candidates:
        if os.path.isdir(c):
            real = os.path.realpath(c)
            if real not in out:
                out.append(real)
    return out


def _probe(root: str, arch_dir: str) -> CannInstall | str:
    """A CannInstall for ``root``, or why ``root`` is not a CANN toolkit."""
    if not os.path.exists(root):
        return _missing(root)
    if not os.path.isdir(root):
        return "is not a directory"
    home = os.path.realpath(root)

    def views(sub: str) -> list[str]:
        return [os.path.join(home, sub), os.path.join(home, arch_dir, sub)]

    include_roots = _existing_real_dirs(views("include"))
    if not any(os.path.isfile(os.path.join(d, "acl", "acl.h")) for d in include_roots):
        return f"no acl/acl.h under include/ or {arch_dir}/include/"
    library_dirs = _existing_real_dirs(views("lib64"))
    libraries = _libraries(library_dirs)
    if not libraries:
        wanted = ", ".join(f"lib{lib}.so" for lib in ("ascendcl", *ACL_SPLIT_LIBRARIES))
        return f"no AscendCL runtime library ({wanted}) under lib64/ or {arch_dir}/lib64/"
    include_dirs: list[str] = []
    for sub in CANN_INCLUDE_SUBDIRS:
        for d in _existing_real_dirs(views(sub)):
            if d not in include_dirs:
                include_dirs.append(d)
    return CannInstall(
        root=root,
        source="",
        home=home,
        arch_dir=arch_dir,
        include_dirs=tuple(include_dirs),
        library_dirs=tuple(library_dirs),
        libraries=libraries,
    )


def _libraries(library_dirs: Sequence[str]) -> tuple[str, ...]:
    """The CANN libraries to link from ``library_dirs``: ``runtime`` (when there) and
    AscendCL's runtime; empty when AscendCL's runtime is not there."""
    present: set[str] = set()
    for d in library_dirs:
        try:
            present.update(os.listdir(d))
        except OSError:
            continue
    if "libascendcl.so" in present:
        acl = ["ascendcl"]
    else:
        acl = [lib for lib in ACL_SPLIT_LIBRARIES if f"lib{lib}.so" in present]
    if not acl:
        return ()
    # libruntime.so ships with every release (classic toolkit and npu-runtime).
    runtime = ["runtime"] if "libruntime.so" in present else []
    return (*runtime, *acl)


def _missing(path: str) -> str:
    """Why ``path`` cannot be used although it was named: not there, a symlink loop, ..."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return f"{_BROKEN_LINK[0]} ({_link_chain(path)})"
        if error.errno in (errno.EACCES, errno.EPERM):
            return "cannot be read (permission denied)"
        if os.path.islink(path):
            return f"{_BROKEN_LINK[1]} to {os.readlink(path)}, which does not exist"
    return "does not exist"


def _link_chain(path: str) -> str:
    """``latest -> 8.0 -> latest``: the links ``path`` goes through, until one repeats."""
    chain = [path]
    while os.path.islink(chain[-1]) and len(chain) < 8:
        target = os.path.join(os.path.dirname(chain[-1]), os.readlink(chain[-1]))
        chain.append(os.path.normpath(target))
        if chain[-1] in chain[:-1]:
            break
    return " -> ".join(chain)
