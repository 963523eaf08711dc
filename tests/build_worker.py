"""Build a tiny kernel once per case with a real ``CppBuilder``, as stock torch or through
the package, and record what happened: run by ``builds.run_builds`` in a fresh interpreter.

``python build_worker.py stock|package SPEC.json``. The spec (see ``builds.py``) names the
cases; each adds values to torch's defaults for one device. ``stock``: a plain replacement
function assigned to ``cpp_builder.get_cpp_torch_device_options``, and this package never
imported (``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). ``package``: a provider registered with
``inductor_device_options.register_cpp_device_options``. The compiler is the argv-logging
wrapper ``CXX`` names; the results go to the spec's ``results`` file as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any

import torch._inductor.config
import torch._inductor.cpp_builder as cpp_builder
from tool_log import read_tool_log  # this script's directory is on sys.path

FIELDS = (
    "definitions",
    "include_dirs",
    "cflags",
    "ldflags",
    "libraries_dirs",
    "libraries",
    "passthrough_args",
)
LOG_ENV = "IDO_TOOL_LOG"

mode, spec_path = sys.argv[1:]
with open(spec_path, encoding="utf-8") as spec_file:
    spec: dict[str, Any] = json.load(spec_file)
device: str = spec["device"]
out: str = spec["out"]
log: str = spec["log"]
current: dict[str, list[str]] = {}
positions: dict[str, int] = {}


def add_current(options: Any) -> Any:
    """torch's defaults (a 7-tuple of lists) plus this case's values."""
    for field, values in current.items():
        listed = options[FIELDS.index(field)]
        positions[field] = len(listed)
        listed.extend(values)
    return options


# Not linking libtorch (a setting of torch's own, the same for both modes) halves each build
# (torch 2.6 has no such setting).
if hasattr(torch._inductor.config.aot_inductor, "link_libtorch"):
    torch._inductor.config.aot_inductor.link_libtorch = False

if mode == "stock":
    assert "inductor_device_options" not in sys.modules, "stock torch: the package is loaded"
    defaults = cpp_builder.get_cpp_torch_device_options

    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: Any
    ) -> Any:
        options = defaults(device_type, aot_mode, compile_only, **kwargs)
        return add_current(options) if device_type == device else options

    cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options
    refusal: type[BaseException] | None = None
else:
    import inductor_device_options as ido

    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> Any:
        return add_current(ido.default_cpp_device_options(device_type, aot_mode, compile_only))

    ido.register_cpp_device_options(device, provider)
    refusal = ido.InvalidCppDeviceOptionsError

BUILD_DIR = os.path.join(out, f"kernel_{getattr(cpp_builder, '_BUILD_TEMP_DIR', 'CxxBuild')}")


def build_once(case: dict[str, Any], in_build_dir: bool = False) -> dict[str, Any]:
    """One lookup and build; ``in_build_dir``: the case's relative dir made inside the
    directory Inductor runs g++ in, as this process's current directory has it."""
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(log):
        os.remove(log)
    result: dict[str, Any] = {}
    os.environ[LOG_ENV] = log
    try:
        try:
            options = cpp_builder.CppTorchDeviceOptions(device_type=device)
        except Exception as error:
            if refusal is not None and isinstance(error, refusal):
                result.update(status="refused", message=str(error), field=error.field)
                result.update(value=error.value, description=error.description)
                result.update(device_type=error.device_type, positions=dict(positions))
                return result
            raise
        builder = cpp_builder.CppBuilder("kernel", [case["kernel"]], options, output_dir=out)
        if in_build_dir:
            relative = current[case["field"]][0]
            inside = os.path.join(BUILD_DIR, relative)
            shutil.copytree(os.path.abspath(relative), os.path.normpath(inside))
        builder.build()
        result.update(status="built", output="")
    except Exception as error:
        result.update(status="failed", output=f"{type(error).__name__}: {error}")
    finally:
        del os.environ[LOG_ENV]
        result["calls"] = read_tool_log(log)
    return result


results: dict[str, Any] = {}
for case in spec["cases"]:
    current.clear()
    positions.clear()
    for field, values in case["values"].items():
        current[field] = list(values)
    started = time.perf_counter()
    saved = {name: os.environ.get(name) for name in case["env"]}
    os.environ.update(case["env"])
    try:
        result = build_once(case)
        if mode == "stock" and case["relative"]:
            result["in_build_dir"] = build_once(case, in_build_dir=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    result["seconds"] = time.perf_counter() - started
    results[case["id"]] = result

with open(spec["results"], "w", encoding="utf-8") as results_file:
    json.dump(results, results_file)
