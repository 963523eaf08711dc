"""Where options come from and where the hook stands, for people and tools: read without
calling any provider and without importing ``torch._inductor``.

``list`` and ``show`` print these; a backend's tests may assert them (``torch_hooks``, which
says which of torch 2.15's out-of-tree hooks the running torch has, imports Inductor's
codegen)::

    from inductor_device_options.introspection import device_options_source
    assert device_options_source("npu").kind == "registration"
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from ._hook import sources as _sources
from ._hook.chain import AdoptedFunction
from ._hook.door_report import DOOR_NAMES, ProviderDoor, described_door
from ._hook.door_report import provider_doors as _provider_doors
from ._hook.installation import current_installation
from ._hook.torch_hooks import TorchHook
from ._hook.torch_hooks import torch_hooks as _torch_hooks
from ._lookup import registry as _registry
from ._lookup.device_types import normalize_device_type
from ._source import DeviceOptionsSource
from ._torch_names import FUNCTION, REGISTER

__all__ = [
    "DeviceOptionsSource",
    "HookState",
    "ProviderDoor",
    "TorchHook",
    "declared_doors",
    "device_options_source",
    "hook_state",
    "known_device_options_sources",
    "provider_doors",
    "registered_device_types",
    "torch_hooks",
]


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
        >>> registered = ido.introspection.registered_device_types()
        >>> [name for name in registered if name in ("acme", "other")]
        ['acme', 'other']
    """
    return _sources.registered_device_types()


class HookState(NamedTuple):
    """Where this package stands in ``torch._inductor.cpp_builder``.

    ``mode``: ``"hook"`` (the package's function is installed), ``"native"`` (torch has
    ``register_cpp_device_options``; providers are registered through it) or ``"waiting"``
    (installs when ``torch._inductor.cpp_builder`` is first imported).
    ``function_below``: the function that was there when the hook was installed.
    ``adopted``: functions assigned to the attribute since, in order, each with how it
    was seen to behave (a replacement, or wrapping the hook).
    ``replaced_by``: set only when the module's ``__dict__`` was written past the chain;
    registrations then do not reach Inductor.
    ``device_interface_backport``: whether the hook asks ``DeviceInterface`` as torch 2.15
    does, on a torch that does not (None while waiting).

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder
        >>> state = ido.introspection.hook_state()
        >>> state.mode, state.registrations_apply, state.adopted
        ('hook', True, ())
    """

    torch_version: str
    mode: Literal["waiting", "hook", "native"]
    function_below: str | None
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
            line = f"hook installed, chaining to {self.function_below}"
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
        >>> ido.introspection.device_options_source("cpu")
        DeviceOptionsSource(device_type='cpu', kind='torch',
            description='torch._inductor.cpp_builder.get_cpp_torch_device_options',
            guaranteed=False, fallback=False)
    """
    return _sources.found_source(normalize_device_type(device_type)).source


def known_device_options_sources() -> list[DeviceOptionsSource]:
    """Every device this process knows a source for: torch's own, registered (through
    either door), declared, and devices whose DeviceInterface's ``get_cpp_device_options``
    is asked (by torch 2.15, or by the backport), sorted by device type.

    Returns:
        A list of :class:`DeviceOptionsSource`.

    Example:
        >>> import inductor_device_options as ido
        >>> sources = ido.introspection.known_device_options_sources()
        >>> kinds = {source.device_type: source.kind for source in sources}
        >>> kinds["cpu"], kinds["npu"]
        ('torch', 'entry point')
    """
    return [_sources.found_source(name).source for name in _sources.known_device_types()]


def hook_state() -> HookState:
    """Where this package stands in ``torch._inductor.cpp_builder``, without importing
    ``torch._inductor``.

    Returns:
        A :class:`HookState`; ``describe()`` gives it as one line.

    Example:
        >>> import inductor_device_options as ido
        >>> import torch._inductor.cpp_builder  # installs the hook
        >>> ido.introspection.hook_state().describe()
        'hook installed, chaining to torch._inductor.cpp_builder.get_cpp_torch_device_options'
    """
    import torch

    installation = current_installation()
    if installation is None:
        return HookState(torch.__version__, "waiting", None, None, None)
    # Read from the namespace as Inductor's module-global lookup reads it: a function
    # written there past the chain (a __dict__ write the hook does not see) is what Inductor
    # calls, and registrations no longer apply.
    current = installation.module.__dict__.get(FUNCTION)
    chain = installation.chain
    replaced_by = None
    if not chain.owns(current):
        replaced_by = _registry.describe_callable(current)
    return HookState(
        torch_version=torch.__version__,
        mode=installation.mode,
        function_below=_registry.describe_callable(installation.function_below),
        replaced_by=replaced_by,
        device_interface_backport=installation.backport,
        adopted=chain.adopted(),
    )


def torch_hooks() -> list[TorchHook]:
    """torch 2.15's out-of-tree hooks, on the running torch: each ``native`` (torch has
    it), ``provided`` (this package backports it) or ``left out`` (neither: ``detail`` says
    what this torch does instead). Imports Inductor's codegen (about a second).

    Returns:
        A :class:`TorchHook` for each hook, in the order ``list``, ``show`` and ``doctor``
        print them.

    Example:
        >>> import inductor_device_options as ido
        >>> hooks = {hook.name: hook for hook in ido.introspection.torch_hooks()}
        >>> hooks["_inductor_backend_init"].status in ("native", "provided")
        True
        >>> print(hooks["DeviceOpOverrides.aten_device_type"].describe())
        DeviceOpOverrides.aten_device_type: ... (cpp_utils...)
    """
    return _torch_hooks()


def provider_doors() -> list[ProviderDoor]:
    """A provider's per-device doors (``removed_cflags``, ``aoti_shim_ops``,
    ``inductor_headers``, ``cache_key_details``, ``aoti_runner``) on the running torch: each
    ``acts``, or ``acts in part`` where this release lacks some of the code it acts on
    (``detail`` says what). Imports the torch modules the doors act on (about a second).

    Example:
        >>> import inductor_device_options as ido
        >>> [door.name for door in ido.introspection.provider_doors()]
        ['removed_cflags', 'aoti_shim_ops', 'inductor_headers', 'cache_key_details', 'aoti_runner']
    """
    return _provider_doors()


def declared_doors(device_type: str) -> dict[str, str]:
    """What the provider serving ``device_type`` through the package's own door declares of
    its per-device doors, each asked as the door asks it (``aoti_runner``: that it can be
    called), for people; empty where it declares none or torch's doors serve the device.

    Raises:
        InvalidProviderAttributeError: a door cannot use what the provider declares.

    Example:
        >>> import inductor_device_options as ido
        >>> def options(device_type, aot_mode, compile_only):
        ...     return ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        >>> options.removed_cflags = ["march=native"]
        >>> ido.register_cpp_device_options("mydev", options)
        >>> ido.introspection.declared_doors("mydev")
        {'removed_cflags': "['march=native']"}
        >>> ido.unregister_cpp_device_options("mydev")
        True
    """
    from ._hook.provider_doors import door_source

    found = door_source(normalize_device_type(device_type))
    if found is None or found.provider is None:
        return {}
    provider, device, description = found.provider, found.device_type, found.description
    return {
        name: described_door(name, provider, device, description)
        for name in DOOR_NAMES
        if getattr(provider, name, None) is not None
    }
