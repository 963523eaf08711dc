"""The check ``torch_hooks``: how the device's backend meets torch 2.15's out-of-tree hooks
on the running torch. Its PrivateUse1 device module's ``_inductor_backend_init`` registers
it with Inductor (run first, by :func:`run_backend_init`, as a compile runs it); what its
``DeviceOpOverrides``, ``DeviceInterface`` and C++ wrapper codegen class define that this
torch never asks (``uses_gpu_cpp_wrapper()`` where the package could not provide it,
``is_gpu()`` of an interface registered after ``GPU_TYPES`` was built, an include method of
another release) warns."""

from __future__ import annotations

import inspect

from .._hook.torch_hooks import (
    USES_GPU_CPP_WRAPPER,
    device_include_path_names,
    torch_hooks,
)
from .._lookup.interfaces import as_torch_2_15, out_of_tree_interface
from .._lookup.registry import describe_callable
from .._options.problems import Problem
from .backend_init_run import BackendInit
from .checks import Check, Context, check

#: The methods a C++ wrapper codegen class names the device's header with: torch 2.13 on
#: calls the first two, torch 2.10 to 2.12 the last, torch 2.6 none.
INCLUDE_METHODS = (
    "get_device_include_path_jit",
    "get_device_include_path_aot",
    "get_device_include_path",
)


def check_torch_hooks(context: Context) -> Check:
    """The device's registration through ``_inductor_backend_init``, and what its backend
    defines of torch 2.15's hooks that the running torch never calls."""
    name, device = "torch_hooks", context.device_type
    backend = context.backend_init
    if backend is not None and backend.device_type != device:
        backend = None
    if backend is not None and backend.error is not None:
        return check(
            name,
            "fail",
            f"{backend.function} raised {backend.error.partition(':')[0]}",
            Problem(
                f"{backend.error}: Inductor calls it at the device's first compile "
                f"({backend.hook.status}: {backend.hook.detail}), which would fail there",
                f"fix {backend.function}",
            ),
        )
    found = [
        warning
        for warning in (
            _not_registered(backend),
            _gpu_cpp_wrapper(device),
            _late_gpu(device),
            _includes(device),
        )
        if warning is not None
    ]
    if not found:
        return check(name, "pass", _summary(device, backend))
    said = [label for label, _ in found]
    if backend is not None and backend.registered:
        said.insert(0, f"registers through {backend.function} ({backend.hook.status})")
    return check(name, "warn", "; ".join(said), *(problem for _, problem in found))


def backend_registered(device: str) -> bool:
    """Whether an Inductor backend (a scheduling) is registered for ``device`` here."""
    from torch._inductor.codegen.common import get_scheduling_for_device

    return get_scheduling_for_device(device) is not None


def _summary(device: str, backend: BackendInit | None) -> str:
    import torch

    if backend is not None:
        return backend.describe()
    if not backend_registered(device):
        return f"none seen: no Inductor backend is registered for {device!r} in this process"
    return f"none that torch {torch.__version__} leaves uncalled"


#: A warning found: what the summary says of it, and its problem.
Finding = tuple[str, Problem]


def _not_registered(backend: BackendInit | None) -> Finding | None:
    if backend is None or backend.registered:
        return None
    if backend.hook.status == "left out":
        cause = (
            f"nothing calls {backend.function} here: {backend.hook.detail}, and the device "
            "has no Inductor backend"
        )
        fix = f"restore torch's init_backend_registration, or register {backend.device_type!r}"
        return f"nothing calls {backend.function}", Problem(cause, fix)
    return f"{backend.function} registered no Inductor backend", Problem(
        f"{backend.function} ran, as at the device's first compile, and registered no "
        f"backend for {backend.device_type!r}: Inductor cannot compile for it",
        f"call torch._inductor.codegen.common.register_backend_for_device("
        f"{backend.device_type!r}, ...) in {backend.function}",
    )


