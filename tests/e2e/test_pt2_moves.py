"""A .pt2 built for the sample device loads where its SDK lives at another path than on the
machine that built it (its model's runpath names the build machine's library dir), and a
library that is not there is named, with the device and the fix.

Machine 1 builds the package with the SDK at /opt/sampledev; the SDK is then moved to
/srv/sdk/sampledev (the same contents: the same SDK identity). Machine 2, whose SDK is at
the new path, loads and runs it; machine 3's loses its runtime library before it loads.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from fleet import Fleet
from support import assert_quoted

from inductor_device_options.sample import RUNTIME_LIBRARY_FILE, SampleDevice
from inductor_device_options.sample._sdk import install_sdk


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
