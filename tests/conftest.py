"""Session set-up shared by every test module.

Inductor writes large files (a precompiled header is ~150 MB): the whole session
points TORCHINDUCTOR_CACHE_DIR and TMPDIR at one temporary directory and removes it.
Each pytest-xdist worker has a directory of its own, inside the controller's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from support import SHARED_DIR_ENV

_session_dir: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _session_dir
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    parent = os.environ.get(SHARED_DIR_ENV) if worker else None
    _session_dir = tempfile.mkdtemp(prefix="inductor-device-options-tests-", dir=parent)
    if parent is None:
        os.environ[SHARED_DIR_ENV] = _session_dir
    os.makedirs(os.path.join(_session_dir, "tmp"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_session_dir, "inductor-cache")
    os.environ["TMPDIR"] = os.path.join(_session_dir, "tmp")
    tempfile.tempdir = None  # recompute from TMPDIR


def pytest_unconfigure(config: pytest.Config) -> None:
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Registrations made by a test are removed after it."""
    from inductor_device_options import _registry

    with _registry._lock:
        saved = dict(_registry._registered)
    yield
    with _registry._lock:
        _registry._registered.clear()
        _registry._registered.update(saved)