def _gpu_cpp_wrapper(device: str) -> Finding | None:
    """``uses_gpu_cpp_wrapper()`` answered True where nothing asks it."""
    import torch
    from torch._inductor.codegen import common

    hook = next(hook for hook in torch_hooks() if hook.name == USES_GPU_CPP_WRAPPER)
    if hook.status != "left out":
        return None  # torch 2.15 or the package asks it
    try:
        overrides = common.get_device_op_overrides(device)
    except KeyError:  # none registered: torch 2.13 and 2.15 raise (2.6 returns None)
        return None
    method = getattr(overrides, "uses_gpu_cpp_wrapper", None)
    try:
        uses = callable(method) and method() is True
    except Exception:  # this torch never calls it: nor does doctor judge it
        return None
    if not uses:
        return None
    overrides_name = describe_callable(type(overrides))
    version = torch.__version__
    return f"torch {version} never asks uses_gpu_cpp_wrapper()", Problem(
        f"{overrides_name}.uses_gpu_cpp_wrapper() returns True, which torch 2.15 asks "
        f"and torch {version} does not here (the package's backport is left out: "
        f"{hook.detail}), {device!r} included",
        "restore torch's own GraphLowering.codegen_with_cpp_wrapper (the package's backport "
        f"then asks the overrides), or make the cpp_wrapper builds of {device!r} work with the "
        f"CPU-style C++ wrapper on torch {version}",
    )


def _late_gpu(device: str) -> Finding | None:
    """``is_gpu()`` answers true, but ``GPU_TYPES`` was built before the interface was
    registered: Inductor treats the device as no GPU, torch 2.15 included."""
    from torch._inductor import utils

    interface = out_of_tree_interface(device, "is_gpu")
    if interface is None or device in utils.GPU_TYPES:
        return None
    try:
        gpu = as_torch_2_15(interface).is_gpu()
    except Exception:  # torch never asked it either
        return None
    if not gpu:
        return None
    name = describe_callable(interface)
    return f"{name}.is_gpu() is never asked", Problem(
        f"{name}.is_gpu() returns True, but torch._inductor.utils.GPU_TYPES was built, as "
        f"torch 2.15 builds it, when torch._inductor.utils was imported, before the interface "
        f"was registered: Inductor treats {device!r} as no GPU (no device guards, "
        "get_gpu_type() never answers it). Importing torch._dynamo imports that module",
        f"leave is_gpu() out of {name}, or register it into torch._dynamo.device_interface."
        "device_interfaces as soon as that module has executed (before torch._inductor.utils "
        "builds GPU_TYPES)",
    )


def _includes(device: str) -> Finding | None:
    """The device's C++ wrapper codegen class defines include methods this torch never
    calls, and none it calls."""
    import torch
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    codegen = get_wrapper_codegen_for_device(device, cpp_wrapper=True)
    if not isinstance(codegen, type):
        return None
    defined = [method for method in INCLUDE_METHODS if _defines(codegen, method, CppWrapperCpu)]
    called = [method for method in INCLUDE_METHODS if hasattr(CppWrapperCpu, method)]
    if not defined or set(defined) & set(called):
        return None
    name = describe_callable(codegen)
    version = torch.__version__
    if called == ["get_device_include_path"]:
        fix = "also define get_device_include_path(device) (torch 2.10 to 2.12), which reads "
        fix += "V.graph.aot_mode, giving what the _jit and _aot methods give"
    elif called:
        fix = "also define get_device_include_path_jit(device) and get_device_include_path_aot"
        fix += "(device) (torch 2.13 on), keeping get_device_include_path for torch 2.10 to 2.12"
    else:
        fix = "ship the header this torch includes itself (the headers check names it), or "
        fix += "require a torch whose CppWrapperCpu asks the class (2.10 on)"
    methods = " and ".join(f"{method}()" for method in defined)
    return f"torch {version} never calls {methods}", Problem(
        f"{name} defines {methods}, which torch {version} never calls: it calls "
        f"{device_include_path_names()}, so what the generated code for {device!r} includes "
        "is not what the class names",
        fix,
    )


def _defines(codegen: type, method: str, torch_class: type) -> bool:
    """``codegen`` has ``method`` of its own, not torch's ``CppWrapperCpu``'s."""
    found = inspect.getattr_static(codegen, method, None)
    return found is not None and found is not inspect.getattr_static(torch_class, method, None)
