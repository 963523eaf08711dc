"""A synthetic CANN install of realistic size, for the SDK benchmarks.

The 8.5+ layout: real files under ``<arch>-linux/{include,lib64,pkg_inc}``, top-level views
as symlinks, and a ``latest`` symlink to the versioned directory. Headers are padded to
``header_bytes`` (the SDK identity reads contents); library files are small placeholders.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import NamedTuple

_HEADER_DIRS = ("acl", "experiment/msprof", "experiment/runtime", "hccl", "graph", "ge")


class SyntheticCann(NamedTuple):
    cann_home: Path  # what ASCEND_HOME_PATH points at (the `latest` symlink)
    torch_npu: Path  # the torch_npu package directory
    headers: int
    libraries: int


def write_synthetic_cann(
    root: Path, headers: int, libraries: int, header_bytes: int = 0
) -> SyntheticCann:
    arch = f"{platform.machine()}-linux"
    release = root / "cann-8.5.0"
    include = release / arch / "include"
    pkg_inc = release / arch / "pkg_inc"
    lib64 = release / arch / "lib64"
    for directory in (*(include / d for d in _HEADER_DIRS), pkg_inc / "profiling", lib64):
        directory.mkdir(parents=True, exist_ok=True)
    (include / "acl" / "acl.h").write_text("#pragma once\n")
    for index in range(headers - 1):
        sub = include / _HEADER_DIRS[index % len(_HEADER_DIRS)]
        text = f"#pragma once\n#define H_{index} {index}\n"
        padding = max(0, header_bytes - len(text))
        (sub / f"header_{index}.h").write_text(text + "//" + "x" * padding + "\n")
    names = ["ascendcl", "runtime", *(f"ascend_part{index}" for index in range(libraries - 2))]
    for name in names:
        (lib64 / f"lib{name}.so").write_bytes(b"\x7fELF placeholder " + name.encode())
    for view in ("include", "pkg_inc", "lib64"):
        os.symlink(f"{arch}/{view}", release / view)
    os.symlink(release.name, root / "latest")

    torch_npu = root / "site-packages" / "torch_npu"
    (torch_npu / "include").mkdir(parents=True)
    (torch_npu / "lib").mkdir()
    (torch_npu / "__init__.py").write_text("")
    (torch_npu / "lib" / "libtorch_npu.so").write_bytes(b"\x7fELF placeholder torch_npu")
    return SyntheticCann(root / "latest", torch_npu, headers, libraries)
