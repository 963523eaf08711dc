"""The C++ project AOTInductor writes with ``aot_inductor.package_cpp_only``, for the sample
device: built by a real cmake as written, and what it builds run on the device.

A model of the device's extern kernels (its SDK's C shims, its runtime library) is compiled
with ``package_cpp_only``; cmake configures and builds the ``.pt2``'s project against torch's
CMake package (a stand-in for its CPU part on a CUDA wheel, whose own config needs a CUDA
toolkit, which cannot exist here: tests/cmake_projects.py); the library it builds is packed
into a ``.pt2`` again and runs on the device with ``aoti_load_package``. torch's own project
fails for the device; a cpu project is torch's, byte for byte. torch 2.6 writes no CMake: its
project is the sources and the flags as JSON, which torch's ``compile_so`` builds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from cmake_projects import (
    build,
    configure,
    configure_and_build,
    output,
    project_files,
    repack,
    torch_s_writers,
    unpack_project,
)
from support import check_python, torch_writes_cmake
from test_extern_kernels import ConvolutionThenAddmm, random_tensors

from inductor_device_options._demo.elf import read_dynamic_section
from inductor_device_options.sample import (
    DEVICE_NAME,
    SampleDevice,
    runtime_registered_modules,
    sdk_cpp_device_options,
)
from inductor_device_options.testing import registered_cpp_device_options

WRITES_CMAKE = torch_writes_cmake()
writes_cmake = pytest.mark.skipif(not WRITES_CMAKE, reason="this torch writes no CMake project")
# Every compile generates anew: a compiled graph served from Inductor's caches would bring
# the project another compile wrote.
CPP_ONLY = {"aot_inductor.package_cpp_only": True, "fx_graph_cache": False}
INPUT_SHAPES = ((2, 3, 5, 5), (4, 3, 3, 3), (4,), (100, 6))
PROJECT_FILES = (".wrapper.cpp", "CMakeLists.txt", "_flags.json", "_metadata.json")


def compile_project(directory: Path) -> Path:
    """The project of ConvolutionThenAddmm on the sample device, unpacked in ``directory``."""
    inputs = tuple(tensor.to(DEVICE_NAME) for tensor in random_tensors(*INPUT_SHAPES))
    exported = torch.export.export(ConvolutionThenAddmm(), inputs)
    directory.mkdir(parents=True, exist_ok=True)
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(directory / "model.pt2"), inductor_configs=CPP_ONLY
    )
    return unpack_project(package, directory / "unpacked")


def run_on_the_device(package: str) -> None:
    """The package runs on the device, its result the eager CPU one, and its library loaded
    the device's runtime library (each module built with the SDK's headers registers). The
    device is served while it loads, as where its backend is imported: the package carries
    the SDK identity it was built against, checked against the served one."""
    inputs = random_tensors(*INPUT_SHAPES)
    modules_before = runtime_registered_modules()
    with registered_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options):
        model = torch._inductor.aoti_load_package(package)
    result = model(*(t.to(DEVICE_NAME) for t in inputs))
    assert result.device.type == DEVICE_NAME
    torch.testing.assert_close(result.cpu(), ConvolutionThenAddmm()(*inputs))
    assert runtime_registered_modules() == modules_before + 1


@pytest.fixture(scope="module")
def sample_project(sample_build: SampleDevice, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch._dynamo.reset()
    with registered_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options):
        return compile_project(tmp_path_factory.mktemp("sampledev-project"))


@writes_cmake
def test_the_sample_device_s_project_builds_as_written_and_runs_on_the_device(
    sample_project: Path, sample_build: SampleDevice, tmp_path: Path
) -> None:
    library = configure_and_build(sample_project, tmp_path / "build")
    run_on_the_device(repack(sample_project, library, tmp_path / "rebuilt.pt2"))
    runpath = read_dynamic_section(library).runpath
    assert str(sample_build.runtime_lib_dir) in runpath

    # Another machine: its SDK's runtime library elsewhere, given as a cache variable. The
    # library is linked anew (nothing else changed) and its runpath follows.
    elsewhere = tmp_path / "elsewhere" / "lib"
    shutil.copytree(sample_build.runtime_lib_dir, elsewhere)
    moved = configure_and_build(
        sample_project, tmp_path / "build", f"SAMPLEDEV_SDK_LIBRARY_DIRS={elsewhere}"
    )
    runpath = read_dynamic_section(moved).runpath
    assert str(elsewhere) in runpath and str(sample_build.runtime_lib_dir) not in runpath
    run_on_the_device(repack(sample_project, moved, tmp_path / "moved.pt2"))


@writes_cmake
def test_torch_s_own_project_does_not_build_for_the_sample_device(
    sample_build: SampleDevice, tmp_path: Path
) -> None:
    torch._dynamo.reset()
    with registered_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options), torch_s_writers():
        project = compile_project(tmp_path)
    finished = configure(project, tmp_path / "build")
    assert finished.returncode == 0, output(finished)
    finished = build(tmp_path / "build")
    assert finished.returncode != 0
    missing = "fatal error: torch/csrc/inductor/aoti_include/sampledev.h: No such file"
    assert missing in finished.stdout + finished.stderr, output(finished)


# Writes the project of a cpu model into PACKAGE, WRITERS being "package" (the package set
# up, the sample device registered) or "torch" (torch alone: its backend autoload off).
CPU_PROJECT = """
import sys
import torch

