"""Registering the provider for ``npu`` in this process, for torch_npu or a user that wants
it served before (or instead of) the package's entry point."""

from __future__ import annotations

import warnings
from typing import Literal

from .. import register_cpp_device_options, unregister_cpp_device_options
from ._provider import DEVICE_TYPE, cpp_device_options


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
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.introspection import device_options_source
        >>> ascend.register()
        >>> device_options_source("npu").description
        'inductor_device_options.ascend.cpp_device_options'
        >>> ascend.unregister()
        True
    """
    register_cpp_device_options(device_type, cpp_device_options)  # again: silent


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
    return unregister_cpp_device_options(device_type, cpp_device_options)


def patch_get_cpp_torch_device_options(
    device_type: str = DEVICE_TYPE,
) -> Literal["waiting", "hook", "native"]:
    """Drop-in body for torch_npu's ``torch_npu._inductor.cpp_builder`` function.

    torch_npu 2.14.0's ``patch_get_cpp_torch_device_options()`` (the *legacy*
    path this replaces) does::

        torch._inductor.cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options

    i.e. it replaces torch's own function for **every** device with its own copy,
    which drops torch's later changes (``custom_op_libs``, cross-compilation,
    fbcode paths, other backends' options) and reads only ``$ASCEND_HOME_PATH``.

    This registers :func:`cpp_device_options` for ``device_type`` instead and
    leaves every other device to the function below.  Where
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
    from ..introspection import hook_state  # only here: not loaded by a lookup

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
