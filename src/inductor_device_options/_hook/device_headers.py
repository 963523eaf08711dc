"""The ``inductor_headers`` door (issue 48): the headers a provider declares for its device
are what Inductor's generated C++ includes for that device instead of torch's default
device header, and the first is the header torch precompiles for its builds.

torch 2.13 and later: ``CppWrapperCpu.add_device_include(device)`` splices what the
staticmethods ``get_device_include_path_jit/_aot(device)`` answer, and ``codecache``
precompiles the header ``_get_cpp_wrapper_header(device, aot_mode)`` names, which the
build then force-includes (``CppWrapperCodeCache._get_uncompiled_header``,
``AotCodeCompiler.compile``; module-global lookups). Both answer for the declaring device
only: every other device, and a declaring device whose wrapper codegen class overrides the
include method (Python's MRO finds its own first), gets torch's answer unchanged. A function
found there instead of torch's (a backend's global replacement) is wrapped the same way.

torch 2.6 has neither: ``CppWrapperCpu.write_header`` writes ``#include
<torch/csrc/inductor/aoti_torch/generated/c_shim_<device>.h>`` itself (an f-string) and
precompiles nothing; there the declared headers take that line's place. torch 2.10 to 2.12's
``get_device_include_path`` (the mode read off ``V.graph``) is left as it is.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._torch_names import CODEGEN_COMMON, CPP_WRAPPER_CPU, CPP_WRAPPER_CPU_CLASS

_MARK = "_inductor_device_options_device_headers"
#: torch 2.13+'s include methods of ``CppWrapperCpu``, by ``aot_mode``.
_INCLUDE_METHODS = {False: "get_device_include_path_jit", True: "get_device_include_path_aot"}
#: torch 2.10 to 2.12's single include method.
_MODE_READING_METHOD = "get_device_include_path"
#: ``codecache``'s function naming the header torch precompiles (2.13+; 2.6 has none).
_PRECOMPILED_HEADER = "_get_cpp_wrapper_header"
#: What torch 2.6's ``CppWrapperCpu.write_header`` includes for ``self.device``.
_C_SHIM_HEADER = "torch/csrc/inductor/aoti_torch/generated/c_shim_{device}.h"


def install(cpp_wrapper_cpu: ModuleType) -> None:
    """The door in ``CppWrapperCpu``'s device include; idempotent."""
    wrapper: type = cpp_wrapper_cpu.__dict__[CPP_WRAPPER_CPU_CLASS]
    if _INCLUDE_METHODS[False] in wrapper.__dict__:  # torch 2.13 and later
        for aot_mode, name in _INCLUDE_METHODS.items():
            torch_method = wrapper.__dict__[name]
            # Staticmethods in 2.13-2.15: the function inside, wrapped, goes back in as one.
            function = getattr(torch_method, "__func__", torch_method)
            if not getattr(function, _MARK, False):
                setattr(wrapper, name, staticmethod(_include_method(function, aot_mode)))
    elif _MODE_READING_METHOD not in wrapper.__dict__:  # torch 2.6's write_header
        write_header = wrapper.__dict__["write_header"]
        if not getattr(write_header, _MARK, False):
            wrapper.write_header = _header_writer(write_header)  # type: ignore[attr-defined]


def install_into_codecache(codecache: ModuleType) -> None:
    """The door in the header ``codecache`` precompiles (torch 2.13+); idempotent."""
    function = codecache.__dict__.get(_PRECOMPILED_HEADER)
    if function is None or getattr(function, _MARK, False):
        return
    from .install import rebind

    door = _precompiled_header(function)
    codecache.__dict__[_PRECOMPILED_HEADER] = door
    rebind(_PRECOMPILED_HEADER, function, door)


def release_gap() -> str | None:
    """None where the running torch has what the door acts on, else what it lacks."""
    import torch
    from torch._inductor import codecache
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    version = torch.__version__
    if hasattr(CppWrapperCpu, _INCLUDE_METHODS[False]):
        return None
    if hasattr(CppWrapperCpu, _MODE_READING_METHOD):
        return (
            f"torch {version}'s CppWrapperCpu.get_device_include_path reads the mode off the "
            "graph: the declared headers are not included (doctor alone reads them)"
        )
    c_shim = _C_SHIM_HEADER.format(device="<device>")
    if not hasattr(codecache, _PRECOMPILED_HEADER):  # torch 2.6
        return (
            f"torch {version} has no CppWrapperCpu.get_device_include_path_jit/_aot and "
            f"precompiles no device header: the declared headers replace write_header's "
            f"#include <{c_shim}>"
        )
    return (
        f"torch {version} has no CppWrapperCpu.get_device_include_path_jit/_aot: the declared "
        f"headers replace write_header's #include <{c_shim}>, and torch's header is precompiled"
    )


