"""Keep the hook in charge of ``cpp_builder.get_cpp_torch_device_options``, whatever is
assigned to it afterwards, in whatever order.

Backends give Inductor their options by assigning that module attribute: a *replacement*
never calls the function it found (torch_npu 2.14), a *wrapper* captures it, calls it and
adds flags (openreg-style backends, build scripts). Assigned over the hook, either would cut
this package's sources out. So the hook makes the ``cpp_builder`` module an
:class:`AdoptingModule`: its ``__setattr__`` *adopts* each function assigned to the attribute
into a chain, and the attribute stays an entry of the chain.

Each state of the chain is a :class:`Link` with its own entry function: what the module
holds in that state, and what a wrapper captured when it read the attribute; assigning a
saved entry back (what ``unittest.mock`` does on exit) restores its state.

A lookup runs the adopted functions top-down, as the same stack would without the package:
a wrapper calls the entry it captured, which runs the link below. Whether a function
chained is seen by whether it called back into an entry for the same device during the call.
The package's sources come in right above the topmost function that did not chain (a
replacement), or above the function below: registrations win over replacements, wrappers
above wrap registrations too, and what the replacement gave is the *answer below*.

The one way past this is writing the module's ``__dict__`` directly; ``hook_state`` reports it.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES, normalize_device_type
from .._lookup.registry import describe_callable
from .._state import Frame, this_thread
from .._torch_names import FUNCTION, REGISTRY
from .serve import Args, DeviceOptionsFunction, Kwargs, serve_device

_CHAIN_ATTRIBUTE = "_inductor_device_options_chain"
# A dunder name: unittest.mock objects raise AttributeError for those instead of inventing one.
_LINK_MARK = "__inductor_device_options_link__"


if TYPE_CHECKING:
    from .._lookup.resolve import AnswerBelow

Behaviour = Literal["not called yet", "replacement", "wraps the hook", "wraps for some devices"]


class Adopted:
    """A function assigned to the attribute after the hook, and how it was seen to behave."""

    def __init__(self, function: DeviceOptionsFunction):
        self.function = function
        self.description = describe_callable(function)
        self.keywords = _accepted_keywords(function)
        self.seen: set[bool] = set()  # True: chained; False: did not

    def call(self, args: Args, kwargs: Kwargs) -> Any:
        if kwargs and self.keywords is not None and not self.keywords.issuperset(kwargs):
            # torch 2.15 passes cpp_stdlib=, which a function written for 2.13 rejects.
            kwargs = {key: value for key, value in kwargs.items() if key in self.keywords}
        return self.function(*args, **kwargs)

    def call_in(self, frame: Frame, args: Args, kwargs: Kwargs) -> Any:
        """Call the function with ``frame`` on this thread's frames, where a call back into
        the chain for the same device marks it chained, and record what it was seen to do."""
        frames = this_thread.frames
        frames.append(frame)
        try:
            return self.call(args, kwargs)
        finally:
            frames.pop()
            self.seen.add(frame.chained)

    @property
    def behaviour(self) -> Behaviour:
        if not self.seen:
            return "not called yet"
        if len(self.seen) == 2:
            return "wraps for some devices"
        return "wraps the hook" if True in self.seen else "replacement"


def _accepted_keywords(function: DeviceOptionsFunction) -> frozenset[str] | None:
    """The keyword names ``function`` accepts, or None when it takes any (or cannot tell)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return frozenset(
        parameter.name
        for parameter in parameters
        if parameter.kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )


class AdoptedFunction(NamedTuple):
    """One function adopted into the chain, for reports."""

    description: str
    behaviour: Behaviour


_normalized_names: _state.BoundedCache[str, str | None] = _state.cache(1024)


def _normalized_or_none(device_type: str) -> str | None:
    if device_type not in _normalized_names:
        try:
            name: str | None = normalize_device_type(device_type)
        except ValueError:
            name = None
        return _normalized_names.put(device_type, name)
    return _normalized_names[device_type]


