"""A sample PrivateUse1 device, "sampledev", that needs its own C++ options.

Its memory is host memory and Inductor compiles it with the CPU's C++ kernels,
but the code Inductor generates for it includes the device's own headers
(``torch/csrc/inductor/cpp_wrapper/sampledev.h``, ``.../aoti_include/sampledev.h``)
and links its runtime library (``libsampledev_runtime.so``): neither compiles
nor loads unless the device's C++ options reach the compiler, which they do only
through ``register_cpp_device_options("sampledev", sdk_cpp_device_options)``.

``setup()`` does everything once per process::

    from inductor_device_options import sample

    sample.setup()
    x = torch.randn(8, device="sampledev")
    torch.compile(model, options={"cpp_wrapper": True})(x)

Importing this module is cheap: torch is imported by ``setup()``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import CppDeviceOptions, register_cpp_device_options
from ._sdk import (
    DEVICE_MACRO,
    DEVICE_NAME,
    RUNTIME_LIBRARY,
    RUNTIME_LIBRARY_FILE,
    SDK_DIR_ENV,
    SDK_INCLUDE_DIR,
    SdkBuildError,
    build_runtime_library,
    installed_sdk,
    sdk_options_for,
)

__all__ = [
    "DEVICE_MACRO",
    "DEVICE_NAME",
    "RUNTIME_LIBRARY",
    "RUNTIME_LIBRARY_FILE",
    "SAMPLE_DIR_ENV",
    "SDK_INCLUDE_DIR",
    "SampleDevice",
    "SdkBuildError",
    "autoload",
    "default_cache_dir",
    "runtime_registered_modules",
    "sdk_cpp_device_options",
    "setup",
]


#: Names the sample device's cache dir; where it is set, ``import torch`` sets the sample up
#: (torch's backend autoload, through ``inductor_device_options._autoload.sample``).
SAMPLE_DIR_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR"


@dataclass(frozen=True)
class SampleDevice:
    """Where ``setup()`` built the sample device's binaries."""

    cache_dir: Path
    extension_build_dir: Path
    runtime_library: Path
    #: The SDK's headers: the package's own, or those of ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK``.
    sdk_include_dir: Path = SDK_INCLUDE_DIR

    @property
    def runtime_lib_dir(self) -> Path:
        return self.runtime_library.parent


_lock = threading.Lock()
_device: SampleDevice | None = None


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/inductor-device-options/sampledev`` (``~/.cache`` by default)."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "inductor-device-options" / DEVICE_NAME


def setup(
    cache_dir: str | os.PathLike[str] | None = None, *, verbose: bool = False
) -> SampleDevice:
    """Make "sampledev" a working PyTorch device that Inductor compiles for.

    Builds (when out of date) and loads the C++ backend and the SDK's runtime
    library under ``cache_dir`` (default: ``default_cache_dir()``), names
    PrivateUse1 "sampledev", gives it a device module whose ``_inductor_backend_init``
    registers the Inductor backend at the first compile, and registers the device's
    C++ options; nothing of ``torch._inductor`` is imported. Idempotent; a second
    call with another ``cache_dir`` is an error, since a process can load the
    backend only once. Where ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK`` names an SDK
    installed by ``sdk.install_sdk``, the device uses that SDK's headers and runtime.
    """
    global _device
    requested = Path(cache_dir).resolve() if cache_dir is not None else None
    with _lock:
        if _device is not None:
            if requested is not None and requested != _device.cache_dir:
                raise RuntimeError(
                    f"{DEVICE_NAME} is already set up from {_device.cache_dir}; "
                    f"cannot set it up again from {requested} in the same process"
                )
            return _device
        _device = _build_and_register(requested or default_cache_dir().resolve(), verbose)
        return _device


def autoload(cache_dir: str) -> None:
    """Set the sample device up in a process that imports torch: torch's backend autoload
    calls this (through ``inductor_device_options._autoload.sample``) where
    ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR`` names the sample's cache dir, ``cache_dir``,
    which the demo sets for its compile subprocesses and torchrun's ranks.
    """
    if cache_dir:
        setup(cache_dir)


def _build_and_register(cache_dir: Path, verbose: bool) -> SampleDevice:
    import torch

    from ._device import load_extension, register_device

    # A build per torch version: the extension links against libtorch's C++ ABI.
    torch_build_dir = cache_dir / f"torch-{torch.__version__}"
    installed = os.environ.get(SDK_DIR_ENV)
    if installed:
        include_dir, runtime_library = installed_sdk(Path(installed))
    else:
        include_dir = SDK_INCLUDE_DIR
        runtime_library = build_runtime_library(cache_dir / "sdk" / "lib")
    device = SampleDevice(
        cache_dir=cache_dir,
        extension_build_dir=torch_build_dir / "extension",
        runtime_library=runtime_library,
        sdk_include_dir=include_dir,
    )
    load_extension(device.extension_build_dir, verbose=verbose)
    # The device module's _inductor_backend_init registers the Inductor backend at the first
    # compile; registering the C++ options imports nothing of Inductor.
    register_device()
    register_cpp_device_options(DEVICE_NAME, sdk_cpp_device_options)
    return device


def sdk_cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """The C++ options for "sampledev": torch's defaults plus the SDK.

    The callback ``setup()`` registers with ``register_cpp_device_options``. Adds
    the ``SAMPLEDEV_DEVICE`` macro, the SDK include directory (the device headers
    Inductor includes), and the runtime library with its directory and runpath.
    """
    device = _set_up_device()
    return sdk_options_for(
        device.runtime_lib_dir,
        device_type,
        aot_mode,
        compile_only,
        include_dir=device.sdk_include_dir,
    )


def runtime_registered_modules() -> int:
    """How many compiled modules registered with ``libsampledev_runtime.so`` in this process.

    Every module built with the sampledev headers registers as it is loaded, so
    the count going up proves a module found and loaded the runtime library.
    """
    import ctypes

    # The loader returns the copy already loaded for a compiled module, if any.
    runtime = ctypes.CDLL(str(_set_up_device().runtime_library))
    count: int = runtime.sampledev_runtime_registered_modules()
    return count


def _set_up_device() -> SampleDevice:
    if _device is None:
        raise RuntimeError(
            f"{DEVICE_NAME} is not set up: call inductor_device_options.sample.setup() first"
        )
    return _device
