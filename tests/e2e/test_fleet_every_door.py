"""Code built against one SDK never runs against another, whichever door served the device.

The sample device's SDK is installed at one path, then edited in place to another SDK
whose one header of the same size computes ``b @ a`` instead of ``a @ b`` (tests/fleet.py):
every result names the SDK its code was built against. Here the device is served by a
backend of torch_npu's shape (tests/patching_backend.py): a wholesale replacement of
``get_cpp_torch_device_options``, a wrapped ``_get_cpp_wrapper_header`` and a
``CacheBase.get_system`` rebuilt from scratch with a version string both SDKs share. It is
applied after the package (the package autoloads, the backend patches on import) and
before it (torch's backend autoload off: the package is armed after the patches).

1. machine 1 (cache X), SDK A: compiles, packages a .pt2, reports its identity;
2. the SDK edited in place to B; machine 2 (cache X, and torch's remote caches on Redis,
   shared): compiles, loads machine 1's .pt2, reports its identity.

And a long-lived process, through the package's door and the backend's: it compiles on SDK A,
the SDK is edited in place to B while it runs, and it compiles again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet import Fleet, edit_in_place_keeping_size_and_mtime, sdks, seen
from patching_backend import SDK_VERSION
from redis_server import redis_server

from inductor_device_options.sample import SampleDevice

ORDERS = {
    "patching": {},  # the package autoloads with torch; the backend patches after it
    "patching-first": {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
}


@pytest.fixture(scope="module", params=sorted(ORDERS))
def patched_fleet(
    request: pytest.FixtureRequest,
    sample_build: SampleDevice,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Fleet]:
    backend: str = request.param
    root = tmp_path_factory.mktemp(f"fleet-{backend}")
    _, sdk_b, installed = sdks(root)
    env = {"FLEET_BACKEND": backend, **ORDERS[backend]}
    with redis_server(root / "redis") as redis:
        fleet = Fleet(root, redis, sample_build, installed)
        fleet.run(
            "machine 1", "X", [["compile"], ["package", fleet.path("a.pt2")], ["identity"]], **env
        )
        edit_in_place_keeping_size_and_mtime(installed, sdk_b)
        fleet.run(
            "machine 2", "X", [["compile"], ["load", fleet.path("a.pt2")], ["identity"]], **env
        )
        yield fleet


def test_a_patched_device_has_an_identity_in_every_key_and_its_own_fields_stay(
    patched_fleet: Fleet,
) -> None:
    first = seen(patched_fleet, "machine 1", 2)
    assert first["identity"] is not None
    system = first["system"]
    assert system["inductor_device_options"] == {"sampledev": first["identity"]}
    assert system["version"]["sdk"] == SDK_VERSION  # the backend's own field, kept
    assert system["device"] == {"name": "sampledev"}
    device_type, stamped = seen(patched_fleet, "machine 1", 1)["stamp"]
    assert (device_type, stamped) == ("sampledev", first["identity"])


def test_a_patched_device_on_an_sdk_changed_in_place_never_runs_the_old_code(
    patched_fleet: Fleet,
) -> None:
    before = seen(patched_fleet, "machine 1", 0)
    assert before["built_against"] == "A"
    after = seen(patched_fleet, "machine 2", 0)
    assert after["fx_graph_cache"] == {"hit": 0, "miss": 1}  # local and remote: both missed
    assert after["built_against"] == "B"
    assert after["built_objects"]  # the C++ module was built anew, not served by its cache
    assert not set(after["built_objects"]) & set(before["built_objects"])
    assert seen(patched_fleet, "machine 2", 2)["system"]["version"]["sdk"] == SDK_VERSION


def test_a_pt2_of_a_patched_device_is_refused_on_another_sdk(patched_fleet: Fleet) -> None:
    refused = seen(patched_fleet, "machine 2", 1)
    assert refused.get("error") == "SdkMismatchError", refused
    assert "'sampledev'" in refused["message"]


@pytest.mark.parametrize("backend", ["package", "patching"])
def test_a_long_lived_process_keys_its_next_compile_on_the_sdk_changed_meanwhile(
    backend: str, sample_build: SampleDevice, tmp_path: Path
) -> None:
    _, sdk_b, installed = sdks(tmp_path)
    fleet = Fleet(tmp_path, None, sample_build, installed)
    env = {} if backend == "package" else {"FLEET_BACKEND": backend}
    fleet.run(
        "one process",
        "X",
        [["compile"], ["identity"], ["edit", str(sdk_b)], ["compile"], ["identity"]],
        remote=False,
        **env,
    )
    first, identity_a, _, second, identity_b = fleet.seen["one process"]
    assert first["built_against"] == "A"
    assert identity_a["identity"] != identity_b["identity"]
    assert second["fx_graph_cache"] == {"hit": 0, "miss": 1}
    assert second["built_against"] == "B"
    assert second["built_objects"]
