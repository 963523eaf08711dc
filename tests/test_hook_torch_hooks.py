"""torch 2.15's out-of-tree hooks in Inductor's codegen on every torch: on 2.15 torch's own
serve and the package stays out of the way; before 2.15 the package's backports behave as
2.15 does. The same expectations run on every torch of the matrix, so they compare the
backports with torch 2.15's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from support import TESTS_DIR, check_python, pythonpath_with
from torch._inductor.codegen import common, cpp_utils

from inductor_device_options._hook.backports import BACKPORT_MARK

#: torch 2.15 asks DeviceOpOverrides itself; earlier torch gets the package's backports.
NATIVE_HOOKS = hasattr(common.DeviceOpOverrides, "aten_device_type")
WITHOUT_PACKAGE = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": pythonpath_with(TESTS_DIR)}
backports_only = pytest.mark.skipif(NATIVE_HOOKS, reason="torch has the hooks natively (2.15+)")


# --- DeviceOpOverrides.aten_device_type / cpp_utils.device_to_aten ----------------------


class _Overrides(common.DeviceOpOverrides):
    answer: Any = None

    def aten_device_type(self) -> str:
        return self.answer  # type: ignore[no-any-return]


@pytest.fixture
def overrides() -> Iterator[dict[str, common.DeviceOpOverrides]]:
    """Register DeviceOpOverrides with torch for the test; removed afterwards."""
    registered: dict[str, common.DeviceOpOverrides] = {}
    yield registered
    for device_type in registered:
        common.device_op_overrides_dict.pop(device_type, None)


def register(registered: dict[str, Any], device_type: str, answer: Any) -> None:
    made = type("Answers", (_Overrides,), {"answer": answer})()
    common.register_device_op_overrides(device_type, made)
    registered[device_type] = made


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("at::kPrivateUse1", "at::kPrivateUse1"),
        ("at::kMyDevice", "at::kMyDevice"),
        ("kPrivateUse1", "must return an ATen device type expression starting with 'at::k'"),
        (7, "starting with 'at::k', got 7"),
        ("at::k", "a valid identifier suffix after 'at::k', got 'at::k'"),
        ("at::k1x", "a valid identifier suffix after 'at::k', got 'at::k1x'"),
        ("at::kA;B", "a valid identifier suffix after 'at::k', got 'at::kA;B'"),
    ],
)
def test_device_to_aten_asks_the_overrides_with_2_15s_validation(
    overrides: dict[str, Any], answer: Any, expected: str
) -> None:
    register(overrides, "hooked", answer)
    if expected.startswith("at::k"):
        assert cpp_utils.device_to_aten("hooked") == expected
        return
    with pytest.raises(RuntimeError) as raised:
        cpp_utils.device_to_aten("hooked")
    assert str(raised.value).startswith("Answers.aten_device_type() must return an ATen device")
    assert expected in str(raised.value)


def test_device_to_aten_errors_as_2_15(overrides: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="No ATen device type mapping for nowhere: no "):
        cpp_utils.device_to_aten("nowhere")
    common.register_device_op_overrides("plain", common.DeviceOpOverrides())
    overrides["plain"] = common.device_op_overrides_dict["plain"]
    with pytest.raises(RuntimeError, match="DeviceOpOverrides does not implement aten_device_type"):
        cpp_utils.device_to_aten("plain")
    assert cpp_utils.device_to_aten("meta") == "at::kMeta"
    assert cpp_utils.device_to_aten("cpu") == "at::kCPU"


@backports_only
def test_device_to_aten_table_knows_hooked_devices_and_entries_win(
    overrides: dict[str, Any],
) -> None:
    from torch._inductor.codegen import cpp_wrapper_cpu

    table = cpp_utils.DEVICE_TO_ATEN
    # torch's C++ wrapper reads the dict by the name it imported: the same object.
    assert cpp_wrapper_cpu.DEVICE_TO_ATEN is table
    register(overrides, "hooked", "at::kPrivateUse1")
    common.register_device_op_overrides("plain", common.DeviceOpOverrides())
    overrides["plain"] = common.device_op_overrides_dict["plain"]
    assert "hooked" in table and table["hooked"] == "at::kPrivateUse1"
    assert table.get("hooked") == "at::kPrivateUse1"
    # Not defined, not registered: not in the dict, torch's own assertion reports it.
    assert "plain" not in table and "nowhere" not in table and table.get("plain", "-") == "-"
    with pytest.raises(KeyError):
        table["plain"]
    # A backend that writes the dict wins over its overrides.
    table["hooked"] = "at::kWritten"
    try:
        assert cpp_utils.device_to_aten("hooked") == "at::kWritten"
    finally:
        del table["hooked"]
    register(overrides, "invalid", "kOops")
    with pytest.raises(RuntimeError, match="starting with 'at::k'"):
        "invalid" in table  # noqa: B015 (the check is what raises)


@backports_only
def test_device_to_aten_table_keeps_torchs_entries_in_any_import_order() -> None:
    """Imported before the package: cpp_utils and the C++ wrapper (which binds the dict by
    name) are rebound when the package arms; an entry written into torch's original dict, by
    a backend holding it, still wins."""
    out = check_python(
        """
        import json
        from torch._inductor.codegen import cpp_utils, cpp_wrapper_cpu
        original = cpp_utils.DEVICE_TO_ATEN
        stock = dict(original)
        original["early"] = "at::kPrivateUse1"
        import inductor_device_options
        original["late"] = "at::kLate"
        table = cpp_wrapper_cpu.DEVICE_TO_ATEN
        print(json.dumps({
            "type": type(table).__name__,
            "same": table is cpp_utils.DEVICE_TO_ATEN,
            "stock_kept": all(table[key] == value for key, value in stock.items()),
            "early": table.get("early"), "late": table.get("late"),
            "device_to_aten": cpp_utils.device_to_aten("late"),
        }))
        """,
        env=WITHOUT_PACKAGE,
    )
    assert json.loads(out.splitlines()[-1]) == {
        "type": "AtenDeviceTypes",
        "same": True,
        "stock_kept": True,
        "early": "at::kPrivateUse1",
        "late": "at::kLate",
        "device_to_aten": "at::kLate",
    }


def test_torchs_own_device_table_is_unchanged() -> None:
    """The entries torch's C++ wrapper reads are exactly torch's, package or not."""
    code = """
        import json
        from torch._inductor.codegen import cpp_utils
        print(json.dumps(dict(getattr(cpp_utils, "DEVICE_TO_ATEN", {}))))
    """
    without = json.loads(check_python(code, env=WITHOUT_PACKAGE).splitlines()[-1])
    assert dict(getattr(cpp_utils, "DEVICE_TO_ATEN", {})) == without
    if NATIVE_HOOKS:
        assert not hasattr(cpp_utils, "DEVICE_TO_ATEN")


def test_on_torch_with_the_hooks_its_own_serve() -> None:
    """Each hook is either torch's own (2.15) or the package's backport (before)."""
    from torch._inductor import compile_fx

    function = cpp_utils.device_to_aten
    registration = common.init_backend_registration
    compile_main = compile_fx.__dict__.get("_compile_fx_main", compile_fx.compile_fx)
    marks = [getattr(f, BACKPORT_MARK, False) for f in (function, registration, compile_main)]
    assert marks == [not NATIVE_HOOKS] * 3


# --- _inductor_backend_init -----------------------------------------------------------------


def run_scenarios(group: str) -> dict[str, Any]:
    finished = subprocess.run(
        [sys.executable, str(TESTS_DIR / "backend_init_scenarios.py"), group],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": pythonpath_with(TESTS_DIR)},
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    results: dict[str, Any] = json.loads(finished.stdout.splitlines()[-1])
    return results


@pytest.fixture(scope="module")
def registration_scenarios() -> dict[str, Any]:
    return run_scenarios("registration")


def test_backend_init_runs_while_unregistered_once(registration_scenarios: dict[str, Any]) -> None:
    assert registration_scenarios["inductor_imported_at_set_up"] is False
    assert registration_scenarios["once"] == {"calls": 1, "registered": True}
    assert registration_scenarios["reentrant"] == {"calls": 1, "registered": True}


def test_backend_init_failure_is_shown_and_retried(registration_scenarios: dict[str, Any]) -> None:
    assert registration_scenarios["failing_then_retried"] == {
        "calls": 3,
        "errors": ["hookdev failed (1)", "hookdev failed (2)"],
        "registered": True,
    }


def test_backend_init_concurrent_caller_waits(registration_scenarios: dict[str, Any]) -> None:
    assert registration_scenarios["threads"] == {
        "calls": 1,
        "second_waited": True,
        "second_saw": [True],
    }


def test_device_module_classes_without_hook_unchanged(
    registration_scenarios: dict[str, Any],
) -> None:
    assert registration_scenarios["classes_without_hook"] == {"registered_class": "Scheduling"}


def test_backend_init_runs_before_decompositions_on_every_entry() -> None:
    """torch.compile and AOTInductor call the hook once, before the decomposition table is
    taken: the decomposition the hook registers applies to the first compile."""
    results = run_scenarios("compile")
    assert results["torch_compile"] == {"calls": 1, "decomposed": True, "second_ok": True}
    assert results["aot_compile"] == {"calls": 1, "registered": True}


def test_torchs_own_device_op_overrides_stay_when_the_hook_registers_the_devices() -> None:
    """torch before 2.13 loads its own DeviceOpOverrides only into an empty table: the
    backport has torch load them before it runs the hook, or cpu's C++ builds would fail."""
    results = run_scenarios("overrides")
    assert results["overrides_first"] == {"calls": 1, "cpu": "CpuDeviceOpOverrides"}


