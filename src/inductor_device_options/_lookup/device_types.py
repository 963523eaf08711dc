"""The one gatekeeper of device types: which names the package's doors accept.

``"npu"`` and ``"npu:0"`` name one device; torch's own devices (cpu, cuda, xpu, mps) are
never served by the package; and a name Inductor can never ask for (upper case, digits) is
refused where it is given, not left to never apply. Nothing here imports torch.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

from .._errors import InvalidDeviceTypeError, ReservedDeviceTypeError

#: Devices whose options torch computes itself; their behaviour must never change.
RESERVED_DEVICE_TYPES = frozenset({"cpu", "cuda", "xpu", "mps"})

# How the package's own lookups read a device type; what torch can ask for is stricter.
DEVICE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEVICE_INDEX = re.compile(r"[0-9]+")
# torch.device() parses a device type of letters and '_' only, and torch names every
# device in lower case: Inductor asks for nothing else.
_TORCH_DEVICE_NAME = re.compile(r"[a-z_]+")


def normalize_device_type(device_type: object) -> str:
    """``"npu"`` and ``"npu:0"`` name the same device: return ``"npu"``."""
    if not isinstance(device_type, str):
        raise InvalidDeviceTypeError(
            f"device_type must be a str such as 'npu', got {type(device_type).__name__} "
            f"{device_type!r}",
            device_type=None,
        )
    name, colon, index = device_type.partition(":")
    if not DEVICE_NAME.fullmatch(name) or (colon and not _DEVICE_INDEX.fullmatch(index)):
        raise InvalidDeviceTypeError(
            f"device_type {device_type!r} is not a device name: expected a name such as "
            "'npu', optionally with an index ('npu:0')",
            device_type=device_type,
        )
    return name


def _unaskable(name: str) -> str | None:
    """Why Inductor can never ask for device type ``name``, or None."""
    if _TORCH_DEVICE_NAME.fullmatch(name):
        return None
    if _TORCH_DEVICE_NAME.fullmatch(name.lower()):
        return (
            f"torch names devices in lower case: Inductor asks for {name.lower()!r}, never {name!r}"
        )
    return (
        f"torch.device() parses device types of letters and '_' only ({name!r} has a digit): "
        "Inductor never asks for it"
    )


class Refusal(NamedTuple):
    """Why the package's doors refuse a device name: torch's own (``reserved``), or a name
    Inductor never asks for."""

    reserved: bool
    reason: str


def refusal(name: str) -> Refusal | None:
    """Why a normalized device type cannot be served by the package, or None."""
    if name in RESERVED_DEVICE_TYPES:
        return Refusal(True, f"torch computes the options of {name!r} itself")
    unaskable = _unaskable(name)
    return None if unaskable is None else Refusal(False, unaskable)


def refuse(name: str, refused: Refusal, message: str, description: str | None = None) -> None:
    """Raise the error class of ``refused`` (reserved: :class:`ReservedDeviceTypeError`)."""
    error = ReservedDeviceTypeError if refused.reserved else InvalidDeviceTypeError
    raise error(message, device_type=name, description=description)


def cpu_labelled_builds_fix(name: str) -> str:
    """What a backend whose builds ask for "cpu" does instead of registering "cpu": every
    CPU build asks for it, so extending it would change the builds of every CPU graph."""
    if name != "cpu":
        return ""
    device = _privateuse1_name() or "DEVICE"  # a placeholder where no backend renamed it
    return (
        ". If your backend's cpp_wrapper builds ask for 'cpu', its C++ wrapper codegen (a "
        "CppWrapperCpu subclass) does not report its device: set "
        f"self.device = {device!r} in its __init__ before super().__init__(), register the "
        f"provider for {device!r}, and ship torch/csrc/inductor/cpp_wrapper/{device}.h in an "
        f"include dir it adds (`inductor-device-options doctor {device}` checks all three)"
    )


def _privateuse1_name() -> str | None:
    """The name the PrivateUse1 backend took, where torch is imported and it was renamed."""
    # torch._C._get_privateuse1_backend_name: "privateuseone" until a backend renames it.
    torch = sys.modules.get("torch")
    get_name = getattr(getattr(torch, "_C", None), "_get_privateuse1_backend_name", None)
    if get_name is None:
        return None
    name = get_name()
    return name if isinstance(name, str) and name != "privateuseone" else None
