"""The ``aoti_shim_ops`` door (issue 48): the aten ops whose C shims a device's SDK declares
are called as torch calls the ops of its own list, for that device only.

In cpp_wrapper mode and in AOTInductor, ``ir.FallbackKernel.codegen`` asks one question of an
aten fallback op: ``str(kernel) not in inductor_fallback_ops`` (a local
``from torchgen.aoti.fallback_ops import inductor_fallback_ops``, read at each call: 2.6
``ir.py`` ~6506, 2.13 ~9209, 2.15 ~10129). Listed, the op becomes a call of its C shim,
named by ``CppWrapperCpu.get_c_shim_func_name`` (``aoti_torch_<device>_<op>[_<overload>]``);
unlisted, a run-time lookup: the proxy executor in AOTInductor, ``aoti_torch_call_dispatcher``
(2.13, 2.15) or a call back into Python (2.6) in cpp_wrapper. The list is one global object,
so torch_npu replaces it and changes cpu's and cuda's code too (census row 25).

Here ``FallbackKernel.codegen`` is wrapped. Where the device the shim name will carry declares
the op and torch's list lacks it, torch's own codegen runs with the list seen as holding that
one op, in that thread, for that call; everything else calls torch's code untouched, so every
other device's code is byte for byte torch's. The device the name carries: 2.13 and 2.15
name it by the kernel's device (``get_c_shim_func_name(kernel, device)``, the wrapper's
device where the kernel has none); 2.6 by the wrapper's (``get_c_shim_func_name(self,
kernel)`` reads ``self.device``). torch's later checks still apply as to a listed op: a
complex scalar (2.13) or a scalar the shim's ``double`` cannot carry (2.15) keeps the run-time
lookup. Declaring an op never makes it a fallback: only a FallbackKernel asks.

"Seen as holding": for the call, ``torchgen.aoti.fallback_ops.inductor_fallback_ops`` is a
copy of what is there (a dict on 2.13 and 2.15, a set on 2.6, or a backend's replacement of
either) whose ``in`` also answers for the ops the calls under way in this thread added; other
threads see torch's entries only. The copy stays while any thread's call is under way, and
the original is put back after the last, unless someone assigned another list meanwhile.
An added op has no versions: ``.get`` answers ``{}`` for it as torch's own default does.

torch 2.15 asks the same question earlier, at lowering: ``FallbackKernel.create`` turns a
scalar in a Tensor slot into a constant tensor where ``_uses_aot_proxy_executor(kernel)``
(its one caller is ``_materialize_scalar_tensor_args``) says the op has no shim. That
classmethod is wrapped too, for the device of the first argument tensor that has one, as
``FallbackKernel.find_device`` picks the kernel's device; an op with no argument tensor is
left to torch. 2.6 and 2.13 have no such step.

The declaration does not join the cache keys: the code with and without it is valid for the
same SDK headers, whose contents key the device's compiles (``device_identity``).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._torch_names import FALLBACK_KERNEL, FALLBACK_OPS, FALLBACK_OPS_MODULE
from .provider_doors import shim_ops

#: 2.15's classmethod of ``FallbackKernel`` that asks ``_uses_aot_proxy_executor``.
MATERIALIZE = "_materialize_scalar_tensor_args"
_MARK = "_inductor_device_options_shim_ops"


def install(ir: ModuleType) -> None:
    """Wrap ``ir.FallbackKernel.codegen`` (and 2.15's ``_materialize_scalar_tensor_args``)
    once; idempotent (a module executed anew has a new class, wrapped again)."""
    fallback_kernel = ir.__dict__.get(FALLBACK_KERNEL)
    if not isinstance(fallback_kernel, type):
        return
    codegen = vars(fallback_kernel).get("codegen")
    if callable(codegen) and not getattr(codegen, _MARK, False):
        fallback_kernel.codegen = _marked(_codegen(codegen))  # type: ignore[attr-defined]
    materialize = vars(fallback_kernel).get(MATERIALIZE)
    if isinstance(materialize, classmethod) and not getattr(materialize.__func__, _MARK, False):
        wrapped = _materialize(materialize.__func__, ir)
        setattr(fallback_kernel, MATERIALIZE, classmethod(_marked(wrapped)))


def is_installed(ir: ModuleType) -> bool:
    """Whether ``ir.FallbackKernel.codegen`` is the door's wrapper."""
    fallback_kernel = ir.__dict__.get(FALLBACK_KERNEL)
    return bool(getattr(vars(fallback_kernel).get("codegen"), _MARK, False))


def release_gap() -> str | None:
    """None where the running torch's ``FallbackKernel.codegen`` decides by
    ``inductor_fallback_ops`` (2.6, 2.13, 2.15), else what this release lacks."""
    import torch
    from torch._inductor import ir

    codegen = vars(ir.FallbackKernel).get("codegen")
    code = getattr(inspect.unwrap(codegen), "__code__", None) if callable(codegen) else None
    if code is not None and FALLBACK_OPS in code.co_names:  # its local import of the list
        return None
    return (
        f"torch {torch.__version__}'s FallbackKernel.codegen does not read "
        f"{FALLBACK_OPS_MODULE}.{FALLBACK_OPS}: the device's shims are not called"
    )


def _codegen(torch_codegen: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    @functools.wraps(torch_codegen)
    def codegen(self: Any, wrapper: Any) -> None:
        op = _declared_op(self.op_overload, lambda: _shim_device(self, wrapper))
        if op is None:
            return torch_codegen(self, wrapper)
        with _listed(op):
            return torch_codegen(self, wrapper)

    return codegen


def _materialize(torch_materialize: Callable[..., Any], ir: ModuleType) -> Callable[..., Any]:
    @functools.wraps(torch_materialize)
    def materialize(cls: type, kernel: Any, args: Any, kwargs: Any) -> Any:
        op = _declared_op(kernel, lambda: _arguments_device(ir, args, kwargs))
        if op is None:
            return torch_materialize(cls, kernel, args, kwargs)
        with _listed(op):
            return torch_materialize(cls, kernel, args, kwargs)

    return materialize


def _declared_op(kernel: Any, device_of: Callable[[], str | None]) -> str | None:
    """``str(kernel)`` where the C++ wrapper is generated, ``kernel`` is an aten op that the
    device ``device_of()`` declares a shim for and torch's list lacks; else None (torch
    decides alone)."""
    from torch._inductor.virtualized import V
    from torch._ops import OpOverload

    if not V.graph.cpp_wrapper or not isinstance(kernel, OpOverload):
        return None
    if kernel.namespace != "aten":
        return None
    device_type = device_of()
    if device_type is None or device_type in RESERVED_DEVICE_TYPES:
        return None
    declared = shim_ops(device_type)  # checks the attribute: raises before any g++
    op = str(kernel)
    if op not in declared or op in _current_list():
        return None
    return op


def _shim_device(node: Any, wrapper: Any) -> str | None:
    """The device type in the shim name torch will write for ``node``."""
    from torch._inductor.virtualized import V

    # torch 2.13-2.15's FallbackKernel.codegen passes the kernel's device to
    # get_c_shim_func_name; 2.6's reads the wrapper's ``self.device``.
    if _names_by_kernel_device():
        device = node.get_device()
        if device is not None:
            return str(device.type)
    else:  # 2.6: the wrapper that writes the call names it (V.graph.wrapper_code.device)
        wrapper = V.graph.wrapper_code
    device_type = getattr(wrapper, "device", None)
    return device_type if isinstance(device_type, str) else None


@_state.cached(1)
def _names_by_kernel_device() -> bool:
    """Whether ``get_c_shim_func_name`` takes the device (2.13, 2.15) rather than reading
    the wrapper's (2.6)."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    return "device" in inspect.signature(CppWrapperCpu.get_c_shim_func_name).parameters


def _arguments_device(ir: ModuleType, args: Any, kwargs: Any) -> str | None:
    """The device type of the first argument tensor with a device, in the order
    ``process_kernel`` flattens them and ``find_device`` reads them (2.15)."""
    from torch.utils import _pytree as pytree

    for leaf in pytree.tree_leaves({"args": args, "kwargs": kwargs}):
        if isinstance(leaf, ir.IRNode) and not isinstance(leaf, ir.TorchBindObject):
            device = leaf.get_device()
            if device is not None:
                return str(device.type)
    return None


class _ListedDict(dict[object, object]):
    """torch 2.13's and 2.15's list, with this thread's added ops."""

    def __contains__(self, op: object) -> bool:
        return dict.__contains__(self, op) or op in _state.this_thread.shim_ops_listed


class _ListedSet(set[object]):
    """torch 2.6's list, with this thread's added ops."""

    def __contains__(self, op: object) -> bool:
        return set.__contains__(self, op) or op in _state.this_thread.shim_ops_listed


class _Swap:
    """The list's copy while calls are under way: (torch's, the copy, how many calls)."""

    lock = threading.Lock()
    original: object = None
    listed: object = None
    calls = 0


def _current_list() -> Any:
    """What torch reads now, with the door's copy seen through."""
    import importlib

    current = importlib.import_module(FALLBACK_OPS_MODULE).__dict__.get(FALLBACK_OPS, ())
    # While another thread's call holds the copy, torch's own entries are the original's:
    # an op another thread added must not count as listed by torch here.
    return _Swap.original if current is _Swap.listed and _Swap.calls else current


@contextmanager
def _listed(op: str) -> Iterator[None]:
    """``op`` in torch's list for this thread, for the duration."""
    outer = _state.this_thread.shim_ops_listed
    _state.this_thread.shim_ops_listed = outer | {op}
    _enter()
    try:
        yield
    finally:
        _state.this_thread.shim_ops_listed = outer
        _leave()


def _enter() -> None:
    import importlib

    module = importlib.import_module(FALLBACK_OPS_MODULE)
    # One copy for every call under way (any thread, nested calls included): the first
    # call puts it in, the last takes it out (_leave), so torch never sees two copies.
    with _Swap.lock:
        _Swap.calls += 1
        if _Swap.calls > 1:
            return
        original = module.__dict__.get(FALLBACK_OPS)
        listed: object = None
        if isinstance(original, dict):
            listed = _ListedDict(original)
        elif isinstance(original, (set, frozenset)):
            listed = _ListedSet(original)
        _Swap.original, _Swap.listed = original, listed
        if listed is not None:  # a list of another type: torch decides alone
            module.__dict__[FALLBACK_OPS] = listed


def _leave() -> None:
    import importlib

    module = importlib.import_module(FALLBACK_OPS_MODULE)
    with _Swap.lock:
        _Swap.calls -= 1
        if _Swap.calls:
            return
        # Put back only if still ours: a backend that assigned its own list meanwhile keeps it.
        if _Swap.listed is not None and module.__dict__.get(FALLBACK_OPS) is _Swap.listed:
            module.__dict__[FALLBACK_OPS] = _Swap.original
        _Swap.original = _Swap.listed = None


def _marked(function: Callable[..., Any]) -> Callable[..., Any]:
    setattr(function, _MARK, True)
    return function
