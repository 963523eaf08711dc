"""One rank of a distributed job on the sample device, written as a user writes it.

Run by torchrun: ``torchrun --standalone --nproc_per_node=N distributed_job.py REPORT_DIR
[HIDDEN_FEATURES [TEARDOWN_SECONDS]]`` (the width of the model's hidden layer, 32 by
default; the teardown's deadline, 60 s by default).
It imports torch and nothing else: the "sampledev" device, its Inductor backend and its
C++ options come from torch's backend autoload, as a real backend's do. Each rank compiles
a small model with a Linear layer with ``cpp_wrapper``, checks it against eager CPU,
all-reduces its result, and writes what it saw to ``REPORT_DIR/rank-<RANK>.json``.

Then it tears down, within a deadline: the ranks agree that they are done (a barrier with
a timeout) before they destroy the process group, and a rank whose teardown has not
finished TEARDOWN_SECONDS after it began exits anyway, having marked its report
(``teardown_deadline_expired``). Its exit code is its result either way: its work was
checked and reported before the teardown began.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

DEVICE = "sampledev"

#: For tests only: the rank of this number hangs in its teardown, before it destroys the
#: process group, as a rank stuck in ``destroy_process_group`` does.
STALL_TEARDOWN_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_JOB_STALL_TEARDOWN"


def main(report_dir: Path, hidden_features: int, teardown_seconds: float) -> int:
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report: dict[str, Any] = {"rank": rank, "world_size": world_size, "pid": os.getpid()}
    report_path = report_dir / f"rank-{rank}.json"
    try:
        report.update(_compile_and_check(world_size, hidden_features))
    except Exception:
        report["error"] = traceback.format_exc()
    finally:
        report_path.write_text(json.dumps(report, indent=1))
        _tear_down(report_path, report, teardown_seconds)
    return _exit_code(report)


def _tear_down(report_path: Path, report: dict[str, Any], seconds: float) -> None:
    """Destroy the process group once every rank is done, or exit after ``seconds``.

    ``destroy_process_group`` can block for good: under load, a rank whose peer had exited
    was seen sleeping in it on a futex for minutes. The deadline also covers the exit of
    the interpreter that follows (its atexit handlers stop the compile workers). A thread
    enforces it; should Python code be unable to run then (a call that holds the GIL),
    faulthandler's own thread dumps every stack and exits a little later, with status 1.
    """
    deadline = threading.Timer(seconds, _exit_at_deadline, (report_path, report, seconds))
    deadline.daemon = True
    deadline.start()
    faulthandler.dump_traceback_later(seconds + 10, exit=True)
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=seconds))
    except RuntimeError as error:  # a rank did not come: destroy the group all the same
        print(f"rank {report['rank']}: teardown barrier: {error}", file=sys.stderr, flush=True)
    if os.environ.get(STALL_TEARDOWN_ENV) == str(report["rank"]):
        time.sleep(24 * 3600)
    dist.destroy_process_group()


def _exit_at_deadline(report_path: Path, report: dict[str, Any], seconds: float) -> None:
    report["teardown_deadline_expired"] = True
    report_path.write_text(json.dumps(report, indent=1))
    print(
        f"rank {report['rank']}: teardown not finished after {seconds:g} s; exiting",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(_exit_code(report))


def _exit_code(report: dict[str, Any]) -> int:
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
    arguments = sys.argv[1:]
    sys.exit(
        main(
            Path(arguments[0]),
            int(arguments[1]) if len(arguments) > 1 else 32,
            float(arguments[2]) if len(arguments) > 2 else 60,
        )
    )
