"""torch 2.15's ``DeviceOpOverrides.aten_device_type()`` and ``cpp_utils.device_to_aten()``
on torch before 2.15.

torch 2.15's C++ wrapper asks the device's registered ``DeviceOpOverrides`` which
``at::k...`` device type to emit for a device (``codegen_device``, ``codegen_ivalue``).
Earlier torch reads the fixed dict ``cpp_utils.DEVICE_TO_ATEN`` and asserts the device is in
it. When ``cpp_utils`` is imported, :func:`install` replaces that dict with
:class:`AtenDeviceTypes`: the same entries, which always win (torch's own and those a
backend writes), and for any other device the answer of its overrides' ``aten_device_type()``,
validated as torch 2.15 validates it. A device whose overrides do not define it is not in the
dict, as before: torch's own assertion reports it. ``cpp_utils.device_to_aten`` is given under
its 2.15 name.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol, cast

from .._torch_names import ATEN_DEVICE_TYPE, DEVICE_TO_ATEN, DEVICE_TO_ATEN_FUNCTION
from .backports import BACKPORT_MARK
from .install import rebind


class _Torch215Overrides(Protocol):
    """A device's ``DeviceOpOverrides`` as torch 2.15 declares it: torch 2.6 to 2.14's class
    (and the stubs of the running torch) lacks ``aten_device_type``, so it is asked only of
    overrides that define it; what it answers is validated."""

    def aten_device_type(self) -> object: ...


class NoAtenDeviceType(RuntimeError):
    """The device has no ``DeviceOpOverrides`` defining ``aten_device_type()`` (torch 2.15's
    message and type)."""


def aten_device_type_of(device_type: str) -> str:
    """What the device's registered overrides answer, validated as torch 2.15 does
    (``codegen.cpp_utils.device_to_aten``, whose messages these are).
    Raises:
        NoAtenDeviceType: no overrides are registered, or they do not define it.
        RuntimeError: the answer is not an ``at::k<identifier>`` expression.
    """
    from torch._inductor.codegen.common import DeviceOpOverrides, get_device_op_overrides

    try:
        overrides = get_device_op_overrides(device_type)
    except KeyError:
        overrides = None  # torch 2.13 raises KeyError; 2.6 returns None
    if overrides is None:
        raise NoAtenDeviceType(
            f"No ATen device type mapping for {device_type}: no DeviceOpOverrides "
            f"is registered; call register_device_op_overrides({device_type!r}, ...)."
        )
    name = type(overrides).__name__
    # 2.15 compares the class attribute with DeviceOpOverrides'; before 2.15 the base class
    # has no aten_device_type at all (getattr's None).
    method = getattr(type(overrides), ATEN_DEVICE_TYPE, None)
    if method is None or method is getattr(DeviceOpOverrides, ATEN_DEVICE_TYPE, None):
        raise NoAtenDeviceType(
            f"No ATen device type mapping for {device_type}: "
            f"{name} does not implement aten_device_type()."
        )
    aten_device_type = cast(_Torch215Overrides, overrides).aten_device_type()
    if not isinstance(aten_device_type, str) or not aten_device_type.startswith("at::k"):
        raise RuntimeError(
            f"{name}.aten_device_type() must return an ATen device type expression "
            f"starting with 'at::k', got {aten_device_type!r}"
        )
    if not aten_device_type[len("at::k") :].isidentifier():
        raise RuntimeError(
            f"{name}.aten_device_type() must return an ATen device type expression with "
            f"a valid identifier suffix after 'at::k', got {aten_device_type!r}"
        )
    return aten_device_type


class AtenDeviceTypes(dict[str, str]):
    """``cpp_utils.DEVICE_TO_ATEN`` that also knows every device whose overrides define
    ``aten_device_type()``. Its own entries win, then those written to the dict it replaced
    (a backend may hold that one by name), then the overrides."""

    def __init__(self, replaced: dict[str, str]):
        super().__init__(replaced)
        self.replaced = replaced

    # torch 2.6-2.14's CppWrapperCpu.codegen_device asserts ``device.type in DEVICE_TO_ATEN``
    # and then indexes it, so both ``in`` and ``[]`` must know a device only its overrides
    # name; dict's own methods read the stored entries without coming back here.
    def _asked(self, device_type: object) -> str | None:
        if not isinstance(device_type, str):
            return None
        if dict.__contains__(self, device_type):
            return dict.__getitem__(self, device_type)
        if device_type in self.replaced:
            return self.replaced[device_type]
        try:
            return aten_device_type_of(device_type)
        except NoAtenDeviceType:
            return None

    def __contains__(self, device_type: object) -> bool:
        return self._asked(device_type) is not None

    def __missing__(self, device_type: str) -> str:
        found = self._asked(device_type)
        if found is None:
            raise KeyError(device_type)
        return found

    def get(self, device_type: str, default: Any = None) -> Any:
        found = self._asked(device_type)
        return default if found is None else found


def install(cpp_utils: ModuleType) -> None:
    """Backport into an imported ``cpp_utils`` where this did not run already (``install``
    calls it only where torch lacks ``device_to_aten``, before 2.15)."""
    table = cpp_utils.__dict__.get(DEVICE_TO_ATEN)
    if not isinstance(table, dict) or isinstance(table, AtenDeviceTypes):
        return
    # Rebound in every torch module: cpp_wrapper_cpu (2.6-2.14) imports the dict by name.
    rebind(DEVICE_TO_ATEN, table, AtenDeviceTypes(table))
    module_dict = cpp_utils.__dict__

    def device_to_aten(device_type: str) -> str:
        """The ``at::k...`` device type of ``device_type`` (torch 2.15's name and errors; an
        entry of ``DEVICE_TO_ATEN`` wins).

        (Backported by inductor-device-options.)
        """
        if device_type == "meta":  # as torch 2.15: meta has no registered overrides
            return "at::kMeta"
        entries = module_dict[DEVICE_TO_ATEN]  # the module global, read at call time
        if device_type in entries:
            return str(entries[device_type])
        return aten_device_type_of(device_type)

    device_to_aten.__module__ = cpp_utils.__name__
    setattr(device_to_aten, BACKPORT_MARK, True)
    module_dict[DEVICE_TO_ATEN_FUNCTION] = device_to_aten
