"""What the hook serves: the package's sources for a device, in lookup order, between
Inductor's question and the function below the package, and who serves a device.

The installation itself (``install``) stores an :class:`Installation` in the package's
state; everything here reads it from there.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .. import _state
from .._errors import add_note
from .._lookup.device_types import RESERVED_DEVICE_TYPES, normalize_device_type
from .._lookup.interfaces import interface_defining_cpp_options
from .._lookup.registry import DeviceOptionsSource
from .._options.model import CppDeviceOptions
from .._torch_names import CPP_BUILDER, FUNCTION, REGISTRY
from .chain import Args, Chain, DeviceOptionsFunction, Kwargs, device_type_of, flags
from .disable import DISABLE_ENV, disabled
from .in_progress import bypassing, is_bypassed, offering_answer_below

# Never a registered device: asking torch's native function for it gives the
# defaults every out-of-tree device gets, bypassing its registry.
DEFAULTS_PROBE_DEVICE = "inductor_device_options_defaults_probe"

if TYPE_CHECKING:
    from .._lookup.resolve import Thunk

OptionsTuple = tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]


class Installation(NamedTuple):
    module: ModuleType
    mode: Literal["hook", "native"]
    chain: Chain
    native_register: Callable[[str, DeviceOptionsFunction], None] | None = None
    #: Whether the chain's lowest link asks DeviceInterface.get_cpp_device_options as
    #: torch 2.15 does (a torch before 2.15, whose own function does not).
    backport: bool = False

    @property
    def function_below(self) -> DeviceOptionsFunction:
        """The function there when the hook was installed (native: torch's own)."""
        return self.chain.function_below


@functools.cache
def resolve_module() -> ModuleType:
    """``_lookup.resolve``, imported on the first lookup of a served device (torch's own
    never need it). Cached: an import statement costs about 1 µs at each lookup."""
    from .._lookup import resolve

    return resolve


def installed() -> Installation:
    """The installation; importing ``cpp_builder`` first where it is not imported yet (the
    package's import watcher installs the hook then)."""
    installation: Installation | None = _state.installation
    if installation is not None:  # providers call this on every lookup: no locks, no call
        return installation
    import torch._inductor.cpp_builder  # noqa: F401

    if _state.installation is None and _state.watcher is not None:
        # Imported past the watcher (a finder placed before it): install into it now.
        _state.watcher.arm()
    installation = current_installation()
    if installation is None:
        if disabled():
            raise RuntimeError(
                f"inductor-device-options is disabled in this process by {DISABLE_ENV}=1: "
                "it installs nothing into torch; unset the variable to use it"
            )
        raise RuntimeError(
            "inductor-device-options: the hook is not installed in "
            "torch._inductor.cpp_builder: call inductor_device_options.arm()"
        )
    return installation


def current_installation() -> Installation | None:
    """The installation, or None while waiting for ``cpp_builder`` to be imported."""
    installation: Installation | None = _state.installation
    return installation


def serve_device(device_type: str, args: Args, kwargs: Kwargs, answer_below: Thunk) -> Any:
    """The package's sources for ``device_type``; ``answer_below()``: what is below them."""
    aot_mode, compile_only = flags(args, kwargs)
    source = source_of(device_type)
    check_cpp_stdlib(device_type, args, kwargs, source)
    with offering_answer_below(device_type, aot_mode, compile_only, answer_below):
        served = resolve_module().serve(source, aot_mode, compile_only, answer_below=answer_below)
    return served.as_tuple() if isinstance(served, CppDeviceOptions) else served


def torch_registry(module: ModuleType) -> Mapping[str, object] | None:
    # Read at each lookup, as torch's function reads its module global.
    registry = module.__dict__.get(REGISTRY)
    return registry if isinstance(registry, Mapping) else None


def check_cpp_stdlib(
    device_type: str, args: Args, kwargs: Kwargs, source: DeviceOptionsSource | None
) -> None:
    """torch 2.15 rejects a ``cpp_stdlib=`` it would ignore (``_validate_cpp_stdlib``) before
    it looks for a device's options: a device the package serves is checked the same way,
    before its provider is loaded or called. ``source``: None: not served. Only a source
    with the package's guarantees gets a note naming it: a registration through torch's
    door gets torch's error exactly."""
    cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
    if cpp_stdlib is None or cpp_stdlib == "libstdc++":  # torch's default: nothing to check
        return
    validate = getattr(installed().module, "_validate_cpp_stdlib", None)
    if validate is None:  # before 2.15 torch has no such parameter
        return
    if source is None:  # the function below decides, as without the package
        return
    aot_mode, _ = flags(args, kwargs)
    try:
        validate(cpp_stdlib, device_type, aot_mode)
    except Exception as error:
        if source.guaranteed:
            add_note(
                error,
                f"device {device_type!r} gets its C++ options from the {source.kind} "
                f"{source.description}; torch checks cpp_stdlib for it as for its own devices",
            )
        raise


def native_dispatcher(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> OptionsTuple:
    """What this package registers in torch's native registry for its registrations."""
    resolve = resolve_module()
    name = normalize_device_type(device_type)
    function_below = installed().function_below
    if is_bypassed(name):
        # Computing the device's answer below, and torch's function asked its registry anyway
        # (a function adopted after the hook called torch's own): give torch's defaults.
        defaults: OptionsTuple = function_below(DEFAULTS_PROBE_DEVICE, aot_mode, compile_only)
        return defaults
    served: object | None = resolve.serve(
        resolve.find_source(name, None, serve_interfaces=False),
        aot_mode,
        compile_only,
        answer_below=lambda: answer_below_for_device(name, aot_mode, compile_only),
    )
    if served is None:  # The registration went away: give what torch gives.
        return answer_below_for_device(name, aot_mode, compile_only)
    return served.as_tuple() if isinstance(served, CppDeviceOptions) else served  # type: ignore[return-value]


def answer_below_for_device(device_type: str, aot_mode: bool, compile_only: bool) -> OptionsTuple:
    """A normalized device's answer below, outside a lookup of it: what Inductor's function
    gives the device with the package's sources left out, as fresh lists."""
    with bypassing(device_type):
        result = installed().module.__dict__[FUNCTION](device_type, aot_mode, compile_only)
    return tuple(list(values) for values in result)  # type: ignore[return-value]


def native_answer_below_for(
    module: ModuleType, function_below: DeviceOptionsFunction
) -> DeviceOptionsFunction:
    """In native mode, a call's answer below: torch's function, its registry left out."""

    def answer_below_for(*args: Any, **kwargs: Any) -> Any:
        # Asking torch's function for a device it has no registration for gives the
        # defaults every out-of-tree device gets, bypassing its registry.
        device_type = device_type_of(args, kwargs)
        registry = torch_registry(module) or {}
        if type(device_type) is str and device_type in registry:
            args, kwargs = for_device(DEFAULTS_PROBE_DEVICE, args, kwargs)
        return function_below(*args, **kwargs)

    return answer_below_for


def for_device(device_type: str, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
    if args:
        return (device_type, *args[1:]), kwargs
    return args, {**kwargs, "device_type": device_type}


def is_served(device_type: str) -> bool:
    """Whether the package knows a source of options for ``device_type`` (either door)."""
    return source_of(device_type) is not None or interface_answering(device_type) is not None


def source_of(device_type: str) -> DeviceOptionsSource | None:
    """The package's source for a normalized device (not loaded), or None."""
    module = sys.modules.get(CPP_BUILDER)
    registry = torch_registry(module) if module is not None else None
    if device_type in RESERVED_DEVICE_TYPES and (registry is None or device_type not in registry):
        return None
    source: DeviceOptionsSource | None = resolve_module().find_source(
        device_type, registry, serve_interfaces=True, own_dispatcher=native_dispatcher
    )
    return source


def interface_answering(device_type: str) -> type | None:
    """The device's DeviceInterface, where the function below asks it: torch 2.15's own
    function, or the backport around stock torch."""
    if device_type in RESERVED_DEVICE_TYPES:
        return None
    interface = interface_defining_cpp_options(device_type)
    if interface is None:
        return None
    installation = current_installation()
    if installation is not None and installation.backport:
        return interface
    from torch._dynamo.device_interface import DeviceInterface

    return interface if hasattr(DeviceInterface, "get_cpp_device_options") else None
