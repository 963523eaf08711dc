"""What the hook serves for a device past the chain: the package's sources, found and served
in one call to ``_lookup/resolve``, between Inductor's question and the answer below; and how
a call of ``get_cpp_torch_device_options`` passes its arguments.

Nothing here knows the installation (``_hook/installation``): the chain hands in the
``cpp_builder`` module it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._errors import add_note
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._options.model import CppDeviceOptions
from .._source import FoundSource
from .._torch_names import REGISTRY

if TYPE_CHECKING:
    from .._lookup.resolve import AnswerBelow

Args = tuple[Any, ...]
Kwargs = dict[str, Any]
DeviceOptionsFunction = Callable[..., Any]

# Never a registered device: asking torch's native function for it gives the defaults every
# out-of-tree device gets, bypassing its registry (torch with the design's registry, native
# there with upstream/pytorch's patch: its get_cpp_torch_device_options reads
# _cpp_device_options_registry only for a device registered in it).
DEFAULTS_PROBE_DEVICE = "inductor_device_options_defaults_probe"


def device_type_of(args: Args, kwargs: Kwargs) -> Any:
    """The ``device_type`` of a call of ``get_cpp_torch_device_options``, however passed."""
    return args[0] if args else kwargs.get("device_type")


def flags(args: Args, kwargs: Kwargs) -> tuple[bool, bool]:
    """``aot_mode`` and ``compile_only`` of a call, however they were passed."""
    aot_mode = args[1] if len(args) > 1 else kwargs.get("aot_mode", False)
    compile_only = args[2] if len(args) > 2 else kwargs.get("compile_only", False)
    return bool(aot_mode), bool(compile_only)


def for_device(device_type: str, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
    """The same call, for ``device_type``."""
    if args:
        return (device_type, *args[1:]), kwargs
    return args, {**kwargs, "device_type": device_type}


def torch_registry(module: ModuleType) -> Mapping[str, object] | None:
    # Read at each lookup, as torch's own function reads its module global.
    registry = module.__dict__.get(REGISTRY)
    return registry if isinstance(registry, Mapping) else None


def serve_device(
    module: ModuleType,
    device_type: str,
    args: Args,
    kwargs: Kwargs,
    answer_below: AnswerBelow,
    own_dispatcher: object = None,
    *,
    serve_interfaces: bool = True,
) -> Any:
    """What the package's sources give a normalized device asked of ``module``'s function
    (``cpp_builder``), or None: none serves it. The package's own door gives a fresh
    :class:`CppDeviceOptions`, torch's doors what their callback returns.
    ``own_dispatcher`` and ``serve_interfaces``: as ``_lookup.resolve.find_source`` takes
    them."""
    registry = torch_registry(module)
    if device_type in RESERVED_DEVICE_TYPES and (registry is None or device_type not in registry):
        return None
    # _lookup/resolve loads with the first lookup of a device torch does not know: torch's
    # own devices, which every process that compiles asks for, never need it.
    from .._lookup import resolve

    aot_mode, compile_only = flags(args, kwargs)
    served = resolve.serve_device(
        device_type,
        registry,
        aot_mode,
        compile_only,
        answer_below,
        serve_interfaces=serve_interfaces,
        own_dispatcher=own_dispatcher,
        check=_cpp_stdlib_check(module, device_type, args, kwargs),
    )
    # Shared by every lookup that finished the same values: each caller gets its own lists.
    return served.copy() if isinstance(served, CppDeviceOptions) else served


def _cpp_stdlib_check(
    module: ModuleType, device_type: str, args: Args, kwargs: Kwargs
) -> Callable[[FoundSource], None] | None:
    """torch 2.15 rejects a ``cpp_stdlib=`` it would ignore (``_validate_cpp_stdlib``) before
    it looks for a device's options: a device the package serves is checked the same way,
    before its provider is loaded or called. Only a source with the package's guarantees
    gets a note naming it: a registration through torch's door gets torch's error exactly.
    None: nothing to check (torch's default, or a torch before 2.15, which has no such
    parameter)."""
    cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
    if cpp_stdlib is None or cpp_stdlib == "libstdc++":
        return None
    validate = getattr(module, "_validate_cpp_stdlib", None)
    if validate is None:
        return None
    aot_mode, _ = flags(args, kwargs)

    def check(found: FoundSource) -> None:
        try:
            validate(cpp_stdlib, device_type, aot_mode)
        except Exception as error:
            source = found.source
            if source.guaranteed:
                add_note(
                    error,
                    f"device {device_type!r} gets its C++ options from the {source.kind} "
                    f"{source.description}; torch checks cpp_stdlib for it as for its own "
                    "devices",
                )
            raise

    return check
