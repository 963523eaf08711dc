"""The ``cache_key_details`` door (issue 48): what a device's provider says about each
compile joins that compile's FX graph and AOTAutograd cache keys.

torch keys both caches by pickling a details object: ``codecache.FxGraphHashDetails``
(``compiled_fx_graph_hash``: ``FxGraphCachePickler.get_hash`` on 2.6, ``get_key`` on 2.13
and 2.15, and ``debug_lines``, all of its ``vars()``) and its subclass
``autograd_cache.AOTAutogradCacheDetails`` (``autograd_cache_key``:
``AOTAutogradCachePickler.get_hash``), whose ``__init__`` calls the former's through
``super()`` on 2.6, 2.13 and 2.15. Neither pickler reduces the details object itself, so
every attribute it holds reaches the key. What a backend knows only at compile time (torch_npu's
deterministic level) has no door into it: 2.15's ``get_cache_system_info()`` is sampled
once per process. So torch_npu replaces both ``__init__`` for every device.

Here both ``__init__`` are wrapped. After torch's own, the graph's devices are read (the
example inputs and the ``val``/``example_value`` of every node, as 2.13's
``FxGraphHashDetails._may_generate_cpu_cpp_code`` reads them: inputs, outputs and
buffers), and each device a provider serves through the package's door is asked for its
detail anew. Only where one gives a detail does the object get one more attribute,
``DETAILS_ATTRIBUTE``: a graph with nothing on such a device keeps torch's key byte for
byte. The outermost wrapper of a thread asks once: AOTAutograd's ``__init__`` reaches the
FX one, and a backend may wrap a wrapper. A detail that is not JSON raises
``InvalidProviderAttributeError`` naming the device, the provider and the attribute; what
the provider raises keeps its type, with a note naming them. AOTAutograd's lookup turns
either into a cache bypass; the FX graph cache's key lets it through, and torch.compile
wraps it in ``BackendCompilerFailed`` (whose message repeats the error's, not its notes).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._torch_names import AUTOGRAD_CACHE, AUTOGRAD_CACHE_DETAILS, CODECACHE
from .provider_doors import cache_key_detail

#: The attribute of the details object that carries the providers' details: a sorted tuple
#: of ``(device_type, canonical JSON)``.
DETAILS_ATTRIBUTE = "inductor_device_options_details"
#: torch's class whose ``__init__`` is wrapped in ``torch._inductor.codecache`` (the other
#: is ``AUTOGRAD_CACHE_DETAILS`` in ``AUTOGRAD_CACHE``).
FX_DETAILS_CLASS = "FxGraphHashDetails"
#: The node metadata holding a node's fake value: the post-AOT graph's ``val``, Dynamo's
#: ``example_value`` (2.13 and 2.15's ``FxGraphHashDetails.TENSOR_METADATA_KEYS``).
_VALUE_KEYS = ("val", "example_value")
_MARK = "_inductor_device_options_cache_key_details"


def install_into_codecache(codecache: ModuleType) -> None:
    """Wrap ``codecache.FxGraphHashDetails.__init__``; idempotent."""
    _wrap(codecache.__dict__.get(FX_DETAILS_CLASS))


def install(autograd_cache: ModuleType) -> None:
    """Wrap ``autograd_cache.AOTAutogradCacheDetails.__init__``; idempotent. Its own
    ``__init__`` reaches the wrapped ``FxGraphHashDetails.__init__`` (2.6 to 2.15), but a
    backend's replacement need not: this one keys it either way."""
    _wrap(autograd_cache.__dict__.get(AUTOGRAD_CACHE_DETAILS))


def is_installed(codecache: ModuleType) -> bool:
    """Whether ``codecache.FxGraphHashDetails.__init__`` is the door's wrapper."""
    details_class = codecache.__dict__.get(FX_DETAILS_CLASS)
    return bool(getattr(vars(details_class).get("__init__"), _MARK, False))


