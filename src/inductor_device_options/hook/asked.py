"""Which device type Inductor's C++ builds really ask the builder for, and the headers
torch's own build steps include for it.

A device's options reach a build only if Inductor asks for that device. It does not
always: a cpp_wrapper build asks for the device its C++ wrapper codegen reports
(``CppWrapperCodeCache.load_pybinding(device_type=self.device)``), and a codegen that
subclasses ``CppWrapperCpu`` without setting ``self.device`` reports ``"cpu"``, as
openreg-derived backends do. AOTInductor asks for the graph's device
(``AotCodeCompiler.compile(device_type=graph.device_type)``). Both precompile
``torch/csrc/inductor/{cpp_wrapper,aoti_include}/<device asked>.h``
(``codecache._get_cpp_wrapper_header``), whatever the codegen includes.

:func:`asked_device_type` reads this off the registered codegen, for ``doctor``, ``list``
and ``show``. :func:`observe_question` reads it off Inductor's own state while it builds
and warns, once per (device, device type asked), when a served device is not asked for.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from .._errors import DeviceNotAskedWarning
from ..lookup import registry as _registry


class AskedDevice(NamedTuple):
    """What a device's C++ builds ask the builder for.

    ``asked``: the device type, None when it cannot be told in this process (``reason``
    says why). ``codegen``: the device's registered C++ wrapper codegen (module.qualname),
    None where none is registered. ``reported``: the device that codegen reports (what
    torch 2.6's generated code names its C shim after, in both modes), None where unknown.
    ``error``: creating the codegen as Inductor does raised this, so would every
    cpp_wrapper or AOTInductor build. ``precompiled_header``: the header torch's own
    precompile step includes for the device asked, None where this torch precompiles none.
    """

    device_type: str
    aot_mode: bool
    asked: str | None
    codegen: str | None
    reason: str
    precompiled_header: str | None
    reported: str | None = None
    error: str | None = None

    @property
    def mismatch(self) -> bool:
        return self.asked is not None and self.asked != self.device_type

    def describe(self) -> str:
        mode = "AOTInductor" if self.aot_mode else "cpp_wrapper"
        if self.asked is None:
            return f"{mode} builds: not known ({self.reason})"
        return f"{mode} builds ask for {self.asked!r} ({self.reason})"


def asked_device_type(device_type: str, aot_mode: bool) -> AskedDevice:
    """Which device type ``device_type``'s cpp_wrapper (or AOTInductor) builds ask for,
    from the codegen registered in this process (imports ``torch._inductor``)."""
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    codegen = get_wrapper_codegen_for_device(device_type, cpp_wrapper=True)
    if codegen is None:
        # The backend is not set up here: what torch precompiles for the device is the
        # backend's to change (torch_npu redirects it), so it is not claimed either.
        if aot_mode:
            return AskedDevice(
                device_type,
                True,
                device_type,
                None,
                "AOTInductor asks for the graph's device",
                None,
            )
        return AskedDevice(
            device_type,
            False,
            None,
            None,
            f"no C++ wrapper codegen is registered for {device_type!r} in this process: "
            "its backend is not imported",
            None,
        )
    name = _registry.describe_callable(codegen)
    try:
        reported = _reported_device(codegen)
    except Exception as error:
        return AskedDevice(
            device_type,
            aot_mode,
            None,
            name,
            f"creating {name} as Inductor does, in a stand-in graph, raised "
            f"{type(error).__name__}: {error}",
            None,
            error=f"{type(error).__name__}: {error}",
        )
    asked = device_type if aot_mode else reported
    if aot_mode:
        reason = "AOTInductor asks for the graph's device"
    else:
        default = (
            " (CppWrapperCpu's default: it never sets self.device)" if reported == "cpu" else ""
        )
        reason = f"{name} reports {reported!r}{default}"
    return AskedDevice(
        device_type,
        aot_mode,
        asked,
        name,
        reason,
        precompiled_header(asked, aot_mode),
        reported,
    )


def _reported_device(codegen: type) -> str:
    """The device an instance of ``codegen`` reports, created as Inductor creates it, in
    a stand-in graph of its own."""
    import torch.fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    graph = GraphLowering(torch.fx.symbolic_trace(_identity), cpp_wrapper=True)
    with V.set_graph_handler(graph):
        create: Callable[..., Any] = codegen.create  # type: ignore[attr-defined]
        try:
            wrapper = create(False, None, None, None)
        except TypeError:  # torch 2.6: no partition signatures
            wrapper = create(False, None, None)
    device = getattr(wrapper, "device", "cpu")
    return device if isinstance(device, str) else str(device)


def _identity(x: object) -> object:
    return x


def precompiled_header(device_type: str, aot_mode: bool) -> str | None:
    """The header torch's precompile step includes for builds asking for ``device_type``
    (asked of torch's own function), None where this torch precompiles none."""
    from torch._inductor import codecache, config

    header_of = getattr(codecache, "_get_cpp_wrapper_header", None)
    if header_of is None:
        return None
    if aot_mode:
        enabled = getattr(config.aot_inductor, "precompile_headers", False)
    else:
        enabled = getattr(config, "cpp_cache_precompile_headers", False)
    if not enabled:
        return None
    header: str = header_of(device_type, aot_mode=aot_mode)
    return header


# --- at run time -------------------------------------------------------------------------

_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()
#: Served devices whose builds asked for another device type in this process, as
#: (device, asked, codegen): for ``list``, ``show`` and ``doctor``.
seen: dict[tuple[str, str], str] = {}


def observe_question(device_type: object, is_served: Callable[[str], bool]) -> None:
    """Called for each question to the builder. When Inductor is building the C++ wrapper
    of a graph whose device is served (``is_served``) and its wrapper codegen reports
    another device type, which is the one asked, warn once per (device, asked)."""
    if type(device_type) is not str:
        return
    graph = _graph_being_built()
    if graph is None or not getattr(graph, "cpp_wrapper", False):
        return
    graph_device = getattr(graph, "device_type", None)
    wrapper = getattr(graph, "wrapper_code", None)
    asked = device_type.partition(":")[0]
    if (
        type(graph_device) is not str
        or graph_device == asked
        or graph_device in _registry.RESERVED_DEVICE_TYPES
        or getattr(wrapper, "device", None) != device_type
    ):
        return  # not the wrapper's build of a graph of another device
    key = (graph_device, asked)
    if key in _warned or not is_served(graph_device):
        return
    codegen = _registry.describe_callable(type(wrapper))
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
        seen[key] = codegen
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


def _graph_being_built() -> object | None:
    virtualized = sys.modules.get("torch._inductor.virtualized")
    if virtualized is None:
        return None
    graph = virtualized.V.graph
    return None if isinstance(graph, virtualized.NullHandler) else graph


def reset() -> None:
    """Forget the warnings given (tests)."""
    with _lock:
        _warned.clear()
        seen.clear()
