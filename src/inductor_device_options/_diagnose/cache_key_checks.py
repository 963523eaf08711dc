"""doctor's ``cache_keys`` check: the device's SDK identity reaches the keys of Inductor's
caches on the running torch, so that code built against one SDK never runs against another
(``cache_keying``)."""

from __future__ import annotations

from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._options.problems import Problem
from .cache_keying import CACHES, IMPORT_ORDER, cache_keying
from .checks import Check, Context, check
from .legacy_door import found_legacy_door

_NAME = "cache_keys"


def check_cache_keys(context: Context) -> Check:
    if context.unusable():
        return context.skipped(_NAME)
    try:
        keying = cache_keying(context.device_type)
    except Exception as error:  # the options check reported the provider already
        return check(_NAME, "skip", f"skipped: the SDK identity cannot be computed ({error!r})")
    if keying.identity is None and keying.aot_identity is None:
        return check(
            _NAME,
            "pass",
            "no SDK identity: the options name no include dir or library of the device's own",
        )
    identity = keying.aot_identity if context.aot_mode else keying.identity
    lacking = {name: getattr(keying, key) for key, name in CACHES.items()}
    legacy = _legacy_door(context)
    if legacy:
        # The builds run as torch's own device's, whose C++ the package never keys: only the
        # command line (the device's flags in cpu's answer) tells them apart.
        assert context.asked is not None
        lacking[CACHES["cpp_code_cache"]] = (
            f"the builds of {context.device_type!r} graphs ask for {context.asked.asked!r} "
            "(device_asked), whose builds the package never keys"
        )
    keyed = [name for name, why in lacking.items() if why is None]
    missing = {name: why for name, why in lacking.items() if why is not None}
    if not missing:
        summary = f"SDK identity {identity}: {', '.join(keyed)} (diagnosed with {IMPORT_ORDER})"
        return check(_NAME, "pass", summary)
    # A legacy door's builds work: what it alone leaves unkeyed is a cost, not a failure.
    legacy_only = legacy and list(missing) == [CACHES["cpp_code_cache"]]
    return check(
        _NAME,
        "warn" if legacy_only else "fail",
        f"the SDK identity {identity} is missing from the key of the "
        + ", ".join(missing)
        + f" (diagnosed with {IMPORT_ORDER})",
        *(
            Problem(
                f"{name}: {why}: code built against another SDK (another machine's, through "
                "a remote or shared cache, or this machine's before an in-place change) "
                "would be reused here",
                _LEGACY_FIX if legacy_only else _FIX,
            )
            for name, why in missing.items()
        ),
    )


_FIX = (
    "serve the device through a door whose options name its SDK's include dirs and libraries, "
    "and let nothing assign over the package's wrappers in torch._inductor.codecache after "
    "the compile started"
)
_LEGACY_FIX = (
    "migrate, as device_asked says: then the builds ask for the device, and its identity keys them"
)


def _legacy_door(context: Context) -> bool:
    """Whether the device's builds ask for one of torch's devices whose answer carries the
    device's options (where it does not, device_asked fails: the builds do not work)."""
    asked = context.asked
    return (
        asked is not None
        and asked.mismatch
        and asked.asked in RESERVED_DEVICE_TYPES
        and found_legacy_door(context.device_type, asked.asked, context.aot_mode) is not None
    )
