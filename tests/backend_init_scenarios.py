"""torch 2.15's ``_inductor_backend_init`` contract, run against the running torch (its own
hook on 2.15, the package's backport before): ``python backend_init_scenarios.py GROUP``
prints one JSON object, scenario name -> what was observed.

A subprocess, because the PrivateUse1 backend can be renamed only once per process: this one
renames it "hookdev" for real and gives it a device module whose hook each scenario sets.
Between scenarios the device's Inductor registration is dropped, so each starts unregistered.
"""

from __future__ import annotations

import json
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import torch

DEVICE = "hookdev"
DEVICE_MODULE = types.ModuleType(f"torch.{DEVICE}")
DEVICE_MODULE.is_available = lambda: False  # type: ignore[attr-defined]
DEVICE_MODULE.device_count = lambda: 0  # type: ignore[attr-defined]
#: The device module's classes torch registers without a hook (torch 2.13 wants all four).
LEGACY_CLASSES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")


def set_up() -> bool:
    """Rename PrivateUse1 and register the device module: whether that imported Inductor."""
    torch.utils.rename_privateuse1_backend(DEVICE)
    torch._register_device_module(DEVICE, DEVICE_MODULE)
    return "torch._inductor" in sys.modules


def set_hook(hook: Callable[[], None] | None) -> None:
    from torch._inductor.codegen import common

    common.device_codegens.pop(DEVICE, None)
    getattr(common, "custom_backend_passes", {}).pop(DEVICE, None)  # torch 2.6 has none
    for name in ("_inductor_backend_init", *LEGACY_CLASSES):
        if hasattr(DEVICE_MODULE, name):
            delattr(DEVICE_MODULE, name)
    if hook is not None:
        DEVICE_MODULE._inductor_backend_init = hook  # type: ignore[attr-defined]


def registering(calls: list[str], before: Callable[[], None] = lambda: None) -> Callable[[], None]:
    def hook() -> None:
        from torch._inductor.codegen.common import register_backend_for_device

        calls.append("called")
        before()
        register_backend_for_device(DEVICE, object, object)

    return hook


def registered() -> bool:
    from torch._inductor.codegen.common import get_scheduling_for_device

    return get_scheduling_for_device(DEVICE) is not None


def init() -> None:
    from torch._inductor.codegen.common import init_backend_registration

    init_backend_registration()


def once() -> dict[str, Any]:
    calls: list[str] = []
    set_hook(registering(calls))
    init()
    init()
    return {"calls": len(calls), "registered": registered()}


def failing_then_retried() -> dict[str, Any]:
    calls: list[str] = []
    errors: list[str] = []

    def hook() -> None:
        calls.append("called")
        if len(calls) < 3:
            from torch._inductor.codegen.common import get_backend_features

            get_backend_features("cpu")  # re-enters before failing: must not block the retry
            raise RuntimeError(f"hookdev failed ({len(calls)})")
        registering([])()

    set_hook(hook)
    for _ in range(4):
        try:
            init()
        except RuntimeError as error:
            errors.append(str(error))
    return {"calls": len(calls), "errors": errors, "registered": registered()}


def reentrant() -> dict[str, Any]:
    from torch._inductor.codegen.common import get_backend_features

    calls: list[str] = []
    set_hook(registering(calls, before=lambda: get_backend_features("cpu")))
    init()
    return {"calls": len(calls), "registered": registered()}


def threads() -> dict[str, Any]:
    from torch._inductor.codegen.common import get_backend_features

    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []
    seen_by_second: list[bool] = []

    def before() -> None:
        get_backend_features("cpu")
        entered.set()
        release.wait(timeout=30)

    set_hook(registering(calls, before=before))
    first = threading.Thread(target=init)
    first.start()
    entered.wait(timeout=30)

    def second_caller() -> None:
        init()
        seen_by_second.append(registered())

    second = threading.Thread(target=second_caller)
    second.start()
    second.join(timeout=1.0)
    second_waited = second.is_alive()
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    return {"calls": len(calls), "second_waited": second_waited, "second_saw": seen_by_second}


def classes_without_hook() -> dict[str, Any]:
    set_hook(None)
    for name in LEGACY_CLASSES:
        setattr(DEVICE_MODULE, name, type(name, (), {}))
    init()
    from torch._inductor.codegen.common import get_scheduling_for_device

    scheduling = get_scheduling_for_device(DEVICE)
    return {"registered_class": getattr(scheduling, "__name__", None)}


def torch_compile() -> dict[str, Any]:
    """The first compile runs the hook before the decomposition table is taken: a
    decomposition the hook registers (sin -> cos) applies to that very compile."""
    calls: list[str] = []

    def before() -> None:
        from torch._inductor.decomposition import decompositions

        decompositions[torch.ops.aten.sin.default] = lambda x: torch.cos(x)

    set_hook(registering(calls, before=before))
    x = torch.randn(8)
    first = torch.compile(lambda x: x.sin())(x)
    second = torch.compile(lambda x: x.sin() + 1)(x)
    return {
        "calls": len(calls),
        "decomposed": bool(torch.allclose(first, x.cos())),
        "second_ok": bool(torch.allclose(second, x.cos() + 1)),
    }


def aot_compile() -> dict[str, Any]:
    calls: list[str] = []
    set_hook(registering(calls))

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
            return (x + 1,)

    x = torch.randn(8)
    exported = torch.export.export(Model(), (x,))
    torch._inductor.aot_compile(exported.module(), (x,))
    return {"calls": len(calls), "registered": registered()}


def overrides_first() -> dict[str, Any]:
    """A hook that registers the device's DeviceOpOverrides before anything asked for cpu's:
    torch's own are still there (torch before 2.13 loads them only into an empty table)."""
    calls: list[str] = []

    def before() -> None:
        from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides

        register_device_op_overrides(DEVICE, DeviceOpOverrides())

    set_hook(registering(calls, before=before))
    init()
    from torch._inductor.codegen.common import get_device_op_overrides

    try:
        cpu = type(get_device_op_overrides("cpu")).__name__
    except KeyError as error:
        cpu = f"KeyError: {error}"
    return {"calls": len(calls), "cpu": cpu}


GROUPS = {
    # Alone in its process: nothing may have asked for a DeviceOpOverrides before the hook.
    "overrides": [overrides_first],
    # First: torch before 2.15 probes the device module's classes at its first registration only.
    "registration": [classes_without_hook, once, failing_then_retried, reentrant, threads],
    "compile": [torch_compile, aot_compile],
}

if __name__ == "__main__":
    results: dict[str, Any] = {"inductor_imported_at_set_up": set_up()}
    for scenario in GROUPS[sys.argv[1]]:
        results[scenario.__name__] = scenario()
    print(json.dumps(results))
