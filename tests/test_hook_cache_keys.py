"""The SDK identity in Inductor's FX graph and AOTAutograd cache keys (``CacheBase.get_system``)
and torch 2.15's ``DeviceInterface.get_cache_system_info``, backported to older torch.

Each case runs in a fresh process: device interfaces registered with torch stay for the
life of a process, and torch computes ``get_system`` once per process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import check_python

from inductor_device_options._hook.cache_keys import CACHE_KEY_FIELD, INTERFACES_FIELD

NATIVE_INTERFACE_HOOK = """
from torch._dynamo.device_interface import DeviceInterface
NATIVE = hasattr(DeviceInterface, "get_cache_system_info")
"""

# Interfaces for fake devices: what a backend written for torch 2.15 defines. They answer
# get_cache_system_info() in every way torch 2.15 reads: a dict, None, not a dict, an
# exception, unavailable, not JSON.
INTERFACES = (
    NATIVE_INTERFACE_HOOK
    + """
import logging
from torch._dynamo.device_interface import register_interface_for_device
asked = []
def interface(name, info, available=True):
    def get_cache_system_info(cls):
        asked.append(name)
        if isinstance(info, Exception):
            raise info
        return info
    return type(name, (DeviceInterface,), {
        "is_available": staticmethod(lambda: available),
        "get_cache_system_info": classmethod(get_cache_system_info),
    })
