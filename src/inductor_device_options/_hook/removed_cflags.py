"""The ``removed_cflags`` door (issue 48): cflags that leave every g++ command made with the
options of the device whose provider declares them, whether torch or the provider adds them.

torch has no door for torch's own base flags: ``get_cpp_options`` puts
``_get_optimization_cflags``' ``-march=native`` (``_get_cpu_arch_cflags`` from 2.13) into
every build, and a device's options can add flags, not take one away. So torch_npu replaces
``cpp_builder._get_optimization_cflags`` for the whole process, and cpu's builds lose
``-march=native`` too. Here ``CppTorchDeviceOptions.__init__`` is wrapped: after torch's own
init (torch 2.6, 2.13 and 2.15 alike: ``CppOptions`` fills ``self._cflags``,
``CppTorchDeviceOptions`` appends the device's cflags, ``_finalize_options`` de-duplicates),
the declaring device's options drop the cflags it removes. Every g++ command Inductor makes
for the device is rendered from such an object by ``CppBuilder``: ``CppCodeCache`` (the
compile, the kernels' compile and the link of cpp_wrapper modules), ``AotCodeCompiler``
(its objects, the ``.so``, the CMake project of ``package_cpp_only``) and, from 2.13,
``_precompile_header`` (``preprocessing=True``, ``precompiling=True``). cpu's builds are
``CppTorchDeviceOptions(device_type="cpu")`` and keep the flags; the vector-ISA probes
(``cpu_vec_isa.VecISA.check_build``) use ``CppTorchOptions``, which never comes here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .._lookup.device_types import RESERVED_DEVICE_TYPES

#: torch's class whose ``__init__`` is wrapped, in ``torch._inductor.cpp_builder``.
OPTIONS_CLASS = "CppTorchDeviceOptions"
_MARK = "_inductor_device_options_removed_cflags"


def install(cpp_builder: ModuleType) -> None:
    """Wrap ``cpp_builder.CppTorchDeviceOptions.__init__`` once; idempotent (a module
    executed anew by ``importlib.reload`` has a new class, wrapped again)."""
    options_class = cpp_builder.__dict__.get(OPTIONS_CLASS)
    torch_init = getattr(options_class, "__dict__", {}).get("__init__")
    if torch_init is None or getattr(torch_init, _MARK, False):
        return
    # torch 2.6-2.15: __init__(self, vec_isa, include_pytorch, device_type="cuda", ...).
    device_type_at = _device_type_argument(torch_init)
    if device_type_at is None:  # a torch that builds device options some other way
        return
    position, default = device_type_at

    # Read directly, not bound: every C++ kernel the CPU backend compiles builds two of these
    # objects (CppCodeCache.load_async), and for cpu the wrapper costs a dict lookup or two.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        torch_init(self, *args, **kwargs)
        device_type = args[position] if len(args) > position else kwargs.get("device_type", default)
        if type(device_type) is not str or device_type in RESERVED_DEVICE_TYPES:
            return
        # Imported here: cpu's builds, in every process that builds C++, never need the doors.
        from .provider_doors import removed_cflags

        removed = removed_cflags(device_type)  # checks the attribute: raises before any g++
        if removed:
            # BuildOptionsBase's private list, which get_cflags() returns (torch 2.6-2.15).
            self._cflags = [flag for flag in self._cflags if flag not in removed]

    options_class.__init__ = _marked(__init__, torch_init)  # type: ignore[misc]


def is_installed(cpp_builder: ModuleType) -> bool:
    """Whether the door is installed into ``cpp_builder``'s ``CppTorchDeviceOptions``."""
    options_class = cpp_builder.__dict__.get(OPTIONS_CLASS)
    init = getattr(options_class, "__dict__", {}).get("__init__")
    return bool(getattr(init, _MARK, False))


def release_gap() -> str | None:
    """None where the running torch builds every C++ command of a device from a
    ``CppTorchDeviceOptions(device_type=...)`` (2.6, 2.13, 2.15: torch 2.6 has no header
    precompile nor preprocess step, so there are fewer commands, all covered), else what
    this release lacks."""
    from torch._inductor import cpp_builder

    options_class = cpp_builder.__dict__.get(OPTIONS_CLASS)
    init = getattr(options_class, "__dict__", {}).get("__init__")
    if init is None or _device_type_argument(inspect.unwrap(init)) is None:
        return (
            f"torch {_torch_version()} has no cpp_builder.{OPTIONS_CLASS}(device_type=...) "
            "whose cflags the door could remove"
        )
    return None


def _device_type_argument(torch_init: Callable[..., None]) -> tuple[int, object] | None:
    """Where ``device_type`` comes in ``torch_init``'s arguments after ``self`` (it may be
    given by position), and its default (``"cuda"`` in 2.6-2.15); None if it has none."""
    parameters = inspect.signature(torch_init).parameters
    parameter = parameters.get("device_type")
    if parameter is None:
        return None
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
        position = len(parameters)  # never among the positional arguments
    else:
        position = list(parameters).index("device_type") - 1
    default = None if parameter.default is inspect.Parameter.empty else parameter.default
    return position, default


def _marked(wrapper: Callable[..., None], wrapped: Callable[..., None]) -> Callable[..., None]:
    functools.update_wrapper(wrapper, wrapped, updated=())  # not the wrapped's marks
    setattr(wrapper, _MARK, True)
    return wrapper


def _torch_version() -> str:
    import torch

    return str(torch.__version__)
