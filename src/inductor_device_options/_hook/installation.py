"""The hook's installation in ``cpp_builder``, as ``_hook/install`` stores it in the package's
state, and what is asked of it outside a lookup: a device's answer below, its source, and the
dispatcher the package registers in torch's native registry.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, Literal, NamedTuple

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES, normalize_device_type
from .._lookup.interfaces import interface_defining_cpp_options
from .._options.model import CppDeviceOptions
from .._source import FoundSource
from .._torch_names import CPP_BUILDER, FUNCTION
from .backports import is_torch_function
from .chain import Chain
from .disable import DISABLE_ENV, disabled
from .in_progress import bypassing, is_bypassed
from .serve import (
    DEFAULTS_PROBE_DEVICE,
    DeviceOptionsFunction,
    device_type_of,
    for_device,
    serve_device,
    torch_registry,
)

OptionsTuple = tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]


class Installation(NamedTuple):
    module: ModuleType
    mode: Literal["hook", "native"]
    chain: Chain
    #: torch's register_cpp_device_options (native mode).
    native_register: Callable[[str, DeviceOptionsFunction], None] | None = None
    #: Whether the chain's lowest link asks DeviceInterface.get_cpp_device_options as
    #: torch 2.15 does (a torch before 2.15, whose own function does not).
    backport: bool = False

    @property
    def function_below(self) -> DeviceOptionsFunction:
        """The function there when the hook was installed (native: torch's own)."""
        return self.chain.function_below


def installed() -> Installation:
    """The installation; importing ``cpp_builder`` first where it is not imported yet (the
    package's import watcher installs the hook then)."""
    installation = current_installation()
    if installation is not None:
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
    installation = _state.installation
    # _hook/install stores nothing else there; _state names the type by a Protocol alone.
    return installation if isinstance(installation, Installation) else None


def native_dispatcher(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> OptionsTuple:
    """What this package registers in torch's native registry for its registrations."""
    name = normalize_device_type(device_type)
    installation = installed()
    if is_bypassed(name):
        # Computing the device's answer below, and torch's own function asked its registry
        # anyway (a function adopted after the hook called it): give torch's defaults.
        defaults: OptionsTuple = installation.function_below(
            DEFAULTS_PROBE_DEVICE, aot_mode, compile_only
        )
        return defaults
    served = serve_device(
        installation.module,
        name,
        (name, aot_mode, compile_only),
        {},
        lambda: answer_below(name, aot_mode, compile_only),
        own_dispatcher=native_dispatcher,
        # It stands for the package's registrations alone: a guaranteed DeviceInterface is
        # the chain's to serve, above torch's function.
        serve_interfaces=False,
    )
    if served is None:  # The registration went away: give what torch gives.
        return answer_below(name, aot_mode, compile_only)
    return served  # type: ignore[no-any-return]


def answer_below(device_type: str, aot_mode: bool, compile_only: bool) -> CppDeviceOptions:
    """A normalized device's answer below, outside a lookup of it: what Inductor's function
    gives the device with the package's sources left out, as fresh lists."""
    module = installed().module
    with bypassing(device_type):
        result = module.__dict__[FUNCTION](device_type, aot_mode, compile_only)
    return CppDeviceOptions.of(result)


def skipping_registry(
    module: ModuleType, function_below: DeviceOptionsFunction
) -> DeviceOptionsFunction:
    """In native mode, how the chain asks the function below: torch's registry left out."""
    torchs_own = is_torch_function(function_below)

    def answering(*args: Any, **kwargs: Any) -> Any:
        device_type = device_type_of(args, kwargs)
        registry = torch_registry(module) or {}
        if type(device_type) is str and device_type in registry:
            if not torchs_own:
                # A backend's function (a replacement assigned before the package) answers
                # for the device itself; where it calls torch's own, the registry's entry
                # for the device, while bypassed, gives the defaults (native_dispatcher).
                with bypassing(device_type):
                    return function_below(*args, **kwargs)
            # Asking torch's own function (native mode: upstream/pytorch's patch) for a
            # device it has no registration for gives the defaults every out-of-tree device
            # gets, bypassing its registry (DEFAULTS_PROBE_DEVICE).
            args, kwargs = for_device(DEFAULTS_PROBE_DEVICE, args, kwargs)
        return function_below(*args, **kwargs)

    return answering


def source_of(device_type: str) -> FoundSource | None:
    """The package's source for a normalized device (not loaded), or None: it does not
    serve it."""
    module = sys.modules.get(CPP_BUILDER)
    registry = torch_registry(module) if module is not None else None
    if device_type in RESERVED_DEVICE_TYPES and (registry is None or device_type not in registry):
        return None
    from .._lookup.resolve import find_source

    return find_source(
        device_type, registry, serve_interfaces=True, own_dispatcher=native_dispatcher
    )


def is_served(device_type: str) -> bool:
    """Whether the package knows a source of options for ``device_type`` (either door)."""
    return source_of(device_type) is not None or interface_answering(device_type) is not None


def interface_answering(device_type: str) -> type | None:
    """The device's DeviceInterface, where the function below asks it: torch 2.15's own
    function, or the backport around torch's own before 2.15."""
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
