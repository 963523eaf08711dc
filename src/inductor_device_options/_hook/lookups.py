"""What callers ask of the hook: the options Inductor gets for a device, and the package's
own answer. What a device gets without the package is ``_defaults``'s."""

from __future__ import annotations

from .._lookup import resolve
from .._lookup.device_types import normalize_device_type
from .._options.model import CppDeviceOptions
from .._torch_names import FUNCTION
from .in_progress import bypassing
from .installation import installed, source_of


def get_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """Exactly what Inductor's ``CppTorchDeviceOptions`` gets for ``device_type``: the
    answer of ``torch._inductor.cpp_builder.get_cpp_torch_device_options``, whoever gives
    it (imports ``torch._inductor``).

    Args:
        device_type: ``"npu"`` or ``"npu:0"`` (asked for as ``"npu"``, as Inductor does).
        aot_mode: AOTInductor (True) or cpp_wrapper / JIT (False).
        compile_only: options for compiling to an object only (True), or for linking too.

    Returns:
        A :class:`CppDeviceOptions` of fresh lists.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.
        InvalidCppDeviceOptionsError: a provider of the package's door returned options
            g++ would not receive as meant.
        ProviderLoadError: the device's declared provider cannot be imported.
        Exception: whatever the device's provider raises, with a note naming it (Python
            3.11 and later).

    Example:
        >>> import inductor_device_options as ido
        >>> options = ido.get_cpp_device_options("cpu", aot_mode=True)
        >>> isinstance(options, ido.CppDeviceOptions), options._fields[0]
        (True, 'definitions')
    """
    # Inductor passes device names without an index; torch's native registry only knows those.
    name = normalize_device_type(device_type)
    module = installed().module
    result = getattr(module, FUNCTION)(
        device_type=name, aot_mode=aot_mode, compile_only=compile_only
    )
    return CppDeviceOptions.of(result)


def package_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions | None:
    """What this package's sources give ``device_type`` (None: they do not serve it), the
    chain around them left out."""
    name = normalize_device_type(device_type)
    module = installed().module
    with bypassing(name):
        served: object | None = resolve.serve(
            source_of(name),
            aot_mode,
            compile_only,
            answer_below=lambda: module.__dict__[FUNCTION](name, aot_mode, compile_only),
        )
    if served is None:
        return None
    return CppDeviceOptions.of(served)  # type: ignore[arg-type]
