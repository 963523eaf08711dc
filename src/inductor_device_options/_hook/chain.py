"""Keep the hook in charge of ``cpp_builder.get_cpp_torch_device_options``, whatever is
assigned to it afterwards, in whatever order.

Backends give Inductor their options by assigning that module attribute: a *replacement*
never calls the function it found (torch_npu 2.14), a *wrapper* captures it, calls it and
adds flags (openreg-style backends, build scripts). Assigned over the hook, either would cut
this package's sources out. So the hook makes the ``cpp_builder`` module an
:class:`AdoptingModule`: its ``__setattr__`` *adopts* each function assigned to the attribute
into a chain, and the attribute stays an entry of that chain.

Each state of the chain has its own entry function. It is what the module holds in that
state, and what a wrapper captured when it read the attribute; assigning a saved entry back
(what ``unittest.mock`` does on exit) restores its state.

A lookup runs the adopted functions top-down, as the same stack would without the package:
a wrapper calls the entry it captured, which runs the state below. Whether a function
chained is seen by whether it called back into an entry for the same device during the call.
The package's sources come in right above the topmost function that did not chain (a
replacement), or above the function that was there when the hook was installed: registrations
win over replacements, and wrappers above wrap registrations too. For the device served, what
the replacement gave (or the function below, where it raised) is the device's default.

The one way past this is writing the module's ``__dict__`` directly; ``hook_state`` reports it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, Literal, NamedTuple

from .. import _state
from .._lookup.device_types import RESERVED_DEVICE_TYPES, normalize_device_type
from .._lookup.registry import describe_callable
from .._state import this_thread
from .._torch_names import FUNCTION
from .in_progress import Thunk

_CHAIN_ATTRIBUTE = "_inductor_device_options_chain"
# A dunder name: unittest.mock objects raise AttributeError for those instead of inventing one.
_STATE_MARK = "__inductor_device_options_state__"

Args = tuple[Any, ...]
Kwargs = dict[str, Any]
DeviceOptionsFunction = Callable[..., Any]
#: serve(device_type, args, kwargs, default) -> the options tuple, or None when the package
#: has no source for the device; ``default()`` is what the device gets without the package.
Serve = Callable[[str, Args, Kwargs, Thunk], Any]

Behaviour = Literal["not called yet", "replacement", "wraps the hook", "wraps for some devices"]


class Adopted:
    """A function assigned to the attribute after the hook, and how it was seen to behave."""

    def __init__(self, function: DeviceOptionsFunction):
        self.function = function
        self.description = describe_callable(function)
        self.keywords = _accepted_keywords(function)
        self.seen: set[bool] = set()  # True: chained; False: did not

    def __call__(self, args: Args, kwargs: Kwargs) -> Any:
        if kwargs and self.keywords is not None and not self.keywords.issuperset(kwargs):
            # torch 2.15 passes cpp_stdlib=, which a function written for 2.13 rejects.
            kwargs = {key: value for key, value in kwargs.items() if key in self.keywords}
        return self.function(*args, **kwargs)

    def observe(self, chained: bool) -> None:
        self.seen.add(chained)

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


class _State(NamedTuple):
    adopted: Adopted | None  # None: the bottom, the function there when the hook was installed
    below: _State | None
    entry: DeviceOptionsFunction
    chain: Chain


class AdoptedFunction(NamedTuple):
    """One function adopted into the chain, for reports."""

    description: str
    behaviour: Behaviour


def device_type_of(args: Args, kwargs: Kwargs) -> Any:
    """The ``device_type`` of a call of torch's function, however it was passed."""
    return args[0] if args else kwargs.get("device_type")


def _device_name(args: Args, kwargs: Kwargs) -> str | None:
    """The normalized device a call is for, or None for torch's devices and non-names."""
    device_type = device_type_of(args, kwargs)
    if type(device_type) is not str or device_type in RESERVED_DEVICE_TYPES:
        return None
    name = _normalized_or_none(device_type)
    if name is None or name in RESERVED_DEVICE_TYPES:
        return None
    return name


_normalized_names = _state.cache(1024)


