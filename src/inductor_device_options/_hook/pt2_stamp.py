"""The SDK identity in AOTInductor packages: stamped at build, checked at load.

A ``.pt2`` holds a model's ``.so``, built against the device's SDK on the build machine.
Loaded where another SDK lives, it would run silently with the build machine's code. So:

* **at build**, ``AotCodeCompiler.compile`` runs with the device's SDK identity in
  ``aot_inductor.metadata`` (:data:`STAMP_KEY`, ``"<device>=<identity>"``), which torch
  writes into the package's metadata JSON, for each device whose options name an SDK of
  its own, whichever door served them (``device_identity``);
* **at load**, ``torch._C._aoti.AOTIModelPackageLoader``, which every loader of torch goes
  through (``aoti_load_package``, ``torch._inductor.package.load_package``, ``load_pt2``),
  reads that metadata from the archive before the ``.so`` is opened, and refuses a package
  whose identity is not the device's here (:class:`SdkMismatchError`).
  ``INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1`` loads it anyway, with a warning. It
  then loads the device's libraries from where they lie here (``pt2_libraries``), so that
  the package loads where the SDK lives at another path than where it was built. A package
  without a stamp loads as it always did.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import warnings
import zipfile
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .._errors import SdkMismatchError
from .._lookup.device_types import normalize_device_type
from .device_identity import device_identity
from .installation import is_served
from .pt2_libraries import load_device_libraries, not_found_error

#: The metadata key of the stamp; its value is ``"<device type>=<SDK identity>"``.
STAMP_KEY = "INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY"
#: Set to ``1`` to load a package built against another SDK (with a warning).
ACCEPT_MISMATCH_ENV = "INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH"
_MARK = "_inductor_device_options_pt2_stamp"


def install_stamp(codecache: ModuleType) -> None:
    """Wrap ``codecache.AotCodeCompiler.compile``; idempotent."""
    compiler = codecache.AotCodeCompiler
    current = inspect.getattr_static(compiler, "compile")
    function = current.__func__ if isinstance(current, classmethod) else current
    if getattr(function, _MARK, False):
        return
    compiler.compile = classmethod(_stamping(function))


def _stamping(compile_: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(compile_)

    def compile(cls: type, *args: Any, **kwargs: Any) -> Any:
        device_type = signature.bind(cls, *args, **kwargs).arguments.get("device_type")
        stamp = stamp_for(device_type) if isinstance(device_type, str) else None
        if stamp is None:
            return compile_(cls, *args, **kwargs)
        from torch._inductor import config

        # A copy: the user's metadata dict is left as it was given (torch 2.6-2.15's
        # AotCodeCompiler.compile adds AOTI_DEVICE_KEY to config.aot_inductor.metadata in place,
        # then writes it into the package's <wrapper>_metadata.json).
        metadata = {**config.aot_inductor.metadata, STAMP_KEY: stamp}
        with config.patch({"aot_inductor.metadata": metadata}):
            return compile_(cls, *args, **kwargs)

    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(compile, compile_, assigned=(), updated=())
    setattr(compile, _MARK, True)
    return compile


def stamp_for(device_type: str) -> str | None:
    """The stamp of a package built for ``device_type`` here, whichever door serves it, or
    None where its options name no SDK of its own (torch's devices, a device nobody
    serves)."""
    name = normalize_device_type(device_type)
    identity = device_identity(name, aot_mode=True)
    return None if identity is None else f"{name}={identity}"


def install_loader_check(module: ModuleType | None = None) -> None:
    """Put the checking loader in ``torch._C._aoti`` (once; ``module``: the torch module
    whose import installs it, unused)."""
    import torch

    aoti = torch._C._aoti
    loader = aoti.AOTIModelPackageLoader
    if getattr(loader, _MARK, False):
        return

    # A subclass put in the C module's place: torch 2.6-2.15's loaders (package.load_package,
    # pt2_archive._package.load_pt2) look it up as torch._C._aoti.AOTIModelPackageLoader at
    # each call, and pass (path, model_name, ...).
    class AOTIModelPackageLoader(loader):  # type: ignore[misc, valid-type]
        __doc__ = loader.__doc__

        def __init__(self, path: str, *args: Any, **kwargs: Any) -> None:
            model_name = args[0] if args else kwargs.get("model_name", "model")
            device_type = prepare_package(os.fspath(path), str(model_name))
            try:
                super().__init__(path, *args, **kwargs)
            # The C++ loader raises RuntimeError (dlopen's message) for a missing library.
            except RuntimeError as error:
                if device_type is None:
                    raise
                clearer = not_found_error(device_type, os.fspath(path), error)
                if clearer is error:
                    raise
                raise clearer from error

    AOTIModelPackageLoader.__module__ = loader.__module__
    setattr(AOTIModelPackageLoader, _MARK, True)
    aoti.AOTIModelPackageLoader = AOTIModelPackageLoader  # type: ignore[misc, assignment]


def package_stamp(path: str, model_name: str = "model") -> tuple[str, str] | None:
    """(device type, SDK identity) stamped in the package at ``path`` for ``model_name``,
    read from the archive without opening the model; None where there is no stamp (or
    ``path`` is not a readable archive: torch's loader then says why)."""
    # Where torch 2.6-2.15 put it: AOTINDUCTOR_DIR ("data/aotinductor/") / model name /
    # "<wrapper>_metadata.json" (AotCodeCompiler.compile writes it beside the wrapper), below
    # whatever top directory the archive has.
    pattern = re.compile(rf"(^|/)data/aotinductor/{re.escape(model_name)}/[^/]+_metadata\.json$")
    try:
        # torch 2.15's package.load_package loads an extracted package directory too.
        if os.path.isdir(path):
            metadata = _metadata_in_dir(path, pattern)
        else:
            with zipfile.ZipFile(path) as archive:
                names = [name for name in archive.namelist() if pattern.search(name)]
                metadata = json.loads(archive.read(names[0])) if names else None
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    stamp = metadata.get(STAMP_KEY) if isinstance(metadata, dict) else None
    if not isinstance(stamp, str) or "=" not in stamp:
        return None
    device_type, _, identity = stamp.partition("=")
    return device_type, identity


def prepare_package(path: str, model_name: str = "model") -> str | None:
    """Before torch opens the package at ``path``: check its stamp (:func:`check_package`)
    and load its device's libraries from where they lie here (``pt2_libraries``). Returns
    the stamped device, or None for a package without a stamp (left as it is)."""
    stamp = package_stamp(path, model_name)
    if stamp is None:
        return None
    device_type, built = stamp
    _check_stamp(path, device_type, built)
    if is_served(device_type):
        load_device_libraries(device_type, path)
    return device_type


def _metadata_in_dir(path: str, pattern: re.Pattern[str]) -> object:
    for directory, _, files in os.walk(path):
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(directory, name), path)
            if pattern.search(relative.replace(os.sep, "/")):
                with open(os.path.join(directory, name)) as file:
                    return json.load(file)
    return None


