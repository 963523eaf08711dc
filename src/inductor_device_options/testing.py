"""Helpers for a backend's tests: a registration for a ``with`` block, the one reset of the
package's state, and a stand-in Ascend install for tests of the Ascend provider on a machine
without one.

Example:
    >>> from inductor_device_options import get_cpp_device_options
    >>> from inductor_device_options.testing import registered_cpp_device_options
    >>> def acme_options(device_type, aot_mode, compile_only):
    ...     return (["USE_ACME"], [], [], [], [], [], [])
    >>> with registered_cpp_device_options("acme", acme_options):
    ...     get_cpp_device_options("acme").definitions
    ['USE_ACME']
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple
from unittest import mock

from . import _state
from ._lookup.registry import registered_cpp_device_options

__all__ = ["StandInAscend", "registered_cpp_device_options", "reset", "stand_in_ascend"]

#: What the stand-in holds: the files the Ascend provider looks for, empty.
_STAND_IN_FILES = (
    "cann/include/acl/acl.h",
    "cann/lib64/libascendcl.so",
    "cann/lib64/libruntime.so",
    "torch_npu/lib/libtorch_npu.so",
)


def reset() -> None:
    """Forget registrations, loaded and declared providers, guarantees, warnings given and
    every cache, the Ascend provider's included: the state of a process that just imported
    the package. The hook stays where it is installed.

    Example:
        >>> import inductor_device_options as ido
        >>> def acme_options(device_type, aot_mode, compile_only):
        ...     return (["USE_ACME"], [], [], [], [], [], [])
        >>> ido.register_cpp_device_options("acme", acme_options)
        >>> ido.testing.reset()
        >>> ido.introspection.device_options_source("acme").kind
        'torch'
    """
    _state.reset()
    ascend = sys.modules.get(f"{__package__}.ascend")
    if ascend is not None:  # a provider like any backend's: it keeps its own caches
        ascend.clear_cache()


class StandInAscend(NamedTuple):
    """A stand-in Ascend install, as :func:`stand_in_ascend` made it."""

    #: The CANN release (``$ASCEND_HOME_PATH``): ``include/acl/acl.h``, and
    #: ``lib64/libascendcl.so`` and ``lib64/libruntime.so``, empty.
    cann: str
    #: The torch_npu package dir (``$PYTORCH_NPU_INSTALL_PATH``): ``lib/libtorch_npu.so``.
    torch_npu: str


@contextmanager
def stand_in_ascend() -> Iterator[StandInAscend]:
    """A stand-in CANN release and torch_npu install, of empty files in a new temporary dir,
    which ``$ASCEND_HOME_PATH`` and ``$PYTORCH_NPU_INSTALL_PATH`` name while the block runs.
    Afterwards the environment is as it was before the block, and the dir is removed.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend() as install:
        ...     ascend.find_torch_npu().package_dir == install.torch_npu
        True
    """
    root = os.path.realpath(tempfile.mkdtemp(prefix="stand-in-ascend-"))
    try:
        for name in _STAND_IN_FILES:
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        install = StandInAscend(os.path.join(root, "cann"), os.path.join(root, "torch_npu"))
        named = {"ASCEND_HOME_PATH": install.cann, "PYTORCH_NPU_INSTALL_PATH": install.torch_npu}
        with mock.patch.dict(os.environ, named):
            yield install
    finally:
        shutil.rmtree(root, ignore_errors=True)
