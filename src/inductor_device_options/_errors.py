"""The errors this package raises: each names the device and the provider at fault."""

from __future__ import annotations


def add_note(error: BaseException, note: str) -> None:
    """Say where an error raised by other code came from, keeping its type and message."""
    if hasattr(error, "add_note"):  # Python >= 3.11
        error.add_note(note)


class CppDeviceOptionsError(Exception):
    """Base class: something about a device's C++ options is wrong.

    ``device_type`` is the device the error is about; ``provider`` describes the
    callback, entry point or interface that computed (or failed to compute) its options.
    """

    def __init__(
        self, message: str, *, device_type: str | None = None, provider: str | None = None
    ):
        super().__init__(message)
        self.device_type = device_type
        self.provider = provider


class InvalidDeviceTypeError(CppDeviceOptionsError, ValueError):
    """The device type is not a device name such as ``"npu"`` or ``"npu:0"``."""


class ReservedDeviceTypeError(CppDeviceOptionsError, ValueError):
    """The device is one whose options torch computes itself (cpu, cuda, xpu, mps)."""


class InvalidProviderError(CppDeviceOptionsError, TypeError):
    """The callback given for a device is not callable."""


class InvalidCppDeviceOptionsError(CppDeviceOptionsError, ValueError):
    """A provider returned options the compiler command line would reject or misread.

    ``field`` is one of the seven list names (or ``None`` when the whole result is
    malformed); ``value`` is the offending object.
    """

    def __init__(
        self,
        message: str,
        *,
        device_type: str,
        provider: str,
        field: str | None = None,
        value: object = None,
    ):
        super().__init__(message, device_type=device_type, provider=provider)
        self.field = field
        self.value = value


class ProviderLoadError(CppDeviceOptionsError, ImportError):
    """A declared provider (entry point) could not be loaded."""


class ProviderRecursionError(CppDeviceOptionsError, RecursionError):
    """A device's provider asked, directly or not, for the options of that same device."""


PROVIDER_ATTRIBUTE = "_inductor_device_options_provider"


def raised_by_provider(error: BaseException) -> str | None:
    """The provider whose call raised ``error`` (its description), or None when the error
    is not a provider's: the package's own, or raised outside a provider call."""
    provider = getattr(error, PROVIDER_ATTRIBUTE, None)
    return provider if isinstance(provider, str) else None