def release_gap() -> str | None:
    """None where the running torch keys its FX graph and AOTAutograd caches by pickling
    a whole ``FxGraphHashDetails`` and ``AOTAutogradCacheDetails`` (2.6, 2.13, 2.15), else
    which key this release lacks."""
    import torch
    from torch._inductor import codecache

    try:
        autograd_cache: ModuleType | None = importlib.import_module(AUTOGRAD_CACHE)
    except ImportError:
        autograd_cache = None
    missing = [
        f"the {cache} cache key ({module_name}.{name})"
        for cache, module_name, module, name in (
            ("FX graph", CODECACHE, codecache, FX_DETAILS_CLASS),
            ("AOTAutograd", AUTOGRAD_CACHE, autograd_cache, AUTOGRAD_CACHE_DETAILS),
        )
        if module is None or not _pickled_whole(module.__dict__.get(name))
    ]
    if not missing:
        return None
    lacking = " nor ".join(missing)
    return f"torch {torch.__version__} has no details object, pickled whole, for {lacking}"


def graph_device_types(gm: Any, example_inputs: Iterable[object]) -> set[str]:
    """The device types of ``example_inputs`` and of every value of ``gm``'s nodes (those of
    its subgraphs too), torch's own devices left out."""
    import torch

    found: set[str] = set()
    _add_devices(found, example_inputs)
    modules = gm.modules() if isinstance(gm, torch.nn.Module) else ()
    for module in modules:
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            meta = node.meta
            for key in _VALUE_KEYS:
                value = meta.get(key)
                if value is not None:
                    _add_devices(found, (value,))
    return found - RESERVED_DEVICE_TYPES


def device_details(gm: Any, example_inputs: Iterable[object]) -> tuple[tuple[str, str], ...]:
    """Each device of the graph whose provider gives a detail, with the detail as canonical
    JSON, sorted; raises ``InvalidProviderAttributeError`` naming the device, the provider
    and the attribute, or what the provider raised, with a note naming them."""
    details = []
    for device_type in sorted(graph_device_types(gm, example_inputs)):
        detail = cache_key_detail(device_type)
        if detail is not None:
            details.append((device_type, detail))
    return tuple(details)


def _wrap(details_class: type | None) -> None:
    torch_init = vars(details_class).get("__init__") if details_class is not None else None
    if torch_init is None or getattr(torch_init, _MARK, False):
        return
    details_class.__init__ = _keyed(torch_init)  # type: ignore[misc]


def _keyed(torch_init: Callable[..., None]) -> Callable[..., None]:
    # Both classes take (gm, example_inputs, ...) first, on 2.6, 2.13 and 2.15.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        this_thread = _state.this_thread
        if this_thread.keying_cache_details:  # inside another of the door's wrappers: it asks
            torch_init(self, *args, **kwargs)
            return
        this_thread.keying_cache_details += 1
        try:
            torch_init(self, *args, **kwargs)
        finally:
            this_thread.keying_cache_details -= 1
        gm = args[0] if args else kwargs.get("gm")
        example_inputs = args[1] if len(args) > 1 else kwargs.get("example_inputs", ())
        details = device_details(gm, example_inputs)
        if details:  # else torch's key, byte for byte
            setattr(self, DETAILS_ATTRIBUTE, details)

    functools.update_wrapper(__init__, torch_init, updated=())  # not the wrapped's marks
    setattr(__init__, _MARK, True)
    return __init__


def _add_devices(found: set[str], values: Iterable[object]) -> None:
    """Add the device types of the tensors in ``values`` (nested lists, tuples, dicts)."""
    import torch

    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, torch.Tensor):
            found.add(value.device.type)
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())


def _pickled_whole(details_class: object) -> bool:
    """Whether ``details_class`` exists and pickles its whole ``__dict__`` (no reducer of
    its own or of a base: the door's attribute reaches the key)."""
    if not isinstance(details_class, type) or "__init__" not in vars(details_class):
        return False
    reducers = ("__reduce__", "__reduce_ex__", "__getstate__")
    bases = details_class.__mro__[:-1]  # object's own reducers pickle __dict__
    return not any(reducer in vars(base) for base in bases for reducer in reducers)
