"""Ascend NPU (torch_npu + CANN) C++ compile options for TorchInductor.

One call gives Inductor what it needs to compile and link kernels for ``npu``::

    from inductor_device_options import ascend
    ascend.register()

:func:`cpp_device_options` is the provider: the device's answer below
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
replaces torch's own function for every device, CANN is found (:func:`find_cann`) from
``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME`` or the default install
locations, in the classic ``ascend-toolkit`` layout, the 8.5+ ``cann`` layout and
their ``<arch>-linux`` sub-trees, with ``latest``-style links resolved to the
versioned directory (so Inductor's compile cache tells CANN releases apart).
torch_npu is located without being imported (:func:`find_torch_npu`; importing it
needs the device runtime).  See :mod:`inductor_device_options.ascend._cann` for the
layouts relied on.

Discovery happens when an ``npu`` build first asks for options, never at
import; it is cached per process, keyed on the environment variables it
reads (and ``sys.path``), so changing ``ASCEND_HOME_PATH`` takes effect on
the next build.  A missing CANN or torch_npu raises :class:`CannNotFoundError`
or :class:`TorchNpuNotFoundError` (both :class:`AscendOptionsError`, a
:class:`~inductor_device_options.CppDeviceOptionsError`) listing every place
tried (a ``latest`` link that loops or leads nowhere says so), with what to do as
its ``fix``; one installed under a path g++ cannot be given as one argument (a
space in a library dir, a quote, a newline: as the running torch renders each
field) raises :class:`CannPathError` saying which and what to do.

What ``doctor`` reads off the provider (``inductor_device_options._lookup.provider_attributes``):
``cpp_device_options.inductor_headers``, what torch_npu's ``CppWrapperNpu`` includes (it
cannot be imported without the device runtime), and ``cpp_device_options.doctor_hints``,
the Ascend words for its fixes and whether torch_npu is installed at all.

The modules, one job each: ``_cann`` and ``_torch_npu`` (discovery), ``_errors``,
``_headers`` and ``_hints`` (for doctor), ``_provider`` (the options),
``_registration`` (register in-process: imported when first used, since a lookup through
the entry point does not need it) and ``_cache`` (what discovery remembers). Importing this
package does not import ``torch._inductor`` (nor torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _cann, _provider, _torch_npu
from ._cann import CannInstall, find_cann
from ._errors import AscendOptionsError, CannNotFoundError, CannPathError, TorchNpuNotFoundError
from ._provider import cpp_device_options
from ._torch_npu import TorchNpuInstall, find_torch_npu

if TYPE_CHECKING:
    from ._registration import patch_get_cpp_torch_device_options, register, unregister

__all__ = [
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
    "patch_get_cpp_torch_device_options",
    "register",
    "unregister",
]


def clear_cache() -> None:
    """Forget discovered installs (after installing CANN or torch_npu in-process).

    Discovery is cached per process, keyed on the environment variables it reads: a new
    install at a path already looked up is found again only after this.

    Example:
        >>> from inductor_device_options import ascend
        >>> ascend.clear_cache()
    """
    for cache in (
        _cann.searched,
        _cann.machine,
        _torch_npu.searched,
        _provider.npu_options,
        _provider.merged,
    ):
        cache.cache_clear()


#: Loaded when first used: a lookup of ``npu`` (the entry point) does not need them.
_REGISTRATION = ("patch_get_cpp_torch_device_options", "register", "unregister")


def __getattr__(name: str) -> object:
    if name not in _REGISTRATION:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _registration

    for loaded in _REGISTRATION:
        function = getattr(_registration, loaded)
        function.__module__ = __name__
        globals()[loaded] = function
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_REGISTRATION})


# help(), reprs, tracebacks and registrations' descriptions name these where users import
# them from, not the private module that defines them.
for _public in (
    AscendOptionsError,
    CannInstall,
    CannNotFoundError,
    CannPathError,
    TorchNpuInstall,
    TorchNpuNotFoundError,
    cpp_device_options,
    find_cann,
    find_torch_npu,
):
    _public.__module__ = __name__
del _public
