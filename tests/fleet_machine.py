"""One "machine" of a fleet: a fresh process with the sample device on the SDK at
``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK`` and its own ``$TORCHINDUCTOR_CACHE_DIR`` (unless a
test shares one), which runs the steps it is given and prints what it saw as JSON.

    python fleet_machine.py '[["compile"], ["package", "/x/model.pt2"], ["load", "/x/model.pt2"]]'

Each step's result says, by behaviour, which SDK the code that ran was built against: the
SDKs of the tests differ in the matrix product of their C shim (SDK "A" computes ``a @ b``,
SDK "B" ``b @ a``), so the result of ``a @ b`` on the device names it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

#: ``patching``: the sample device's options come from a backend of torch_npu's shape
#: (tests/patching_backend.py), not from the package's door. ``patching-first``: the same,
#: applied before the package is imported (the machine runs with torch's backend autoload
#: off), the other order of imports.
BACKEND_ENV = "FLEET_BACKEND"
SDK_DIR = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK"  # sample._sdk.SDK_DIR_ENV, read before import

if os.environ.get(BACKEND_ENV) == "patching-first":
    import patching_backend

    patching_backend.apply()

import torch  # noqa: E402

from inductor_device_options import sample, unregister_cpp_device_options  # noqa: E402


class MatrixProduct(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(4, 4, generator=generator), torch.randn(4, 4, generator=generator)


def built_against(result: torch.Tensor) -> str:
    a, b = inputs()
    if torch.allclose(result.cpu(), a @ b):
        return "A"
    if torch.allclose(result.cpu(), b @ a):
        return "B"
    return "neither"


def shared_objects() -> dict[str, int]:
    """Every .so in Inductor's cache dir, with its modification time."""
    root = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    return {str(path): path.stat().st_mtime_ns for path in root.rglob("*.so")}


def device_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return tuple(tensor.to(sample.DEVICE_NAME) for tensor in inputs())  # type: ignore[return-value]


def compile_step() -> dict[str, Any]:
    from torch._dynamo.utils import counters

    before = shared_objects()
    counters.clear()
    torch._dynamo.reset()
    compiled = torch.compile(MatrixProduct(), options={"cpp_wrapper": True})
    result = compiled(*device_inputs())
    after = shared_objects()
    return {
        "built_against": built_against(result),
        "fx_graph_cache": {
            outcome: counters["inductor"][f"fxgraph_cache_{outcome}"] for outcome in ("hit", "miss")
        },
        "built_objects": sorted(path for path, mtime in after.items() if before.get(path) != mtime),
    }


def package_step(path: str) -> dict[str, Any]:
    exported = torch.export.export(MatrixProduct(), device_inputs())
    torch._inductor.aoti_compile_and_package(exported, package_path=path)
    try:
        from inductor_device_options._hook.pt2_stamp import package_stamp
    except ImportError:  # the package before .pt2 stamps (the tests' control run)
        return {"stamp": None}
    return {"stamp": package_stamp(path)}


class _Logged(logging.Handler):
    """What torch's Inductor loggers warn of (they do not propagate to the root)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def load_step(path: str) -> dict[str, Any]:
    import warnings

    # torch 2.10's load_pt2 reads torch._inductor.codecache without importing it: a process
    # that loads a package before anything imported it fails with AttributeError, with or
    # without this package, for every device. A user of 2.10 imports it first, as here.
    import torch._inductor.codecache

    logged = _Logged()
    logging.getLogger("torch._inductor").addHandler(logged)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = torch._inductor.aoti_load_package(path)
        except Exception as error:
            return {"error": type(error).__name__, "message": str(error), "logged": logged.messages}
    return {
        "built_against": built_against(model(*device_inputs())),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "logged": logged.messages,
    }


def save_artifacts_step(path: str) -> dict[str, Any]:
    artifacts = torch.compiler.save_cache_artifacts()
    assert artifacts is not None, "no cache artifacts were recorded"
    Path(path).write_bytes(artifacts[0])
    return {"saved": path}


def load_artifacts_step(path: str) -> dict[str, Any]:
    torch.compiler.load_cache_artifacts(Path(path).read_bytes())
    return {"loaded": path}


def sdk_identity_step() -> dict[str, Any]:
    from torch._inductor.codecache import CacheBase

    try:
        from inductor_device_options._hook.device_identity import device_identity
    except ImportError:  # the package before SDK identities (the tests' control run)
        return {"identity": None, "system": CacheBase.get_system()}
    return {
        "identity": device_identity(sample.DEVICE_NAME),
        "system": CacheBase.get_system(),
    }


def edit_step(contents: str) -> dict[str, Any]:
    """The SDK edited in place while this process runs, to the SDK at ``contents`` (the
    size and modification time of every file kept)."""
    from fleet import edit_in_place_keeping_size_and_mtime

    edit_in_place_keeping_size_and_mtime(Path(os.environ[SDK_DIR]), Path(contents))
    return {"edited": contents}


def unlink_step(path: str) -> dict[str, Any]:
    """Remove a file of the SDK after the device is set up (an SDK half uninstalled)."""
    Path(path).unlink()
    return {"unlinked": path}


STEPS = {
    "compile": compile_step,
    "package": package_step,
    "load": load_step,
    "save_artifacts": save_artifacts_step,
    "load_artifacts": load_artifacts_step,
    "identity": sdk_identity_step,
    "unlink": unlink_step,
    "edit": edit_step,
}


def main() -> None:
    sample.setup(os.environ["FLEET_SAMPLE_BUILD_DIR"])
    backend = os.environ.get(BACKEND_ENV)
    if backend in ("patching", "patching-first"):
        unregister_cpp_device_options(sample.DEVICE_NAME)  # the patch alone serves it
    if backend == "patching":
        import patching_backend

        patching_backend.apply()
    results = [STEPS[name](*arguments) for name, *arguments in json.loads(sys.argv[1])]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
