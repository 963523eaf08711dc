"""The package's state has one reset, and every cache is within its reach: the caches
``_state.cache`` makes, the functools caches ``_state.cached`` makes, and the Ascend
provider's own (``testing.reset``)."""

from __future__ import annotations

import json

from support import check_python

#: Imports every module of the package in a fresh process, finds every functools cache the
#: package defines (at module level, or a class's attribute), replaces each one's
#: ``cache_clear`` with a recorder, and runs the one reset: what it did not clear, and is
#: not kept on purpose, is out of its reach.
_WALK = """
import functools, importlib, inspect, json, pkgutil

import inductor_device_options as package
from inductor_device_options import _state, testing

found = {}
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    if info.name.endswith(".__main__"):  # runs the command line
        continue
    module = importlib.import_module(info.name)
    for name, value in vars(module).items():
        members = [(name, value)]
        if inspect.isclass(value) and value.__module__ == module.__name__:
            members += [
                (f"{name}.{attribute}", getattr(member, "__func__", member))
                for attribute, member in vars(value).items()
            ]
        for where, member in members:
            if isinstance(member, functools._lru_cache_wrapper) and str(
                getattr(member, "__module__", "")
            ).startswith(package.__name__):
                found.setdefault(id(member), (member, f"{info.name}.{where}"))

cleared = set()
for key, (cache, _) in found.items():
    cache.cache_clear = functools.partial(cleared.add, key)
testing.reset()
kept = {id(cache) for cache, why in _state._function_caches if why}
print(json.dumps({
    "found": len(found),
    "unreached": sorted(where for key, (_, where) in found.items()
                        if key not in cleared and key not in kept),
    "unbounded": sorted(where for cache, where in found.values()
                        if cache.cache_parameters()["maxsize"] is None),
}))
"""


def test_every_functools_cache_is_within_the_one_reset_s_reach() -> None:
    walked = json.loads(check_python(_WALK).splitlines()[-1])
    assert walked["found"] > 0
    assert walked["unreached"] == [], "make it with _state.cached (or add it to ascend.clear_cache)"
    assert walked["unbounded"] == []


def test_the_reset_clears_a_function_s_cache_and_keeps_one_kept_on_purpose() -> None:
    from inductor_device_options import _state

    calls: list[str] = []

    @_state.cached(2)
    def answer(key: str) -> str:
        calls.append(key)
        return key

    @_state.cached(2, kept="a cache its callers clear themselves")
    def kept_answer(key: str) -> str:
        calls.append(f"kept {key}")
        return key

    for _ in range(2):
        answer("a")
        kept_answer("a")
    _state.reset()
    answer("a")
    kept_answer("a")
    assert calls == ["a", "kept a", "a"]
    assert answer.cache_parameters()["maxsize"] == 2
