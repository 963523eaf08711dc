"""``--provider [DEVICE=]MODULE:CALLABLE``: parsing it, and loading the callable it names
the way a person expects (the current directory importable), with an error that says
where the load failed and what to do."""

from __future__ import annotations

import importlib
import os
import sys

from .._errors import ProviderLoadError
from .._lookup.device_types import normalize_device_type
from .._source import CppDeviceOptionsCallback
from .text import error_line, located

PROG = "inductor-device-options"


def parse_provider_spec(text: str) -> tuple[str | None, str]:
    """``[DEVICE=]MODULE:CALLABLE`` as the device it names (normalized; None: no ``DEVICE=``)
    and ``MODULE:CALLABLE`` (the attribute path may be dotted); ValueError when it is not of
    that form."""
    # No module or attribute name holds "=": one is a DEVICE= prefix.
    device, equals, spec = text.rpartition("=")
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"{text!r} is not of the form [DEVICE=]MODULE:CALLABLE")
    if equals and not device:
        raise ValueError(f"{text!r} names no device before '='")
    return (normalize_device_type(device) if device else None), spec


def load_provider(spec: str, device_type: str) -> CppDeviceOptionsCallback:
    """Import the module of ``spec`` (``MODULE:CALLABLE``, as :func:`parse_provider_spec`
    gives it) and get its callable, the current directory importable (as ``python -m`` has
    it, for the console script too).

    Raises ``ProviderLoadError`` naming the module, the exception and where it was raised
    (SystemExit at import included), with its ``fix``.
    """
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    what = f"the C++ options provider {spec} for device {device_type!r} (--provider)"
    module, _, attribute = spec.partition(":")
    try:
        target: object = importlib.import_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: a failed load, never a silent exit
        raise _import_failed(what, spec, module, device_type, error) from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            where = getattr(sys.modules.get(module), "__file__", None) or module
            raise ProviderLoadError(
                f"cannot load {what}: getting {attribute!r} of module {module!r} "
                f"({where}) raised {error_line(error)}{_located(error)}",
                device_type=device_type,
                description=spec,
                fix="name a callable that module defines",
            ) from error
    if not callable(target):
        raise ProviderLoadError(
            f"cannot load {what}: {spec} is a {type(target).__name__}, not a callable",
            device_type=device_type,
            description=spec,
            fix="name the provider function, (device_type, aot_mode, compile_only) -> options",
        )
    return target


def _import_failed(
    what: str, spec: str, module: str, device_type: str, error: BaseException
) -> ProviderLoadError:
    missing = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
    if missing is not None and (module == missing or module.startswith(missing + ".")):
        fix = (
            f"Python finds no module {missing!r} on its path (the current directory, "
            "PYTHONPATH, site-packages): run from the directory that holds it, or add that "
            f"directory to PYTHONPATH (PYTHONPATH=/path/to/dir {PROG} ...)"
        )
    else:
        fix = f"fix module {module!r} (or what it imports) so that it imports"
    return ProviderLoadError(
        f"cannot load {what}: importing module {module!r} raised "
        f"{error_line(error)}{_located(error)}",
        device_type=device_type,
        description=spec,
        fix=fix,
    )


def _located(error: BaseException) -> str:
    """Where the provider's module raised, this module's own frames left out."""
    return located(error, skip=(__file__,))