def check_package(path: str, model_name: str = "model") -> None:
    """Refuse the package at ``path`` when it was built against another SDK than the one
    its device has here (or the device has no SDK here). Raises :class:`SdkMismatchError`
    unless ``$INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH`` is ``1`` (then it warns)."""
    stamp = package_stamp(path, model_name)
    if stamp is not None:
        _check_stamp(path, *stamp)


def _check_stamp(path: str, device_type: str, built: str) -> None:
    current, why = _identity_here(device_type)
    if current == built:
        return
    error = SdkMismatchError(
        f"{path}: the AOTInductor package was built for device {device_type!r} against SDK "
        f"identity {built}, but {why}; its code would run against another SDK than it was "
        "built for",
        device_type=device_type,
        built=built,
        current=current,
        package=path,
        fix=(
            f"rebuild the package on this machine's SDK (or install the SDK it was built "
            f"against); to load it anyway, knowingly, set {ACCEPT_MISMATCH_ENV}=1"
        ),
    )
    if os.environ.get(ACCEPT_MISMATCH_ENV) == "1":
        warnings.warn(
            f"{error}; loaded anyway ({ACCEPT_MISMATCH_ENV}=1)", RuntimeWarning, stacklevel=3
        )
        return
    raise error


def _identity_here(device_type: str) -> tuple[str | None, str]:
    """The device's SDK identity in this process, and how to say what it is."""
    try:
        current = device_identity(device_type, aot_mode=True)
    except Exception as error:
        return None, f"the SDK identity of {device_type!r} cannot be computed here ({error!r})"
    if current is not None:
        return current, f"its SDK identity here is {current}"
    if not is_served(device_type):
        return None, (
            f"no C++ options provider serves {device_type!r} in this process (import or "
            "register its backend before loading), so its SDK here is unknown"
        )
    return None, f"the options of {device_type!r} here name no SDK of the device's own"
