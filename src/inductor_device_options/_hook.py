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
from ._options import CppDeviceOptions
from ._resolve import interface_with_cpp_options, resolve

if TYPE_CHECKING:
    import importlib.machinery

CPP_BUILDER = "torch._inductor.cpp_builder"
_FUNCTION = "get_cpp_torch_device_options"
_NATIVE_REGISTER = "register_cpp_device_options"
_NATIVE_REGISTRY = "_cpp_device_options_registry"
_HOOK_MARK = "__inductor_device_options_hook__"
# Never a registered device: asking torch's native function for it gives the
# defaults every out-of-tree device gets, bypassing its registry.
_DEFAULTS_PROBE_DEVICE = "inductor_device_options_defaults_probe"

OptionsTuple = tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]
DeviceOptionsFunction = Callable[..., Any]

_lock = threading.RLock()


class _Installation(NamedTuple):
    module: ModuleType
    mode: Literal["hook", "native"]
    previous: DeviceOptionsFunction  # hook: what we chain to; native: torch's function
    hook: DeviceOptionsFunction | None = None
    native_register: Callable[[str, DeviceOptionsFunction], None] | None = None


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


def _make_hook(previous: DeviceOptionsFunction) -> DeviceOptionsFunction:
    reserved = _registry.RESERVED_DEVICE_TYPES

    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        device_type = args[0] if args else kwargs.get("device_type")
        if type(device_type) is not str or device_type in reserved:
            return previous(*args, **kwargs)  # torch's devices: untouched, and fast
        name = _normalized_or_none(device_type)
        if name is None or name in reserved:
            return previous(*args, **kwargs)
        aot_mode, compile_only = _flags(args, kwargs)
        options = resolve(
            name, aot_mode, compile_only, use_device_interface=device_interface_backport_active()
        )
        if options is None:
            return previous(*args, **kwargs)
        return options.as_tuple()

    get_cpp_torch_device_options.__doc__ = previous.__doc__
    get_cpp_torch_device_options.__wrapped__ = previous  # type: ignore[attr-defined]
    setattr(get_cpp_torch_device_options, _HOOK_MARK, True)
    return get_cpp_torch_device_options


_normalized_names: dict[str, str | None] = {}


def _normalized_or_none(device_type: str) -> str | None:
    """The device name, or None where torch passes something that is not one."""
    if device_type not in _normalized_names:
        try:
            name: str | None = _registry.normalize_device_type(device_type)
        except ValueError:
            name = None
        if len(_normalized_names) < 1024:
            _normalized_names[device_type] = name
        return name
    return _normalized_names[device_type]


def _flags(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, bool]:
    aot_mode = args[1] if len(args) > 1 else kwargs.get("aot_mode", False)
    compile_only = args[2] if len(args) > 2 else kwargs.get("compile_only", False)
    return bool(aot_mode), bool(compile_only)


