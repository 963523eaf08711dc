"""Installing the hook into ``torch._inductor.cpp_builder``, when and however it is imported.

Inductor asks ``cpp_builder.get_cpp_torch_device_options`` (a module-global lookup at
call time, from ``CppTorchDeviceOptions.__init__``). We either

* **hook**: replace that function once with an entry of the chain (``chain``) that asks the
  package's sources in order (``serve``), then the function below, there before (torch's own or
  another backend's patch), called with its arguments unchanged. The hook also gives the
  module the design's registry API, ``register_cpp_device_options`` and
  ``_cpp_device_options_registry``, where torch lacks it, and, before torch 2.15, torch
  2.15's ``DeviceInterface.get_cpp_device_options`` lookup around torch's own function; or
* **native**: when torch itself has ``register_cpp_device_options`` (the upstream form
  of this design), also register a dispatcher per registered device there.

Importing torch._inductor costs about a second, so nothing here imports it eagerly:
``arm()`` installs as soon as ``torch._inductor.cpp_builder`` is imported by anyone.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.interfaces import out_of_tree_interface_registered
from .._torch_names import (
    AOT_LOAD,
    AUTOGRAD_CACHE,
    AUTOGRAD_CACHE_DETAILS,
    BUILDER,
    CMAKE_WRITERS,
    CODECACHE,
    CODECACHE_READY,
    CODEGEN_COMMON,
    COMPILE_FX,
    COMPILE_FX_FUNCTION,
    CPP_BUILDER,
    CPP_UTILS,
    CPP_WRAPPER_CPU,
    CPP_WRAPPER_CPU_CLASS,
    DEVICE_PROPERTIES,
    DEVICE_TO_ATEN,
    DEVICE_TO_ATEN_FUNCTION,
    EXPORT,
    FALLBACK_KERNEL,
    FUNCTION,
    GPU_TYPES,
    GRAPH,
    GRAPH_LOWERING,
    HAS_TRITON,
    INDUCTOR_UTILS,
    INIT_BACKEND_REGISTRATION,
    IR,
    NATIVE_BACKEND_INIT_FLAG,
    PACKAGE_LOADER,
    PACKAGE_LOADER_READY,
    PT2_ARCHIVE,
    PT2_ARCHIVE_READY,
    REGISTER,
    RUNTIME_HINTS,
    TRITON_UTILS,
)
from .backports import (
    BACKPORT_MARK,
    backport_registry_api,
    is_torch_function,
    with_interface_lookup,
)
from .chain import Chain, make_adopting
from .disable import disabled
from .installation import (
    Installation,
    current_installation,
    is_served,
    native_dispatcher,
    skipping_registry,
)
from .serve import torch_registry

if TYPE_CHECKING:
    import importlib.machinery


def install(module: ModuleType) -> None:
    """Install into an imported ``cpp_builder`` module; idempotent.

    Installs again where the module was executed anew (``importlib.reload``) or its
    attribute was written past the chain.
    """
    with _state.lock:
        _wrap_cmake_writers(module)
        from .removed_cflags import install as install_removed_cflags

        install_removed_cflags(module)
        _install_hook(module)


def _install_hook(module: ModuleType) -> None:
    with _state.lock:
        current = module.__dict__[FUNCTION]
        installation = current_installation()
        # Imported with the hook, not with the package: only processes that build C++.
        from .asked import observer

        observe = observer(is_served)
        if (
            installation is not None
            and installation.module is module
            and installation.chain.owns(current)
        ):
            return
        # Unmarked: torch's own, the upstream patch (PR #190614's registry form; no release to
        # 2.15 has it). Then torch's registry answers, and the chain only dispatches.
        native_register = module.__dict__.get(REGISTER)
        if callable(native_register) and not getattr(native_register, BACKPORT_MARK, False):
            chain = Chain(
                module,
                current,
                skipping_registry(module, current),
                own_dispatcher=native_dispatcher,
                observe=observe,
            )
            _state.installation = Installation(module, "native", chain, native_register)
            make_adopting(module, chain)
            if _forward_registration not in _state.registration_listeners:
                _state.registration_listeners.append(_forward_registration)
            for device_type in sorted(_state.registered):
                _forward_registration(device_type)
            return
        backport_registry_api(module)
        from torch._dynamo.device_interface import DeviceInterface

        # torch 2.15's get_cpp_torch_device_options asks DeviceInterface.get_cpp_device_options;
        # 2.6-2.14 have neither: the lookup goes around torch's own function (no replacement).
        backport = not hasattr(DeviceInterface, "get_cpp_device_options") and is_torch_function(
            current
        )
        answering = with_interface_lookup(current) if backport else current
        chain = Chain(
            module,
            current,
            answering,
            registry_namespace=module.__dict__,
            observe=observe,
        )
        _state.installation = Installation(module, "hook", chain, backport=backport)
        make_adopting(module, chain)


def _wrap_cmake_writers(module: ModuleType) -> None:
    """The builder's CMake writers, wrapped once: for a device the package serves, the C++
    project AOTInductor writes builds (``_hook/cmake.py``, imported at their first call)."""
    builder = module.__dict__.get(BUILDER)
    for name in CMAKE_WRITERS:
        writer = getattr(builder, name, None)
        if writer is not None and not getattr(writer, BACKPORT_MARK, False):
            setattr(builder, name, _cmake_writer(name, writer))


def _cmake_writer(name: str, torch_writer: Any) -> Any:
    def write(self: object, *args: object, **kwargs: object) -> None:
        from .cmake import write

        write(name, torch_writer, self, args, kwargs)

    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(write, torch_writer, assigned=(), updated=())
    setattr(write, BACKPORT_MARK, True)
    return write


def _forward_registration(device_type: str) -> None:
    installation = current_installation()
    if installation is None or installation.native_register is None:
        return
    if device_type in RESERVED_DEVICE_TYPES:
        return
    with _state.lock:
        if (torch_registry(installation.module) or {}).get(device_type) is native_dispatcher:
            return
        installation.native_register(device_type, native_dispatcher)


#: The modules of torch the package installs into when they are imported: what installs, and
#: what the module defines once executed far enough to install into. The hook into
#: cpp_builder, torch 2.15's codegen hooks before 2.15, the SDK identity in the cache keys and
#: AOTInductor packages, the boundary of each compile (each installer's module is imported
#: only with the module it serves).
INSTALLERS = {
    CPP_BUILDER: (f"{__name__}:install", FUNCTION),
    CPP_UTILS: (f"{__package__}.aten_device_type:install", DEVICE_TO_ATEN),
    CODEGEN_COMMON: (f"{__package__}.backend_init:install_into_common", INIT_BACKEND_REGISTRATION),
    COMPILE_FX: (f"{__package__}.compile_boundary:install", COMPILE_FX_FUNCTION),
    CODECACHE: (f"{__package__}.codecache:install", CODECACHE_READY),
    PACKAGE_LOADER: (f"{__package__}.pt2_stamp:install_loader_check", PACKAGE_LOADER_READY),
    PT2_ARCHIVE: (f"{__package__}.pt2_stamp:install_loader_check", PT2_ARCHIVE_READY),
    # torch 2.15's hooks asked where torch before 2.15 hard-codes cuda and xpu.
    INDUCTOR_UTILS: (f"{__package__}.gpu_devices:install", GPU_TYPES),
    RUNTIME_HINTS: (f"{__package__}.device_properties:install", DEVICE_PROPERTIES),
    TRITON_UTILS: (f"{__package__}.triton_capable:install", HAS_TRITON),
    GRAPH: (f"{__package__}.gpu_cpp_wrapper:install", GRAPH_LOWERING),
    # A provider's per-device doors where no torch has one (cpp_builder's and codecache's are
    # installed with those modules' own).
    IR: (f"{__package__}.shim_ops:install", FALLBACK_KERNEL),
    CPP_WRAPPER_CPU: (f"{__package__}.device_headers:install", CPP_WRAPPER_CPU_CLASS),
    AUTOGRAD_CACHE: (f"{__package__}.cache_key_details:install", AUTOGRAD_CACHE_DETAILS),
    EXPORT: (f"{__package__}.aot_load:install", AOT_LOAD),
    # Inductor's compile worker pools: their processes import the package (_hook/workers.py).
    # torch 2.6's pool takes no pickler: it has no SubprocPickler, and nothing installs.
    "torch._inductor.compile_worker.subproc_pool": (
        f"{__package__}.workers:install",
        "SubprocPickler",
    ),
}


def _native_hook(module: ModuleType) -> bool:
    """Whether torch has the codegen hook ``module`` would get (torch 2.15): then its
    installer is not even imported, so that what every process loads stays small."""
    if module.__name__ == CPP_UTILS:
        native = module.__dict__.get(DEVICE_TO_ATEN_FUNCTION)
        return native is not None and not getattr(native, BACKPORT_MARK, False)
    if module.__name__ == CODEGEN_COMMON:
        return torch_runs_backend_init()
    if module.__name__ == INDUCTOR_UTILS:
        return "_gpu_types" in module.__dict__  # 2.15 builds GPU_TYPES from is_gpu()
    if module.__name__ == GRAPH:
        return "_uses_gpu_cpp_wrapper" in module.__dict__  # 2.15's codegen_with_cpp_wrapper's
    if module.__name__ == RUNTIME_HINTS:
        # 2.15's DeviceProperties.create asks it; 2.6-2.14's read torch.cuda/xpu properties.
        create = module.__dict__[DEVICE_PROPERTIES].__dict__["create"].__func__
        return calls(create, "get_multi_processor_count")
    if module.__name__ == TRITON_UTILS:
        return calls(module.__dict__[HAS_TRITON], "get_registered_device_interfaces")  # 2.15
    return False


#: The modules whose backports of torch 2.15's hooks are asked in a compile alone, and act
#: for out-of-tree devices alone: installed once the process has one, at their import, at
#: each compile's start (_hook/compile_boundary) and after the device module's
#: _inductor_backend_init (_hook/backend_init); in a process without one, never.
DEVICE_HOOK_MODULES = (GRAPH,)


def _device_needs(module: ModuleType) -> bool:
    """Whether the process has an out-of-tree device that ``module``'s backport acts for.
    ``DeviceProperties.create`` and ``has_triton`` are asked outside compiles too (Dynamo
    asks ``has_triton`` while it traces): their backports are installed in every process."""
    name = module.__name__
    if name == INDUCTOR_UTILS:  # torch 2.15 decides GPU_TYPES once, at the import
        first = name not in _state.gpu_types_decided
        _state.gpu_types_decided.add(name)
        return first and out_of_tree_interface_registered("is_gpu")
    if name == GRAPH:
        # Out-of-tree overrides: those of a class defined outside torch's modules.
        common = sys.modules.get(CODEGEN_COMMON)
        overrides = common.__dict__.get("device_op_overrides_dict", {}) if common else {}
        return any(not type(o).__module__.startswith("torch.") for o in overrides.values())
    return True


def calls(function: object, name: str) -> bool:
    """Whether torch's (possibly cached) ``function`` itself calls ``name``: a torch whose
    function asks a hook needs no backport of it."""
    # __wrapped__: torch caches some of these functions with functools (utils._triton's).
    code = getattr(getattr(function, "__wrapped__", function), "__code__", None)
    return code is not None and name in code.co_names


def torch_runs_backend_init() -> bool:
    """Whether torch calls the device module's ``_inductor_backend_init`` itself (2.15), or
    cannot be told yet (its codegen is not imported): then nothing backports it."""
    common = sys.modules.get(CODEGEN_COMMON)
    return common is None or NATIVE_BACKEND_INIT_FLAG in common.__dict__


def _install_into(module: ModuleType) -> None:
    installer, ready = INSTALLERS.get(module.__name__, ("", ""))
    # No ``ready``: a torch without that door (2.6's subproc_pool), or a module mid-import.
    if not installer or module.__dict__.get(ready) is None:
        return
    if _native_hook(module) or not _device_needs(module):
        return
    module_name, function = installer.split(":")
    getattr(importlib.import_module(module_name), function)(module)


def rebind(name: str, original: object, replacement: object) -> None:
    """Put ``replacement`` wherever torch's modules bound ``original`` as ``name`` (a module
    that imported it by name before the package installed keeps no stale copy)."""
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("torch.") or not isinstance(module, ModuleType):
            continue
        # The module's own namespace, never getattr: a module's __getattr__ (torch.utils.mkldnn's
        # on 2.15) would build what it serves lazily, with its warnings, for a name it lacks.
        if module.__dict__.get(name) is original:
            module.__dict__[name] = replacement


class _InstallAfterExec:
    """Wraps a watched module's loader. (Plain classes: importlib.abc costs milliseconds.)"""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _install_into(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for tools
        return getattr(self._loader, name)