class Link:
    """A state of the chain: the function adopted last (None at the lowest link, where the
    function below answers), the link below, and ``entry``: what the module holds then."""

    def __init__(self, chain: Chain, adopted: Adopted | None, lower: Link | None):
        self.chain = chain
        self.adopted = adopted
        self.lower = lower
        self.entry = _entry_of(self)

    def answer(self, device_type: object, args: Args, kwargs: Kwargs) -> Any:
        """What a call of the entry gives for a device past the entry's fast path."""
        if self.adopted is None:
            return self.chain.answer_lowest(device_type, args, kwargs)
        return self._answer_through(self.adopted, device_type, args, kwargs)

    def _answer_through(
        self, adopted: Adopted, device_type: object, args: Args, kwargs: Kwargs
    ) -> Any:
        frame = Frame(device_type)
        error: Exception | None = None
        try:
            result = adopted.call_in(frame, args, kwargs)
        except Exception as caught:
            result, error = None, caught
        chain = self.chain
        device = None if frame.chained else chain.served_device(device_type)
        if device is not None:
            # A replacement for this device: the package's sources come first, and what the
            # replacement gave (or the function below, where it raised) is its answer below.
            answer_below: AnswerBelow = functools.partial(chain.answering, *args, **kwargs)
            served = serve_device(
                chain.module,
                device,
                args,
                kwargs,
                (lambda: result) if error is None else answer_below,
                chain.own_dispatcher,
            )
            if served is not None:
                return served
        if error is not None:
            raise error
        return result


def _entry_of(link: Link) -> DeviceOptionsFunction:
    """The entry of ``link``: a plain function, as torch's is, for wrappers to capture,
    inspect and assign back.

    Torch's own devices, which the package never serves, are answered here, in the entry
    itself: Inductor asks for them on every build, and each Python call added to their path
    costs about 0.5% of torch's own function (``cpu_lookup`` in benchmarks/). Every other
    question goes to :meth:`Link.answer`."""
    chain = link.chain
    adopted = link.adopted
    observe = chain.observe
    function_below = chain.function_below
    answer = link.answer
    reserved = RESERVED_DEVICE_TYPES
    namespace = chain.registry_namespace

    def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
        device_type = args[0] if args else kwargs.get("device_type")  # device_type_of, uncalled
        if observe is not None:
            observe(device_type)
        frames = this_thread.frames if _state.adopted_once else None
        if frames and _same_device(frames[-1].device_type, device_type):
            frames[-1].chained = True  # an adopted function above called back: it chains
        if (
            type(device_type) is str
            and device_type in reserved
            and (namespace is None or device_type not in (namespace.get(REGISTRY) or ()))
        ):
            if adopted is None:
                return function_below(*args, **kwargs)
            if adopted.seen:
                return adopted.call(args, kwargs)
            # Only its first call pushes a frame, to see whether it chains: a call-back it
            # makes later could only mark the frame of a function that called back already.
            return adopted.call_in(Frame(device_type), args, kwargs)
        return answer(device_type, args, kwargs)

    # Its signature and docstring are the function below's: wrappers read them.
    functools.update_wrapper(get_cpp_torch_device_options, function_below, ["__doc__"], [])
    setattr(get_cpp_torch_device_options, _LINK_MARK, link)
    return get_cpp_torch_device_options


