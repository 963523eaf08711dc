"""The C++ project AOTInductor writes with ``aot_inductor.package_cpp_only``, for the tests:
written for a model, configured and built with a real cmake (the ``cmake`` distribution of
the test extra: torch's project asks for CMake 3.27), and what it builds packed into a
``.pt2`` again, which ``aoti_load_package`` runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

BUILD_TIMEOUT = 900
# torch's CMake package, less what a CUDA wheel adds: its TorchConfig.cmake looks for a
# CUDA toolkit (nvcc), which cannot exist here. The imported targets the project links.
CPU_TORCH_CONFIG = """\
# Written by the tests (tests/cmake_projects.py): torch's CMake package for a CUDA wheel on a
# machine without a CUDA toolkit, which its own TorchConfig.cmake requires. The CPU libraries.
set(_torch "{torch}")
foreach(_library torch torch_cpu c10)
  add_library(${{_library}} SHARED IMPORTED)
  set_target_properties(${{_library}} PROPERTIES
    IMPORTED_LOCATION "${{_torch}}/lib/lib${{_library}}.so")
endforeach()
set_target_properties(torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${{_torch}}/include;${{_torch}}/include/torch/csrc/api/include"
  INTERFACE_LINK_LIBRARIES "torch_cpu;c10")
set(TORCH_FOUND TRUE)
"""


@contextlib.contextmanager
def torch_s_writers() -> Iterator[None]:
    """torch's own CMake writers, unwrapped, for the block: the project torch writes alone."""
    from torch._inductor.cpp_builder import CppBuilder

    from inductor_device_options._torch_names import CMAKE_WRITERS

    wrapped = {name: CppBuilder.__dict__[name] for name in CMAKE_WRITERS}
    for name, writer in wrapped.items():
        setattr(CppBuilder, name, writer.__wrapped__)
    try:
        yield
    finally:
        for name, writer in wrapped.items():
            setattr(CppBuilder, name, writer)


def cmake() -> str:
    """The cmake of the test extra."""
    import cmake as distribution

    return os.path.join(distribution.CMAKE_BIN_DIR, "cmake")


def torch_prefix(work: Path) -> str:
    """``CMAKE_PREFIX_PATH`` for the project's ``find_package(Torch)``: torch's own where it
    configures without CUDA (a CPU wheel), else a stand-in for its CPU part (``work``)."""
    import torch
    import torch.utils

    if torch.version.cuda is None:
        return str(torch.utils.cmake_prefix_path)
    config = work / "torch-cpu-config" / "TorchConfig.cmake"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CPU_TORCH_CONFIG.format(torch=Path(torch.__file__).parent))
    return str(config.parent)


def run_cmake(*args: str, timeout: float = BUILD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cmake(), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def configure(project: Path, build: Path, *defines: str) -> subprocess.CompletedProcess[str]:
    """``cmake -S project -B build`` with torch's prefix and ``-D`` ``defines``; the compile
    commands exported (``compile_commands.json``)."""
    return run_cmake(
        "-S",
        str(project),
        "-B",
        str(build),
        f"-DCMAKE_PREFIX_PATH={torch_prefix(build.parent)}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        *(f"-D{define}" for define in defines),
    )


def build(build_dir: Path) -> subprocess.CompletedProcess[str]:
    return run_cmake("--build", str(build_dir), "--parallel", "2")


def configure_and_build(project: Path, build_dir: Path, *defines: str) -> Path:
    """The shared library the project builds; fails the test with cmake's output."""
    for finished in (configure(project, build_dir, *defines), build(build_dir)):
        assert finished.returncode == 0, output(finished)
    [library] = build_dir.glob("*.so")
    return library


def output(finished: subprocess.CompletedProcess[str]) -> str:
    stdout, stderr = finished.stdout[-6000:], finished.stderr[-6000:]
    return f"exit {finished.returncode}\nstdout:\n{stdout}\nstderr:\n{stderr}"


def link_command(build_dir: Path) -> str:
    """The command the Makefile generator links the library with."""
    return next(build_dir.glob("CMakeFiles/*.dir/link.txt")).read_text()


def unpack_project(package: str | os.PathLike[str], directory: Path) -> Path:
    """The dir of a ``.pt2`` written with ``package_cpp_only`` that holds the model's
    project: its sources, flags, metadata (and CMakeLists.txt, where torch writes one)."""
    with zipfile.ZipFile(package) as archive:
        archive.extractall(directory)
    [metadata] = directory.rglob("*_metadata.json")
    return metadata.parent


def repack(project: Path, library: Path, package: Path) -> str:
    """A ``.pt2`` holding ``library`` (named after the model's metadata, as AOTInductor
    names the library it builds), that metadata and the sources, as AOTInductor packs a
    model: what ``aoti_load_package`` loads (torch 2.6's loader names the metadata after
    the source)."""
    from torch._inductor.package.package import package_aoti

    [metadata] = project.glob("*_metadata.json")
    named = project / (metadata.name.removesuffix("_metadata.json") + ".so")
    shutil.copyfile(library, named)
    files = [named, metadata, *sorted(project.glob("*.cpp"))]
    return str(package_aoti(str(package), [str(path) for path in files]))


def project_files(project: Path) -> dict[str, bytes]:
    """The project's text files (CMakeLists.txt, the flags as JSON, the sources), by name."""
    return {
        path.name: path.read_bytes()
        for path in sorted(project.iterdir())
        if path.suffix in (".txt", ".json", ".cpp", ".h")
    }
