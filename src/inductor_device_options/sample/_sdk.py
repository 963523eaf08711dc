"""The sample device's SDK: the headers Inductor includes for "sampledev", the
runtime library the compiled code links, and the C++ options that carry both to
the compiler through ``register_cpp_device_options``."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import CppDeviceOptions, default_cpp_device_options, runpath

DEVICE_NAME = "sampledev"
DEVICE_COUNT = 1
DEVICE_MACRO = "SAMPLEDEV_DEVICE"
RUNTIME_LIBRARY = "sampledev_runtime"
RUNTIME_LIBRARY_FILE = f"lib{RUNTIME_LIBRARY}.so"

SDK_DIR = Path(__file__).resolve().parent / "sdk"
SDK_INCLUDE_DIR = SDK_DIR / "include"
RUNTIME_SOURCE = SDK_DIR / "src" / "sampledev_runtime.c"
RUNTIME_HEADER = SDK_INCLUDE_DIR / "sampledev" / "runtime.h"
#: Names an installed copy of the SDK (``install_sdk``) that the sample device uses instead
#: of the one it builds in its cache dir: a machine whose SDK lives elsewhere, or differs.
SDK_DIR_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_SDK"


class SdkBuildError(RuntimeError):
    """The runtime library of the sample SDK could not be built."""


def build_runtime_library(lib_dir: Path) -> Path:
    """Compile ``libsampledev_runtime.so`` into ``lib_dir`` unless it is up to date.

    The library is rebuilt when its sources or the C compiler command change; the
    new file replaces the old one atomically, so a process that already loaded it
    keeps a consistent copy.
    """
    compiler = shlex.split(os.environ.get("CC", "cc"))
    command = [
        *compiler,
        "-shared",
        "-fPIC",
        "-O2",
        f"-Wl,-soname,{RUNTIME_LIBRARY_FILE}",
        f"-I{SDK_INCLUDE_DIR}",
        str(RUNTIME_SOURCE),
    ]
    fingerprint = hashlib.sha256(
        RUNTIME_SOURCE.read_bytes() + RUNTIME_HEADER.read_bytes() + " ".join(command).encode()
    ).hexdigest()
    library = lib_dir / RUNTIME_LIBRARY_FILE
    stamp = lib_dir / f"{RUNTIME_LIBRARY_FILE}.sha256"
    if library.is_file() and stamp.is_file() and stamp.read_text() == fingerprint:
        return library

    lib_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib_dir) as scratch:
        built = Path(scratch) / RUNTIME_LIBRARY_FILE
        try:
            result = subprocess.run(
                [*command, "-o", str(built)], capture_output=True, text=True, check=False
            )
        except FileNotFoundError as error:
            raise SdkBuildError(
                f"cannot build {RUNTIME_LIBRARY_FILE}: C compiler {compiler[0]!r} not found "
                "(set CC to a C compiler)"
            ) from error
        if result.returncode != 0:
            raise SdkBuildError(
                f"building {RUNTIME_LIBRARY_FILE} failed ({shlex.join(command)}):\n"
                f"{result.stderr.strip()}"
            )
        os.replace(built, library)
    stamp.write_text(fingerprint)
    return library


def install_sdk(destination: Path) -> Path:
    """Install the SDK as a vendor's installer would: its headers in ``destination/include``
    and its runtime library, built, in ``destination/lib``. Returns ``destination``."""
    shutil.copytree(SDK_INCLUDE_DIR, destination / "include")
    build_runtime_library(destination / "lib")
    return destination


def installed_sdk(root: Path) -> tuple[Path, Path]:
    """(include dir, runtime library) of the SDK installed at ``root`` (``install_sdk``)."""
    include_dir, library = root / "include", root / "lib" / RUNTIME_LIBRARY_FILE
    if not (include_dir / "sampledev" / "runtime.h").is_file() or not library.is_file():
        raise SdkBuildError(
            f"{root} holds no {DEVICE_NAME} SDK (include/sampledev/runtime.h and "
            f"lib/{RUNTIME_LIBRARY_FILE}): install one there with "
            "inductor_device_options.sample._sdk.install_sdk"
        )
    return include_dir, library


def sdk_options_for(
    runtime_lib_dir: Path,
    device_type: str,
    aot_mode: bool,
    compile_only: bool,
    defaults: CppDeviceOptions | None = None,
    include_dir: Path = SDK_INCLUDE_DIR,
) -> CppDeviceOptions:
    """Torch's defaults for ``device_type`` (or ``defaults``) plus what the sample SDK needs
    (its headers in ``include_dir``, its runtime library in ``runtime_lib_dir``)."""
    options = (
        default_cpp_device_options(device_type, aot_mode, compile_only)
        if defaults is None
        else defaults
    )
    options.definitions.append(DEVICE_MACRO)
    options.include_dirs.append(str(include_dir))
    options.libraries_dirs.append(str(runtime_lib_dir))
    options.libraries.append(RUNTIME_LIBRARY)
    # The compiled module is loaded from Inductor's cache, far from the SDK: the
    # runpath lets the loader find the runtime without LD_LIBRARY_PATH.
    options.ldflags.append(runpath(runtime_lib_dir))
    return options
