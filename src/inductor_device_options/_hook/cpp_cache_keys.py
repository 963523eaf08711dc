"""The SDK identity in the C++ code cache's key, where the command line does not carry it.

Inductor keys compiled C++ by its source and the compile command line: ``codecache.write``
hashes the code with ``extra``, the command line, into the file's name, and the module
built from it is found again by that name (in memory, on disk). The package's own door puts
the device's identity into the command line, as a definition. Every other door (torch's
``register_cpp_device_options``, 2.15's ``DeviceInterface.get_cpp_device_options``, a
replacement or wrapper the chain adopted) passes its options exactly as given: the command
line names paths only, and after an SDK changed in place at the same path the cache would
serve the module built against the old one. So while Inductor writes a build of such a
device (``key_identity``), the key gets the identity too; g++ receives not one byte more:

* ``CppCodeCache.load_async(main_code, device_type, ...)``: cpp_wrapper modules and C++
  kernels (``aot_mode`` False);
* ``AotCodeCompiler.compile(..., device_type=...)``: AOTInductor (``aot_mode`` True);
* ``_precompile_header(header, hashable_cmd_line, ...)``: the header torch precompiles for
  a build (torch 2.13 and later), remembered per process by its arguments and on disk by
  its key. Its ``hashable_cmd_line`` is what keys both.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._options.identity import IDENTITY_DEFINITION
from .device_identity import key_identity

_MARK = "_inductor_device_options_cpp_cache_key"


def install(codecache: ModuleType) -> None:
    """Key ``codecache``'s writes of a served device's builds; idempotent."""
    _wrap_builder(codecache.CppCodeCache, "load_async", aot_mode=False)
    _wrap_builder(codecache.AotCodeCompiler, "compile", aot_mode=True)
    for name, wrap in (("write", _keyed_write), ("_precompile_header", _keyed_header)):
        function = codecache.__dict__.get(name)
        if function is not None and not getattr(function, _MARK, False):
            codecache.__dict__[name] = _marked(wrap(function), function)


def is_installed(codecache: ModuleType) -> bool:
    """Whether ``codecache``'s writes are keyed (the writer and the C++ builders)."""
    builder = inspect.getattr_static(codecache.CppCodeCache, "load_async", None)
    function = builder.__func__ if isinstance(builder, classmethod) else builder
    return bool(getattr(codecache.__dict__.get("write"), _MARK, False)) and bool(
        getattr(function, _MARK, False)
    )


def keyed_extra(extra: str) -> str:
    """``extra`` with the identity of the build under way on this thread, if any."""
    identity = _state.this_thread.build_identity
    return extra if identity is None else f"{extra} {IDENTITY_DEFINITION}={identity}"


def _wrap_builder(owner: type, name: str, aot_mode: bool) -> None:
    current = inspect.getattr_static(owner, name, None)
    function = current.__func__ if isinstance(current, classmethod) else current
    if function is None or getattr(function, _MARK, False):
        return
    parameters = inspect.signature(function).parameters
    parameter = parameters["device_type"]
    # Read directly, not bound: every C++ kernel build of the CPU comes through here. Its
    # place after cls, where it may be passed by position (torch 2.6's AotCodeCompiler).
    # torch 2.6-2.15: load_async(cls, source/main_code, device_type="cpu", ...) and
    # compile(cls, graph, ..., device_type, ...), positional-or-keyword on every release.
    keyword_only = parameter.kind is inspect.Parameter.KEYWORD_ONLY
    position = len(parameters) if keyword_only else list(parameters).index("device_type") - 1
    default = "cpu" if parameter.default is inspect.Parameter.empty else parameter.default

    def keyed(cls: type, *args: Any, **kwargs: Any) -> Any:
        device_type = args[position] if len(args) > position else kwargs.get("device_type", default)
        identity = _identity_of(device_type, aot_mode)
        if identity is None:
            return function(cls, *args, **kwargs)
        this_thread = _state.this_thread
        outer, this_thread.build_identity = this_thread.build_identity, identity
        try:
            return function(cls, *args, **kwargs)
        finally:
            this_thread.build_identity = outer

    setattr(owner, name, classmethod(_marked(keyed, function)))


def _identity_of(device_type: object, aot_mode: bool) -> str | None:
    if not isinstance(device_type, str):
        return None
    if device_type.partition(":")[0] in RESERVED_DEVICE_TYPES:  # cpu's builds: no lookup
        return None
    return key_identity(device_type, aot_mode)


def _keyed_write(write: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(write)

    # torch 2.6-2.15's codecache.write(content, extension, extra="", ...) hashes ``extra``
    # into the file name: the identity goes there, never into what g++ is given.
    def keyed_write(*args: Any, **kwargs: Any) -> Any:
        if _state.this_thread.build_identity is None:
            return write(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.arguments["extra"] = keyed_extra(bound.arguments.get("extra", ""))
        return write(*bound.args, **bound.kwargs)

    return keyed_write


def _keyed_header(precompile: Callable[..., Any]) -> Callable[..., Any]:
    def keyed_precompile_header(header: str, hashable_cmd_line: str, **compile_command: Any) -> Any:
        # torch remembers the header's path per process by these arguments: an identity
        # that changed in place must miss there too, not only on disk.
        return precompile(header, keyed_extra(hashable_cmd_line), **compile_command)

    # torch 2.13-2.15's _precompile_header is a functools.cache; torch's tests clear it.
    for name in ("cache_clear", "cache_info"):
        if hasattr(precompile, name):
            setattr(keyed_precompile_header, name, getattr(precompile, name))
    return keyed_precompile_header


def _marked(wrapper: Callable[..., Any], wrapped: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, wrapped, updated=())  # not the wrapped's marks
    setattr(wrapper, _MARK, True)
    return wrapper
