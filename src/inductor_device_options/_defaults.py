"""What a device gets without the package's sources, for a provider to extend: the answer
below, as the lookup under way offers it, or as the hook computes it outside one."""

from __future__ import annotations

from ._hook.installation import answer_below
from ._lookup.device_types import normalize_device_type
from ._options.model import CppDeviceOptions
from ._state import this_thread


def default_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """What ``device_type`` gets without this package's sources: for a provider to extend.

    Inside a lookup (a provider calling it): the answer below of this very lookup, what
    torch's own function or the replacement another backend assigned gave, with the
    lookup's own arguments (torch 2.15's ``cpp_stdlib=`` included). Outside one: what
    Inductor's function gives the device when the package does not serve it. It calls no
    provider of the package, so a provider may call it for its own device.

    Args:
        device_type: ``"npu"`` or ``"npu:0"``.
        aot_mode: AOTInductor (True) or cpp_wrapper / JIT (False).
        compile_only: options for compiling to an object only (True), or for linking too.

    Returns:
        A :class:`CppDeviceOptions` of fresh lists, free to extend.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Example:
        >>> import inductor_device_options as ido
        >>> def acme_options(device_type, aot_mode, compile_only):
        ...     options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        ...     options.definitions.append("USE_ACME")
        ...     return options
        >>> torch_only = ido.default_cpp_device_options("acme")
        >>> with ido.testing.registered_cpp_device_options("acme", acme_options):
        ...     served = ido.get_cpp_device_options("acme")
        ...     assert ido.default_cpp_device_options("acme") == torch_only
        >>> served.definitions == [*torch_only.definitions, "USE_ACME"]
        True
    """
    aot_mode, compile_only = bool(aot_mode), bool(compile_only)
    # Inside a lookup (a provider asking), the answer the lookup offers, read from the state
    # alone: none of the rooms of the lookup under way (_hook, _lookup) is entered again.
    # The innermost offer comes first.
    for offer in reversed(this_thread.offers):
        if offer[:3] == (device_type, aot_mode, compile_only):
            return CppDeviceOptions.of(offer[3]())  # type: ignore[arg-type]
    name = normalize_device_type(device_type)
    if name != device_type:  # "npu:0": the offer, if any, is for "npu"
        return default_cpp_device_options(name, aot_mode, compile_only)
    return answer_below(name, aot_mode, compile_only)
