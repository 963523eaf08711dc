"""At run time: warn when Inductor builds a served device's C++ wrapper with the options of
another device type.

A device's options reach a build only if Inductor asks for that device. It does not
always: a cpp_wrapper build asks for the device its C++ wrapper codegen reports
(``CppWrapperCodeCache.load_pybinding(device_type=self.device)``), and a codegen that
subclasses ``CppWrapperCpu`` without setting ``self.device`` reports ``"cpu"``, as
openreg-derived backends do. AOTInductor asks for the graph's device
(``AotCodeCompiler.compile(device_type=graph.device_type)``). Both precompile
``torch/csrc/inductor/{cpp_wrapper,aoti_include}/<device asked>.h``
(``codecache._get_cpp_wrapper_header``), whatever the codegen includes.

:func:`observer` reads it off Inductor's own state while it builds and warns,
once per (device, device type asked), when a served device is not asked for
(``_diagnose/asked`` reads it off the registered codegen, for ``doctor``, ``list`` and
``show``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import _state
from .._errors import DeviceNotAskedWarning
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._lookup.registry import describe_callable

# --- at run time -------------------------------------------------------------------------

#: Served devices whose builds asked for another device type in this process, as
#: (device, asked) -> codegen: for ``list``, ``show`` and ``doctor``.
seen = _state.not_asked_seen


def observer(is_served: Callable[[str], bool]) -> Callable[[object], None]:
    """What the chain calls for each question to the builder (it runs on every lookup, so
    it does the least it can): when Inductor is building the C++ wrapper of a graph whose
    device is served (``is_served``) and its wrapper codegen reports another device type,
    which is the one asked, warn once per (device, asked)."""
    modules = sys.modules
    # Where V.graph lives, read once per module object (a reload makes another): reading it
    # again on each question doubled what the hook adds to a cpu lookup during a compile.
    slot_of: ModuleType | None = None
    local: Any = None
    key: str | None = None
    null: type = type(None)

    def observe_question(device_type: object) -> None:
        nonlocal slot_of, local, key, null
        virtualized = modules.get("torch._inductor.virtualized")
        if virtualized is None or type(device_type) is not str:
            return
        if virtualized is not slot_of:
            local, key, null = _graph_slot(virtualized)
            slot_of = virtualized
        # The thread-local slot behind V.graph: asking V.graph raises and catches an
        # AttributeError and builds a NullHandler on every question outside a compile.
        graph = virtualized.V.graph if key is None else local.__dict__.get(key)
        if graph is None or isinstance(graph, null):
            return
        if getattr(graph, "cpp_wrapper", False):
            _observe_build(graph, device_type, is_served)

    return observe_question


def _observe_build(graph: Any, device_type: str, is_served: Callable[[str], bool]) -> None:
    graph_device = getattr(graph, "device_type", None)
    wrapper = getattr(graph, "wrapper_code", None)
    asked = device_type.partition(":")[0]
    if (
        type(graph_device) is not str
        or graph_device == asked
        or graph_device in RESERVED_DEVICE_TYPES
        or getattr(wrapper, "device", None) != device_type
    ):
        return  # not the wrapper's build of a graph of another device
    key = (graph_device, asked)
    warned = _state.not_asked_warned
    if key in warned or not is_served(graph_device):
        return
    codegen = describe_callable(type(wrapper))
    with _state.lock:
        if key in warned:
            return
        warned.put(key, True)
        seen.put(key, codegen)
    warnings.warn(
        DeviceNotAskedWarning(
            not_asked_message(graph_device, asked, codegen),
            device_type=graph_device,
            asked=asked,
            codegen=codegen,
        ),
        stacklevel=3,
    )


def not_asked_message(device_type: str, asked: str, codegen: str) -> str:
    return (
        f"inductor-device-options: Inductor builds the C++ wrapper of a {device_type!r} graph "
        f"with the options of {asked!r}, not those of {device_type!r}: its wrapper codegen "
        f"{codegen} reports device {asked!r}, so the C++ options of {device_type!r} never "
        f"reach the build. Fix: {not_asked_fix(device_type, codegen)}"
    )


def not_asked_fix(device_type: str, codegen: str) -> str:
    return (
        f"in {codegen}.__init__, set self.device = {device_type!r} before "
        "super().__init__(), and ship "
        f"torch/csrc/inductor/cpp_wrapper/{device_type}.h (torch precompiles it for the "
        "device) in an include dir the device's options add; "
        f"`inductor-device-options doctor {device_type}` checks both"
    )


@_state.cached(1)
def _graph_slot(virtualized: ModuleType) -> tuple[Any, str | None, type]:
    """Where ``V.graph`` lives: ``threadlocal`` under ``_graph._key``, as torch 2.6-2.15's
    ``virtualized.Virtualized._get_handler`` reads it (``key`` None: elsewhere, so the
    public ``V.graph`` is asked)."""
    key = getattr(getattr(virtualized, "_graph", None), "_key", None)
    local = getattr(virtualized, "threadlocal", None)
    found = key if isinstance(key, str) and hasattr(local, "__dict__") else None
    return local, found, virtualized.NullHandler
