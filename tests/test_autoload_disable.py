"""``INDUCTOR_DEVICE_OPTIONS_DISABLE=1``: the package off in a process and its children.

torch's autoload still runs (``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` would turn off every
backend's); the package's entry point, its import and ``arm()`` then install nothing: torch's
modules look exactly as in a process that never imported the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "inductor_device_options"
#: The variable, as documented.
DISABLE_ENV = "INDUCTOR_DEVICE_OPTIONS_DISABLE"
SAMPLE_DIR_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR"

#: What the package may install into, read off a process: for each module, every function and
#: every class's attribute, with the file its code is in (a wrapper's is the package's) and
#: whether it wraps another; the finders on sys.meta_path. JSON on stdout.
FINGERPRINT = """
import importlib, inspect, json, sys, types
import torch

MODULES = [
    "torch._inductor.cpp_builder",
    "torch._inductor.codecache",
    "torch._inductor.codegen.common",
    "torch._inductor.codegen.cpp_utils",
    "torch._inductor.compile_fx",
    "torch._inductor.compile_worker.subproc_pool",
    "torch._inductor.package.package",
]

def described(value):
    value = getattr(value, "__func__", value)  # staticmethod, classmethod
    code = getattr(value, "__code__", None)
    return [
        type(value).__name__,
        code.co_filename if isinstance(code, types.CodeType) else None,
        hasattr(value, "__wrapped__"),
    ]

def fingerprint(module):
    found = {}
    for name, value in sorted(vars(module).items()):
        if inspect.isclass(value) and value.__module__ == module.__name__:
            for attribute, member in sorted(vars(value).items()):
                if callable(getattr(member, "__func__", member)):
                    found[f"{name}.{attribute}"] = described(member)
        elif callable(value):
            found[name] = described(value)
    return found

if MAIN:
    import inductor_device_options as ido
    ido.arm()
modules = [importlib.import_module(name) for name in MODULES]
print(json.dumps({
    "modules": {module.__name__: fingerprint(module) for module in modules},
    "meta_path": [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path],
    "privateuse1": torch._C._get_privateuse1_backend_name(),
}))
"""

CHILD = """
import json, subprocess, sys
child = subprocess.run(
    [sys.executable, "-c", "MAIN = False\\n" + CODE], capture_output=True, text=True, timeout=300
)
assert child.returncode == 0, child.stderr
print(child.stdout)
"""


def _run(code: str, **variables: str | None) -> str:
    """Run ``code`` in a fresh Python with the test process's environment and ``variables``
    set (None: removed from it); its stdout. Fails the test unless it exits 0."""
    env = {key: value for key, value in os.environ.items() if key not in variables}
    env.update({key: value for key, value in variables.items() if value is not None})
    finished = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}"
    return finished.stdout


def _fingerprint(main: bool, **variables: str | None) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(_run(f"MAIN = {main}\n{FINGERPRINT}", **variables))
    return found


def _torch_alone() -> dict[str, Any]:
    """A process that never imports the package: no autoload, no import."""
    return _fingerprint(
        False, TORCH_DEVICE_BACKEND_AUTOLOAD="0", **{DISABLE_ENV: None, SAMPLE_DIR_ENV: None}
    )


def _ours(fingerprint: dict[str, Any]) -> list[str]:
    """The functions whose code is the package's, and the package's finders."""
    package = os.sep + PACKAGE + os.sep
    return sorted(
        f"{module}:{name}"
        for module, functions in fingerprint["modules"].items()
        for name, (_, filename, _) in functions.items()
        if filename is not None and package in filename
    ) + [finder for finder in fingerprint["meta_path"] if finder.startswith(PACKAGE)]


def test_disabled_torch_looks_as_without_the_package_in_the_process_and_its_child(
    tmp_path: Path,
) -> None:
    """Autoload on (the sample device's entry asked for too), ``import
    inductor_device_options`` and ``arm()``: torch's modules, sys.meta_path and PrivateUse1
    are those of a process that never imported the package, and so are a child's, which
    inherits the variable."""
    alone = _torch_alone()
    code = f"MAIN = True\n{FINGERPRINT}\nCODE = {FINGERPRINT!r}\n{CHILD}"
    disabled = {DISABLE_ENV: "1", SAMPLE_DIR_ENV: str(tmp_path / "sample")}
    out = _run(code, TORCH_DEVICE_BACKEND_AUTOLOAD=None, **disabled)
    parent, child = (json.loads(line) for line in out.splitlines() if line.strip())
    assert _ours(alone) == []
    assert parent == alone
    assert child == alone


@pytest.mark.parametrize("value", [None, "true"], ids=["unset", "not 1"])
def test_without_the_exact_value_the_package_is_armed(value: str | None) -> None:
    """The control: only ``1`` disables; otherwise the hook, the codecache's keys and the
    import watcher are the package's."""
    armed = _fingerprint(
        True, TORCH_DEVICE_BACKEND_AUTOLOAD=None, **{DISABLE_ENV: value, SAMPLE_DIR_ENV: None}
    )
    ours = _ours(armed)
    assert "torch._inductor.cpp_builder:get_cpp_torch_device_options" in ours
    assert "torch._inductor.codecache:CacheBase.get_system" in ours
    assert "inductor_device_options._hook.install.ImportWatcher" in ours


def test_disabled_the_doors_that_need_the_hook_say_why_and_registrations_record() -> None:
    out = _run(
        """
        import torch
        import inductor_device_options as ido
        ido.register_cpp_device_options("acme", lambda d, a, c: ([], [], [], [], [], [], []))
        print(ido.introspection.registered_device_types())
        try:
            ido.get_cpp_device_options("acme")
        except RuntimeError as error:
            print(error)
        """,
        **{DISABLE_ENV: "1"},
    )
    assert out.splitlines() == [
        "['acme']",
        "inductor-device-options is disabled in this process by "
        "INDUCTOR_DEVICE_OPTIONS_DISABLE=1: it installs nothing into torch; unset the "
        "variable to use it",
    ]