if {writers!r} == "package":
    from inductor_device_options import sample

    sample.setup({sample_dir!r})
    from torch._inductor.cpp_builder import CppBuilder

    assert hasattr(CppBuilder.save_compile_cmd_to_cmake, "__wrapped__")


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return torch.relu(x @ weight) + x.sum()


inputs = (torch.randn(8, 16), torch.randn(16, 16))
exported = torch.export.export(Model(), inputs)
torch._inductor.aoti_compile_and_package(
    exported, package_path={package!r}, inductor_configs={configs!r}
)
served = "inductor_device_options" in sys.modules
assert served == ({writers!r} == "package"), sys.modules.get("inductor_device_options")
"""


@writes_cmake
def test_a_cpu_project_is_torch_s_byte_for_byte(sample_build: SampleDevice, tmp_path: Path) -> None:
    projects = {}
    # One Inductor cache dir of their own (a wrapper's source ends with the compile command,
    # which names the dir), its project written anew by each: a source found there gets
    # another command appended, a project file found there would be packed unwritten.
    cache = tmp_path / "inductor-cache"
    for writers in ("torch", "package"):
        for stale in cache.rglob("*"):
            if stale.name.endswith(PROJECT_FILES):
                stale.unlink()
        package = tmp_path / f"{writers}.pt2"
        code = CPU_PROJECT.format(
            writers=writers,
            package=str(package),
            configs=CPP_ONLY,
            sample_dir=str(sample_build.cache_dir),
        )
        env = {
            "TORCH_DEVICE_BACKEND_AUTOLOAD": "0" if writers == "torch" else "1",
            "TORCHINDUCTOR_CACHE_DIR": str(cache),
        }
        check_python(code, env=env)
        projects[writers] = project_files(unpack_project(package, tmp_path / writers))
    assert "CMakeLists.txt" in projects["torch"]
    assert projects["package"] == projects["torch"]


@pytest.mark.skipif(WRITES_CMAKE, reason="this torch writes a CMake project (tested above)")
def test_torch_2_6_writes_the_options_as_json_which_compile_so_builds_for_the_device(
    sample_project: Path, tmp_path: Path
) -> None:
    """torch 2.6 writes no CMakeLists.txt: the flags it writes as JSON hold the device's
    options, and its own ``compile_so`` builds the sources with them."""
    import json

    from torch._inductor.package.package import compile_so

    assert not (sample_project / "CMakeLists.txt").exists()
    [linker_flags] = sample_project.glob("*_linker_flags.json")
    flags = json.loads(linker_flags.read_text())
    own = sdk_cpp_device_options(DEVICE_NAME, True, False)
    for field in ("include_dirs", "libraries_dirs", "libraries", "ldflags"):
        assert set(getattr(own, field)) <= set(flags[field]), field
    files = [str(path) for path in sample_project.iterdir()]
    (tmp_path / "built").mkdir()  # compile_so links into it, named after it
    library = compile_so(str(sample_project), files, str(tmp_path / "built"))
    run_on_the_device(repack(sample_project, Path(library), tmp_path / "rebuilt.pt2"))