def includes_declared_headers(codegen: object, aot_mode: bool) -> bool:
    """Whether the C++ wrapper codegen class ``codegen`` includes what the door answers
    (torch 2.13+): its include method for the mode is the door's, which it inherits from
    ``CppWrapperCpu``, not one of its own (or of a class between). A class that overrides
    it wins; so does anything on a torch the door does not act on through those methods."""
    # getattr_static: the staticmethod object along the MRO, whose __func__ carries the mark.
    found = inspect.getattr_static(codegen, _INCLUDE_METHODS[aot_mode], None)
    return bool(getattr(getattr(found, "__func__", found), _MARK, False))


def declared_headers(device: str, aot_mode: bool) -> tuple[str, ...] | None:
    """The headers the device's provider declares, or None (torch's own devices at once)."""
    device_type = device.partition(":")[0]
    if device_type in RESERVED_DEVICE_TYPES:
        return None
    from .provider_doors import headers

    return headers(device_type, aot_mode)


def _include_lines(headers: tuple[str, ...]) -> str:
    return "\n".join(f"#include <{header}>" for header in headers)


def _include_method(torch_method: Callable[[str], str], aot_mode: bool) -> Callable[[str], str]:
    def get_device_include_path(device: str) -> str:
        headers = declared_headers(device, aot_mode)
        return torch_method(device) if headers is None else _include_lines(headers)

    return _marked(get_device_include_path, torch_method)


def _header_writer(torch_write_header: Callable[[Any], None]) -> Callable[[Any], None]:
    def write_header(self: Any) -> None:
        torch_write_header(self)
        # torch 2.6 writes the C shim include in an f-string among other lines: the line is
        # swapped after it is written, in the buffer of this wrapper only.
        device = getattr(self, "device", None)
        if not isinstance(device, str) or device.partition(":")[0] in RESERVED_DEVICE_TYPES:
            return
        from torch._inductor.virtualized import V

        if V.graph.is_const_graph:  # torch writes no header for it
            return
        headers = declared_headers(device, bool(V.graph.aot_mode))
        if headers is None:
            return
        c_shim = f"#include <{_C_SHIM_HEADER.format(device=device)}>"
        # The private list of torch 2.6's IndentedBuffer (torch._inductor.utils), which
        # write_header fills through splice(): no public way replaces one line.
        lines = self.header._lines
        for index, line in enumerate(lines):
            if isinstance(line, str) and line.strip() == c_shim:
                lines[index : index + 1] = _include_lines(headers).splitlines()
                return

    return _marked(write_header, torch_write_header)


def _precompiled_header(torch_function: Callable[..., str]) -> Callable[..., str]:
    def get_cpp_wrapper_header(device: str, aot_mode: bool = False) -> str:
        header = _first_declared(device, aot_mode)
        return torch_function(device, aot_mode=aot_mode) if header is None else header

    return _marked(get_cpp_wrapper_header, torch_function)


def _first_declared(device: str, aot_mode: bool) -> str | None:
    """The header to precompile for the device, where the generated code includes the
    declared ones: the first of them."""
    device_type = device.partition(":")[0]
    if device_type in RESERVED_DEVICE_TYPES or not includes_declared_headers(
        _wrapper_class(device_type), aot_mode
    ):
        return None
    headers = declared_headers(device_type, aot_mode)
    return None if headers is None else headers[0]


def _wrapper_class(device_type: str) -> object:
    """The C++ wrapper codegen class Inductor creates for the device: the one registered
    for it, else ``CppWrapperCpu`` (a process that loads a compiled graph from the cache
    may never register the backend)."""
    common = sys.modules.get(CODEGEN_COMMON)
    registered = (
        common.get_wrapper_codegen_for_device(device_type, cpp_wrapper=True) if common else None
    )
    if isinstance(registered, type):
        return registered
    return importlib.import_module(CPP_WRAPPER_CPU).__dict__[CPP_WRAPPER_CPU_CLASS]


def _marked(wrapper: Callable[..., Any], wrapped: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, wrapped, updated=())  # not the wrapped's marks
    setattr(wrapper, _MARK, True)
    return wrapper