class ImportWatcher:
    """Stays on sys.meta_path: ``importlib.reload(cpp_builder)`` finds the module's spec
    again, and executing it anew writes torch's own function past the chain."""

    @staticmethod
    def arm() -> None:
        """For ``serve.installed``, which cannot import this module: install now."""
        arm()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in INSTALLERS:
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
    it is (and torch 2.15's codegen hooks, before 2.15, with their modules). Cheap and
    idempotent; ``import inductor_device_options`` calls it (and so does ``import torch``,
    through the package's ``torch.backends`` entry point).

    Call it again after writing ``cpp_builder.__dict__["get_cpp_torch_device_options"]``
    directly, the one assignment the hook does not see, to install the hook over it.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.arm()  # installed already, or at the first import of cpp_builder

    With ``INDUCTOR_DEVICE_OPTIONS_DISABLE=1`` in the environment it installs nothing.
    """
    if disabled():
        return
    with _state.lock:
        if _state.watcher is None or _state.watcher not in sys.meta_path:
            watcher = ImportWatcher()
            _state.watcher = watcher
            sys.meta_path.insert(0, watcher)
    install_imported(INSTALLERS)


def install_imported(names: Iterable[str]) -> None:
    """Install into those of the watched modules ``names`` that are imported already (an
    import that went past the watcher)."""
    if disabled():
        return
    with _state.lock:
        for name in names:
            module = sys.modules.get(name)
            if module is not None:
                _install_into(module)
