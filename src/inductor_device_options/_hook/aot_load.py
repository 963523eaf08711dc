"""The ``aoti_runner`` door: ``torch._export.aot_load`` for an out-of-tree device's ``.so``.

``torch._export.aot_load(so_path, device)`` (torch 2.6 to 2.15) builds torch's runner for
cpu, cuda and xpu (2.13 and 2.15: mps too) and raises ``RuntimeError("Unsupported device ...")``
for every other device, then returns ``optimized(*args, **kwargs)``, a closure over that
runner. torch_npu replaces the whole function (``torch_npu/_inductor/export.py``), for
every device. ``aoti_load_package`` needs nothing: it asks torch's C++ runner registry.

Installed when ``torch._export`` is imported (by ``import torch``: this module stays small
and imports the lookups only when asked). The wrapper asks the provider serving ``device``
for its ``aoti_runner(so_path, device)``, with the device string as given (``"npu"`` or
``"npu:0"``). Where it gives one, the wrapper returns torch's own ``optimized``, the code
object nested in torch's ``aot_load``, bound to that runner: the call spec,
``pytree.treespec_loads``, ``reorder_kwargs``, the tensors of the flattened inputs,
``runner.run`` and the unflattened outputs are torch's code, not a copy. Every other
device (cpu, cuda, a device whose provider declares no runner, an unknown one) gets
torch's ``aot_load`` itself, with its errors.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import CellType, CodeType, FunctionType, ModuleType
from typing import Any

from .._torch_names import AOT_LOAD, EXPORT
from .install import rebind

_MARK = "_inductor_device_options_aot_load"
#: torch's closure over the runner, nested in ``aot_load`` (2.6 to 2.15), and its cell.
_OPTIMIZED, _RUNNER = "optimized", "runner"
#: torch's once-per-process deprecation warning, the first thing its ``aot_load`` does.
_WARNING = "aot_compile_warning"


def install(export: ModuleType) -> None:
    """Wrap ``export.aot_load`` (``torch._export``) once; idempotent. Where torch's function
    has no ``optimized`` closure over a ``runner`` to bind, nothing is wrapped
    (``release_gap`` says so)."""
    # torch 2.6-2.15's ``aot_load(so_path: str, device: str) -> Callable``.
    torch_aot_load: Callable[[str, str], Callable[..., Any]] | None = export.__dict__.get(AOT_LOAD)
    if torch_aot_load is None or getattr(torch_aot_load, _MARK, False):
        return
    torch_code = _torch_optimized(torch_aot_load)
    if torch_code is None:
        return
    optimized_code, torch_globals = torch_code

    @functools.wraps(torch_aot_load)
    def aot_load(so_path: str, device: str) -> Callable[..., Any]:
        runner = _declared_runner(so_path, device)
        if runner is None:
            return torch_aot_load(so_path, device)
        # As torch 2.6-2.15's aot_load: aot_compile_warning(), then its ``optimized`` made
        # anew, the device's runner in the one cell where torch stores the runner it built.
        warning = torch_globals.get(_WARNING)
        if warning is not None:
            warning()
        optimized: Callable[..., Any] = FunctionType(
            optimized_code, torch_globals, _OPTIMIZED, None, (CellType(runner),)
        )
        return optimized

    setattr(aot_load, _MARK, True)
    export.__dict__[AOT_LOAD] = aot_load
    rebind(AOT_LOAD, torch_aot_load, aot_load)


def is_installed() -> bool:
    """Whether ``torch._export.aot_load`` is the door's wrapper (``torch._export`` imported)."""
    export = sys.modules.get(EXPORT)
    return export is not None and bool(getattr(export.__dict__.get(AOT_LOAD), _MARK, False))


def release_gap() -> str | None:
    """None where the running torch's ``aot_load`` has the closure the door binds; else why
    the door cannot act here."""
    import torch._export

    function = torch._export.__dict__.get(AOT_LOAD)
    if function is not None and _torch_optimized(function) is not None:
        return None
    import torch

    return (
        f"torch {torch.__version__}'s torch._export.aot_load builds no 'optimized' callable "
        "over a 'runner' that the door could give the device's runner: "
        "aot_load refuses the device as torch does"
    )


def _declared_runner(so_path: str, device: str) -> Any:
    """The runner the provider serving ``device`` declares for ``so_path``, or None (torch's
    own devices, a device no provider of the package serves, a provider without one)."""
    if not isinstance(device, str):  # torch's aot_load takes a str: its own error for others
        return None
    from .provider_doors import runner

    return runner(so_path, device)


def _torch_optimized(function: object) -> tuple[CodeType, dict[str, Any]] | None:
    """torch's ``optimized`` code and the globals it runs with (``torch._export``'s), found
    in ``function`` or what it wraps (``__wrapped__``), or None."""
    seen: set[int] = set()
    while function is not None and id(function) not in seen:
        seen.add(id(function))
        code = getattr(function, "__code__", None)
        # ``runner`` is a cell of aot_load (2.6-2.15): ``optimized``, a constant, closes over it.
        if isinstance(code, CodeType) and _RUNNER in code.co_cellvars:
            for constant in code.co_consts:
                if (
                    isinstance(constant, CodeType)
                    and constant.co_name == _OPTIMIZED
                    and constant.co_freevars == (_RUNNER,)
                ):
                    return constant, function.__globals__  # type: ignore[attr-defined]
        function = getattr(function, "__wrapped__", None)
    return None
