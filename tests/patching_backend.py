"""A backend of torch_npu's shape, for the tests: it gives Inductor the sample device's C++
options by patching torch, as torch_npu does (``torch_npu/_inductor/cpp_builder.py``,
``codecache.py``, ``codegen/common.py``), never through this package:

* a wholesale replacement of ``cpp_builder.get_cpp_torch_device_options``: for the device it
  computes every list itself and never calls the function it replaced (other devices get
  what they got before, as torch_npu's copies of torch's branches give them);
* a wrapped ``codecache._get_cpp_wrapper_header`` (torch 2.13 and later);
* ``CacheBase.get_system`` rebuilt from scratch, keyed on the SDK's version string, which
  two installs of the SDK share (as ``torch.version.cann`` is shared by two CANN builds).

``apply()`` patches; the SDK is the sample's installed at ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK``.
It imports nothing of inductor_device_options: a process may apply it before the package.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

DEVICE = "sampledev"
#: The SDK's version string: the same in every install the tests make, whatever its contents.
SDK_VERSION = "sampledev-sdk 1.0"


def apply() -> None:
    import torch
    import torch._inductor.codecache as codecache
    import torch._inductor.cpp_builder as cpp_builder

    sdk = os.environ["INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK"]
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    before = cpp_builder.get_cpp_torch_device_options

    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **later: Any
    ) -> tuple[list[str], ...]:
        # ``later``: what newer torch passes (2.15's cpp_stdlib=), as a backend built for it takes.
        if device_type != DEVICE:
            return before(device_type, aot_mode, compile_only, **later)  # type: ignore[no-any-return]
        lib = os.path.join(sdk, "lib")
        return (
            ["SAMPLEDEV_DEVICE"],
            [os.path.join(sdk, "include")],
            [],
            [f"Wl,-rpath,{os.path.realpath(lib)}"],
            [torch_lib, lib],
            ["sampledev_runtime"],
            [],
        )

    cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options

    header = getattr(codecache, "_get_cpp_wrapper_header", None)
    if header is not None:

        def _get_cpp_wrapper_header(device: str, aot_mode: bool = False) -> str:
            return header(device, aot_mode)  # type: ignore[no-any-return]

        codecache._get_cpp_wrapper_header = _get_cpp_wrapper_header

    codecache.CacheBase.get_system = staticmethod(functools.cache(get_system))


def get_system() -> dict[str, Any]:
    system: dict[str, Any] = {
        "device": {"name": DEVICE},
        "version": {"sdk": SDK_VERSION, "torch": __import__("torch").__version__},
    }
    system["hash"] = hashlib.sha256(json.dumps(system, sort_keys=True).encode()).hexdigest()
    return system
