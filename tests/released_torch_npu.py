"""torch_npu 2.14.0 as released, for tests: its own ``_inductor/cpp_builder.py``, headers
and ``libtorch_npu.so`` from the wheel, never imported as torch_npu itself.

The wheel is downloaded once into the cache ``upstream/verify.py`` uses; a test that needs
it is skipped, saying why, only when the package registry is unreachable.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

VERSION = "2.14.0"


def release_of(version: str) -> tuple[int, int]:
    """(X, Y) of a version X.Y.Z[+local]: torch_npu X.Y.* is built for torch X.Y."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


_UNREACHABLE = ("connection", "network is unreachable", "temporary failure", "name resolution")

# torch_npu's cpp_builder imports these from the rest of torch_npu, which needs Ascend
# hardware libraries to import: stand-ins that give what the file reads from them.
_STUBS = {
    "__init__.py": "",
    "_inductor/__init__.py": "",
    "utils/__init__.py": "",
    "utils/cpp_extension.py": (
        "import os\nPYTORCH_NPU_INSTALL_PATH = os.path.dirname(os.path.dirname(__file__))\n"
    ),
    "utils/_error_code.py": (
        "import enum\n"
        "class ErrCode(enum.Enum):\n    NOT_FOUND = 'not found'\n"
        "def pta_error(code):\n    return f' [ERR: {code.value}]'\n"
    ),
}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inductor-device-options" / "wheels"


def wheel() -> Path:
    """The released wheel, downloaded once; skips the test when the registry is unreachable."""
    cache = cache_dir()
    found = sorted(cache.glob(f"torch_npu-{VERSION}-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
            "--retries",
            "1",
            "--timeout",
            "30",
            "-d",
            str(cache),
            f"torch-npu=={VERSION}",
        ],
        capture_output=True,
        text=True,
    )
    found = sorted(cache.glob(f"torch_npu-{VERSION}-*.whl"))
    if finished.returncode == 0 and found:
        return found[0]
    output = (finished.stdout + finished.stderr).lower()
    if any(marker in output for marker in _UNREACHABLE):
        pytest.skip(
            f"torch-npu {VERSION} cannot be downloaded: the package registry is unreachable"
        )
    raise RuntimeError(f"pip download torch-npu=={VERSION} failed:\n{finished.stderr}")


def unpack(root: Path) -> Path:
    """The wheel's cpp_builder.py, include/ and lib/libtorch_npu.so under ``root/torch_npu``,
    with stand-ins for the rest of the package; returns that directory."""
    package = root / "torch_npu"
    with zipfile.ZipFile(wheel()) as archive:
        for name in archive.namelist():
            if (
                name == "torch_npu/_inductor/cpp_builder.py"
                or name.startswith("torch_npu/include/")
                or name == "torch_npu/lib/libtorch_npu.so"
            ):
                archive.extract(name, root)
    for relative, text in _STUBS.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def load_cpp_builder(package: Path) -> ModuleType:
    """Execute torch_npu's real ``_inductor/cpp_builder.py`` (its torch_npu imports stubbed)."""
    # Only while it executes: elsewhere in the session torch_npu must stay not importable.
    sys.path.insert(0, str(package.parent))
    try:
        spec = importlib.util.spec_from_file_location(
            "torch_npu._inductor.cpp_builder", package / "_inductor" / "cpp_builder.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(package.parent))
        for name in [name for name in sys.modules if name.split(".")[0] == "torch_npu"]:
            del sys.modules[name]
    return module
