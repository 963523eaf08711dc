"""doctor's ``provider_doors`` check: what the provider declares of its per-device doors
(``removed_cflags``, ``aoti_shim_ops``, ``inductor_headers``, ``cache_key_details``,
``aoti_runner``) is what the doors can use, asked as each door asks it, and acts on the
running torch. The headers' existence is the ``headers`` check's, the shims' declarations
the ``c_shim`` check's."""

from __future__ import annotations

from .._hook.door_report import DOOR_NAMES, described_door, provider_doors
from .._lookup.provider_attributes import HEADERS_ATTRIBUTE
from .._options.problems import Problem
from .checks import Check, Context, check
from .text import message_and_fix

NAME = "provider_doors"


def check_provider_doors(context: Context) -> Check:
    if context.unusable():
        return context.skipped(NAME)
    provider = context.provider
    if provider is None:
        return check(NAME, "pass", "none: the device is not served by the package's own door")
    declared = [name for name in DOOR_NAMES if getattr(provider, name, None) is not None]
    if not declared:
        return check(NAME, "pass", "none declared")
    device, description = context.device_type, context.source.description
    problems, said = [], []
    for name in declared:
        if name == HEADERS_ATTRIBUTE:  # asked, and the headers found, by the headers check
            said.append(f"{name} (checked by headers)")
            continue
        try:
            said.append(f"{name} {described_door(name, provider, device, description)}")
        except Exception as error:
            cause, fix = message_and_fix(error)
            problems.append(
                Problem(
                    f"the provider's {name} cannot be used: {cause}",
                    fix or f"fix the provider's {name}",
                )
            )
    if problems:
        return check(NAME, "fail", f"{len(problems)} of {len(declared)} unusable", *problems)
    # What the running torch lacks is no fault of the provider's: said, not warned.
    said += [
        f"{door.name} {door.status} on this torch (`list` says what it lacks)"
        for door in provider_doors()
        if door.name in declared and door.status != "acts"
    ]
    return check(NAME, "pass", "; ".join(said))
