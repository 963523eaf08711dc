"""What the C++ Inductor generates for a device begins with, and the C shim functions it
calls for common extern kernels: asked of the device's registered C++ wrapper codegen,
created as Inductor creates it, in a stand-in graph of its own.

The header is what the codegen's ``write_header`` writes and, from torch 2.13 on, what
``add_device_include`` adds for an extern kernel on the device (the device's
``cpp_wrapper``/``aoti_include`` header). An extern kernel (``extern_kernels.mm``, as a
``Linear`` without bias gives) becomes a call of ``aoti_torch_<device>_mm_out``: the name
is the codegen's own ``get_c_shim_func_name`` (torch 2.6 names it after the device the
codegen reports, later torch after the kernel's device).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

#: The extern kernels whose C shim functions doctor looks for: what a ``Linear`` (with and
#: without bias) and a batched matrix product become, by their short name, and the C++ kernel
#: name Inductor gives each (``cpp_kernel_name`` of ``torch._inductor.kernel.mm.aten_mm``,
#: ``aten_addmm`` and ``kernel.bmm.aten_bmm``, the same on every release: the leg tests hold
#: it). Named here, not imported: importing those modules compiles their templates (0.4 s).
EXTERN_KERNELS = {"mm": "at::mm_out", "addmm": "at::addmm_out", "bmm": "at::bmm_out"}


class GeneratedCode(NamedTuple):
    """``codegen``: the device's C++ wrapper codegen (module.qualname); ``header``: the
    text the generated code begins with; ``shim_functions``: extern kernel -> the C shim
    function the generated code calls for it on the device."""

    codegen: str
    header: str
    shim_functions: dict[str, str]


@contextmanager
def stand_in_wrapper(codegen: type, aot_mode: bool = False) -> Iterator[Any]:
    """An instance of ``codegen`` created as Inductor creates it, in a stand-in graph of its
    own (an identity), which stays the graph being compiled while the block runs."""
    import torch.fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    graph = GraphLowering(torch.fx.symbolic_trace(_identity), cpp_wrapper=True, aot_mode=aot_mode)
    with V.set_graph_handler(graph):
        create: Callable[..., Any] = codegen.create  # type: ignore[attr-defined]
        # CppWrapperCpu.create(is_subgraph, subgraph_name, parent_wrapper[,
        # partition_signatures]): torch 2.13 and 2.15 take the fourth, 2.6 does not.
        try:
            wrapper = create(False, None, None, None)
        except TypeError:  # torch 2.6: no partition signatures
            wrapper = create(False, None, None)
        yield wrapper


def _identity(x: object) -> object:
    return x


def generated_code(
    device_type: str, aot_mode: bool, shim_ops: Iterable[str] = ()
) -> GeneratedCode | None:
    """What the registered codegen writes for ``device_type``; None where no C++ wrapper
    codegen is registered for it in this process. Raises what creating it raises.

    ``shim_ops``: the ``aten.<op>.<overload>`` ops the provider's ``aoti_shim_ops`` declares,
    whose C shims the generated code calls too (keyed by the op), named as torch names a
    fallback kernel's (``set_cpp_kernel_name``: ``at::_ops::<op>[_<overload>]::call``)."""
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    from .._lookup.registry import describe_callable

    codegen = get_wrapper_codegen_for_device(device_type, cpp_wrapper=True)
    if codegen is None:
        return None
    with stand_in_wrapper(codegen, aot_mode) as wrapper:
        wrapper.write_header()
        add_device_include = getattr(wrapper, "add_device_include", None)
        if add_device_include is not None:  # torch 2.13 on: what an extern kernel adds
            add_device_include(device_type)
        header = wrapper.header.getvalue()
        name_of = wrapper.get_c_shim_func_name
        # get_c_shim_func_name(kernel, device), a staticmethod on 2.13 and 2.15; 2.6's method
        # get_c_shim_func_name(self, kernel) reads self.device.
        takes_device = len(inspect.signature(name_of).parameters) > 1
        kernels = {**EXTERN_KERNELS, **{op: _fallback_kernel_name(op) for op in sorted(shim_ops)}}
        shim_functions = {
            short: str(name_of(kernel, device_type) if takes_device else name_of(kernel))
            for short, kernel in kernels.items()
        }
    return GeneratedCode(describe_callable(codegen), header, shim_functions)


def _fallback_kernel_name(op: str) -> str:
    _, name, overload = op.split(".")
    return f"at::_ops::{name if overload == 'default' else f'{name}_{overload}'}::call"
