"""Ascend NPU (torch_npu + CANN) C++ compile options for TorchInductor.

One call gives Inductor what it needs to compile and link kernels for ``npu``::

    from inductor_device_options import ascend
    ascend.register()

:func:`cpp_device_options` is the provider: what stock torch gives the device
(:func:`~inductor_device_options.default_cpp_device_options`: torch's include
and lib dirs, ``config.aot_inductor.custom_op_libs``) plus everything torch_npu
2.14.0's ``torch_npu/_inductor/cpp_builder.py`` adds for ``npu``:

* definition ``USE_NPU``;
* include dirs: torch_npu's ``include``, then CANN's ``include``, ``pkg_inc``,
  ``pkg_inc/profiling``, ``include/experiment``, ``include/experiment/msprof``
  and, where the release has them, ``include/experiment/runtime`` /
  ``pkg_inc/runtime`` (``runtime/rt.h`` before / after CANN 8.5) and
  ``include/experiment/msprof/toolchain``;
* library dirs: torch_npu's ``lib`` (or ``$LIBTORCH_NPU_PATH``), CANN's ``lib64``;
* libraries ``torch_npu``, ``runtime`` and ``ascendcl`` -- or, on a release
  without ``libascendcl.so``, the split AscendCL runtime library ``acl_rt``;
* passthrough ``-DBUILD_LIBTORCH=ON -Wno-unused-function``.

Unlike torch_npu's version, which reads ``$ASCEND_HOME_PATH`` only and
replaces torch's function for every device, CANN is found from
``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME`` or the default install
locations (:data:`DEFAULT_CANN_ROOTS`), in the classic ``ascend-toolkit``
layout, the 8.5+ ``cann`` layout and their ``<arch>-linux`` sub-trees, with
``latest``-style links resolved to the versioned directory (so Inductor's
compile cache tells CANN releases apart).  torch_npu is located without being
imported (importing it needs the device runtime).  See
:mod:`inductor_device_options.ascend.cann` for the layouts relied on.

Discovery happens when an ``npu`` build first asks for options, never at
import; it is cached per process, keyed on the environment variables it
reads (and ``sys.path``), so changing ``ASCEND_HOME_PATH`` takes effect on
the next build.  A missing CANN or torch_npu raises :class:`CannNotFoundError`
or :class:`TorchNpuNotFoundError` (both :class:`AscendOptionsError`, a
:class:`~inductor_device_options.CppDeviceOptionsError`) listing every place
tried (a ``latest`` link that loops or leads nowhere says so) and what to do;
one installed under a path g++ cannot be given as one argument (a space in a
library dir, a quote, a newline: as the running torch renders each field)
raises :class:`CannPathError` saying which and what to do.

What Inductor's generated code includes for ``npu`` (torch_npu's ``CppWrapperNpu``,
which cannot be imported without the device runtime) is declared for ``doctor``:
``cpp_device_options.inductor_headers`` is :func:`inductor_headers`.

Importing this module does not import ``torch._inductor`` (nor torch).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from ..diagnose.inductor_headers import HEADERS_ATTRIBUTE
from ..hook.install import default_cpp_device_options, hook_state
from ..lookup import registry as _registry
from ..lookup.registry import register_cpp_device_options, unregister_cpp_device_options
from ..options.model import CppDeviceOptions
from . import cann as _cann
from .cann import (
    ACL_SPLIT_LIBRARIES,
    CANN_ENV_VARS,
    CANN_INCLUDE_SUBDIRS,
    ENV_LIBTORCH_NPU_PATH,
    ENV_TORCH_NPU_INSTALL_PATH,
    AscendOptionsError,
    CannInstall,
    CannNotFoundError,
    CannPathError,
    TorchNpuInstall,
    TorchNpuNotFoundError,
)

__all__ = [
    "ACL_SPLIT_LIBRARIES",
    "CANN_ENV_VARS",
    "CANN_INCLUDE_SUBDIRS",
    "DEFAULT_CANN_ROOTS",
    "DEVICE_TYPE",
    "ENV_LIBTORCH_NPU_PATH",
    "ENV_TORCH_NPU_INSTALL_PATH",
    "NPU_DEFINITIONS",
    "NPU_PASSTHROUGH_ARGS",
    "AscendOptionsError",
    "CannInstall",
    "CannNotFoundError",
    "CannPathError",
    "TorchNpuInstall",
    "TorchNpuNotFoundError",
    "clear_cache",
    "cpp_device_options",
    "find_cann",
    "find_torch_npu",
    "inductor_headers",
    "npu_cpp_device_options",
    "patch_get_cpp_torch_device_options",
    "register",
    "unregister",
]

# help(), reprs and tracebacks name these where users import them from.
for _public in (
    AscendOptionsError,
    CannInstall,
    CannNotFoundError,
    CannPathError,
    TorchNpuInstall,
    TorchNpuNotFoundError,
):
    _public.__module__ = __name__
del _public

#: The PrivateUse1 name torch_npu gives its backend.
DEVICE_TYPE = "npu"

#: Install locations tried after ``$ASCEND_HOME_PATH`` and ``$ASCEND_TOOLKIT_HOME``.
#: Read at each (uncached) discovery: assign a tuple here, or pass
#: ``default_roots=``, to search elsewhere (tests use synthetic trees).
DEFAULT_CANN_ROOTS: tuple[str, ...] = _cann.DEFAULT_CANN_ROOTS

#: What torch_npu 2.14.0 defines for npu kernels.
NPU_DEFINITIONS: tuple[str, ...] = ("USE_NPU",)
#: torch_npu passes these raw (``-D`` with ``=`` does not fit ``definitions``).
NPU_PASSTHROUGH_ARGS: tuple[str, ...] = ("-DBUILD_LIBTORCH=ON", "-Wno-unused-function")

#: What torch_npu 2.14.0's C++ wrapper for npu (``CppWrapperNpu`` in
#: ``torch_npu/_inductor/codegen/cpp_wrapper_npu.py``) includes before the device header,
#: in both modes: ``write_header``'s AOTI runtime headers, then ``add_device_include``'s
#: AscendCL, runtime and torch_npu headers. ``{device}`` is the device type.
NPU_WRAPPER_HEADERS: tuple[str, ...] = (
    "torch_npu/csrc/inductor/aoti_runtime/model.h",
    "torch_npu/csrc/inductor/aoti_runtime/device_utils.h",
    "torch_npu/csrc/inductor/aoti_runtime/utils_npu.h",
    "torch_npu/csrc/inductor/aoti_torch/generated/c_shim_{device}.h",
    "fstream",
    "acl/acl.h",
    "acl/acl_rt.h",
    "runtime/runtime/rt.h",
    "torch_npu/csrc/core/npu/NPUStream.h",
    "torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h",
    "torch_npu/csrc/framework/OpCommand.h",
)

_K = TypeVar("_K")
_V = TypeVar("_V")

_lock = threading.Lock()
_cann_cache: dict[tuple[object, ...], CannInstall] = {}
_torch_npu_cache: dict[tuple[object, ...], TorchNpuInstall] = {}
_options_cache: dict[tuple[CannInstall, TorchNpuInstall], CppDeviceOptions] = {}
_MAX_CACHED = 16


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    with _lock:
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[key] = value
    return value


def find_cann(default_roots: Sequence[str] | None = None) -> CannInstall:
    """The CANN toolkit Inductor compiles ``npu`` kernels against.

    Tried in order: ``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME``, then
    ``default_roots`` (default :data:`DEFAULT_CANN_ROOTS`); the first that holds
    ``acl/acl.h`` and an AscendCL runtime library wins.  Cached per process on
    the values of those variables, the roots and the machine architecture.

    Args:
        default_roots: The install locations tried after the environment variables
            (``~`` is expanded); ``None`` means :data:`DEFAULT_CANN_ROOTS`.

    Returns:
        The install found, with real paths (a ``latest`` link resolved).

    Raises:
        CannNotFoundError: No candidate holds CANN; the message lists every place tried,
            and says so when a ``latest`` link loops or leads nowhere.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> root = tempfile.mkdtemp()  # a stand-in CANN and torch_npu
        >>> for name in ("cann/include/acl/acl.h", "cann/lib64/libascendcl.so",
        ...              "cann/lib64/libruntime.so", "torch_npu/lib/libtorch_npu.so"):
        ...     os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        ...     open(os.path.join(root, name), "w").close()
        >>> os.environ["ASCEND_HOME_PATH"] = os.path.join(root, "cann")
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = os.path.join(root, "torch_npu")
        >>> cann = ascend.find_cann(default_roots=())
        >>> cann.source, cann.libraries
        ('ASCEND_HOME_PATH', ('runtime', 'ascendcl'))
    """
    roots = tuple(DEFAULT_CANN_ROOTS if default_roots is None else default_roots)
    machine = _cann.machine()
    key = (tuple(os.environ.get(var, "") for var in CANN_ENV_VARS), roots, machine)
    cached = _cann_cache.get(key)
    if cached is not None:
        return cached
    return _remember(_cann_cache, key, _cann.find_cann(os.environ, roots, machine))


def find_torch_npu() -> TorchNpuInstall:
    """Where torch_npu is installed, found without importing it.

    ``$PYTORCH_NPU_INSTALL_PATH`` (the ``torch_npu`` package directory), else
    ``importlib.util.find_spec("torch_npu")``, else the ``torch_npu``
    distribution's metadata; ``$LIBTORCH_NPU_PATH`` overrides the directory of
    ``libtorch_npu.so``.  Cached per process on those variables and ``sys.path``.
    (Importing torch_npu would need the device's runtime.)

    Returns:
        The install found, with real paths.

    Raises:
        TorchNpuNotFoundError: torch_npu, or its ``libtorch_npu.so``, was not found; the
            message lists every place tried.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> root = tempfile.mkdtemp()  # a stand-in CANN and torch_npu
        >>> for name in ("cann/include/acl/acl.h", "cann/lib64/libascendcl.so",
        ...              "cann/lib64/libruntime.so", "torch_npu/lib/libtorch_npu.so"):
        ...     os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        ...     open(os.path.join(root, name), "w").close()
        >>> os.environ["ASCEND_HOME_PATH"] = os.path.join(root, "cann")
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = os.path.join(root, "torch_npu")
        >>> ascend.find_torch_npu().source
        'PYTORCH_NPU_INSTALL_PATH'
    """
    key = (
        os.environ.get(ENV_TORCH_NPU_INSTALL_PATH, ""),
        os.environ.get(ENV_LIBTORCH_NPU_PATH, ""),
        tuple(sys.path),
    )
    cached = _torch_npu_cache.get(key)
    if cached is not None:
        return cached
    return _remember(_torch_npu_cache, key, _cann.find_torch_npu(os.environ))


def clear_cache() -> None:
    """Forget discovered installs (after installing CANN or torch_npu in-process).

    Discovery is cached per process, keyed on the environment variables it reads: a new
    install at a path already looked up is found again only after this.

    Example:
        >>> from inductor_device_options import ascend
        >>> ascend.clear_cache()
    """
    with _lock:
        _cann_cache.clear()
        _torch_npu_cache.clear()
        _options_cache.clear()


def npu_cpp_device_options(default_roots: Sequence[str] | None = None) -> CppDeviceOptions:
    """Only what Ascend adds to torch's defaults (see the module docstring).

    Args:
        default_roots: As for :func:`find_cann`.

    Returns:
        Ascend's own options for ``npu``: ``USE_NPU``, torch_npu's and CANN's include
        and library dirs, their libraries and the passthrough args; a new copy each call.

    Raises:
        CannNotFoundError: See :func:`find_cann`.
        TorchNpuNotFoundError: See :func:`find_torch_npu`.
        CannPathError: CANN or torch_npu is installed under a path g++ cannot be given as
            one argument.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> root = tempfile.mkdtemp()  # a stand-in CANN and torch_npu
        >>> for name in ("cann/include/acl/acl.h", "cann/lib64/libascendcl.so",
        ...              "cann/lib64/libruntime.so", "torch_npu/lib/libtorch_npu.so"):
        ...     os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        ...     open(os.path.join(root, name), "w").close()
        >>> os.environ["ASCEND_HOME_PATH"] = os.path.join(root, "cann")
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = os.path.join(root, "torch_npu")
        >>> ascend.npu_cpp_device_options().libraries
        ['torch_npu', 'runtime', 'ascendcl']
    """
    cann = find_cann(default_roots)
    torch_npu = find_torch_npu()
    key = (cann, torch_npu)
    options = _options_cache.get(key)
    if options is None:
        include_dirs = [torch_npu.include_dir] if torch_npu.include_dir is not None else []
        options = CppDeviceOptions(
            definitions=list(NPU_DEFINITIONS),
            include_dirs=_unique([*include_dirs, *cann.include_dirs]),
            cflags=[],
            ldflags=[],
            libraries_dirs=_unique([torch_npu.library_dir, *cann.library_dirs]),
            libraries=_unique(["torch_npu", *cann.libraries]),
            passthrough_args=list(NPU_PASSTHROUGH_ARGS),
        )
        _check_paths(options, cann, torch_npu)
        _remember(_options_cache, key, options)
    return options.copy()


def _check_paths(options: CppDeviceOptions, cann: CannInstall, torch_npu: TorchNpuInstall) -> None:
    """Raise ``CannPathError`` for a CANN or torch_npu dir that would not reach g++ as one
    argument (a space where Inductor does not quote, a quote, a newline): the generic
    validation error would not say that CANN's location is the cause."""
    from ..options.rendering import final_value_problem

    for field in ("include_dirs", "libraries_dirs"):
        for value in getattr(options, field):
            problem = final_value_problem(field, value)
            if problem is None:
                continue
            if value == cann.home or value.startswith(cann.home + os.sep):
                found = cann.source if cann.source != "default" else "a default location"
                where = f"{cann.home!r} (found through {found}: {cann.root!r})"
                raise CannPathError("The Ascend CANN toolkit", where, value, problem)
            where = f"{torch_npu.package_dir!r} (found through {torch_npu.source})"
            raise CannPathError("torch_npu", where, value, problem)


def cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """The provider callback: torch's defaults for ``device_type`` plus Ascend's options.

    Each list is the default list followed by the Ascend values it lacks. The defaults may
    be torch_npu's own function (its legacy replacement, adopted by the hook), which lists
    CANN by another path and passes ``-DBUILD_LIBTORCH=ON -Wno-unused-function`` as one
    string: dirs are compared by real path and passthrough args by word. The package
    declares it for ``npu`` in its entry points; :func:`register` registers it.

    Args:
        device_type: The device Inductor asks about (``"npu"``).
        aot_mode: True for AOTInductor.
        compile_only: True when Inductor compiles to an object and links later.

    Returns:
        The seven lists for the device (a new copy each call).

    Raises:
        CannNotFoundError: See :func:`find_cann`.
        TorchNpuNotFoundError: See :func:`find_torch_npu`.
        CannPathError: See :func:`npu_cpp_device_options`.

    Example:
        >>> import os, tempfile
        >>> from inductor_device_options import ascend
        >>> root = tempfile.mkdtemp()  # a stand-in CANN and torch_npu
        >>> for name in ("cann/include/acl/acl.h", "cann/lib64/libascendcl.so",
        ...              "cann/lib64/libruntime.so", "torch_npu/lib/libtorch_npu.so"):
        ...     os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        ...     open(os.path.join(root, name), "w").close()
        >>> os.environ["ASCEND_HOME_PATH"] = os.path.join(root, "cann")
        >>> os.environ["PYTORCH_NPU_INSTALL_PATH"] = os.path.join(root, "torch_npu")
        >>> options = ascend.cpp_device_options("npu")
        >>> options.definitions, options.passthrough_args
        (['USE_NPU'], ['-DBUILD_LIBTORCH=ON', '-Wno-unused-function'])
    """
    added = npu_cpp_device_options()
    base = default_cpp_device_options(device_type, aot_mode, compile_only)
    key = (tuple(tuple(values) for values in base), tuple(tuple(values) for values in added))
    merged = _merged_cache.get(key)
    if merged is None:
        merged = CppDeviceOptions(
            *(
                _merged(field, default, extra)
                for field, default, extra in zip(CppDeviceOptions._fields, base, added, strict=True)
            )
        )
        _remember(_merged_cache, key, merged)
    return merged.copy()


_merged_cache: dict[tuple[tuple[tuple[str, ...], ...], ...], CppDeviceOptions] = {}


def inductor_headers(device_type: str = DEVICE_TYPE, aot_mode: bool = False) -> list[str]:
    """The headers torch_npu 2.14.0's C++ wrapper includes for ``device_type``, in order:
    :data:`NPU_WRAPPER_HEADERS`, then its device header
    (``get_device_include_path_jit`` / ``_aot``): ``torch_npu/csrc/inductor/cpp_wrapper/
    <device>.h``, with AOTInductor ``.../aoti_include/<device>.h`` (in torch_npu's
    ``include`` dir, the first of the include dirs)."""
    kind = "aoti_include" if aot_mode else "cpp_wrapper"
    return [
        *(header.format(device=device_type) for header in NPU_WRAPPER_HEADERS),
        f"torch_npu/csrc/inductor/{kind}/{device_type}.h",
    ]


# How doctor learns what Inductor's generated code includes for npu (_inductor_headers).
setattr(cpp_device_options, HEADERS_ATTRIBUTE, inductor_headers)


def _merged(field: str, default: Sequence[str], extra: Sequence[str]) -> list[str]:
    if field == "passthrough_args":
        present = {word for value in default for word in value.split()}
        return [*default, *(value for value in extra if not set(value.split()) <= present)]
    same: Callable[[str], str] = (
        os.path.realpath if field in ("include_dirs", "libraries_dirs") else str
    )
    seen = {same(value) for value in default}
    merged = list(default)
    for value in extra:
        if same(value) not in seen:
            seen.add(same(value))
            merged.append(value)
    return merged


def register(device_type: str = DEVICE_TYPE) -> None:
    """Make Inductor use :func:`cpp_device_options` for ``device_type``. Idempotent.

    Nothing is discovered now: CANN and torch_npu are looked up when a build
    first asks for ``npu`` options.

    Args:
        device_type: The device to serve; torch_npu's is ``"npu"``.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.
        ReservedDeviceTypeError: ``device_type`` is one of torch's own devices.

    Example:
        >>> import inductor_device_options as ido
        >>> from inductor_device_options import ascend
        >>> ascend.register()
        >>> ido.device_options_source("npu").description
        'inductor_device_options.ascend.cpp_device_options'
        >>> ascend.unregister()
        True
    """
    name = _registry.normalize_device_type(device_type)
    current = _registry.registered_provider(name)
    if current is not None and current.callback is cpp_device_options:
        return
    register_cpp_device_options(name, cpp_device_options)


def unregister(device_type: str = DEVICE_TYPE) -> bool:
    """Undo :func:`register`.

    A registration of another callback for the device is left alone.

    Args:
        device_type: As given to :func:`register`.

    Returns:
        True if :func:`cpp_device_options` was registered for ``device_type``.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Example:
        >>> from inductor_device_options import ascend
        >>> ascend.register()
        >>> ascend.unregister(), ascend.unregister()
        (True, False)
    """
    name = _registry.normalize_device_type(device_type)
    current = _registry.registered_provider(name)
    if current is None or current.callback is not cpp_device_options:
        return False
    return unregister_cpp_device_options(name)


def patch_get_cpp_torch_device_options(
    device_type: str = DEVICE_TYPE,
) -> Literal["waiting", "hook", "native"]:
    """Drop-in body for torch_npu's ``torch_npu._inductor.cpp_builder`` function.

    torch_npu 2.14.0's ``patch_get_cpp_torch_device_options()`` (the *legacy*
    path this replaces) does::

        torch._inductor.cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options

    i.e. it replaces torch's function for **every** device with its own copy,
    which drops torch's later changes (``custom_op_libs``, cross-compilation,
    fbcode paths, other backends' options) and reads only ``$ASCEND_HOME_PATH``.

    This registers :func:`cpp_device_options` for ``device_type`` instead and
    leaves torch's function in charge of every other device.  Where
    ``torch._inductor.cpp_builder`` has the upstream
    ``register_cpp_device_options``, the registration goes through it
    (:mod:`inductor_device_options` registers natively and does not replace
    anything); elsewhere this package's hook asks the registered provider.

    The legacy replacement, if it is still applied, is adopted by the hook and serves
    only what no registration does.

    Args:
        device_type: The device to serve; torch_npu's is ``"npu"``.

    Returns:
        How registrations reach Inductor: ``"native"``, ``"hook"``, or ``"waiting"``
        (installs when ``torch._inductor.cpp_builder`` is imported).

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Warns:
        RuntimeWarning: The module's ``__dict__`` was written past the hook, so
            registrations do not reach Inductor until ``inductor_device_options.arm()``.

    Example:
        >>> from inductor_device_options import ascend
        >>> ascend.patch_get_cpp_torch_device_options() in ("waiting", "hook", "native")
        True
        >>> ascend.unregister()
        True
    """
    register(device_type)
    state = hook_state()
    if state.replaced_by is not None:
        warnings.warn(
            f"torch._inductor.cpp_builder.get_cpp_torch_device_options was written past the "
            f"hook by {state.replaced_by}; the {device_type!r} options registered by "
            "inductor_device_options.ascend do not reach Inductor until "
            "inductor_device_options.arm() installs the hook again",
            RuntimeWarning,
            stacklevel=2,
        )
    return state.mode


def _unique(values: Sequence[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
