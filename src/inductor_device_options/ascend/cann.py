"""Locate an Ascend CANN toolkit and a torch_npu install on disk.

Pure file-system discovery for :mod:`inductor_device_options.ascend`: no torch,
no torch_npu import, no device runtime.  Everything here is a function of the
environment variables, ``sys.path`` and the files on disk; the results are
cached per process by :mod:`inductor_device_options.ascend`.

What the layouts look like (what this module relies on)
-------------------------------------------------------
* torch_npu 2.14.0 ``torch_npu/_inductor/cpp_builder.py`` uses
  ``$ASCEND_HOME_PATH`` only and adds ``include``, ``pkg_inc``,
  ``pkg_inc/profiling``, ``include/experiment``, ``include/experiment/msprof``
  and ``lib64`` under it; it links ``torch_npu``, ``runtime`` and ``ascendcl``.
  Its wheel ships ``torch_npu/include`` and ``torch_npu/lib/libtorch_npu.so``;
  ``torch_npu/utils/cpp_extension.py`` takes the install dir as
  ``dirname(realpath(torch_npu.__file__))`` and the library dir may be
  overridden with ``LIBTORCH_NPU_PATH``.
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
import functools
import importlib.util
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from .._errors import CppDeviceOptionsError

__all__ = [
    "ACL_SPLIT_LIBRARIES",
    "CANN_ENV_VARS",
    "CANN_INCLUDE_SUBDIRS",
    "DEFAULT_CANN_ROOTS",
    "ENV_LIBTORCH_NPU_PATH",
    "ENV_TORCH_NPU_INSTALL_PATH",
    "AscendOptionsError",
    "CannInstall",
    "CannNotFoundError",
    "CannPathError",
    "TorchNpuInstall",
    "TorchNpuNotFoundError",
    "cann_arch",
    "find_cann",
    "find_torch_npu",
]

#: Environment variables naming the CANN install, in the order they are tried.
CANN_ENV_VARS: tuple[str, ...] = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")

#: Default install locations tried after the environment variables ("~" is
#: expanded when tried): root installs of 8.5+ and of the classic toolkit, then
#: the same for non-root installs.
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

#: Overrides where torch_npu is installed (the ``torch_npu`` package directory).
ENV_TORCH_NPU_INSTALL_PATH = "PYTORCH_NPU_INSTALL_PATH"
#: Overrides the directory holding ``libtorch_npu.so`` (as torch_npu does).
ENV_LIBTORCH_NPU_PATH = "LIBTORCH_NPU_PATH"

_SET_ENV_HINT = (
    "source CANN's environment script, e.g. `source /usr/local/Ascend/cann/set_env.sh` "
    "(CANN 8.5 and later) or `source /usr/local/Ascend/ascend-toolkit/set_env.sh` "
    "(earlier releases), or set ASCEND_HOME_PATH to the CANN install directory"
)


_PROVIDER = "inductor_device_options.ascend.cpp_device_options"


class AscendOptionsError(CppDeviceOptionsError):
    """The Ascend ``npu`` compile options cannot be produced.

    The base class of the Ascend provider's errors, a
    :class:`~inductor_device_options.CppDeviceOptionsError` for device ``"npu"`` whose
    ``provider`` is ``inductor_device_options.ascend.cpp_device_options``. The message ends
    with a ``Fix:`` line, which ``inductor-device-options doctor`` shows as the fix.

    Example:
        >>> from inductor_device_options import ascend
        >>> issubclass(ascend.CannNotFoundError, ascend.AscendOptionsError)
        True
    """


def _not_found_message(missing: str, tried: Sequence[tuple[str, str]], fix: str) -> str:
    return "\n".join(
        [
            f"Could not find {missing} for the 'npu' device.",
            "Tried:",
            *(f"  - {where}: {why}" for where, why in tried),
            f"Fix: {fix}.",
        ]
    )


class CannNotFoundError(AscendOptionsError):
    """No usable CANN toolkit was found; the message lists every place tried.

    Args:
        tried: ``(where, why)`` for each place tried, in order.
        broken_links: ``latest``-style links that loop or lead nowhere; the fix then says
            how to re-point them.

    Attributes:
        tried: As given.

    Example:
        >>> import os
        >>> from inductor_device_options import ascend
        >>> for variable in ascend.CANN_ENV_VARS:
        ...     os.environ.pop(variable, None)
        >>> try:
        ...     ascend.find_cann(default_roots=())
        ... except ascend.CannNotFoundError as error:
        ...     print(error.tried)
        (('ASCEND_HOME_PATH', 'not set'), ('ASCEND_TOOLKIT_HOME', 'not set'))
    """

    def __init__(self, tried: Sequence[tuple[str, str]], broken_links: Sequence[str] = ()):
        self.tried: tuple[tuple[str, str], ...] = tuple(tried)
        fix = _SET_ENV_HINT
        if broken_links:
            links = ", ".join(broken_links)
            fix = (
                f"re-point {links} at the installed CANN release "
                f"(`ln -sfn <release directory> {broken_links[0]}`), or {fix}"
            )
        message = _not_found_message(
            "the Ascend CANN toolkit needed to compile Inductor kernels", self.tried, fix
        )
        super().__init__(message, device_type="npu", provider=_PROVIDER)


class CannPathError(AscendOptionsError):
    """CANN or torch_npu is installed where Inductor cannot pass its paths to g++.

    A space in a library dir (Inductor does not quote ``-L``), a quote or a newline
    anywhere: the value would not reach g++ as one argument. A symlink with a plain name
    does not help, since Inductor compiles with real paths.

    Args:
        what: The install at fault (``"The Ascend CANN toolkit"`` or ``"torch_npu"``).
        where: Where it is installed and how it was found.
        value: The include or library dir that g++ cannot be given.
        problem: Why, as the running torch renders that field.

    Attributes:
        value: As given.

    Example:
        >>> from inductor_device_options import ascend
        >>> error = ascend.CannPathError(
        ...     "torch_npu", "'/opt/my env/torch_npu'", "/opt/my env/torch_npu/lib", "is split"
        ... )
        >>> error.value, error.device_type
        ('/opt/my env/torch_npu/lib', 'npu')
    """

    def __init__(self, what: str, where: str, value: str, problem: str) -> None:
        self.value = value
        message = (
            f"{what} is installed at {where}, a path Inductor cannot pass to the compiler for "
            f"the 'npu' device: {value!r} {problem}.\n"
            f"Fix: install (or move) it to a path without whitespace, quotes, backslashes or "
            "newlines, such as /usr/local/Ascend, and point ASCEND_HOME_PATH (or "
            "PYTORCH_NPU_INSTALL_PATH for torch_npu) at it. A symlink with a plain name does "
            "not help: Inductor compiles with real paths."
        )
        super().__init__(message, device_type="npu", provider=_PROVIDER)


class TorchNpuNotFoundError(AscendOptionsError):
    """torch_npu (or its ``libtorch_npu.so``) was not found; lists every place tried.

    Args:
        tried: ``(where, why)`` for each place tried, in order.
        fix: What to do, for the message's ``Fix:`` line.

    Attributes:
        tried: As given.

    Example:
        >>> import os
        >>> from inductor_device_options import ascend
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = "/nonexistent/torch_npu"
        >>> try:
        ...     ascend.find_torch_npu()
        ... except ascend.TorchNpuNotFoundError as error:
        ...     print(error.tried[0])
        ('PYTORCH_NPU_INSTALL_PATH=/nonexistent/torch_npu', 'is not a directory')
    """

    def __init__(self, tried: Sequence[tuple[str, str]], fix: str) -> None:
        self.tried: tuple[tuple[str, str], ...] = tuple(tried)
        message = _not_found_message(
            "torch_npu, which Inductor needs to compile kernels", self.tried, fix
        )
        super().__init__(message, device_type="npu", provider=_PROVIDER)


class CannInstall(NamedTuple):
    """A CANN toolkit found on disk (all paths are real paths), as
    :func:`~inductor_device_options.ascend.find_cann` returns it.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> home = tempfile.mkdtemp()  # a stand-in CANN release
        >>> for name in ("include/acl/acl.h", "lib64/libascendcl.so", "lib64/libruntime.so"):
        ...     os.makedirs(os.path.dirname(os.path.join(home, name)), exist_ok=True)
        ...     open(os.path.join(home, name), "w").close()
        >>> os.environ["ASCEND_HOME_PATH"] = home
        >>> cann = ascend.find_cann(default_roots=())
        >>> cann.home == os.path.realpath(home), cann.libraries
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


