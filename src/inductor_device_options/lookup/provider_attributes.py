"""What a provider function may carry besides its options, for doctor to read.

A provider is a plain function; a backend sets these attributes on it where it defines it
(``cpp_device_options.inductor_headers = ...``). They are read by ``diagnose/`` only, never
on a lookup, so a provider without them works the same.
"""

from __future__ import annotations

from collections.abc import Mapping

#: ``inductor_headers(device_type, aot_mode)``: the header names the device's wrapper codegen
#: includes, for a backend whose codegen class cannot be imported without its hardware.
HEADERS_ATTRIBUTE = "inductor_headers"

#: ``doctor_hints``: a mapping with optional keys ``"setup"`` (str, added to doctor's fix when
#: the SDK or its environment is missing), ``"loader"`` (str, added to the dynamic loader's
#: fix), ``"headers"`` (str, added to the missing headers' fix) and ``"absent"`` (a callable
#: returning None where the device can be present, else why it cannot, as a str).
HINTS_ATTRIBUTE = "doctor_hints"


def hints_of(provider: object) -> Mapping[str, object]:
    """The ``doctor_hints`` ``provider`` carries, or an empty mapping."""
    hints = getattr(provider, HINTS_ATTRIBUTE, None)
    return hints if isinstance(hints, Mapping) else {}
