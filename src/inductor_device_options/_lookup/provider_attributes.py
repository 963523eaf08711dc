"""What a provider function may carry besides its options.

A provider is a plain function; a backend sets these attributes on it where it defines it
(``cpp_device_options.inductor_headers = ...``). A provider without them works the same.
``sdk_identity`` is read at each lookup; the others by ``_diagnose/`` only.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._errors import InvalidProviderError

#: ``sdk_identity(device_type)``: a str that names the SDK the options point at (such as its
#: version), or None; it joins the device's SDK identity, which is otherwise computed from
#: the contents of the device's headers and libraries.
IDENTITY_ATTRIBUTE = "sdk_identity"

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


def own_identity_of(provider: object, device_type: str, description: str) -> str | None:
    """What ``provider.sdk_identity(device_type)`` says, or None where it has none.

    Raises ``InvalidProviderError`` when the attribute is not callable or does not return a
    str or None; what it raises itself propagates."""
    function = getattr(provider, IDENTITY_ATTRIBUTE, None)
    if function is None:
        return None
    identity = function(device_type) if callable(function) else function
    if identity is None or type(identity) is str:
        return identity
    raise InvalidProviderError(
        f"the C++ options provider {description} for device {device_type!r}: its "
        f"{IDENTITY_ATTRIBUTE} gave a {type(identity).__name__} ({identity!r}), not a str or None",
        device_type=device_type,
        description=description,
        fix=f"make {IDENTITY_ATTRIBUTE}(device_type) return the SDK's identity as a str, or None",
    )
