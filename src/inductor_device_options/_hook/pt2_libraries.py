"""A ``.pt2`` of a device the package serves loads where the device's SDK lives at another
path than on the machine that built it.

The model's ``.so`` needs the SDK's libraries (its ``-l`` options). Its runpath names the
build machine's library dirs, and elsewhere the loader would not find them. So, before the
model is opened, each library the device's options name is loaded from where the options
say it lies *here* (its ``libraries_dirs``): the loader then takes the one loaded, by its
name, whatever the model's runpath says. The SDK identity check runs first, so these are
the libraries the model was built against (the same contents). A library the options' dirs
do not hold (the system's, such as ``gomp``) is left to the loader, as at link time; where
the loader then finds none, :func:`not_found_error` names the device, the library and the
fix.
"""

from __future__ import annotations

import ctypes
import os
import re

from .._errors import CppDeviceOptionsError
from .._fs import find_library, inside_torch
from .lookups import get_cpp_device_options


class DeviceLibraryError(CppDeviceOptionsError, OSError):
    """A library a device's AOTInductor model needs cannot be loaded in this process (an
    ``OSError``, as ``ctypes`` raises; not a ``RuntimeError``, which torch's ``load_package``
    takes for a package of an older format)."""


def load_device_libraries(device_type: str, package: str) -> list[str]:
    """Load, globally, each shared library the options of ``device_type`` (AOTInductor's)
    name, from their library dirs here; return their paths. torch's own are left to torch.
    Raises :class:`DeviceLibraryError` for one that is missing or does not load."""
    options = get_cpp_device_options(device_type, aot_mode=True)
    loaded = []
    for library in options.libraries:
        path = find_library(library, options.libraries_dirs)
        if path is None:
            continue  # found on the system's search path, as when the model was linked
        real = os.path.realpath(path)
        if inside_torch(real) or not _shared(real):
            continue  # torch's own (torch loaded them), or linked into the model
        try:
            ctypes.CDLL(real, mode=ctypes.RTLD_GLOBAL)
        except OSError as error:
            raise DeviceLibraryError(
                f"{package}: the AOTInductor model of device {device_type!r} needs {real}, "
                f"which does not load: {error}",
                device_type=device_type,
                fix="install the device's SDK completely, or fix the library's own dependencies "
                "(`ldd` on it names what is missing)",
            ) from error
        loaded.append(real)
    return loaded


def _shared(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".so") or ".so." in name


_NOT_FOUND = re.compile(r"([^\s:]+\.so[.\d]*): cannot open shared object file")


def not_found_error(device_type: str, package: str, error: BaseException) -> BaseException:
    """The error to raise for ``error``, torch's failure to open the model: where the loader
    did not find a library, one that names the device, the library and the fix; else
    ``error`` itself."""
    found = _NOT_FOUND.search(str(error))
    if found is None:
        return error
    library = found.group(1)
    return DeviceLibraryError(
        f"{package}: the AOTInductor model of device {device_type!r} needs {library}, which "
        f"the loader does not find here (not in the library dirs the options of "
        f"{device_type!r} name, not on the model's runpath, not on the system's search path)",
        device_type=device_type,
        fix=f"install the device's SDK on this machine and have its provider name the dir "
        f"that holds {library} in libraries_dirs, or put that dir on LD_LIBRARY_PATH",
    )
