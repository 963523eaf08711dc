"""A .pt2 built for the sample device loads where its SDK lives at another path than on the
machine that built it (its model's runpath names the build machine's library dir), and a
library that is not there is named, with the device and the fix.

Machine 1 builds the package with the SDK at /opt/sampledev; the SDK is then moved to
/srv/sdk/sampledev (the same contents: the same SDK identity). Machine 2, whose SDK is at
the new path, loads and runs it; machine 3's loses its runtime library before it loads.
Machines 4 and 5 do the same with an SDK whose runtime library has no SONAME (built without
``-Wl,-soname``): the model records it by its file name, which the loader does not take for
the library loaded by its path.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet import Fleet
from support import assert_quoted

from inductor_device_options.sample import RUNTIME_LIBRARY_FILE, SDK_INCLUDE_DIR, SampleDevice
from inductor_device_options.sample._sdk import RUNTIME_SOURCE, install_sdk


@pytest.fixture(scope="module")
def moved(sample_build: SampleDevice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("moved")
    built_at = install_sdk(root / "opt" / "sampledev")
    fleet = Fleet(root, None, sample_build, built_at)
    fleet.run(
        "machine 1", "1", [["package", fleet.path("model.pt2")], ["load", fleet.path("model.pt2")]]
    )
    moved_to = root / "srv" / "sdk" / "sampledev"
    moved_to.parent.mkdir(parents=True)
    shutil.move(built_at, moved_to)  # nothing is left where the model's runpath points
    fleet.run("machine 2", "2", [["load", fleet.path("model.pt2")]], sdk=moved_to)
    library = moved_to / "lib" / RUNTIME_LIBRARY_FILE
    fleet.run(
        "machine 3",
        "3",
        [["unlink", str(library)], ["load", fleet.path("model.pt2")]],
        sdk=moved_to,
        INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH="1",  # past the identity, to the loader
    )
    yield fleet


def test_a_package_loads_where_the_sdk_lives_at_another_path(moved: Fleet) -> None:
    built, [loaded] = moved.seen["machine 1"][1], moved.seen["machine 2"]
    assert (built["built_against"], built["warnings"]) == ("A", [])
    assert (loaded["built_against"], loaded["warnings"], loaded["logged"]) == ("A", [], [])


def test_a_library_missing_where_it_is_loaded_names_the_device_the_library_and_the_fix(
    moved: Fleet,
) -> None:
    _, missing = moved.seen["machine 3"]
    assert missing["error"] == "DeviceLibraryError", missing
    assert not [line for line in missing["logged"] if "outdated" in line]
    assert_quoted(
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which the loader does not find "
        "here",
        [missing["message"]],
    )
    assert_quoted(
        "Fix: install the device's SDK on this machine and have its provider name the dir that "
        "holds LIBRARY in libraries_dirs, or put that dir on LD_LIBRARY_PATH",
        [missing["message"]],
    )


def install_sdk_without_soname(destination: Path) -> Path:
    """The sample SDK as install_sdk installs it, but its runtime library built as a plain
    ``cc -shared`` builds it: without a SONAME."""
    shutil.copytree(SDK_INCLUDE_DIR, destination / "include")
    (destination / "lib").mkdir()
    library = destination / "lib" / RUNTIME_LIBRARY_FILE
    command = ["cc", "-shared", "-fPIC", "-O2", f"-I{SDK_INCLUDE_DIR}", str(RUNTIME_SOURCE)]
    subprocess.run([*command, "-o", str(library)], check=True)
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
    assert "SONAME" not in dynamic.stdout, dynamic.stdout
    return destination


@pytest.fixture(scope="module")
def moved_without_soname(
    sample_build: SampleDevice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("moved-without-soname")
    built_at = install_sdk_without_soname(root / "opt" / "sampledev")
    fleet = Fleet(root, None, sample_build, built_at)
    fleet.run("machine 4", "4", [["package", fleet.path("model.pt2")]])
    moved_to = root / "srv" / "sdk" / "sampledev"
    moved_to.parent.mkdir(parents=True)
    shutil.move(built_at, moved_to)
    # Twice: a process that loads a second package of the device loads it alike.
    load = ["load", fleet.path("model.pt2")]
    fleet.run("machine 5", "5", [load, load], sdk=moved_to)
    yield fleet


def test_a_package_loads_where_an_sdk_whose_library_has_no_soname_lives_at_another_path(
    moved_without_soname: Fleet,
) -> None:
    [built] = moved_without_soname.seen["machine 4"]
    assert built["stamp"] is not None
    for loaded in moved_without_soname.seen["machine 5"]:
        assert "error" not in loaded, loaded
        assert (loaded["built_against"], loaded["warnings"], loaded["logged"]) == ("A", [], [])
