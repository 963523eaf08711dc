"""torch 2.15's ``DeviceOpOverrides.uses_gpu_cpp_wrapper()`` before 2.15.

torch 2.15's ``GraphLowering.codegen_with_cpp_wrapper`` takes the GPU-style C++ wrapper path
(Triton kernels autotuned in a first, Python-wrapper pass) for a graph with a device whose
overrides answer ``uses_gpu_cpp_wrapper()`` true (``codegen.common._uses_gpu_cpp_wrapper``).
torch 2.6 to 2.14 decide inside the method with one expression,
``any(device in self.device_types for device in ["cuda", "xpu"])``, in a body that differs in
every release; backends replaced the whole method.

Installed when ``torch._inductor.graph`` is imported: the running torch's own method,
compiled again from its source with that one expression extended to
``... or <an out-of-tree device of the graph whose overrides answer true>``. Nothing else of
the body changes, so each release keeps its own path; cuda and xpu keep theirs, and a device
whose overrides are torch's own or do not define the method gets what its torch gives it.
Where the expression is not found exactly once (a torch this package does not know, or a
method replaced before), nothing is installed and the hook is reported left out.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable
from types import FunctionType, ModuleType
from typing import Any

from .._torch_names import CODEGEN_WITH_CPP_WRAPPER, GRAPH_LOWERING
from .backports import BACKPORT_MARK

HOOK = "uses_gpu_cpp_wrapper"
#: The name the recompiled method calls the backport by (a closure variable, not a global
#: of torch's module).
_ASKED = "_inductor_device_options_uses_gpu_cpp_wrapper"
#: torch 2.15's name in ``graph``: a torch that has it asks the overrides itself.
NATIVE_NAME = "_uses_gpu_cpp_wrapper"


def install(graph: ModuleType) -> None:
    """Backport ``uses_gpu_cpp_wrapper()`` into ``GraphLowering.codegen_with_cpp_wrapper``."""
    lowering = graph.__dict__[GRAPH_LOWERING]
    method = lowering.__dict__.get(CODEGEN_WITH_CPP_WRAPPER)
    if NATIVE_NAME in graph.__dict__ or getattr(method, BACKPORT_MARK, False):
        return
    backport = recompiled(method, graph) if isinstance(method, FunctionType) else None
    if backport is not None:
        setattr(lowering, CODEGEN_WITH_CPP_WRAPPER, backport)


def recompiled(method: FunctionType, graph: ModuleType) -> FunctionType | None:
    """``method`` with torch's GPU device list extended to ask the overrides; None where
    the list is not found exactly once."""
    try:
        source = textwrap.dedent(inspect.getsource(method))
    except (OSError, TypeError):  # no source installed
        return None
    tree = ast.parse(source)
    extended = _ExtendGpuList()
    definition = extended.visit(tree.body[0])
    if extended.found != 1 or not isinstance(definition, ast.FunctionDef):
        return None
    # torch's method, nested in a maker whose one parameter is _ASKED: the recompiled body
    # reads it as a closure cell, and torch's module namespace stays untouched.
    definition.decorator_list = []
    maker = ast.FunctionDef(
        name="make",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=_ASKED)],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[definition, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[],
    )
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    # Tracebacks point at torch's own file and lines. graph.py has ``from __future__ import
    # annotations`` on 2.13 and 2.15 (not 2.6): its __future__ feature, found in the module's
    # namespace, gives the compile the same flag.
    ast.increment_lineno(module, method.__code__.co_firstlineno - 1)
    future = graph.__dict__.get("annotations")
    flags = getattr(future, "compiler_flag", 0)
    code = compile(module, method.__code__.co_filename, "exec", flags=flags, dont_inherit=True)
    namespace: dict[str, Any] = {}
    exec(code, graph.__dict__, namespace)  # torch's own source, from its installed file
    function: FunctionType = namespace["make"](uses_gpu_cpp_wrapper)
    function.__qualname__ = method.__qualname__
    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(function, method, assigned=(), updated=())
    setattr(function, BACKPORT_MARK, True)
    return function


class _ExtendGpuList(ast.NodeTransformer):
    """``any(device in self.device_types for device in ["cuda", "xpu"])`` becomes
    ``(that) or _ASKED(self.device_types)``."""

    found = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not _is_torch_gpu_list(node):
            return node
        self.found += 1
        device_types = ast.Attribute(
            value=ast.Name(id="self", ctx=ast.Load()), attr="device_types", ctx=ast.Load()
        )
        asked = ast.Call(func=ast.Name(id=_ASKED, ctx=ast.Load()), args=[device_types], keywords=[])
        return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[node, asked]), node)


def _is_torch_gpu_list(node: ast.Call) -> bool:
    if not (isinstance(node.func, ast.Name) and node.func.id == "any" and len(node.args) == 1):
        return False
    generator = node.args[0]
    if not isinstance(generator, ast.GeneratorExp) or len(generator.generators) != 1:
        return False
    listed = generator.generators[0].iter
    if not isinstance(listed, (ast.List, ast.Tuple)):
        return False
    names = [element.value for element in listed.elts if isinstance(element, ast.Constant)]
    # 2.6's ``if any(...)`` and 2.13's ``has_gpu = any(...)`` both hold this very call.
    return names == ["cuda", "xpu"] and "self.device_types" in ast.unparse(generator.elt)


def uses_gpu_cpp_wrapper(device_types: Iterable[str]) -> bool:
    """Whether an out-of-tree device among ``device_types`` has overrides that define
    ``uses_gpu_cpp_wrapper()`` and answer it true, as torch 2.15 asks them."""
    return any(_asks(device) for device in device_types)


def _asks(device: str) -> bool:
    method = device_hook(device)
    return method is not None and bool(method())


def graph_asks_overrides(device: str) -> bool:
    """Whether ``GraphLowering`` asks ``device``'s overrides ``uses_gpu_cpp_wrapper()``:
    torch 2.15 always, the package's backport where the overrides define it."""
    from torch._inductor.codegen import common

    if hasattr(common.DeviceOpOverrides, HOOK):
        return True
    graph = sys.modules.get("torch._inductor.graph")
    lowering = graph.__dict__.get(GRAPH_LOWERING) if graph is not None else None
    method = getattr(lowering, CODEGEN_WITH_CPP_WRAPPER, None)
    return getattr(method, BACKPORT_MARK, False) and device_hook(device) is not None


def device_hook(device: str) -> Callable[[], object] | None:
    """The device's ``uses_gpu_cpp_wrapper`` where its overrides are not torch's own."""
    from torch._inductor.codegen.common import get_device_op_overrides

    try:
        overrides = get_device_op_overrides(device)
    except KeyError:  # torch 2.13 raises for a device without overrides; 2.6 returns None
        return None
    if overrides is None or type(overrides).__module__.startswith("torch."):
        return None
    method: Callable[[], object] | None = getattr(overrides, HOOK, None)
    return method
