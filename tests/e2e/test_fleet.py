"""Code built against one SDK never runs against another, across machines that share caches.

A fleet of "machines" (fresh processes, tests/fleet_machine.py), each with its own Inductor
cache dir unless a case shares one, all using torch's remote caches on a real Redis server.
Two SDKs of the sample device differ only in one header of the same size: SDK "A"'s C shim
computes ``a @ b``, SDK "B"'s ``b @ a``, so every result says which SDK the code that ran was
built against. One scenario runs the machines in order; each test reads one case off it.

1. machine 1 (cache X), SDK A at /opt/sampledev: compiles, packages a .pt2, saves the cache
   artifacts;
2. the same SDK contents reinstalled at the same path; machine 1 again (cache X): compiles,
   loads the .pt2;
3. machine 2 (an empty cache Y), same contents: compiles;
4. the SDK edited in place to B, size and modification time kept; machine 3 (cache X,
   shared with machine 1): compiles, loads the .pt2; then again, accepting a mismatch;
5. machine 4 (an empty cache Z, no remote cache), SDK B: loads machine 1's cache artifacts,
   compiles.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
import torch
from fleet import Fleet, edit_in_place_keeping_size_and_mtime, sdks, seen
from redis_server import redis_server

from inductor_device_options.sample import SampleDevice

HAS_CACHE_ARTIFACTS = hasattr(torch.compiler, "save_cache_artifacts")  # torch 2.7 and later


@pytest.fixture(scope="module")
def fleet(sample_build: SampleDevice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    sdk_a, sdk_b, installed = sdks(root)
    artifacts = HAS_CACHE_ARTIFACTS
    with redis_server(root / "redis") as redis:
        fleet = Fleet(root, redis, sample_build, installed)
        fleet.run(
            "machine 1",
            "X",
            [["compile"], ["package", fleet.path("a.pt2")], ["identity"]]
            + ([["save_artifacts", fleet.path("artifacts.bin")]] if artifacts else []),
        )
        shutil.rmtree(installed)
        shutil.copytree(sdk_a, installed, symlinks=True)  # new inodes, times; same contents
        fleet.run(
            "machine 1, reinstalled",
            "X",
            [["compile"], ["load", fleet.path("a.pt2")], ["identity"]],
        )
        fleet.run("machine 2", "Y", [["compile"]])
        edit_in_place_keeping_size_and_mtime(installed, sdk_b)
        fleet.run("machine 3", "X", [["compile"], ["load", fleet.path("a.pt2")], ["identity"]])
        fleet.run(
            "machine 3, accepting",
            "X",
            [["load", fleet.path("a.pt2")]],
            INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH="1",
        )
        if artifacts:  # No remote cache: machine 3's graph for B is in Redis.
            fleet.run(
                "machine 4",
                "Z",
                [["load_artifacts", fleet.path("artifacts.bin")], ["compile"]],
                remote=False,
            )
        yield fleet


def test_the_same_contents_reinstalled_hit_the_cpp_cache_and_the_remote_fx_cache(
    fleet: Fleet,
) -> None:
    first = seen(fleet, "machine 1", 0)
    assert first["built_against"] == "A"
    assert first["fx_graph_cache"] == {"hit": 0, "miss": 1}
    assert first["built_objects"]  # the wrapper's module, at least
    identity = seen(fleet, "machine 1", 2)["identity"]
    assert identity is not None
    assert seen(fleet, "machine 1, reinstalled", 2)["identity"] == identity

    reinstalled = seen(fleet, "machine 1, reinstalled", 0)
    assert reinstalled["built_against"] == "A"
    assert reinstalled["fx_graph_cache"] == {"hit": 1, "miss": 0}
    assert reinstalled["built_objects"] == []  # Inductor's C++ cache served the module

    other_machine = seen(fleet, "machine 2", 0)  # an empty cache dir: the hit is Redis's
    assert other_machine["fx_graph_cache"] == {"hit": 1, "miss": 0}
    assert other_machine["built_against"] == "A"


def test_another_sdk_misses_the_remote_fx_cache_and_runs_its_own_code(fleet: Fleet) -> None:
    other_sdk = seen(fleet, "machine 3", 0)
    assert other_sdk["fx_graph_cache"] == {"hit": 0, "miss": 1}
    assert other_sdk["built_against"] == "B"
    assert seen(fleet, "machine 3", 2)["identity"] != seen(fleet, "machine 1", 2)["identity"]
    # B's graph went to Redis under keys of its own, beside A's.
    assert fleet.remote_keys["machine 3"] > fleet.remote_keys["machine 2"]
    system = seen(fleet, "machine 3", 2)["system"]
    assert system["inductor_device_options"] == {
        "sampledev": seen(fleet, "machine 3", 2)["identity"]
    }


def test_a_shared_cache_dir_and_an_in_place_edit_never_serve_another_sdks_code(
    fleet: Fleet,
) -> None:
    """Machine 3 shares machine 1's cache dir, and its SDK was edited in place with the
    size and modification time of every file kept: its module is built anew."""
    shared = seen(fleet, "machine 3", 0)
    assert shared["built_against"] == "B"
    assert shared["built_objects"]
    assert not set(shared["built_objects"]) & set(seen(fleet, "machine 1", 0)["built_objects"])


def test_a_pt2_is_refused_on_another_sdk_and_loads_on_the_same_contents(fleet: Fleet) -> None:
    device_type, stamped = seen(fleet, "machine 1", 1)["stamp"]
    assert (device_type, stamped) == ("sampledev", seen(fleet, "machine 1", 2)["identity"])
    loaded = seen(fleet, "machine 1, reinstalled", 1)
    assert (loaded["built_against"], loaded["warnings"]) == ("A", [])
    # In a process that only loads (the device's DeviceInterface is registered at its first
    # compile), torch does not take the package for an outdated one.
    assert not [line for line in loaded["logged"] if "outdated" in line]

    refused = seen(fleet, "machine 3", 1)
    assert refused["error"] == "SdkMismatchError"
    assert not [line for line in refused["logged"] if "outdated" in line]
    here = seen(fleet, "machine 3", 2)["identity"]
    for part in ("'sampledev'", stamped, here, "INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1"):
        assert part in refused["message"]


def test_a_mismatch_can_be_accepted_knowingly_with_a_warning(fleet: Fleet) -> None:
    accepted = seen(fleet, "machine 3, accepting", 0)
    assert accepted["built_against"] == "A"  # A's code, on B: what the check prevents
    assert any(
        warning.startswith("RuntimeWarning") and "loaded anyway" in warning
        for warning in accepted["warnings"]
    )


@pytest.mark.skipif(not HAS_CACHE_ARTIFACTS, reason="torch 2.6 has no cache artifacts")
def test_cache_artifacts_from_another_sdk_give_no_stale_hit(fleet: Fleet) -> None:
    loaded, compiled = fleet.seen["machine 4"]
    assert loaded == {"loaded": fleet.path("artifacts.bin")}
    assert compiled["fx_graph_cache"] == {"hit": 0, "miss": 1}
    assert compiled["built_against"] == "B"