class TorchNpuInstall(NamedTuple):
    """A torch_npu install found without importing it (real paths), as
    :func:`~inductor_device_options.ascend.find_torch_npu` returns it.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> package_dir = tempfile.mkdtemp()  # a stand-in torch_npu package
        >>> os.makedirs(os.path.join(package_dir, "lib"))
        >>> open(os.path.join(package_dir, "lib", "libtorch_npu.so"), "w").close()
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = package_dir
        >>> found = ascend.find_torch_npu()
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


@functools.cache
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


def _existing_real_dirs(candidates: Iterable[str]) -> list[str]:
    out: list[str] = []
    for c in candidates:
        if os.path.isdir(c):
            real = os.path.realpath(c)
            if real not in out:
                out.append(real)
    return out


def _probe_cann(root: str, arch_dir: str) -> CannInstall | str:
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
        wanted = ", ".join(f"lib{lib}.so" for lib in ("ascendcl", *ACL_SPLIT_LIBRARIES))
        return f"no AscendCL runtime library ({wanted}) under lib64/ or {arch_dir}/lib64/"
    # libruntime.so ships with every release (classic toolkit and npu-runtime).
    runtime = ["runtime"] if "libruntime.so" in present else []

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
        libraries=(*runtime, *acl),
    )


#: Reasons ``_missing`` gives for a symlink that leads nowhere.
_BROKEN_LINK = ("is a symlink loop", "is a broken symlink")


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


def find_cann(
    environ: Mapping[str, str],
    default_roots: Sequence[str],
    machine_name: str | None = None,
) -> CannInstall:
    """Find CANN: the environment variables, then ``default_roots``, first usable wins.

    A set variable that does not point at a usable toolkit is skipped with a
    :class:`RuntimeWarning` naming it (a stale ``set_env.sh`` after an
    upgrade is the usual cause); when nothing is usable,
    :class:`CannNotFoundError` lists every place tried and why it failed.
    """
    arch_dir = cann_arch(machine_name)
    tried: list[tuple[str, str]] = []
    skipped_env: list[str] = []
    broken_links: list[str] = []
    candidates: list[tuple[str, str, str]] = []  # (label, path or "" if unset, source)
    for var in CANN_ENV_VARS:
        value = environ.get(var, "")
        candidates.append((f"{var}={value}" if value else var, value, var))
    for root in default_roots:
        path = os.path.expanduser(root)
        candidates.append((path, path, "default"))

    seen: set[str] = set()
    for label, path, source in candidates:
        if not path:
            tried.append((label, "not set"))
            continue
        key = os.path.abspath(path)
        if key in seen:
            tried.append((label, "already tried"))
            continue
        seen.add(key)
        found = _probe_cann(path, arch_dir)
        if isinstance(found, CannInstall):
            if skipped_env:
                warnings.warn(
                    f"Ignoring {'; '.join(skipped_env)}; using the CANN toolkit at "
                    f"{found.home} instead",
                    RuntimeWarning,
                    stacklevel=4,
                )
            return found._replace(root=path, source=source)
        tried.append((label, found))
        if found.startswith(_BROKEN_LINK):
            broken_links.append(path)
        if source != "default":
            skipped_env.append(f"{label} ({found})")
    raise CannNotFoundError(tried, broken_links)


def _torch_npu_from_dir(
    package_dir: str, source: str, environ: Mapping[str, str]
) -> TorchNpuInstall | tuple[str, str]:
    """A TorchNpuInstall for ``package_dir``, or (where, why) it is not usable."""
    package_dir = os.path.realpath(package_dir)
    include = os.path.join(package_dir, "include")
    lib_override = environ.get(ENV_LIBTORCH_NPU_PATH, "")
    library_dir = lib_override or os.path.join(package_dir, "lib")
    if not os.path.isfile(os.path.join(library_dir, "libtorch_npu.so")):
        where = f"{ENV_LIBTORCH_NPU_PATH}={lib_override}" if lib_override else library_dir
        return where, "no libtorch_npu.so"
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


def find_torch_npu(environ: Mapping[str, str]) -> TorchNpuInstall:
    """Find the torch_npu package directory without importing torch_npu.

    Order: ``$PYTORCH_NPU_INSTALL_PATH`` (the ``torch_npu`` package directory),
    ``importlib.util.find_spec("torch_npu")`` (which locates a top-level
    package without executing it), then the ``torch_npu`` distribution's
    files via :mod:`importlib.metadata`.  ``$LIBTORCH_NPU_PATH`` overrides the
    directory of ``libtorch_npu.so`` as in torch_npu.  A set
    ``$PYTORCH_NPU_INSTALL_PATH`` that is not usable is skipped with a
    :class:`RuntimeWarning`; :class:`TorchNpuNotFoundError` lists every place tried.
    """
    tried: list[tuple[str, str]] = []
    seen: set[str] = set()
    skipped_override: str | None = None

    def attempt(package_dir: str, source: str) -> TorchNpuInstall | None:
        real = os.path.realpath(package_dir)
        if real in seen:
            return None  # the same directory by another route: already reported
        seen.add(real)
        result = _torch_npu_from_dir(real, source, environ)
        if isinstance(result, TorchNpuInstall):
            if skipped_override is not None:
                warnings.warn(
                    f"Ignoring {skipped_override}; using torch_npu at {result.package_dir} instead",
                    RuntimeWarning,
                    stacklevel=5,
                )
            return result
        if result not in tried:
            tried.append(result)
        return None

    override = environ.get(ENV_TORCH_NPU_INSTALL_PATH, "")
    if not override:
        tried.append((ENV_TORCH_NPU_INSTALL_PATH, "not set"))
    elif not os.path.isdir(override):
        tried.append((f"{ENV_TORCH_NPU_INSTALL_PATH}={override}", "is not a directory"))
        skipped_override = f"{ENV_TORCH_NPU_INSTALL_PATH}={override} (is not a directory)"
    else:
        found = attempt(override, ENV_TORCH_NPU_INSTALL_PATH)
        if found is not None:
            return found
        skipped_override = f"{ENV_TORCH_NPU_INSTALL_PATH}={override} ({tried[-1][1]})"

    spec_dir = _spec_dir()
    if spec_dir is None:
        tried.append(("importlib.util.find_spec('torch_npu')", "not found on sys.path"))
    else:
        found = attempt(spec_dir, "find_spec")
        if found is not None:
            return found

    meta_dir = _metadata_dir()
    if meta_dir is None:
        tried.append(("importlib.metadata.distribution('torch_npu')", "not installed"))
    elif not os.path.isdir(meta_dir):
        tried.append((meta_dir, "does not exist"))
    else:
        found = attempt(meta_dir, "metadata")
        if found is not None:
            return found

    if any(why == "no libtorch_npu.so" for _, why in tried):
        fix = (
            f"reinstall torch_npu, or set {ENV_LIBTORCH_NPU_PATH} to the directory "
            "holding libtorch_npu.so"
        )
    else:
        fix = (
            "install torch_npu for this torch version (pip install torch-npu) in this "
            f"Python environment, or set {ENV_TORCH_NPU_INSTALL_PATH} to the torch_npu "
            "package directory"
        )
    raise TorchNpuNotFoundError(tried, fix)