class Chain:
    """The functions adopted over one installed hook, and the link the module holds."""

    def __init__(
        self,
        module: ModuleType,
        function_below: DeviceOptionsFunction,
        answering: DeviceOptionsFunction,
        *,
        registry_namespace: Mapping[str, Any] | None = None,
        own_dispatcher: DeviceOptionsFunction | None = None,
        observe: Callable[[object], None] | None = None,
    ):
        """``function_below``: the function there when the hook was installed.
        ``answering(*args, **kwargs)``: a call's answer below, where no adopted function
        gives it (``function_below``, asking the DeviceInterface first before torch 2.15,
        or skipping torch's registry in native mode: ``_hook/install``).
        ``registry_namespace``: where the package serves torch's own devices registered in
        torch's registry (hook mode: the module's namespace, whose registry is read at each
        lookup, as torch's own function reads it); None: torch's own function serves its registry
        itself (native mode), where ``own_dispatcher`` is what the package registered
        there, standing for its own registrations. ``observe(device_type)``: told of each
        call of an entry (every question Inductor asks, and again for each wrapper that
        calls through)."""
        self.module = module
        self.function_below = function_below
        self.answering = answering
        self.registry_namespace = registry_namespace
        self.own_dispatcher = own_dispatcher
        self.observe = observe
        self._lock = threading.Lock()
        self.lowest = Link(self, None, None)
        self.current = self.lowest

    # --- assignments ---------------------------------------------------------------------

    def adopt(self, value: object) -> bool:
        """Take an assignment to the attribute; False leaves it to a plain assignment."""
        if not callable(value):
            return False
        with self._lock:
            link = self._link_of(value)
            if link is None:
                link = Link(self, Adopted(value), self.current)
                _state.adopted_once = True
            self.current = link
            self.module.__dict__[FUNCTION] = link.entry
        return True

    def _link_of(self, value: object) -> Link | None:
        if value is self.function_below:
            return self.lowest
        if self.current.adopted is not None and value is self.current.adopted.function:
            return self.current  # the same function assigned again
        return self.link_of_entry(value)

    def link_of_entry(self, value: object) -> Link | None:
        """The link whose entry ``value`` is, if it is one of this chain's."""
        try:
            link = getattr(value, _LINK_MARK, None)
        except Exception:  # an object with an unusual __getattr__: not ours
            return None
        if isinstance(link, Link) and link.entry is value and link.chain is self:
            return link
        return None

    def owns(self, value: object) -> bool:
        """Whether ``value`` is an entry of this chain."""
        return self.link_of_entry(value) is not None

    def adopted(self) -> tuple[AdoptedFunction, ...]:
        """The current link's adopted functions, in the order they were assigned."""
        found = []
        link: Link | None = self.current
        while link is not None and link.adopted is not None:
            found.append(AdoptedFunction(link.adopted.description, link.adopted.behaviour))
            link = link.lower
        return tuple(reversed(found))

    # --- lookups -------------------------------------------------------------------------

    def served_device(self, device_type: object) -> str | None:
        """The device the package may serve, past the fast path; None: no name, or bypassed."""
        if type(device_type) is not str:
            return None
        device = _normalized_or_none(device_type)
        if device in RESERVED_DEVICE_TYPES and device != device_type:  # "cpu:0"
            return None
        return None if device is None or device in this_thread.bypassed else device

    def answer_lowest(self, device_type: object, args: Args, kwargs: Kwargs) -> Any:
        """What the lowest link gives: the package's sources, then what is below them."""
        device = self.served_device(device_type)
        answer_below = functools.partial(self.answering, *args, **kwargs)
        if device is None:
            return answer_below()
        served = serve_device(self.module, device, args, kwargs, answer_below, self.own_dispatcher)
        return answer_below() if served is None else served


def _same_device(running: object, called: object) -> bool:
    if running == called:
        return True
    # "npu" and "npu:0" are one device.
    return (
        type(running) is str
        and type(called) is str
        and _normalized_or_none(running) == _normalized_or_none(called) is not None
    )


def chain_of(module: ModuleType) -> Chain | None:
    chain = vars(type(module)).get(_CHAIN_ATTRIBUTE)
    return chain if isinstance(chain, Chain) else None


def make_adopting(module: ModuleType, chain: Chain) -> None:
    """Give ``module`` a class that adopts assignments to the attribute into ``chain``,
    and put the chain's current entry in place."""
    plain_class = getattr(type(module), "_inductor_device_options_plain_class", type(module))

    def __setattr__(self: ModuleType, name: str, value: object) -> None:
        if name == FUNCTION:
            own = chain_of(self)
            if own is not None and own.adopt(value):
                return
        plain_class.__setattr__(self, name, value)

    adopting = type(
        "AdoptingModule",
        (plain_class,),
        {
            "__setattr__": __setattr__,
            "__module__": __name__,
            "__doc__": AdoptingModule.__doc__,
            _CHAIN_ATTRIBUTE: chain,
            "_inductor_device_options_plain_class": plain_class,
        },
    )
    module.__dict__[FUNCTION] = chain.current.entry
    module.__class__ = adopting


class AdoptingModule(ModuleType):
    """``torch._inductor.cpp_builder`` with the hook installed: assigning
    ``get_cpp_torch_device_options`` adopts the function into the hook's chain."""
