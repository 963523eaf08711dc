"""The SDK identity keys every door's builds, and none is staler than the compile that uses
it: the C++ code cache of torch's doors keyed beside the command line
(``_hook/cpp_cache_keys``), and ``CacheBase.get_system`` assigned by a backend adopted at the
next compile (``_hook/compile_boundary``).

Each case runs in a fresh process, with real builds through Inductor's ``CppCodeCache``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support import NATIVE, check_python, torch_consults_device_interface

from inductor_device_options._hook.cache_keys import CACHE_KEY_FIELD

# A device served through one of torch's doors, whose SDK is one header; a module built
# against it returns the header's value, so the module that runs names the SDK it was built
# against. The header is edited in place between two builds, keeping its size and times.
BUILD_TWICE = """
import ctypes, json, os, sys
import torch
import inductor_device_options
from torch._inductor import codecache, cpp_builder
from inductor_device_options._hook.compile_boundary import begin_compile
sdk = os.environ["SDK"]
def options(device_type="keydev", aot_mode=False, compile_only=False, **_):
    return ([], [os.path.join(sdk, "include")], [], [], [], [], [])
door = os.environ["DOOR"]
if door == "torch registry":
    cpp_builder.register_cpp_device_options("keydev", options)
else:
    from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device
    class KeydevInterface(DeviceInterface):
        get_cpp_device_options = staticmethod(options)
    register_interface_for_device("keydev", KeydevInterface)
code = '#include <keydev.h>\\nextern "C" int sdk_value() { return KEYDEV_VALUE; }\\n'
def build():
    begin_compile()  # what each compile does first
    return codecache.CppCodeCache.load(code, device_type="keydev").sdk_value()
first = build()
header = os.path.join(sdk, "include", "keydev.h")
status = os.stat(header)
with open(header, "r+") as file:
    file.write("#define KEYDEV_VALUE 2\\n")
os.utime(header, ns=(status.st_atime_ns, status.st_mtime_ns))
print(json.dumps({"first": first, "second": build()}))
"""


def write_sdk(root: Path) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "keydev.h").write_text("#define KEYDEV_VALUE 1\n")
    return root


def run(code: str, **env: str) -> dict[str, Any]:
    out = check_python(code, env={**os.environ, **env})
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("door", ["torch registry", "device interface"])
def test_torchs_doors_build_anew_after_the_sdk_changed_in_place(door: str, tmp_path: Path) -> None:
    """The options stay exactly torch's (paths only, no definition added), yet the second
    build, in the same process, runs code built against the changed header."""
    if NATIVE and door == "device interface" and not torch_consults_device_interface():
        pytest.skip("no backport under torch's native registry")
    sdk = write_sdk(tmp_path / "sdk")
    seen = run(BUILD_TWICE, SDK=str(sdk), DOOR=door)
    assert seen == {"first": 1, "second": 2}


def test_the_keyed_build_gets_exactly_torchs_options(tmp_path: Path) -> None:
    """Keying changes no byte of what g++ receives: the command line of a build of a device
    served through torch's door is the same with the package as without it."""
    sdk = write_sdk(tmp_path / "sdk")
    command = """
import json, os
from torch._inductor import cpp_builder
sdk = os.environ["SDK"]
def options(device_type="keydev", aot_mode=False, compile_only=False, **_):
    return ([], [os.path.join(sdk, "include")], [], [], [], [], [])
if not hasattr(cpp_builder, "register_cpp_device_options"):
    cpp_builder.get_cpp_torch_device_options = options  # torch alone: a patch, as before
else:
    cpp_builder.register_cpp_device_options("keydev", options)
option = cpp_builder.CppTorchDeviceOptions(device_type="keydev")
line = cpp_builder.CppBuilder(name="o", sources="i", BuildOption=option).get_command_line()
print(json.dumps({"line": line}))
"""
    with_package = run(command, SDK=str(sdk))
    alone = run(command, SDK=str(sdk), INDUCTOR_DEVICE_OPTIONS_DISABLE="1")
    assert str(sdk) in with_package["line"]
    assert with_package == alone


ASSIGNED_AFTER_INSTALL = """
import functools, hashlib, json, os
import torch
import inductor_device_options as ido
from torch._inductor.codecache import CacheBase
sdk = os.environ["SDK"]
ido.register_cpp_device_options(
    "keydev", lambda d, a, c: ([], [os.path.join(sdk, "include")], [], [], [], [], [])
)
original = CacheBase.get_system
@functools.cache
def backend_get_system():
    found = original() if os.environ["SHAPE"] == "calls through" else {}
    system = {**found, "device": {"name": "keydev"}, "version": {"sdk": "1.0"}}
    system["hash"] = hashlib.sha256(json.dumps(system, sort_keys=True).encode()).hexdigest()
    return system
CacheBase.get_system = staticmethod(backend_get_system)
assigned = CacheBase.get_system()
torch.compile(lambda x: x + 1)(torch.ones(2))  # a compile: no arm(), no other call
print(json.dumps({"assigned": assigned, "compiled": CacheBase.get_system()}))
"""


@pytest.mark.parametrize("shape", ["from scratch", "calls through"])
def test_a_get_system_assigned_after_install_is_adopted_at_the_next_compile(
    shape: str, tmp_path: Path
) -> None:
    """torch_npu rebuilds get_system from scratch at its first compile, torch_mlu and
    torch-supa key on their SDK version: the package's identities and the backend's own
    fields both key the compiles after it, with no ``arm()``."""
    sdk = write_sdk(tmp_path / "sdk")
    seen = run(ASSIGNED_AFTER_INSTALL, SDK=str(sdk), SHAPE=shape)
    assigned, compiled = seen["assigned"], seen["compiled"]
    assert (CACHE_KEY_FIELD in assigned) is (shape == "calls through")
    assert list(compiled[CACHE_KEY_FIELD]) == ["keydev"]
    assert compiled["version"] == {"sdk": "1.0"}
    assert compiled["device"] == {"name": "keydev"}
    assert compiled["hash"] != assigned["hash"]
