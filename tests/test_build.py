"""A real build: CppBuilder + CppTorchDeviceOptions with a registered device's SDK, real g++."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest
from support import cpp_builder_keeps_whole
from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

import inductor_device_options as ido

pytestmark = pytest.mark.usefixtures("clean_registry")

SDK_HEADER = """\
#pragma once
#ifndef MYDEV_DEVICE
#error "mydev SDK: compile with -DMYDEV_DEVICE (the device options were not applied)"
#endif
#ifdef __cplusplus
extern "C" {
#endif
int mydev_runtime_version(void);
#ifdef __cplusplus
}
#endif
"""

SDK_RUNTIME = "int mydev_runtime_version(void) { return 905; }\n"

KERNEL = """\
#include <mydev/runtime.h>
extern "C" int kernel_answer(int x) { return mydev_runtime_version() + x + MYDEV_OFFSET; }
"""


def make_sdk(root: Path) -> tuple[Path, Path]:
    """A small device SDK on disk: a header that needs the macro, a runtime library.

    The include dir has a space in its path where this torch's Inductor quotes include
    dirs (2.6 does not); the library dir cannot (Inductor passes -L unquoted).
    """
    include_dir = root / ("my sdk" if cpp_builder_keeps_whole("include_dirs") else "my_sdk")
    include_dir = include_dir / "include"
    lib_dir = root / "sdk_lib64"
    (include_dir / "mydev").mkdir(parents=True)
    lib_dir.mkdir()
    (include_dir / "mydev" / "runtime.h").write_text(SDK_HEADER)
    source = root / "runtime.c"
    source.write_text(SDK_RUNTIME)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(source), "-o", str(lib_dir / "libmydev_runtime.so")],
        check=True,
    )
    return include_dir, lib_dir


def build_kernel(tmp_path: Path, device_type: str) -> Path:
    source = tmp_path / "kernel.cpp"
    source.write_text(KERNEL)
    builder = CppBuilder(
        name="kernel",
        sources=[str(source)],
        BuildOption=CppTorchDeviceOptions(device_type=device_type),
        output_dir=str(tmp_path / "out"),
    )
    builder.build()
    return Path(builder.get_target_file_path())


def test_registered_options_build_link_and_load(tmp_path: Path) -> None:
    include_dir, lib_dir = make_sdk(tmp_path)

    def mydev_options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        options.definitions.extend(["MYDEV_DEVICE", "MYDEV_OFFSET=2"])
        options.include_dirs.append(str(include_dir))
        options.libraries_dirs.append(str(lib_dir))
        options.libraries.append("mydev_runtime")
        options.ldflags.append(f"Wl,-rpath,{lib_dir}")
        return options

    ido.register_cpp_device_options("mydev", mydev_options)
    library = ctypes.CDLL(str(build_kernel(tmp_path, "mydev")))
    library.kernel_answer.argtypes = [ctypes.c_int]
    assert library.kernel_answer(10) == 905 + 10 + 2


def test_without_registration_the_compiler_cannot_find_the_sdk(tmp_path: Path) -> None:
    """The negative control: the same build fails in g++ when nothing is registered."""
    make_sdk(tmp_path)
    with pytest.raises(Exception, match=r"mydev/runtime\.h: No such file or directory"):
        build_kernel(tmp_path, "mydev")
