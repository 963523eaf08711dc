"""One rank of a distributed job on the sample device, written as a user writes it.

Run by torchrun: ``torchrun --standalone --nproc_per_node=N distributed_job.py REPORT_DIR
[HIDDEN_FEATURES]`` (the width of the model's hidden layer, 32 by default).
It imports torch and nothing else: the "sampledev" device, its Inductor backend and its
C++ options come from torch's backend autoload, as a real backend's do. Each rank compiles
a small model with a Linear layer with ``cpp_wrapper``, checks it against eager CPU,
all-reduces its result, and writes what it saw to ``REPORT_DIR/rank-<RANK>.json``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

DEVICE = "sampledev"


def main(report_dir: Path, hidden_features: int) -> int:
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report: dict[str, Any] = {"rank": rank, "world_size": world_size, "pid": os.getpid()}
    try:
        report.update(_compile_and_check(world_size, hidden_features))
    except Exception:
        report["error"] = traceback.format_exc()
    finally:
        (report_dir / f"rank-{rank}.json").write_text(json.dumps(report, indent=1))
        dist.destroy_process_group()
    return 1 if "error" in report else 0


def _compile_and_check(world_size: int, hidden_features: int) -> dict[str, Any]:
    from torch._inductor.cpp_builder import get_cpp_torch_device_options
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    torch.manual_seed(0)  # the same model and input on every rank
    model = torch.nn.Sequential(
        torch.nn.Linear(16, hidden_features),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden_features, 4),
        torch.nn.Tanh(),
    )
    x = torch.randn(8, 16)
    with torch.no_grad():
        expected = model(x)
        model.to(DEVICE)
        # Every rank starts compiling at once, as ranks of a job do.
        dist.barrier()
        started = time.perf_counter()
        result = torch.compile(model, options={"cpp_wrapper": True})(x.to(DEVICE))
        compile_seconds = time.perf_counter() - started

    # The ranks really form a job: every rank computed the same result.
    total = result.cpu()
    dist.all_reduce(total)
    options = get_cpp_torch_device_options(DEVICE, aot_mode=False, compile_only=False)
    return {
        "result_device": str(result.device),
        "max_difference": (result.cpu() - expected).abs().max().item(),
        "all_reduce_max_difference": (total - world_size * expected).abs().max().item(),
        "compile_seconds": compile_seconds,
        "compile_mode": os.environ.get("TORCHINDUCTOR_FX_COMPILE_MODE", "normal"),
        "inductor_cache_dir": cache_dir(),
        "device_options": [list(values) for values in options],
        "loaded_modules": _loaded_shared_libraries(cache_dir()),
    }


def _loaded_shared_libraries(under: str) -> list[str]:
    """The shared libraries this process has mapped from ``under``: the modules it runs."""
    root = os.path.realpath(under) + os.sep
    with open("/proc/self/maps") as maps:
        paths = {line.split(maxsplit=5)[-1].strip() for line in maps if "/" in line}
    return sorted(p for p in paths if p.endswith(".so") and os.path.realpath(p).startswith(root))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 32))
