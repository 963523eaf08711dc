"""The one place that touches ``torch._inductor.cpp_builder``.

Inductor asks ``cpp_builder.get_cpp_torch_device_options`` (a module-global lookup at
call time, from ``CppTorchDeviceOptions.__init__``). We either

* **hook**: replace that function once with one that asks, in order, the registered
  provider, the declared entry point, the device's ``DeviceInterface.get_cpp_device_options``
  (torch 2.15's hook, backported), and finally the function that was there before
  (stock torch or another backend's patch), called with its arguments unchanged; or
* **native**: when torch itself has ``register_cpp_device_options`` (the upstream form
  of this design), register a dispatcher per device there and leave torch's function alone.

Importing torch._inductor costs about a second, so nothing here imports it eagerly:
``arm()`` installs as soon as ``torch._inductor.cpp_builder`` is imported by anyone.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from . import _registry
from ._chain import (
    FUNCTION,
    AdoptedFunction,
    Args,
    Chain,
    DeviceOptionsFunction,
    Kwargs,
    Serve,
    Thunk,
    bypassing,
    flags,
    is_bypassed,
    make_adopting,
    pending_default,
    pending_default_for,
)
from ._errors import add_note
from ._options import CppDeviceOptions
from ._resolve import CPP_BUILDER, interface_with_cpp_options, resolve

if TYPE_CHECKING:
    import importlib.machinery

_FUNCTION = FUNCTION
_NATIVE_REGISTER = "register_cpp_device_options"
_NATIVE_REGISTRY = "_cpp_device_options_registry"
# Never a registered device: asking torch's native function for it gives the
# defaults every out-of-tree device gets, bypassing its registry.
_DEFAULTS_PROBE_DEVICE = "inductor_device_options_defaults_probe"

OptionsTuple = tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]
_lock = threading.RLock()


class _Installation(NamedTuple):
    module: ModuleType
    mode: Literal["hook", "native"]
    chain: Chain
    native_register: Callable[[str, DeviceOptionsFunction], None] | None = None

    @property
    def previous(self) -> DeviceOptionsFunction:
        """The function there when the hook was installed (native: torch's own)."""
        return self.chain.base


_installation: _Installation | None = None
_watcher: _CppBuilderImportWatcher | None = None


_backport_active: bool | None = None


def device_interface_backport_active() -> bool:
    """True where torch's own function does not consult DeviceInterface (torch < 2.15)
    and this package hooks it (with torch's native registry there is no hook to do it)."""
    global _backport_active
    if _installation is not None and _installation.mode == "native":
        return False
    if _backport_active is None:
        from torch._dynamo.device_interface import DeviceInterface

        _backport_active = not hasattr(DeviceInterface, "get_cpp_device_options")
    return _backport_active


# --- the hook ---------------------------------------------------------------------------


def _serve_hook(device_type: str, args: Args, kwargs: Kwargs, default: Thunk) -> Any:
    """The package's own sources (hook mode), with ``default`` as the device's defaults."""
    aot_mode, compile_only = flags(args, kwargs)
    _check_cpp_stdlib(device_type, args, kwargs, lambda: _served_by_package(device_type))
    with pending_default(device_type, aot_mode, compile_only, default):
        options = resolve(device_type, aot_mode, compile_only, use_device_interface=True)
    return None if options is None else options.as_tuple()


def _check_cpp_stdlib(
    device_type: str, args: Args, kwargs: Kwargs, served_by: Callable[[], str | None]
) -> None:
    """torch 2.15 rejects a ``cpp_stdlib=`` it would ignore (``_validate_cpp_stdlib``) before
    it looks for a device's options: a device the package serves is checked the same way,
    before its provider is called. ``served_by()`` names the provider, None: not served."""
    cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
    if cpp_stdlib is None or cpp_stdlib == "libstdc++":  # torch's default: nothing to check
        return
    validate = getattr(_installed().module, "_validate_cpp_stdlib", None)
    if validate is None:  # before 2.15 torch has no such parameter
        return
    provider = served_by()
    if provider is None:  # the function below decides, as without the package
        return
    aot_mode, _ = flags(args, kwargs)
    try:
        validate(cpp_stdlib, device_type, aot_mode)
    except Exception as error:
        add_note(
            error,
            f"device {device_type!r} gets its C++ options from {provider}; torch checks "
            "cpp_stdlib for it as for its own devices",
        )
        raise


def _served_by_package(device_type: str) -> str | None:
    source = device_options_source(device_type)
    return None if source.source == "torch" else f"the {source.source} {source.description}"


def _native_dispatcher(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> OptionsTuple:
    name = _registry.normalize_device_type(device_type)
    if is_bypassed(name):
        # Computing the device's default, and torch's function asked its registry anyway (a
        # function adopted after the hook called torch's own): give torch's defaults.
        installation = _installed()
        return installation.previous(_DEFAULTS_PROBE_DEVICE, aot_mode, compile_only)  # type: ignore[no-any-return]
    options = resolve(name, aot_mode, compile_only, use_device_interface=False)
    if options is None:  # The registration went away: give what torch gives.
        options = default_cpp_device_options(name, aot_mode, compile_only)
    return options.as_tuple()


def _native_functions(
    module: ModuleType, base: DeviceOptionsFunction
) -> tuple[Serve, Callable[[Args, Kwargs], Any]]:
    """serve and base_default where torch's own function consults its registry."""

    def registered_natively(device_type: str) -> bool:
        return device_type in getattr(module, _NATIVE_REGISTRY, {})

    def serve(device_type: str, args: Args, kwargs: Kwargs, default: Thunk) -> Any:
        callback = getattr(module, _NATIVE_REGISTRY, {}).get(device_type)
        if callback is None:
            return None
        # torch's function checks cpp_stdlib before it asks its registry; the package's
        # dispatcher stays registered after its device is unregistered, and then serves nothing.
        _check_cpp_stdlib(
            device_type,
            args,
            kwargs,
            lambda: (
                _served_by_package(device_type)
                if callback is _native_dispatcher
                else f"torch's registry: {_registry.describe_callable(callback)}"
            ),
        )
        # What torch's function does for a registered device, asked directly: a function
        # assigned before the hook may stand where torch's was.
        aot_mode, compile_only = flags(args, kwargs)
        with pending_default(device_type, aot_mode, compile_only, default):
            return callback(device_type, aot_mode, compile_only)

    def base_default(args: Args, kwargs: Kwargs) -> Any:
        # Asking torch's function for a device it has no registration for gives the
        # defaults every out-of-tree device gets, bypassing its registry.
        device_type = args[0] if args else kwargs.get("device_type")
        if type(device_type) is str and registered_natively(device_type):
            args, kwargs = _for_device(_DEFAULTS_PROBE_DEVICE, args, kwargs)
        return base(*args, **kwargs)

    return serve, base_default


def _for_device(device_type: str, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
    if args:
        return (device_type, *args[1:]), kwargs
    return args, {**kwargs, "device_type": device_type}


def install(module: ModuleType) -> None:
    """Install into an imported ``cpp_builder`` module; idempotent.

    Installs again where the module was executed anew (``importlib.reload``) or its
    attribute was written past the chain.
    """
    global _installation
    with _lock:
        current = module.__dict__[_FUNCTION]
        installation = _installation
        if (
            installation is not None
            and installation.module is module
            and installation.chain.owns(current)
        ):
            return
        native_register = getattr(module, _NATIVE_REGISTER, None)
        if callable(native_register):
            serve, base_default = _native_functions(module, current)
            chain = Chain(module, current, serve, base_default)
            _installation = _Installation(module, "native", chain, native_register)
            make_adopting(module, chain)
            if _forward_registration not in _registry._registration_listeners:
                _registry._registration_listeners.append(_forward_registration)
            for device_type in _registry.registered_device_types():
                _forward_registration(device_type)
            for device_type in _registry.declared_entry_points():
                _forward_registration(device_type, overwrite=False)
            return
        chain = Chain(module, current, _serve_hook, lambda args, kwargs: current(*args, **kwargs))
        _installation = _Installation(module, "hook", chain)
        make_adopting(module, chain)


def _forward_registration(device_type: str, *, overwrite: bool = True) -> None:
    installation = _installation
    if installation is None or installation.native_register is None:
        return
    if device_type in _registry.RESERVED_DEVICE_TYPES:
        return
    with _lock:
        native_registry = getattr(installation.module, _NATIVE_REGISTRY, {})
        existing = native_registry.get(device_type)
        if existing is _native_dispatcher:
            return
        if existing is not None and not overwrite:
            return  # Someone registered with torch directly: a declaration must not win over it.
        installation.native_register(device_type, _native_dispatcher)


class _InstallAfterExec:
    """Wraps cpp_builder's loader. (Plain classes: importlib.abc costs milliseconds.)"""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        install(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for tools
        return getattr(self._loader, name)


class _CppBuilderImportWatcher:
    """Stays on sys.meta_path: ``importlib.reload(cpp_builder)`` finds the module's spec
    again, and executing it anew writes torch's function past the chain."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != CPP_BUILDER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _InstallAfterExec(spec.loader)  # type: ignore[assignment]
        return spec


def arm() -> None:
    """Install now if cpp_builder is imported, else as soon as it is. Cheap; idempotent."""
    global _watcher
    with _lock:
        if _watcher is None or _watcher not in sys.meta_path:
            _watcher = _CppBuilderImportWatcher()
            sys.meta_path.insert(0, _watcher)
        module = sys.modules.get(CPP_BUILDER)
        if module is not None and module.__dict__.get(_FUNCTION) is not None:
            install(module)


def _installed() -> _Installation:
    """Import cpp_builder (which installs us) and return the installation."""
    installation = _installation
    if installation is not None:  # providers call this on every lookup: no locks then
        return installation
    arm()
    import torch._inductor.cpp_builder as cpp_builder

    install(cpp_builder)
    assert _installation is not None
    return _installation


# --- what callers see -------------------------------------------------------------------


def default_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """What ``device_type`` gets without this package's sources, so a provider can extend
    the defaults instead of copying them.

    During a lookup: what the function below the package gave (stock torch, or the
    replacement another backend assigned), with the lookup's own arguments (torch 2.15's
    ``cpp_stdlib=`` included). Outside one: what the chain gives the device when the
    package does not serve it.
    """
    name = _registry.normalize_device_type(device_type)
    installation = _installed()
    pending = pending_default_for(name, bool(aot_mode), bool(compile_only))
    if pending is not None:
        result = pending()
    else:
        with bypassing(name):
            result = installation.module.__dict__[_FUNCTION](name, aot_mode, compile_only)
    return CppDeviceOptions(*(list(values) for values in result))


def get_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """Exactly what Inductor's ``CppTorchDeviceOptions`` gets for ``device_type``."""
    # Inductor passes device names without an index; torch's native registry only knows those.
    name = _registry.normalize_device_type(device_type)
    module = _installed().module
    result = getattr(module, _FUNCTION)(
        device_type=name, aot_mode=aot_mode, compile_only=compile_only
    )
    return CppDeviceOptions(*(list(values) for values in result))


def package_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions | None:
    """What this package's own sources give ``device_type`` (None: it has none), as
    Inductor gets them from the package: the chain around it left out."""
    name = _registry.normalize_device_type(device_type)
    if name in _registry.RESERVED_DEVICE_TYPES:
        return None
    installation = _installed()
    options = resolve(
        name, aot_mode, compile_only, use_device_interface=installation.mode == "hook"
    )
    return None if options is None else options.copy()


class HookState(NamedTuple):
    """Where this package stands in ``torch._inductor.cpp_builder``.

    ``mode``: ``"hook"`` (the package's function is installed), ``"native"`` (torch has
    ``register_cpp_device_options``; providers are registered through it) or ``"waiting"``
    (installs when ``torch._inductor.cpp_builder`` is first imported).
    ``chains_to``: the function that was there when the hook was installed.
    ``adopted``: functions assigned to the attribute since, in order, each with how it
    was seen to behave (a replacement, or wrapping the hook).
    ``replaced_by``: set only when the module's ``__dict__`` was written past the chain;
    registrations then do not reach Inductor.
    """

    torch_version: str
    mode: Literal["waiting", "hook", "native"]
    chains_to: str | None
    replaced_by: str | None
    device_interface_backport: bool | None
    adopted: tuple[AdoptedFunction, ...] = ()

    @property
    def registrations_apply(self) -> bool:
        return self.replaced_by is None

    def describe(self) -> str:
        if self.mode == "waiting":
            line = "waiting: installs when torch._inductor.cpp_builder is first imported"
        elif self.mode == "native":
            line = f"native: torch has {_NATIVE_REGISTER}; providers are registered through it"
        else:
            line = f"hook installed, chaining to {self.chains_to}"
        if self.adopted:
            line += "; adopted after it: " + ", ".join(
                f"{function.description} ({function.behaviour})" for function in self.adopted
            )
        if self.replaced_by is not None:
            line += (
                f"; REPLACED past the hook by {self.replaced_by} (written to the module's "
                "__dict__ directly): registrations do not reach Inductor until "
                "inductor_device_options.arm() installs the hook again"
            )
        return line


class DeviceOptionsSource(NamedTuple):
    """Where a device's options come from, found without calling the provider.

    ``source``: ``"registration"``, ``"entry point"``, ``"device interface"`` or
    ``"torch"`` (the function below the package: stock torch or a replacement).
    """

    device_type: str
    source: Literal["registration", "entry point", "device interface", "torch"]
    description: str


def device_options_source(device_type: str) -> DeviceOptionsSource:
    """Which source serves ``device_type``, in lookup order. Loads no provider."""
    name = _registry.normalize_device_type(device_type)
    if name not in _registry.RESERVED_DEVICE_TYPES:
        provider = _registry.registered_provider(name)
        if provider is not None:
            return DeviceOptionsSource(name, "registration", provider.description)
        entry_point = _registry.declared_entry_points().get(name)
        if entry_point is not None:
            return DeviceOptionsSource(
                name, "entry point", _registry.describe_entry_point(entry_point)
            )
        interface = served_interface(name)
        if interface is not None:
            return DeviceOptionsSource(
                name,
                "device interface",
                f"{_registry.describe_callable(interface)}.get_cpp_device_options",
            )
    installation = _installation
    if installation is None:
        return DeviceOptionsSource(name, "torch", "stock torch")
    descriptions = [
        *(function.description for function in reversed(installation.chain.adopted())),
        _registry.describe_callable(installation.previous),
    ]
    return DeviceOptionsSource(name, "torch", " over ".join(descriptions))


def known_device_options_sources() -> list[DeviceOptionsSource]:
    """Every device this process knows a source for: torch's own, registered, declared,
    and devices whose DeviceInterface defines get_cpp_device_options."""
    from torch._dynamo.device_interface import get_registered_device_interfaces

    names = set(_registry.RESERVED_DEVICE_TYPES)
    names.update(_registry.registered_device_types())
    names.update(_registry.declared_entry_points())
    if _serves_device_interfaces():
        names.update(
            name
            for name, interface in get_registered_device_interfaces()
            if getattr(interface, "get_cpp_device_options", None) is not None
        )
    return [device_options_source(name) for name in sorted(names)]


def _serves_device_interfaces() -> bool:
    # The hook asks DeviceInterface.get_cpp_device_options itself on every torch (on 2.15
    # too, so that its options are validated and get custom_op_libs); with torch's native
    # registry, torch's function does (2.15) or nothing does.
    installation = _installation
    return installation is None or installation.mode == "hook"


def served_interface(device_type: str) -> type | None:
    """The DeviceInterface whose get_cpp_device_options the hook asks for ``device_type``."""
    if not _serves_device_interfaces():
        return None
    return interface_with_cpp_options(device_type)


def hook_state() -> HookState:
    """Report the hook's state without importing torch._inductor."""
    import torch

    installation = _installation
    if installation is None:
        return HookState(torch.__version__, "waiting", None, None, None)
    current = installation.module.__dict__.get(_FUNCTION)
    chain = installation.chain
    replaced_by = None
    if not chain.owns(current):
        replaced_by = _registry.describe_callable(current)
    return HookState(
        torch_version=torch.__version__,
        mode=installation.mode,
        chains_to=_registry.describe_callable(installation.previous),
        replaced_by=replaced_by,
        device_interface_backport=(
            installation.mode == "hook" and device_interface_backport_active()
        ),
        adopted=chain.adopted(),
    )