register_interface_for_device("gooddev", interface("gooddev", {"sdk": "1.2"}))
register_interface_for_device("gooddev:0", interface("gooddev:0", {"sdk": "indexed"}))
register_interface_for_device("nonedev", interface("nonedev", None))
register_interface_for_device("listdev", interface("listdev", ["not", "a dict"]))
register_interface_for_device("raisingdev", interface("raisingdev", RuntimeError("broken")))
register_interface_for_device("offdev", interface("offdev", {"sdk": "off"}, available=False))
register_interface_for_device("setdev", interface("setdev", {"sdk": {1, 2}}))
warnings = []
class Collect(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
for logger in ("", "torch._inductor"):  # torch's loggers do not propagate
    logging.getLogger(logger).addHandler(Collect(logging.WARNING))
"""
)


def run(code: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = check_python(code, env=env)
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_interfaces_answers_enter_the_key_as_torch_2_15_reads_them() -> None:
    seen = run(
        INTERFACES
        + """
import json
from torch._inductor.codecache import CacheBase
first = CacheBase.get_system()
second = CacheBase.get_system()
print(json.dumps({
    "native": NATIVE,
    "interfaces": first.get("device_interfaces"),
    "same": first == second,
    "asked": asked,
    "warnings": warnings,
}))
"""
    )
    assert seen["interfaces"] == {"gooddev": {"sdk": "1.2"}}
    assert seen["same"] is True
    # Sampled once per process, unavailable ones and indexed instances never asked.
    assert sorted(seen["asked"]) == ["gooddev", "listdev", "nonedev", "raisingdev", "setdev"]
    logged = " ".join(seen["warnings"])
    for name in ("listdev", "raisingdev", "setdev"):
        assert f"Failed to collect cache system info from device interface {name}" in logged


def test_without_a_device_served_torchs_answer_is_unchanged() -> None:
    seen = run(
        NATIVE_INTERFACE_HOOK
        + """
import json, inspect
import inductor_device_options
from torch._inductor.codecache import CacheBase
wrapper = inspect.getattr_static(CacheBase, "get_system").__func__
print(json.dumps({
    "wrapped": wrapper is not wrapper.__wrapped__,
    "same object": CacheBase.get_system() is wrapper.__wrapped__(),
}))
"""
    )
    assert seen == {"wrapped": True, "same object": True}


SERVED = """
import json, os
import inductor_device_options as ido
from torch._inductor.codecache import CacheBase
before = CacheBase.get_system()
sdk = os.environ["SDK"]
def keydev(device_type, aot_mode, compile_only):
    return ([], [os.path.join(sdk, "include")], [], [], [], [], [])
ido.register_cpp_device_options("keydev", keydev)
"""


def write_sdk(root: Path, value: int) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "keydev.h").write_text(f"#define KEYDEV {value}\n")
    return root


def test_a_device_served_after_the_first_compile_keys_the_later_ones(tmp_path: Path) -> None:
    sdk = write_sdk(tmp_path / "sdk", 1)
    seen = run(
        SERVED
        + """
after = CacheBase.get_system()
print(json.dumps({
    "before": before, "after": after,
    "identity": ido.get_cpp_device_options("keydev").definitions[-1].partition("=")[2],
}))
""",
        env={"SDK": str(sdk)},
    )
    before, after = seen["before"], seen["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert CACHE_KEY_FIELD not in before
    assert after[CACHE_KEY_FIELD] == {"keydev": seen["identity"]}
    assert after["hash"] != before["hash"]
    assert {key: value for key, value in after.items() if key not in ("hash", CACHE_KEY_FIELD)} == {
        key: value for key, value in before.items() if key != "hash"
    }


def test_the_identity_joins_a_backends_own_answer_never_replacing_it(tmp_path: Path) -> None:
    """A backend written for torch 2.15 answers get_cache_system_info(); the package's
    identity of a device it serves stands beside that answer (on 2.15 too)."""
    sdk = write_sdk(tmp_path / "sdk", 1)
    seen = run(
        INTERFACES + SERVED + "print(json.dumps(CacheBase.get_system()))", env={"SDK": str(sdk)}
    )
    assert seen[INTERFACES_FIELD] == {"gooddev": {"sdk": "1.2"}}
    assert list(seen[CACHE_KEY_FIELD]) == ["keydev"]


def test_another_sdk_gives_another_key_and_the_same_contents_the_same(tmp_path: Path) -> None:
    one = write_sdk(tmp_path / "one", 1)
    copy = write_sdk(tmp_path / "copy", 1)
    two = write_sdk(tmp_path / "two", 2)
    code = SERVED + "print(json.dumps(CacheBase.get_system()))"
    keys = {
        name: run(code, env={"SDK": str(sdk)})
        for name, sdk in [("one", one), ("copy", copy), ("two", two)]
    }
    assert keys["one"] == keys["copy"]
    assert keys["one"]["hash"] != keys["two"]["hash"]


def test_a_provider_that_fails_is_logged_and_left_out_of_the_key() -> None:
    seen = run(
        INTERFACES
        + """
import json
import inductor_device_options as ido
from torch._inductor.codecache import CacheBase
def broken(device_type, aot_mode, compile_only):
    raise OSError("the SDK is not mounted")
ido.register_cpp_device_options("brokendev", broken)
system = CacheBase.get_system()
print(json.dumps({"system": system, "warnings": warnings}))
"""
    )
    assert CACHE_KEY_FIELD not in seen["system"]
    assert any("'brokendev'" in warning for warning in seen["warnings"])


def test_cache_clear_resamples_the_interfaces() -> None:
    seen = run(
        INTERFACES
        + """
import json
from torch._inductor.codecache import CacheBase
CacheBase.get_system()
CacheBase.get_system.cache_clear()
CacheBase.get_system()
print(json.dumps({"asked": asked.count("gooddev")}))
"""
    )
    assert seen["asked"] == 2


@pytest.mark.parametrize("calls_through", [True, False], ids=["wraps", "replaces"])
def test_a_get_system_a_backend_assigns_keeps_the_identity(
    calls_through: bool, tmp_path: Path
) -> None:
    """Backends replaced get_system by hand before 2.15, to key on their SDK. One that calls
    what it found keeps the identity; one that does not is wrapped by ``ido.arm()``."""
    sdk = write_sdk(tmp_path / "sdk", 1)
    seen = run(
        SERVED
        + f"""
original = CacheBase.get_system
def backend_get_system():
    found = original() if {calls_through!r} else {{"hash": "backend"}}
    return {{**found, "backend": "its own"}}
CacheBase.get_system = staticmethod(backend_get_system)
assigned = CacheBase.get_system()
ido.arm()
armed = CacheBase.get_system()
print(json.dumps({{"assigned": assigned, "armed": armed}}))
""",
        env={"SDK": str(sdk)},
    )
    assigned, armed = seen["assigned"], seen["armed"]
    assert isinstance(assigned, dict) and isinstance(armed, dict)
    assert (CACHE_KEY_FIELD in assigned) is calls_through
    assert armed["backend"] == "its own"
    assert list(armed[CACHE_KEY_FIELD]) == ["keydev"]