# --- invisible where not asked --------------------------------------------------------------


def test_compiles_without_hooked_devices_share_the_fx_graph_cache_with_stock_torch(
    tmp_path: Any,
) -> None:
    """A compile keyed without the package is found by the same compile with it: the wrappers
    change nothing Inductor pickles into its cache keys (a wrapped select_decomp_table did)."""
    code = """
        import json, sys, torch
        from torch._dynamo.utils import counters
        x = torch.arange(8.0)
        torch.compile(lambda x: (x.sin() * 2).sum())(x)
        print(json.dumps([counters["inductor"]["fxgraph_cache_" + k] for k in ("hit", "miss")]))
        print("inductor_device_options" in sys.modules)
    """
    cache = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}
    stock = check_python(code, env={**WITHOUT_PACKAGE, **cache}).splitlines()[-2:]
    with_package = check_python(code, env=cache).splitlines()[-2:]
    assert stock == ["[0, 1]", "False"]
    assert with_package == ["[1, 0]", "True"]


def test_torch_version_matches_expectation() -> None:
    assert (tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 15)) == NATIVE_HOOKS


def test_rebinding_reads_no_module_attribute_it_lacks() -> None:
    """A module's ``__getattr__`` builds what it serves lazily (torch.utils.mkldnn's warns
    on 2.15): rebinding a name reads each module's own namespace only."""
    import types

    from inductor_device_options._hook.install import rebind

    asked: list[str] = []
    lazy = types.ModuleType("torch._ido_lazy_module")
    lazy.__getattr__ = lambda name: asked.append(name)  # type: ignore[attr-defined]
    holder = types.ModuleType("torch._ido_holder_module")
    original, replacement = object(), object()
    holder.has_triton = original  # type: ignore[attr-defined]
    sys.modules[lazy.__name__], sys.modules[holder.__name__] = lazy, holder
    try:
        rebind("has_triton", original, replacement)
    finally:
        del sys.modules[lazy.__name__], sys.modules[holder.__name__]
    assert asked == []
    assert holder.has_triton is replacement  # type: ignore[attr-defined]


def test_importing_inductor_warns_no_more_than_without_the_package() -> None:
    """What torch's import warns is torch's: the package's installers add no warning."""
    code = "import torch._inductor.compile_fx, torch._inductor.graph"

    def exit_status(disabled: bool) -> int:
        env = {k: v for k, v in os.environ.items() if k != "INDUCTOR_DEVICE_OPTIONS_DISABLE"}
        if disabled:
            env["INDUCTOR_DEVICE_OPTIONS_DISABLE"] = "1"
        command = [sys.executable, "-W", "error::FutureWarning", "-c", code]
        return subprocess.run(command, env=env, capture_output=True, timeout=300).returncode

    assert exit_status(disabled=False) == exit_status(disabled=True)
