"""A legacy door: Inductor's ``get_cpp_torch_device_options`` answers the device type a
device's builds ask for ("cpu", for a wrapper codegen left at ``CppWrapperCpu``'s default)
with the device's own options. Unmigrated openreg-derived backends make it do so by
wrapping it for "cpu" as well as for their device.

Their builds get the device's options that way, and they work; so does every CPU build of
the process, which gets the device's flags, and the cache keys those flags make. doctor
passes such a setup with a warning naming that cost and the migration; it fails only where
the answer lacks some of the device's options.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .._options.model import FIELDS

#: The prefix of the definitions the package adds to a device it serves (its SDK
#: identity): its own, not the device's, so an answer for another type lacks them.
PACKAGE_DEFINITIONS = "INDUCTOR_DEVICE_OPTIONS_"
_DIR_FIELDS = ("include_dirs", "libraries_dirs")


class LegacyDoor(NamedTuple):
    """``asked`` is answered with the device's own options (``carried``: each as
    ``field value``) by ``answered_by``: the functions adopted by the hook, or Inductor's."""

    asked: str
    carried: tuple[str, ...]
    answered_by: str

    def few(self, shown: int = 3) -> str:
        more = len(self.carried) - shown
        return ", ".join(self.carried[:shown]) + (f" and {more} more" if more > 0 else "")


def legacy_door(device_type: str, asked: str, aot_mode: bool) -> LegacyDoor | None:
    """The door, where the answer for ``asked`` carries every option the device gets beyond
    torch's defaults, for compiling and for linking; None otherwise (or when the device gets
    nothing of its own)."""
    own, got = set(), set()
    for compile_only in (False, True):
        own |= _own_values(device_type, aot_mode, compile_only)
        got |= _values(_answer(asked, aot_mode, compile_only))
    if not own or not own <= got:
        return None
    return LegacyDoor(asked, tuple(sorted(own)), _answering())


def _answering() -> str:
    """The functions around torch's own that answer: adopted by the hook, or below it
    (assigned before the hook was installed)."""
    from .._hook.installation import installed
    from .._lookup.registry import describe_callable
    from .._torch_names import CPP_BUILDER
    from ..introspection import hook_state

    functions = [f.description for f in hook_state().adopted if f.behaviour != "replacement"]
    function_below = installed().function_below
    if getattr(function_below, "__module__", CPP_BUILDER) != CPP_BUILDER:
        functions.append(describe_callable(function_below))
    return ", ".join(functions) or "Inductor's get_cpp_torch_device_options"


def _answer(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
    from .._hook.lookups import get_cpp_device_options

    return tuple(get_cpp_device_options(device_type, aot_mode, compile_only))


def _own_values(device_type: str, aot_mode: bool, compile_only: bool) -> set[str]:
    """What the device gets beyond what a device nobody serves gets (torch's defaults for
    an out-of-tree device, and what a function adds for every device)."""
    from .._hook.serve import DEFAULTS_PROBE_DEVICE

    got = _values(_answer(device_type, aot_mode, compile_only))
    defaults = _values(_answer(DEFAULTS_PROBE_DEVICE, aot_mode, compile_only))
    return {
        value
        for value in got - defaults
        if not value.startswith(f"definitions {PACKAGE_DEFINITIONS}")
    }


def _values(options: tuple[list[str], ...]) -> set[str]:
    """``field value`` of every value; dirs by their real path, definitions stripped."""
    values = set()
    for field, entries in zip(FIELDS, options, strict=True):
        for entry in entries:
            value = os.path.realpath(entry) if field in _DIR_FIELDS else str(entry).strip()
            values.add(f"{field} {value}")
    return values


def found_legacy_door(device_type: str, asked: str, aot_mode: bool) -> LegacyDoor | None:
    """:func:`legacy_door`, None where the provider raises (the options check reports it)."""
    try:
        return legacy_door(device_type, asked, aot_mode)
    except Exception:
        return None
