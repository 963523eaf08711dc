"""Declared providers: the `inductor_device_options` entry point group, in fresh processes.

A test distribution is a real dist-info directory on PYTHONPATH, found by importlib.metadata
exactly as an installed one is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support import NATIVE, TESTS_DIR, check_python, pythonpath_with, write_distribution

PROVIDER = """\
import os
SDK = os.path.join(os.path.dirname(__file__), "epdev_sdk")

def options(device_type, aot_mode, compile_only):
    import inductor_device_options as ido
    result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    result.definitions.append("EPDEV_DEVICE")
    result.include_dirs.append(os.path.join(SDK, "include"))
    result.libraries_dirs.append(os.path.join(SDK, "lib"))
    result.libraries.append("epdev_runtime")
    result.ldflags.append("Wl,-rpath," + os.path.join(SDK, "lib"))
    return result
"""

BUILD = """
import ctypes, os, sys
import torch
assert "epdev_provider" not in sys.modules, "the provider was imported before any lookup"
from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions
out = os.environ["EPDEV_OUT"]
source = os.path.join(out, "k.cpp")
with open(source, "w") as f:
    f.write('#include <epdev.h>\\nextern "C" int k(void) { return epdev_version() + 1; }\\n')
builder = CppBuilder("k", [source], CppTorchDeviceOptions(device_type="epdev"), out)
builder.build()
print(ctypes.CDLL(builder.get_target_file_path()).k())
print("epdev_provider" in sys.modules)
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site dir holding the test distribution `epdist`: one good, two broken providers."""
    site = tmp_path / "site"
    write_distribution(
        site,
        "epdist",
        "1.2",
        {
            "epdev": "epdev_provider:options",
            "brokendev": "epdev_broken:options",
            "raisingdev": "epdev_provider:missing_name",
        },
    )
    (site / "epdev_provider.py").write_text(PROVIDER)
    (site / "epdev_broken.py").write_text("raise ImportError('libascend_hal.so: cannot open')\n")
    sdk = site / "epdev_sdk"
    (sdk / "include").mkdir(parents=True)
    (sdk / "lib").mkdir()
    (sdk / "include" / "epdev.h").write_text(
        '#pragma once\n#ifndef EPDEV_DEVICE\n#error "needs -DEPDEV_DEVICE"\n#endif\n'
        'extern "C" int epdev_version(void);\n'
    )
    (tmp_path / "rt.c").write_text("int epdev_version(void) { return 41; }\n")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            str(tmp_path / "rt.c"),
            "-o",
            str(sdk / "lib" / "libepdev_runtime.so"),
        ],
        check=True,
    )
    (tmp_path / "out").mkdir()
    return site


def test_a_fresh_process_builds_with_a_declared_provider_it_never_imported(
    site: Path, tmp_path: Path
) -> None:
    out = check_python(
        BUILD, env={"PYTHONPATH": pythonpath_with(site), "EPDEV_OUT": str(tmp_path / "out")}
    )
    assert out.splitlines() == ["42", "True"]


def test_a_broken_entry_point_fails_only_its_device(site: Path) -> None:
    out = check_python(
        """
import torch
import inductor_device_options as ido
from torch._inductor.cpp_builder import CppTorchDeviceOptions
from support import definitions_of
for device in ["brokendev", "raisingdev"]:
    try:
        CppTorchDeviceOptions(device_type=device)
    except ido.ProviderLoadError as error:
        print(type(error).__name__, error.device_type, "|", error)
print("EPDEV_DEVICE" in definitions_of(CppTorchDeviceOptions(device_type="epdev")))
print(ido.get_cpp_device_options("cpu") == ido.default_cpp_device_options("cpu"))
""",
        env={"PYTHONPATH": pythonpath_with(site, TESTS_DIR)},
    )
    assert out.splitlines() == [
        "ProviderLoadError brokendev | cannot load the C++ options provider for device "
        "'brokendev' from entry point brokendev = epdev_broken:options in group "
        "'inductor_device_options' (distribution epdist 1.2): "
        "ImportError: libascend_hal.so: cannot open",
        "ProviderLoadError raisingdev | cannot load the C++ options provider for device "
        "'raisingdev' from entry point raisingdev = epdev_provider:missing_name in group "
        "'inductor_device_options' (distribution epdist 1.2): "
        "AttributeError: module 'epdev_provider' has no attribute 'missing_name'",
        "True",
        "True",
    ]


def test_an_explicit_registration_wins_over_the_entry_point(site: Path) -> None:
    out = check_python(
        """
import inductor_device_options as ido
ido.register_cpp_device_options("epdev", lambda d, a, c: (["MINE"], [], [], [], [], [], []))
print(ido.get_cpp_device_options("epdev").definitions)
import sys; print("epdev_provider" in sys.modules)
""",
        env={"PYTHONPATH": pythonpath_with(site)},
    )
    assert out.splitlines() == ["['MINE']", "False"]


def test_torch_autoload_arms_the_hook_without_importing_inductor() -> None:
    out = check_python(
        """
import sys, torch
print("inductor_device_options" in sys.modules)
print(sorted(m for m in sys.modules if m.startswith("torch._inductor")))
import torch._inductor.cpp_builder
import inductor_device_options as ido
print(ido.introspection.hook_state().mode)
"""
    )
    assert out.splitlines() == ["True", "[]", "native" if NATIVE else "hook"]


def test_an_entry_point_that_names_no_device_is_ignored_and_reported(site: Path) -> None:
    write_distribution(
        site, "thirdparty", "0.1", {"my-dev": "thirdparty:options", "npu:0": "thirdparty:options"}
    )
    out = check_python(
        """
import inductor_device_options as ido
from inductor_device_options._lookup import entry_points as _entry_points
from inductor_device_options._lookup import registry as _registry
from torch._inductor.cpp_builder import CppTorchDeviceOptions
from support import definitions_of
print(sorted(source.device_type for source in ido.introspection.known_device_options_sources()))
for declaration in _entry_points.invalid_declarations():
    print(declaration.describe())
print("EPDEV_DEVICE" in definitions_of(CppTorchDeviceOptions(device_type="epdev")))
""",
        env={"PYTHONPATH": pythonpath_with(site, TESTS_DIR)},
    )
    lines = out.splitlines()
    assert "my-dev" not in lines[0] and "'epdev'" in lines[0]
    assert lines[1:] == [
        "entry point my-dev = thirdparty:options in group 'inductor_device_options' "
        "(distribution thirdparty 0.1): 'my-dev' is not a device name (a name such as 'npu', "
        "without an index); the entry point is ignored",
        "entry point npu:0 = thirdparty:options in group 'inductor_device_options' "
        "(distribution thirdparty 0.1): 'npu:0' is not a device name (a name such as 'npu', "
        "without an index); the entry point is ignored",
        "True",
    ]
