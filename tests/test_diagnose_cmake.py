"""doctor --aot's ``cmake_project`` check (_diagnose/cmake_checks.py): whether the C++ project
AOTInductor writes for the device with ``aot_inductor.package_cpp_only`` builds with cmake.

The check runs as doctor runs it, on test_diagnose_doctor's SDK written to disk: the options
computed (the ``options`` check), the project written by torch's writers, then built by the
cmake of the test extra, or read where no cmake can build it. Where the running torch is a
CUDA wheel, torch's own CMake package cannot configure here (it asks for a CUDA toolkit,
which cannot exist here): the check reads the project then, and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from support import NATIVE, assert_quoted, torch_writes_cmake
from test_diagnose_doctor import Sdk, provider, write_sdk
from torch._inductor import cpp_builder

import inductor_device_options as ido
from inductor_device_options._diagnose.checks import Check, Context
from inductor_device_options._diagnose.cmake_checks import (
    Cmake,
    check_cmake_project,
    installed_cmakes,
)
from inductor_device_options._diagnose.options_checks import check_options
from inductor_device_options._hook.sources import found_source

pytestmark = pytest.mark.usefixtures("clean_registry")
# torch's CMake package configures here only for a CPU wheel (see the module's doc).
TORCH_CONFIGURES = torch.version.cuda is None
writes_cmake = pytest.mark.skipif(not torch_writes_cmake(), reason="torch writes no CMake")


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Sdk:
    return write_sdk(tmp_path_factory.mktemp("acme-sdk"), ("acme",))


def cmake_check(work: Path, cmakes: list[Cmake] | None = None) -> Check:
    """The check for "acme", served as the test registered it, as doctor --aot runs it."""
    context = Context(found_source("acme"), True, work)
    assert check_options(context).status == "pass"
    return check_cmake_project(context, None, cmakes)


def register(door: str, options: Callable[[str, bool, bool], object]) -> None:
    """``options`` served for "acme" through the package's door or torch's."""
    if door == "package":
        ido.register_cpp_device_options("acme", options)  # type: ignore[arg-type]
        return
    cpp_builder.register_cpp_device_options("acme", options)  # type: ignore[attr-defined]
    if door == "torch, guaranteed":
        ido.guarantee_cpp_device_options("acme")


def the_test_extra_s_cmake() -> list[Cmake]:
    """The cmakes doctor finds: the test extra's among them, beside this Python."""
    found = installed_cmakes()
    assert any(each.version >= (3, 27) for each in found), found
    return found


READ = "read, not built"
BUILT = "configured and built it"
# What the check says of a project it builds on this torch: torch's CMake package does not
# configure on a CUDA wheel, and the project is read.
BUILT_HERE = BUILT if TORCH_CONFIGURES else f"{READ} (torch's CMake package does not configure"


@writes_cmake
@pytest.mark.parametrize(
    ("door", "cmakes", "summary"),
    [
        ("package", the_test_extra_s_cmake, BUILT_HERE),
        ("torch, guaranteed", the_test_extra_s_cmake, BUILT_HERE),
        ("package", list, f"{READ} (no cmake installed)"),
        (
            "package",
            lambda: [Cmake("/usr/bin/cmake", (3, 25, 1))],
            f"{READ} (cmake 3.25.1 (/usr/bin/cmake) older than the 3.27 it requires)",
        ),
    ],
    ids=["built", "guaranteed", "no-cmake", "old-cmake"],
)
def test_a_project_the_package_writes_passes(
    sdk: Sdk, tmp_path: Path, door: str, cmakes: Callable[[], list[Cmake]], summary: str
) -> None:
    register(door, provider(sdk, runpath=True))
    check = cmake_check(tmp_path, cmakes())
    assert check.status == "pass", check
    assert summary in check.summary


@writes_cmake
@pytest.mark.parametrize("cmakes", [the_test_extra_s_cmake, list], ids=["cmake", "no-cmake"])
def test_torch_s_project_for_a_device_served_through_torch_s_door_fails_naming_what_it_lacks(
    sdk: Sdk, tmp_path: Path, cmakes: Callable[[], list[Cmake]]
) -> None:
    register("torch", provider(sdk, runpath=True))
    check = cmake_check(tmp_path, cmakes())
    assert check.status == "fail", check
    [problem] = check.problems
    lacks = (
        f"lacks its include dirs {sdk.include}, {sdk.inductor_include}; its library dirs {sdk.lib}"
    )
    assert lacks in problem.cause
    # torch patched with upstream/pytorch's 0002 writes the ldflags with their '-'.
    dashless = f"its ldflags written with their '-' ({sdk.runpath()})"
    assert (dashless in problem.cause) is not NATIVE
    assert "inductor_device_options.guarantee_cpp_device_options('acme')" in problem.fix
    messages = [check.summary, problem.cause]
    assert_quoted(
        "the CMakeLists.txt AOTInductor writes for 'DEVICE' (aot_inductor.package_cpp_only) "
        "lacks ...",
        messages,
    )
    if cmakes() and TORCH_CONFIGURES:
        assert_quoted("cmake failed", messages)
        assert_quoted(
            "cmake VERSION (...) could not build the C++ project AOTInductor writes for the device",
            messages,
        )
        assert any("fatal error" in line or "#error" in line for line in problem.details)
    else:
        assert_quoted("the project lacks N parts", messages)


@writes_cmake
@pytest.mark.skipif(not TORCH_CONFIGURES, reason="torch's CMake package needs a CUDA toolkit")
def test_a_header_the_generated_code_includes_that_no_include_dir_has_fails_the_build(
    sdk: Sdk, tmp_path: Path
) -> None:
    """The project has every include dir of the options: the header is not in any."""
    register("package", provider(sdk, runpath=True, inductor_headers=False))
    check = cmake_check(tmp_path, the_test_extra_s_cmake())
    assert check.status == "fail", check
    [problem] = check.problems
    header = "torch/csrc/inductor/aoti_include/acme.h"
    assert any(
        f"{header}: not found in the include dirs of the project" in line
        for line in problem.details
    )
    assert "lacks" not in problem.cause  # nothing of the options is missing from it
    # The project read instead of built cannot tell: the headers check does.
    assert cmake_check(tmp_path / "read", []).status == "pass"


@pytest.mark.skipif(torch_writes_cmake(), reason="torch writes a CMake project")
def test_on_a_torch_that_writes_no_cmake_the_check_says_so(sdk: Sdk, tmp_path: Path) -> None:
    register("package", provider(sdk, runpath=True))
    check = cmake_check(tmp_path, the_test_extra_s_cmake())
    assert check.status == "skip"
    assert_quoted("torch VERSION writes no CMake project", [check.summary])
