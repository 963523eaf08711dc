"""A fleet of "machines" for the tests: each a fresh process (tests/fleet_machine.py) with the
sample device on an installed SDK and an Inductor cache dir of its own, unless a test shares
one, optionally sharing torch's remote caches on a real Redis server (tests/redis_server.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis_server import RedisServer
from support import TESTS_DIR, pythonpath_with, rewrite_keeping_size_and_mtime

from inductor_device_options._demo.distributed import JOB_ENV
from inductor_device_options.sample import SampleDevice
from inductor_device_options.sample._sdk import SDK_DIR_ENV, install_sdk

#: The header two SDKs of the tests differ in (the C shim's matrix product), by one line.
SHIM = Path("include") / "sampledev" / "c_shim.h"
A_PRODUCT = "aoti_torch_cpu_mm_out, out, self, mat2)"
B_PRODUCT = "aoti_torch_cpu_mm_out, out, mat2, self)"  # the same size: only the order differs


def make_sdk_b(sdk_a: Path, destination: Path) -> Path:
    """A copy of SDK A whose C shim computes ``b @ a``: one header, of the same size."""
    shutil.copytree(sdk_a, destination, symlinks=True)
    shim = destination / SHIM
    text = shim.read_text()
    assert A_PRODUCT in text
    shim.write_text(text.replace(A_PRODUCT, B_PRODUCT))
    assert shim.stat().st_size == (sdk_a / SHIM).stat().st_size
    return destination


def sdks(root: Path) -> tuple[Path, Path, Path]:
    """(SDK A, SDK B, where the machines have theirs: a copy of A), under ``root``."""
    sdk_a = install_sdk(root / "vendor" / "A")
    sdk_b = make_sdk_b(sdk_a, root / "vendor" / "B")
    installed = root / "opt" / "sampledev"
    shutil.copytree(sdk_a, installed, symlinks=True)
    return sdk_a, sdk_b, installed


def edit_in_place_keeping_size_and_mtime(installed: Path, contents: Path) -> None:
    """The SDK at ``installed`` made the one at ``contents`` in place, as an archive unpacked
    with its recorded times would: the shim's size, modification time and inode kept."""
    rewrite_keeping_size_and_mtime(installed / SHIM, (contents / SHIM).read_bytes())


@dataclass
class Fleet:
    root: Path
    redis: RedisServer | None  # torch's remote caches, where the fleet shares them
    sample_build: SampleDevice
    installed: Path  # where every machine has its SDK, unless a run says otherwise
    seen: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    remote_keys: dict[str, int] = field(default_factory=dict)

    def run(
        self,
        name: str,
        cache: str,
        steps: list[list[str]],
        remote: bool = True,
        sdk: Path | None = None,
        **env: str,
    ) -> None:
        """Run ``steps`` on a new machine whose Inductor cache dir is ``cache`` (a name: the
        same name, the same dir) and whose SDK is at ``sdk`` (by default ``installed``),
        with torch's remote caches on the fleet's Redis unless ``remote`` is False."""
        environment = {
            **os.environ,
            **(self.redis.torch_env if self.redis is not None and remote else {}),
            **env,
            SDK_DIR_ENV: str(sdk or self.installed),
            "FLEET_SAMPLE_BUILD_DIR": str(self.sample_build.cache_dir),
            "TORCHINDUCTOR_CACHE_DIR": str(self.root / "caches" / cache),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",  # no compile workers to outlive it
            "PYTHONPATH": pythonpath_with(TESTS_DIR),
            JOB_ENV: self.job,  # killed by tests/conftest.py if pytest dies
        }
        finished = subprocess.run(
            [sys.executable, str(TESTS_DIR / "fleet_machine.py"), json.dumps(steps)],
            env=environment,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert finished.returncode == 0, f"{name}:\n{finished.stdout}\n{finished.stderr}"
        self.seen[name] = json.loads(finished.stdout.strip().splitlines()[-1])
        if self.redis is not None:
            self.remote_keys[name] = len(self.redis.keys())

    @property
    def job(self) -> str:
        return self.redis.job if self.redis is not None else f"fleet-{self.root.name}"

    def path(self, name: str) -> str:
        return str(self.root / name)


def seen(fleet: Fleet, machine: str, step: int) -> dict[str, Any]:
    """What ``machine``'s step number ``step`` saw."""
    return fleet.seen[machine][step]
