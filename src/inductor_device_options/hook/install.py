"""The one place that touches ``torch._inductor.cpp_builder``.

Inductor asks ``cpp_builder.get_cpp_torch_device_options`` (a module-global lookup at
call time, from ``CppTorchDeviceOptions.__init__``). We either

* **hook**: replace that function once with an entry of the chain (``_chain``) that asks the
  sources of ``_resolve`` in order, then the function that was there before (stock torch or
  another backend's patch), called with its arguments unchanged. The hook also gives the
  module the design's registry API, ``register_cpp_device_options`` and
  ``_cpp_device_options_registry``, where torch lacks it, and, before torch 2.15, torch
  2.15's ``DeviceInterface.get_cpp_device_options`` lookup around stock torch's function; or
* **native**: when torch itself has ``register_cpp_device_options`` (the upstream form
  of this design), also register a dispatcher per registered device there.

Importing torch._inductor costs about a second, so nothing here imports it eagerly:
``arm()`` installs as soon as ``torch._inductor.cpp_builder`` is imported by anyone.
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._errors import add_note
from .._torch_names import CPP_BUILDER, FUNCTION, REGISTER, REGISTRY
from ..lookup import registry as _registry
from ..lookup.resolve import (
    Source,
    find_source,
    interface_defining_cpp_options,
    interface_description,
    serve,
)
from ..options.model import CppDeviceOptions
from .chain import (
    AdoptedFunction,
    Args,
    Chain,
    DeviceOptionsFunction,
    Kwargs,
    Thunk,
    bypassing,
    flags,
    is_bypassed,
    make_adopting,
    pending_default,
    pending_default_for,
)

if TYPE_CHECKING:
    import importlib.machinery

# Never a registered device: asking torch's native function for it gives the
# defaults every out-of-tree device gets, bypassing its registry.
_DEFAULTS_PROBE_DEVICE = "inductor_device_options_defaults_probe"
# Marks the registry API this package gives a torch that lacks it.
_BACKPORT_MARK = "_inductor_device_options_backport"

OptionsTuple = tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]
_lock = threading.RLock()


class _Installation(NamedTuple):
    module: ModuleType
    mode: Literal["hook", "native"]
    chain: Chain
    native_register: Callable[[str, DeviceOptionsFunction], None] | None = None
    #: Whether the bottom of the chain asks DeviceInterface.get_cpp_device_options as
    #: torch 2.15 does (a torch before 2.15, whose own function does not).
    backport: bool = False

    @property
    def previous(self) -> DeviceOptionsFunction:
        """The function there when the hook was installed (native: torch's own)."""
        return self.chain.base


_installation: _Installation | None = None
_watcher: _CppBuilderImportWatcher | None = None


def device_interface_backport_active() -> bool:
    """True where torch's own function does not consult DeviceInterface (torch < 2.15)
    and the hook asks it instead, as torch 2.15 does."""
    return _installed().backport


# --- serving ----------------------------------------------------------------------------


def _serve(device_type: str, args: Args, kwargs: Kwargs, default: Thunk) -> Any:
    """The package's sources for ``device_type``, ``default`` being what is below them."""
    installation = _installed()
    aot_mode, compile_only = flags(args, kwargs)
    _check_cpp_stdlib(device_type, args, kwargs, lambda: _source(device_type))
    with pending_default(device_type, aot_mode, compile_only, default):
        served = serve(
            device_type,
            aot_mode,
            compile_only,
            torch_registry=_torch_registry(installation.module),
            serve_interfaces=True,
            default=default,
            own_dispatcher=_native_dispatcher,
        )
    return served.as_tuple() if isinstance(served, CppDeviceOptions) else served


def _torch_registry(module: ModuleType) -> Mapping[str, object] | None:
    # Read at each lookup, as torch's function reads its module global.
    registry = module.__dict__.get(REGISTRY)
    return registry if isinstance(registry, Mapping) else None


def _check_cpp_stdlib(
    device_type: str, args: Args, kwargs: Kwargs, served_by: Callable[[], Source | None]
) -> None:
    """torch 2.15 rejects a ``cpp_stdlib=`` it would ignore (``_validate_cpp_stdlib``) before
    it looks for a device's options: a device the package serves is checked the same way,
    before its provider is called. ``served_by()``: the source, None: not served. Only a
    source with the package's guarantees gets a note naming it: a registration through
    torch's door gets torch's error exactly."""
    cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
    if cpp_stdlib is None or cpp_stdlib == "libstdc++":  # torch's default: nothing to check
        return
    validate = getattr(_installed().module, "_validate_cpp_stdlib", None)
    if validate is None:  # before 2.15 torch has no such parameter
        return
    source = served_by()
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


def _native_dispatcher(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> OptionsTuple:
    """What this package registers in torch's native registry for its registrations."""
    name = _registry.normalize_device_type(device_type)
    installation = _installed()
    if is_bypassed(name):
        # Computing the device's default, and torch's function asked its registry anyway (a
        # function adopted after the hook called torch's own): give torch's defaults.
        return installation.previous(_DEFAULTS_PROBE_DEVICE, aot_mode, compile_only)  # type: ignore[no-any-return]
    served = serve(
        name,
        aot_mode,
        compile_only,
        torch_registry=None,
        serve_interfaces=False,
        default=lambda: default_cpp_device_options(name, aot_mode, compile_only).as_tuple(),
    )
    if served is None:  # The registration went away: give what torch gives.
        return default_cpp_device_options(name, aot_mode, compile_only).as_tuple()
    return served.as_tuple() if isinstance(served, CppDeviceOptions) else served  # type: ignore[return-value]


def _native_base_default(
    module: ModuleType, base: DeviceOptionsFunction
) -> Callable[[Args, Kwargs], Any]:
    """What torch's own function gives a device, its registry left out."""

    def base_default(args: Args, kwargs: Kwargs) -> Any:
        # Asking torch's function for a device it has no registration for gives the
        # defaults every out-of-tree device gets, bypassing its registry.
        device_type = args[0] if args else kwargs.get("device_type")
        registry = _torch_registry(module) or {}
        if type(device_type) is str and device_type in registry:
            args, kwargs = _for_device(_DEFAULTS_PROBE_DEVICE, args, kwargs)
        return base(*args, **kwargs)

    return base_default


def _for_device(device_type: str, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
    if args:
        return (device_type, *args[1:]), kwargs
    return args, {**kwargs, "device_type": device_type}


# --- the design's registry, backported ----------------------------------------------------


def _backport_registry_api(module: ModuleType) -> None:
    """Give ``module`` the design's ``register_cpp_device_options`` and its registry, with
    the upstream patch's semantics (``upstream/pytorch``), where torch has neither."""
    if not isinstance(module.__dict__.get(REGISTRY), dict):
        module.__dict__[REGISTRY] = {}

    def register_cpp_device_options(device_type: str, callback: Callable[..., Any]) -> None:
        """Register the C++ build options provider for a device type.

        Allows out-of-tree device backends (e.g. PrivateUse1 devices like NPU) to
        inject their own compile options into Inductor's C++ compilation pipeline
        without monkey-patching get_cpp_torch_device_options.

        Args:
            device_type: The device type string (e.g. "npu").
            callback: Called as ``callback(device_type, aot_mode, compile_only)``;
                must return the same 7-tuple as get_cpp_torch_device_options:
                ``(definitions, include_dirs, cflags, ldflags, libraries_dirs,
                libraries, passthrough_args)``.

        (Backported by inductor-device-options: the registry form of PyTorch PR #190614.)
        """
        registry = module.__dict__[REGISTRY]  # the module global, read at call time
        if device_type in registry:
            warnings.warn(
                f"C++ device options for '{device_type}' are already registered, overwriting.",
                stacklevel=2,
            )
        registry[device_type] = callback

    register_cpp_device_options.__module__ = module.__name__
    register_cpp_device_options.__qualname__ = REGISTER
    setattr(register_cpp_device_options, _BACKPORT_MARK, True)
    existing = module.__dict__.get(REGISTER)
    if existing is None or getattr(existing, _BACKPORT_MARK, False):
        module.__dict__[REGISTER] = register_cpp_device_options


def _is_torch_function(function: object) -> bool:
    """Whether ``function`` is stock torch's ``get_cpp_torch_device_options``."""
    return (
        getattr(function, "__module__", None) == CPP_BUILDER
        and getattr(function, "__qualname__", None) == FUNCTION
    )


def _with_interface_lookup(base: DeviceOptionsFunction) -> DeviceOptionsFunction:
    """``base`` (stock torch before 2.15) asking DeviceInterface first, as torch 2.15 does:
    the interface's own lists as it returns them; ``None`` or ``NotImplementedError``: the
    defaults."""

    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        device_type = args[0] if args else kwargs.get("device_type")
        if type(device_type) is str and device_type not in _registry.RESERVED_DEVICE_TYPES:
            interface = interface_defining_cpp_options(_as_torch_2_15_names(device_type))
            if interface is not None:
                aot_mode, compile_only = flags(args, kwargs)
                cpp_stdlib = args[3] if len(args) > 3 else kwargs.get("cpp_stdlib")
                _validate_cpp_stdlib_as_torch_2_15(cpp_stdlib, device_type, aot_mode)
                try:
                    options = interface.get_cpp_device_options(aot_mode, compile_only)  # type: ignore[attr-defined]
                except NotImplementedError:
                    options = None
                if options is not None:
                    return options
        return base(*args, **kwargs)

    get_cpp_torch_device_options.__wrapped__ = base  # type: ignore[attr-defined]
    return get_cpp_torch_device_options


def _as_torch_2_15_names(device_type: str) -> str:
    """torch 2.15's ``_normalize_device_type``: what ``torch.device`` parses, its type;
    any other name unchanged."""
    import torch

    try:
        return torch.device(device_type).type
    except RuntimeError:
        return device_type


def _validate_cpp_stdlib_as_torch_2_15(
    cpp_stdlib: object, device_type: str, aot_mode: bool
) -> None:
    """torch 2.15's ``_validate_cpp_stdlib`` for a device other than cpu: ``libc++`` is
    refused (torch before 2.15 has no ``cpp_stdlib=`` of its own)."""
    if cpp_stdlib is None or cpp_stdlib != "libc++":
        return
    from torch._inductor import config

    if not config.is_fbcode():  # type: ignore[attr-defined]
        raise RuntimeError("cpp_stdlib='libc++' is only supported in fbcode.")
    raise RuntimeError(
        "cpp_stdlib='libc++' is only supported with device_type='cpu', "
        f"got device_type='{device_type}'"
    )


# --- installing -------------------------------------------------------------------------


def install(module: ModuleType) -> None:
    """Install into an imported ``cpp_builder`` module; idempotent.

    Installs again where the module was executed anew (``importlib.reload``) or its
    attribute was written past the chain.
    """
    global _installation
    with _lock:
        current = module.__dict__[FUNCTION]
        installation = _installation
        # Imported with the hook, not with the package: only processes that build C++.
        from .asked import observe_question

        observe = functools.partial(observe_question, is_served=_is_served)
        if (
            installation is not None
            and installation.module is module
            and installation.chain.owns(current)
        ):
            return
        native_register = module.__dict__.get(REGISTER)
        if callable(native_register) and not getattr(native_register, _BACKPORT_MARK, False):
            chain = Chain(
                module, current, _serve, _native_base_default(module, current), observe=observe
            )
            _installation = _Installation(module, "native", chain, native_register)
            make_adopting(module, chain)
            if _forward_registration not in _registry._registration_listeners:
                _registry._registration_listeners.append(_forward_registration)
            for device_type in _registry.registered_device_types():
                _forward_registration(device_type)
            return
        _backport_registry_api(module)
        from torch._dynamo.device_interface import DeviceInterface

        backport = not hasattr(DeviceInterface, "get_cpp_device_options") and _is_torch_function(
            current
        )
        bottom = _with_interface_lookup(current) if backport else current
        module_dict = module.__dict__

        def serves_reserved(device_type: str) -> bool:
            # On every lookup of torch's own devices: as cheap as a dict lookup can be.
            registry = module_dict.get(REGISTRY)
            return registry is not None and device_type in registry

        chain = Chain(
            module,
            current,
            _serve,
            lambda args, kwargs: bottom(*args, **kwargs),
            call_base=bottom,
            serves_reserved=serves_reserved,
            observe=observe,
        )
        _installation = _Installation(module, "hook", chain, backport=backport)
        make_adopting(module, chain)


def _is_served(device_type: str) -> bool:
    """Whether the package knows a source of options for ``device_type`` (either door)."""
    return _source(device_type) is not None or _interface_answering(device_type) is not None


def _forward_registration(device_type: str) -> None:
    installation = _installation
    if installation is None or installation.native_register is None:
        return
    if device_type in _registry.RESERVED_DEVICE_TYPES:
        return
    with _lock:
        if (_torch_registry(installation.module) or {}).get(device_type) is _native_dispatcher:
            return
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
    """Install the hook now if ``torch._inductor.cpp_builder`` is imported, else as soon as
    it is. Cheap and idempotent; ``import inductor_device_options`` calls it (and so does
    ``import torch``, through the package's ``torch.backends`` entry point).

    Call it again after writing ``cpp_builder.__dict__["get_cpp_torch_device_options"]``
    directly, the one assignment the hook does not see, to install the hook over it.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.arm()  # installed already, or at the first import of cpp_builder
    """
    global _watcher
    with _lock:
        if _watcher is None or _watcher not in sys.meta_path:
            _watcher = _CppBuilderImportWatcher()
            sys.meta_path.insert(0, _watcher)
        module = sys.modules.get(CPP_BUILDER)
        if module is not None and module.__dict__.get(FUNCTION) is not None:
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
    """What ``device_type`` gets without this package's sources: for a provider to extend.

    Inside a lookup (a provider calling it): what the function below the package gave for
    this very lookup — stock torch, or the replacement another backend assigned, with the
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
        >>> with ido.registered_cpp_device_options("acme", acme_options):
        ...     served = ido.get_cpp_device_options("acme")
        ...     assert ido.default_cpp_device_options("acme") == torch_only
        >>> served.definitions == [*torch_only.definitions, "USE_ACME"]
        True
    """
    name = _registry.normalize_device_type(device_type)
    installation = _installed()
    pending = pending_default_for(name, bool(aot_mode), bool(compile_only))
    if pending is not None:
        result = pending()
    else:
        with bypassing(name):
            result = installation.module.__dict__[FUNCTION](name, aot_mode, compile_only)
    return CppDeviceOptions(*(list(values) for values in result))


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
        Exception: whatever the device's provider raises, with a note naming it.

    Example:
        >>> import inductor_device_options as ido
        >>> options = ido.get_cpp_device_options("cpu", aot_mode=True)
        >>> isinstance(options, ido.CppDeviceOptions), options._fields[0]
        (True, 'definitions')
    """
    # Inductor passes device names without an index; torch's native registry only knows those.
    name = _registry.normalize_device_type(device_type)
    module = _installed().module
    result = getattr(module, FUNCTION)(
        device_type=name, aot_mode=aot_mode, compile_only=compile_only
    )
    return CppDeviceOptions(*(list(values) for values in result))


def package_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions | None:
    """What this package's sources give ``device_type`` (None: they do not serve it), the
    chain around them left out."""
    name = _registry.normalize_device_type(device_type)
    if name in _registry.RESERVED_DEVICE_TYPES and not _in_torch_registry(name):
        return None
    installation = _installed()
    with bypassing(name):
        served = serve(
            name,
            aot_mode,
            compile_only,
            torch_registry=_torch_registry(installation.module),
            serve_interfaces=True,
            default=lambda: installation.module.__dict__[FUNCTION](name, aot_mode, compile_only),
            own_dispatcher=_native_dispatcher,
        )
    if served is None:
        return None
    if isinstance(served, CppDeviceOptions):
        return served.copy()
    return CppDeviceOptions(*(list(values) for values in served))  # type: ignore[attr-defined]


def _in_torch_registry(device_type: str) -> bool:
    module = sys.modules.get(CPP_BUILDER)
    registry = _torch_registry(module) if module is not None else None
    return registry is not None and device_type in registry


def registered_device_types() -> list[str]:
    """Every device type registered, through this package or through
    ``torch._inductor.cpp_builder.register_cpp_device_options``, sorted. Imports nothing.

    Returns:
        The device types, such as ``["npu", "sampledev"]``.

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder as cpp_builder
        >>> def acme_options(device_type, aot_mode, compile_only):
        ...     return ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        >>> ido.register_cpp_device_options("acme", acme_options)
        >>> cpp_builder.register_cpp_device_options("other", acme_options)
        >>> [name for name in ido.registered_device_types() if name in ("acme", "other")]
        ['acme', 'other']
    """
    names = set(_registry.registered_device_types())
    module = sys.modules.get(CPP_BUILDER)
    registry = _torch_registry(module) if module is not None else None
    if registry is not None:
        names.update(
            name
            for name, callback in registry.items()
            if isinstance(name, str) and callback is not _native_dispatcher
        )
    return sorted(names)


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
    ``device_interface_backport``: whether the hook asks ``DeviceInterface`` as torch 2.15
    does, on a torch that does not (None while waiting).

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder
        >>> state = ido.hook_state()
        >>> state.mode, state.registrations_apply, state.adopted
        ('hook', True, ())
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
            line = f"native: torch has {REGISTER}; providers are registered through it"
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
    """Where a device's options come from, found without calling any provider.

    ``source``: ``"registration"`` (this package's), ``"cpp_builder registration"``
    (``torch._inductor.cpp_builder.register_cpp_device_options``), ``"entry point"``,
    ``"device interface"`` (``DeviceInterface.get_cpp_device_options``) or ``"torch"`` (the
    function below the package: stock torch or a replacement). ``guaranteed``: the options
    get this package's guarantees (validation, custom_op_libs, real paths, fingerprint).

    Example:
        >>> import inductor_device_options as ido
        >>> source = ido.device_options_source("npu")  # the Ascend provider, bundled
        >>> source.source, source.guaranteed
        ('entry point', True)
    """

    device_type: str
    source: Literal[
        "registration", "cpp_builder registration", "entry point", "device interface", "torch"
    ]
    description: str
    guaranteed: bool = False


def device_options_source(device_type: str) -> DeviceOptionsSource:
    """Which source serves ``device_type``, in lookup order, without calling or importing
    any provider.

    Args:
        device_type: ``"npu"`` or ``"npu:0"``.

    Returns:
        A :class:`DeviceOptionsSource`.

    Raises:
        InvalidDeviceTypeError: ``device_type`` is not a device name.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.device_options_source("cpu")
        DeviceOptionsSource(device_type='cpu', source='torch',
            description='torch._inductor.cpp_builder.get_cpp_torch_device_options',
            guaranteed=False)
    """
    name = _registry.normalize_device_type(device_type)
    source = _source(name)
    if source is not None:
        description = source.description
        if source.fallback:
            description += "; bundled: it gives way to the backend's own answer"
        return DeviceOptionsSource(name, source.kind, description, source.guaranteed)
    interface = _interface_answering(name)
    if interface is not None:
        return DeviceOptionsSource(name, "device interface", interface_description(interface))
    installation = _installation
    if installation is None:
        return DeviceOptionsSource(name, "torch", "stock torch")
    descriptions = [
        *(function.description for function in reversed(installation.chain.adopted())),
        _registry.describe_callable(installation.previous),
    ]
    return DeviceOptionsSource(name, "torch", " over ".join(descriptions))


def _source(device_type: str) -> Source | None:
    """The package's source for a normalized device (not loaded), or None."""
    module = sys.modules.get(CPP_BUILDER)
    registry = _torch_registry(module) if module is not None else None
    if device_type in _registry.RESERVED_DEVICE_TYPES and (
        registry is None or device_type not in registry
    ):
        return None
    return find_source(
        device_type,
        registry,
        serve_interfaces=True,
        load=False,
        own_dispatcher=_native_dispatcher,
    )


def _interface_answering(device_type: str) -> type | None:
    """The device's DeviceInterface, where the function below asks it: torch 2.15's own
    function, or the backport around stock torch."""
    if device_type in _registry.RESERVED_DEVICE_TYPES:
        return None
    interface = interface_defining_cpp_options(device_type)
    if interface is None:
        return None
    installation = _installation
    if installation is not None and installation.backport:
        return interface
    from torch._dynamo.device_interface import DeviceInterface

    return interface if hasattr(DeviceInterface, "get_cpp_device_options") else None


def known_device_options_sources() -> list[DeviceOptionsSource]:
    """Every device this process knows a source for: torch's own, registered (through
    either door), declared, and devices whose DeviceInterface's ``get_cpp_device_options``
    is asked (by torch 2.15, or by the backport), sorted by device type.

    Returns:
        A list of :class:`DeviceOptionsSource`.

    Example:
        >>> import inductor_device_options as ido
        >>> sources = ido.known_device_options_sources()
        >>> kinds = {source.device_type: source.source for source in sources}
        >>> kinds["cpu"], kinds["npu"]
        ('torch', 'entry point')
    """
    from torch._dynamo.device_interface import get_registered_device_interfaces

    names = set(_registry.RESERVED_DEVICE_TYPES)
    names.update(registered_device_types())
    names.update(_registry.declared_entry_points())
    names.update(
        name
        for name, _ in get_registered_device_interfaces()
        if _interface_answering(name) is not None
    )
    return [device_options_source(name) for name in sorted(names)]


def served_interface(device_type: str) -> type | None:
    """The DeviceInterface whose get_cpp_device_options serves ``device_type``, if any."""
    source = _source(device_type)
    if source is not None and source.kind != "device interface":
        return None
    return interface_defining_cpp_options(device_type)


def loaded_source(device_type: str) -> Source | None:
    """The source that serves a normalized device, its provider loaded (an entry point's
    module imported), or None: torch serves it. For ``doctor``, which calls it directly."""
    source = _source(device_type)
    if source is None or source.call is not None:
        return source
    module = sys.modules.get(CPP_BUILDER)
    return find_source(
        device_type,
        _torch_registry(module) if module is not None else None,
        serve_interfaces=True,
        load=True,
        own_dispatcher=_native_dispatcher,
    )


def hook_state() -> HookState:
    """Where this package stands in ``torch._inductor.cpp_builder``, without importing
    ``torch._inductor``.

    Returns:
        A :class:`HookState`; ``describe()`` gives it as one line.

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder  # installs the hook
        >>> ido.hook_state().describe()
        'hook installed, chaining to torch._inductor.cpp_builder.get_cpp_torch_device_options'
    """
    import torch

    installation = _installation
    if installation is None:
        return HookState(torch.__version__, "waiting", None, None, None)
    current = installation.module.__dict__.get(FUNCTION)
    chain = installation.chain
    replaced_by = None
    if not chain.owns(current):
        replaced_by = _registry.describe_callable(current)
    return HookState(
        torch_version=torch.__version__,
        mode=installation.mode,
        chains_to=_registry.describe_callable(installation.previous),
        replaced_by=replaced_by,
        device_interface_backport=installation.backport,
        adopted=chain.adopted(),
    )