def _native_dispatcher(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> OptionsTuple:
    name = _registry.normalize_device_type(device_type)
    options = resolve(
        name, aot_mode, compile_only, use_device_interface=device_interface_backport_active()
    )
    if options is None:  # The registration went away: give what torch gives.
        options = default_cpp_device_options(name, aot_mode, compile_only)
    return options.as_tuple()


setattr(_native_dispatcher, _HOOK_MARK, True)


def install(module: ModuleType) -> None:
    """Install into an imported ``cpp_builder`` module; idempotent."""
    global _installation
    with _lock:
        if _installation is not None and _installation.module is module:
            return
        current = getattr(module, _FUNCTION)
        native_register = getattr(module, _NATIVE_REGISTER, None)
        if callable(native_register):
            _installation = _Installation(
                module, "native", current, native_register=native_register
            )
            if _forward_registration not in _registry._registration_listeners:
                _registry._registration_listeners.append(_forward_registration)
            for device_type in _registry.registered_device_types():
                _forward_registration(device_type)
            for device_type in _registry.declared_entry_points():
                _forward_registration(device_type, overwrite=False)
            return
        if getattr(current, _HOOK_MARK, False):
            # Already hooked (e.g. this package imported twice under reload): reuse it.
            _installation = _Installation(module, "hook", current.__wrapped__, hook=current)
            return
        hook = _make_hook(current)
        setattr(module, _FUNCTION, hook)
        _installation = _Installation(module, "hook", current, hook=hook)


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
        _disarm()

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for tools
        return getattr(self._loader, name)


class _CppBuilderImportWatcher:
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
        module = sys.modules.get(CPP_BUILDER)
        if module is not None and getattr(module, _FUNCTION, None) is not None:
            install(module)
            return
        if _watcher is None:
            _watcher = _CppBuilderImportWatcher()
            sys.meta_path.insert(0, _watcher)


def _disarm() -> None:
    global _watcher
    with _lock:
        if _watcher is not None and _watcher in sys.meta_path:
            sys.meta_path.remove(_watcher)
        _watcher = None


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
    """What torch gives ``device_type`` without this package's providers.

    The function that was installed before the hook (stock torch, or another backend's
    replacement of it), so a provider can extend the defaults instead of copying them.
    """
    name = _registry.normalize_device_type(device_type)
    installation = _installed()
    probe = name
    if installation.mode == "native":
        native_registry = getattr(installation.module, _NATIVE_REGISTRY, {})
        if name in native_registry:
            probe = _DEFAULTS_PROBE_DEVICE
    result = installation.previous(probe, aot_mode, compile_only)
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


class HookState(NamedTuple):
    """Where this package stands in ``torch._inductor.cpp_builder``.

    ``mode``: ``"hook"`` (our function is installed), ``"native"`` (torch has
    ``register_cpp_device_options``; we register through it) or ``"waiting"`` (installs
    when ``torch._inductor.cpp_builder`` is first imported).
    ``chains_to``: the function the hook falls back to. ``replaced_by``: set when someone
    replaced the function after the hook; registrations then do not reach Inductor.
    """

    torch_version: str
    mode: Literal["waiting", "hook", "native"]
    chains_to: str | None
    replaced_by: str | None
    device_interface_backport: bool | None

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
        if self.replaced_by is not None:
            line += (
                f"; REPLACED after the hook by {self.replaced_by}: registrations do not reach "
                "Inductor until that replacement is removed or made through "
                "register_cpp_device_options"
            )
        return line


class DeviceOptionsSource(NamedTuple):
    """Where a device's options come from, found without calling the provider.

    ``source``: ``"registration"``, ``"entry point"``, ``"device interface"`` or
    ``"torch"`` (the function installed before the hook: stock torch or a replacement).
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
        interface = backported_interface(name)
        if interface is not None:
            return DeviceOptionsSource(
                name,
                "device interface",
                f"{_registry.describe_callable(interface)}.get_cpp_device_options",
            )
    installation = _installation
    previous = installation.previous if installation is not None else None
    description = _registry.describe_callable(previous) if previous is not None else "stock torch"
    return DeviceOptionsSource(name, "torch", description)


def known_device_options_sources() -> list[DeviceOptionsSource]:
    """Every device this process knows a source for: torch's own, registered, declared,
    and devices whose DeviceInterface defines get_cpp_device_options."""
    from torch._dynamo.device_interface import get_registered_device_interfaces

    names = set(_registry.RESERVED_DEVICE_TYPES)
    names.update(_registry.registered_device_types())
    names.update(_registry.declared_entry_points())
    if device_interface_backport_active():
        names.update(
            name
            for name, interface in get_registered_device_interfaces()
            if getattr(interface, "get_cpp_device_options", None) is not None
        )
    return [device_options_source(name) for name in sorted(names)]


def backported_interface(device_type: str) -> type | None:
    if not device_interface_backport_active():
        return None  # torch's own function consults the interface: it is "torch" then
    return interface_with_cpp_options(device_type)


def hook_state() -> HookState:
    """Report the hook's state without importing torch._inductor."""
    import torch

    installation = _installation
    if installation is None:
        return HookState(torch.__version__, "waiting", None, None, None)
    current = getattr(installation.module, _FUNCTION)
    replaced_by = None
    if installation.mode == "hook" and current is not installation.hook:
        replaced_by = _registry.describe_callable(current)
    return HookState(
        torch_version=torch.__version__,
        mode=installation.mode,
        chains_to=_registry.describe_callable(installation.previous),
        replaced_by=replaced_by,
        device_interface_backport=(
            installation.mode == "hook" and device_interface_backport_active()
        ),
    )