def _normalized_or_none(device_type: str) -> str | None:
    if device_type not in _normalized_names:
        try:
            name: str | None = normalize_device_type(device_type)
        except ValueError:
            name = None
        return _normalized_names.put(device_type, name)  # type: ignore[no-any-return]
    return _normalized_names[device_type]  # type: ignore[no-any-return]


def flags(args: Args, kwargs: Kwargs) -> tuple[bool, bool]:
    """``aot_mode`` and ``compile_only`` of a call, however they were passed."""
    aot_mode = args[1] if len(args) > 1 else kwargs.get("aot_mode", False)
    compile_only = args[2] if len(args) > 2 else kwargs.get("compile_only", False)
    return bool(aot_mode), bool(compile_only)


class Chain:
    """The functions adopted over one installed hook, and the state the module is in."""

    def __init__(
        self,
        module: ModuleType,
        function_below: DeviceOptionsFunction,
        serve: Serve,
        below_default: Callable[[Args, Kwargs], Any],
        *,
        call_below: DeviceOptionsFunction | None = None,
        serves_reserved: Callable[[str], bool] | None = None,
        observe: Callable[[object], None] | None = None,
    ):
        """``function_below``: the function there when the hook was installed;
        ``call_below``: what the bottom of the chain calls for it (default
        ``function_below``). ``serves_reserved(d)``:
        whether ``serve`` has a source for torch's own device ``d`` after all.
        ``observe(device_type)``: told of each call of an entry (every question Inductor
        asks, and again for each wrapper that calls through)."""
        self.module = module
        self.function_below = function_below
        self.call_below = function_below if call_below is None else call_below
        self._serve = serve
        self._below_default = below_default
        self._serves_reserved = serves_reserved
        self._observe = observe
        self._lock = threading.Lock()
        self.bottom = self._state(None, None)
        self.current = self.bottom

    # --- assignments ---------------------------------------------------------------------

    def adopt(self, value: object) -> bool:
        """Take an assignment to the attribute; False leaves it to a plain assignment."""
        if not callable(value):
            return False
        with self._lock:
            state = self._state_of(value)
            if state is None:
                state = self._state(Adopted(value), self.current)
                _state.adopted_once = True
            self.current = state
            self.module.__dict__[FUNCTION] = state.entry
        return True

    def _state_of(self, value: object) -> _State | None:
        if value is self.function_below:
            return self.bottom
        if self.current.adopted is not None and value is self.current.adopted.function:
            return self.current  # the same function assigned again
        return self.state_of_entry(value)

    def state_of_entry(self, value: object) -> _State | None:
        """The state whose entry ``value`` is, if it is one of this chain's."""
        try:
            state = getattr(value, _STATE_MARK, None)
        except Exception:  # an object with an unusual __getattr__: not ours
            return None
        if isinstance(state, _State) and state.entry is value and state.chain is self:
            return state
        return None

    def _state(self, adopted: Adopted | None, below: _State | None) -> _State:
        reserved = RESERVED_DEVICE_TYPES
        function_below = self.function_below
        serves_reserved = self._serves_reserved
        observe = self._observe
        # Bound once: torch's own devices through an adopted function are the hot path.
        run = adopted.function if adopted is not None else function_below
        keywords = adopted.keywords if adopted is not None else None
        seen = adopted.seen if adopted is not None else None

        def get_cpp_torch_device_options(*args: Any, **kwargs: Any) -> Any:
            device_type = args[0] if args else kwargs.get("device_type")
            if observe is not None:
                observe(device_type)
            frames = this_thread.frames if _state.adopted_once else None
            if frames and _same_device(frames[-1][0], device_type):
                frames[-1][1] = True  # an adopted function above called back: it chains
            if (
                type(device_type) is str
                and device_type in reserved
                and (serves_reserved is None or not serves_reserved(device_type))
            ):  # torch's own devices, which the package never serves: the fast path
                if seen is None or frames is None:
                    return function_below(*args, **kwargs)
                # What the adopted function gives is the answer; whether it chained is
                # only recorded (``_evaluate`` minus the sources, which never serve these),
                # once: a call-back it makes can only mark the frame of a function that
                # called back already, so skipping its own frame changes no report.
                if kwargs and keywords is not None and not keywords.issuperset(kwargs):
                    kwargs = {key: value for key, value in kwargs.items() if key in keywords}
                if seen:
                    return run(*args, **kwargs)
                frame = [device_type, False]
                frames.append(frame)
                try:
                    return run(*args, **kwargs)
                finally:
                    frames.pop()
                    seen.add(frame[1] is True)
            return self._evaluate(state, device_type, args, kwargs)

        get_cpp_torch_device_options.__doc__ = self.function_below.__doc__
        get_cpp_torch_device_options.__wrapped__ = self.function_below  # type: ignore[attr-defined]
        state = _State(adopted, below, get_cpp_torch_device_options, self)
        setattr(get_cpp_torch_device_options, _STATE_MARK, state)
        return state

    def owns(self, value: object) -> bool:
        """Whether ``value`` is an entry of this chain."""
        return self.state_of_entry(value) is not None

    def adopted(self) -> tuple[AdoptedFunction, ...]:
        """The current state's adopted functions, in the order they were assigned."""
        found = []
        state: _State | None = self.current
        while state is not None and state.adopted is not None:
            found.append(AdoptedFunction(state.adopted.description, state.adopted.behaviour))
            state = state.below
        return tuple(reversed(found))

    # --- lookups -------------------------------------------------------------------------

    def _evaluate(self, state: _State, device_type: object, args: Args, kwargs: Kwargs) -> Any:
        adopted = state.adopted
        if adopted is None:
            return self._evaluate_bottom(self._served_device(args, kwargs), args, kwargs)
        frames = this_thread.frames
        frame = [device_type, False]
        frames.append(frame)
        error: Exception | None = None
        try:
            result = adopted(args, kwargs)
        except Exception as caught:
            result, error = None, caught
        finally:
            frames.pop()
        chained = frame[1] is True
        adopted.observe(chained)
        device = None if chained else self._served_device(args, kwargs)
        if device is not None:
            # A replacement for this device: the package's sources come first, and what the
            # replacement gave is the device's default.
            default: Thunk = (
                (lambda: result) if error is None else (lambda: self._below_default(args, kwargs))
            )
            served = self._serve(device, args, kwargs, default)
            if served is not None:
                return served
        if error is not None:
            raise error
        return result

    def _served_device(self, args: Args, kwargs: Kwargs) -> str | None:
        device_type = device_type_of(args, kwargs)
        if type(device_type) is str and device_type in RESERVED_DEVICE_TYPES:
            if self._serves_reserved is None or not self._serves_reserved(device_type):
                return None  # torch's own device, registered nowhere: the common case
            device: str | None = device_type
        else:
            device = _device_name(args, kwargs)
        return None if device is None or device in this_thread.bypassed else device

    def _evaluate_bottom(self, device: str | None, args: Args, kwargs: Kwargs) -> Any:
        if device is not None:
            served = self._serve(device, args, kwargs, lambda: self._below_default(args, kwargs))
            if served is not None:
                return served
        elif this_thread.bypassed:
            return self._below_default(args, kwargs)
        return self.call_below(*args, **kwargs)


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
    original = getattr(type(module), "_inductor_device_options_original_class", type(module))

    def __setattr__(self: ModuleType, name: str, value: object) -> None:
        if name == FUNCTION:
            own = chain_of(self)
            if own is not None and own.adopt(value):
                return
        original.__setattr__(self, name, value)

    adopting = type(
        "AdoptingModule",
        (original,),
        {
            "__setattr__": __setattr__,
            "__module__": __name__,
            "__doc__": AdoptingModule.__doc__,
            _CHAIN_ATTRIBUTE: chain,
            "_inductor_device_options_original_class": original,
        },
    )
    module.__dict__[FUNCTION] = chain.current.entry
    module.__class__ = adopting


class AdoptingModule(ModuleType):
    """``torch._inductor.cpp_builder`` with the hook installed: assigning
    ``get_cpp_torch_device_options`` adopts the function into the hook's chain."""
