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

The loader takes the one loaded only by one of its *names*: its SONAME, or a name it was
opened by. A library without a SONAME (built without ``-Wl,-soname``) is recorded in the
model by the file name ld found for ``-l<name>``, while, opened by its path, it goes by that
path alone: the loader would look for the file name on the build machine's runpath. So such
a library is also opened by its file name, from its dir here, through a stub that needs it
(``elf_names.needing_stub``). Where even that cannot be (a model that records the library by
the path it was linked by), :func:`not_found_error` says that the library has no SONAME, and
the fix.
"""

from __future__ import annotations

import ctypes
import os
import re
import tempfile

from .._errors import CppDeviceOptionsError
from .._fs import find_library, inside_torch
from .elf_names import ElfError, needing_stub, soname
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
        _open_by_file_name(path)
        loaded.append(real)
    return loaded


def _open_by_file_name(path: str) -> None:
    """Where the library at ``path`` (as found, not resolved: its file name is what ld
    recorded) has no SONAME, have the loader know it by its file name too, unless it does.
    Nothing is raised: where this fails, the model's load fails, and :func:`not_found_error`
    says why."""
    name, directory = os.path.basename(path), os.path.dirname(os.path.abspath(path))
    try:
        if soname(path) is not None or _known_as(name):
            return
        stub = needing_stub(name, directory, path)
    except (ElfError, OSError):
        return
    # A file of its own each time (another process may load a package meanwhile); removed
    # once loaded: the loader keeps what it mapped.
    try:
        descriptor, stub_path = tempfile.mkstemp(prefix="ido-needs-", suffix=".so")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(stub)
        ctypes.CDLL(stub_path)
    except OSError:
        pass
    finally:
        os.unlink(stub_path)


def _known_as(name: str) -> bool:
    """Whether the loader takes a library loaded already for ``name`` (a stub loaded by an
    earlier package, say): asked without loading anything."""
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    return True


def _shared(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".so") or ".so." in name


_NOT_FOUND = re.compile(r"([^\s:]+\.so[.\d]*): cannot open shared object file")


def not_found_error(device_type: str, package: str, error: BaseException) -> BaseException:
    """The error to raise for ``error``, torch's failure to open the model: where the loader
    did not find a library, one that names the device, the library, why and the fix; else
    ``error`` itself."""
    found = _NOT_FOUND.search(str(error))
    if found is None:
        return error
    library = found.group(1)
    here = _lying_here(device_type, os.path.basename(library))
    if here is not None:
        return _not_taken_error(device_type, package, library, here)
    return DeviceLibraryError(
        f"{package}: the AOTInductor model of device {device_type!r} needs {library}, which "
        f"the loader does not find here (not in the library dirs the options of "
        f"{device_type!r} name, not on the model's runpath, not on the system's search path)",
        device_type=device_type,
        fix=f"install the device's SDK on this machine and have its provider name the dir "
        f"that holds {library} in libraries_dirs, or put that dir on LD_LIBRARY_PATH",
    )


def _lying_here(device_type: str, name: str) -> str | None:
    """The file ``name`` in the first of the library dirs the device's options name here
    that holds one, or None."""
    try:
        directories = get_cpp_device_options(device_type, aot_mode=True).libraries_dirs
    except Exception:  # the options failed since the package was prepared: say what is known
        return None
    for directory in directories:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def _not_taken_error(device_type: str, package: str, library: str, here: str) -> Exception:
    """The library lies in the options' dirs here, yet the loader did not take it."""
    directory = os.path.dirname(here)
    try:
        name: str | None = soname(here)
    except (ElfError, OSError):
        name = ""  # unknown
    start = (
        f"{package}: the AOTInductor model of device {device_type!r} needs {library}, which "
        f"lies here as {here}, in a library dir the options of {device_type!r} name, but the "
        "loader does not take it"
    )
    elsewhere = f"put {directory} on LD_LIBRARY_PATH before the process starts, or keep the "
    elsewhere += "SDK at the path the package was built at"
    if name is not None:
        return DeviceLibraryError(
            f"{start}{f' (its SONAME is {name})' if name else ''}: the loader looks for "
            f"{library} on the model's runpath, which names the build machine's dirs",
            device_type=device_type,
            fix=elsewhere,
        )
    recorded = (
        f"the path it was linked by, {library}"
        if "/" in library
        else f"its file name, {library}, as ld found it for -l"
    )
    versioned = os.path.basename(here) + ("" if ".so." in os.path.basename(here) else ".<N>")
    return DeviceLibraryError(
        f"{start}: {here} has no SONAME, so the model records it by {recorded}, which the "
        "loader resolves only on the model's runpath (the build machine's library dirs) or "
        f"LD_LIBRARY_PATH, not by a library already loaded from {directory}",
        device_type=device_type,
        fix=f"give the library a SONAME (link it with -Wl,-soname,{versioned}, <N> its ABI "
        f"version) and build the package again, or {elsewhere}",
    )
