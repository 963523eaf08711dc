"""Where an exception was raised, read off its traceback: the function that raised it, the
object it was a method of, and its caller, so that doctor names the cause and a fix for that
function. For a failure whose message says nothing: a ``NotImplementedError`` with no
message, wrapped by Inductor as ``InductorError: NotImplementedError:``.

Recorded in the fresh Python of ``doctor --compile`` (:func:`raised_in`, as JSON) and
worded where it is judged (:func:`bare_cause`, :func:`bare_fix`).
"""

from __future__ import annotations

import os
from types import FrameType, TracebackType
from typing import Any

Json = dict[str, Any]


def root_error(error: BaseException) -> BaseException:
    """The exception Inductor wrapped (``InductorError.inner_exception``, or the cause)."""
    # torch._inductor.exc.InductorError (2.13, 2.15) and torch._dynamo.exc.BackendCompilerFailed
    # (2.6 on) keep the wrapped exception in .inner_exception. ``seen``: a cycle of causes.
    seen = {id(error)}
    while True:
        inner = getattr(error, "inner_exception", None) or error.__cause__
        if not isinstance(inner, BaseException) or id(inner) in seen:
            return error
        seen.add(id(inner))
        error = inner


def raised_in(error: BaseException) -> Json | None:
    """Where the exception at the root of ``error`` was raised: ``function`` (qualified
    name), ``module``, ``location`` (file:line), ``instance_class`` (the class of ``self``
    there, module.qualname), ``caller`` (the calling function), ``bare`` (no message)."""
    root = root_error(error)
    frames = _frames(root.__traceback__) or _frames(error.__traceback__)
    if not frames:
        return None
    frame, line = frames[-1]
    caller = _qualname(frames[-2][0]) if len(frames) > 1 else None
    instance = frame.f_locals.get("self")
    instance_class = None
    if instance is not None:
        kind = type(instance)
        instance_class = f"{kind.__module__}.{kind.__qualname__}"
    return {
        "function": _qualname(frame),
        "module": frame.f_globals.get("__name__", ""),
        "location": f"{frame.f_code.co_filename}:{line}",
        "instance_class": instance_class,
        "caller": caller,
        "type": type(root).__name__,
        "bare": not str(root).strip(),
    }


def _frames(traceback: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while traceback is not None:
        frames.append((traceback.tb_frame, traceback.tb_lineno))
        traceback = traceback.tb_next
    return frames


def _qualname(frame: FrameType) -> str:
    """The function's qualified name (Python 3.10 has no ``co_qualname``: the class of
    ``self`` or ``cls`` that defines the code is looked up)."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", None)
    if isinstance(qualname, str):
        return qualname
    owner = frame.f_locals.get("self", frame.f_locals.get("cls"))
    if owner is not None:
        for kind in type(owner).__mro__ if not isinstance(owner, type) else owner.__mro__:
            method = kind.__dict__.get(code.co_name)
            if getattr(method, "__code__", None) is code:
                return f"{kind.__qualname__}.{code.co_name}"
    return code.co_name


def bare_cause(place: Json) -> str:
    """``TYPE with no message, raised in F (file:line), called from C``."""
    where = f"{place['function']} ({_short(place['location'])})"
    instance = place.get("instance_class")
    owner = str(place["function"]).rpartition(".")[0]
    if instance and owner and not str(instance).endswith(f".{owner}"):
        where += f", which {instance} inherits"
    caller = f", called from {place['caller']}" if place.get("caller") else ""
    return f"{place['type']} with no message, raised in {where}{caller}"


def bare_fix(place: Json) -> str:
    """A fix for the function that raised: define the method a torch base class leaves
    unimplemented on the object's own class, else fix that function."""
    from .overrides_checks import method_fix

    function, instance = str(place["function"]), place.get("instance_class")
    owner, _, method = function.rpartition(".")
    inherited = bool(instance and owner and not str(instance).endswith(f".{owner}"))
    if place["type"] == "NotImplementedError" and inherited:
        if owner == "DeviceOpOverrides":
            return method_fix(str(instance), method)
        return (
            f"define {method}() on {instance}: it inherits {function} from "
            f"{place['module']}, which raises NotImplementedError"
        )
    location = _short(str(place["location"]))
    return f"fix {function} ({location}): it raises {place['type']} and says nothing"


def _short(location: str) -> str:
    """``file:line`` with the file relative to its site-packages, where it is in one."""
    marker = f"{os.sep}site-packages{os.sep}"
    return location.partition(marker)[2] if marker in location else location
