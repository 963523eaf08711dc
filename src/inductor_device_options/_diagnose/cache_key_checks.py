"""doctor's ``cache_keys`` check: the device's SDK identity reaches the keys of Inductor's
caches on the running torch, so that code built against one SDK never runs against another
(``cache_keying``)."""

from __future__ import annotations

from .._options.problems import Problem
from .cache_keying import CACHES, NOT_SERVED, cache_keying
from .checks import Check, Context, check

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
    keyed = [name for key, name in CACHES.items() if getattr(keying, key) is None]
    summary = f"SDK identity {identity}: {', '.join(keyed)}"
    if context.aot_mode or keying.fx_graph_cache is None:
        return check(_NAME, "pass", summary)
    if keying.fx_graph_cache == NOT_SERVED:
        device = repr(context.device_type)
        return check(
            _NAME,
            "warn",
            f"the FX graph cache key does not hold the SDK identity {identity}",
            Problem(
                f"{NOT_SERVED} ({context.source.kind} {context.source.description}): a graph "
                "compiled against another SDK (another machine's, through a remote or shared "
                "cache) would be reused here",
                f"serve {device} through the package's door "
                f"(inductor_device_options.register_cpp_device_options({device}, ...) or an "
                "entry point), which keys Inductor's caches on its SDK identity",
            ),
        )
    return check(
        _NAME,
        "fail",
        f"the FX graph cache key does not hold the SDK identity {identity}",
        Problem(
            f"{keying.fx_graph_cache}: a graph compiled against another SDK (another "
            "machine's, through a remote or shared cache) would be reused here",
            "make the function assigned to CacheBase.get_system call the one it replaced, "
            "or call inductor_device_options.arm() after assigning it",
        ),
    )
