"""The sample device for the end-to-end tests.

tests/conftest.py already points TORCHINDUCTOR_CACHE_DIR and TMPDIR at the
session's temporary directory (precompiled headers are ~150 MB each) and
removes it at the end; the sample backend is built there too, once a test run (in the
directory the pytest-xdist workers share).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support import shared_test_dir

from inductor_device_options import unregister_cpp_device_options
from inductor_device_options.sample import DEVICE_NAME, SampleDevice, sdk_cpp_device_options
from inductor_device_options.testing import registered_cpp_device_options


@pytest.fixture(scope="session")
def sample_build() -> SampleDevice:
    """The sample backend, built once a test run (the C++ extension takes ~25 s) and loaded
    by each worker: the build is safe to share (torch's extension builder takes a lock, the
    runtime library is replaced atomically)."""
    from inductor_device_options import sample

    device = sample.setup(shared_test_dir() / "sampledev")
    # setup() registers the device's C++ options for good; the tests that want them
    # register them for their own duration (fixture ``sampledev``), so that the other
    # test modules of the session see the registry they expect.
    unregister_cpp_device_options(DEVICE_NAME)
    return device


@pytest.fixture
def sampledev(sample_build: SampleDevice) -> Iterator[SampleDevice]:
    """The sample device with its C++ options registered for the test.

    Inductor's caches stay on: the session's cache directory starts empty, so each
    test's first compile runs the compiler, and the CPU feature probes Inductor
    compiles there (about 15 s) serve every later process of the session.
    """
    import torch

    torch._dynamo.reset()
    with registered_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options):
        yield sample_build
    torch._dynamo.reset()
