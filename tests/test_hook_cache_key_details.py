"""The ``cache_key_details`` door (issue 48), with real compiles of the sample device.

A provider of "sampledev" declares ``cache_key_details``, read from a setting that changes
between compiles (torch_npu's deterministic level is such a setting). With the FX graph and
AOTAutograd caches on, each compile starts from a fresh Dynamo: the same value hits, a new
one misses, in each cache alone (the other one turned off, or already holding the graph)
and in a new process. A cpu graph in the same process keeps torch's exact key, and so does a
"sampledev" graph whose provider answers None. A value that is not JSON or a raising
callable fails the compile, naming the device, the provider and the attribute.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
from support import check_python, shared_test_dir

import inductor_device_options as ido
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import cache_key_details as door
from inductor_device_options.sample import DEVICE_NAME, sdk_cpp_device_options

#: This module's compiles key on it: each test run starts with nothing cached for them.
RUN = uuid.uuid4().hex


@dataclass
class Setting:
    """What the provider's ``cache_key_details`` answers, and whom it was asked for."""

    answer: Callable[[], object] = lambda: None
    asked: list[str] = field(default_factory=list)

    def level(self, level: int) -> None:
        self.answer = lambda: {"deterministic_level": level, "run": RUN}


SETTING = Setting()


def cache_key_details_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> ido.CppDeviceOptions:
    """The sample's options; its ``cache_key_details`` reads ``SETTING``."""
    return sdk_cpp_device_options(device_type, aot_mode, compile_only)


def _cache_key_details(device_type: str) -> object:
    SETTING.asked.append(device_type)
    return SETTING.answer()


cache_key_details_options.cache_key_details = _cache_key_details  # type: ignore[attr-defined]
DESCRIPTION = f"{__name__}.cache_key_details_options"


def pointwise_and_sum(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() * 2 - 1).sum()


@pytest.fixture(scope="module")
def declared() -> Iterator[Setting]:
    """The sample device, served by the declaring provider, with both caches on (torch 2.6
    leaves the AOTAutograd cache off by default)."""
    from inductor_device_options import sample

    sample.setup(shared_test_dir() / "sampledev")
    ido.unregister_cpp_device_options(DEVICE_NAME)  # setup() registers the sample's own
    with (
        ido.testing.registered_cpp_device_options(DEVICE_NAME, cache_key_details_options),
        inductor_config.patch(fx_graph_cache=True),
        functorch_config.patch(enable_autograd_cache=True),
    ):
        yield SETTING
    torch._dynamo.reset()


@dataclass(frozen=True)
class Compile:
    """What one compile found in the caches, and whom the provider was asked for."""

    fx_graph: dict[str, int]
    aot_autograd: dict[str, int]
    asked: list[str]


def compile_with(setting: Setting, device: str, level: int, autograd_cache: bool = True) -> Compile:
    from torch._dynamo.utils import counters

    setting.level(level)
    setting.asked.clear()
    counters.clear()
    torch._dynamo.reset()
    with functorch_config.patch(enable_autograd_cache=autograd_cache):
        result = torch.compile(pointwise_and_sum)(torch.arange(8.0, device=device))
    assert result.device.type == device
    return Compile(
        fx_graph={
            outcome: counters["inductor"][f"fxgraph_cache_{outcome}"]
            for outcome in ("hit", "miss", "bypass")
        },
        aot_autograd={
            outcome: counters["aot_autograd"][f"autograd_cache_{outcome}"]
            for outcome in ("hit", "miss", "bypass")
        },
        asked=list(setting.asked),
    )


HIT = {"hit": 1, "miss": 0, "bypass": 0}
MISS = {"hit": 0, "miss": 1, "bypass": 0}
NOT_LOOKED_UP = {"hit": 0, "miss": 0, "bypass": 0}


@pytest.fixture(scope="module")
def sampledev_compiles(declared: Setting) -> dict[str, Compile]:
    """One real compile (the first); the others find it or its kernels in the caches."""
    return {
        "first": compile_with(declared, DEVICE_NAME, 1),
        "same value": compile_with(declared, DEVICE_NAME, 1),
        "new value, FX graph cache alone": compile_with(declared, DEVICE_NAME, 2, False),
        "same value, FX graph cache alone": compile_with(declared, DEVICE_NAME, 2, False),
        "that value, AOTAutograd's first": compile_with(declared, DEVICE_NAME, 2),
        "the first value again": compile_with(declared, DEVICE_NAME, 1),
    }


# --- a new value misses, the same value hits ------------------------------------------------


def test_the_first_compile_misses_both_caches_asking_once_for_each_key(
    sampledev_compiles: dict[str, Compile],
) -> None:
    first = sampledev_compiles["first"]
    assert (first.fx_graph, first.aot_autograd) == (MISS, MISS)
    assert first.asked == [DEVICE_NAME, DEVICE_NAME]  # the AOTAutograd key, then the FX graph's


def test_the_same_value_hits_after_a_fresh_dynamo(sampledev_compiles: dict[str, Compile]) -> None:
    same = sampledev_compiles["same value"]
    assert (same.fx_graph, same.aot_autograd) == (HIT, HIT)
    assert same.asked == [DEVICE_NAME]  # a hit builds no FX graph key


def test_a_new_value_misses_the_fx_graph_cache_and_then_hits_it(
    sampledev_compiles: dict[str, Compile],
) -> None:
    new = sampledev_compiles["new value, FX graph cache alone"]
    same = sampledev_compiles["same value, FX graph cache alone"]
    assert (new.fx_graph, new.aot_autograd) == (MISS, NOT_LOOKED_UP)
    assert (same.fx_graph, same.aot_autograd) == (HIT, NOT_LOOKED_UP)
    assert new.asked == same.asked == [DEVICE_NAME]


def test_a_new_value_misses_the_aotautograd_cache_that_the_fx_graph_cache_holds(
    sampledev_compiles: dict[str, Compile],
) -> None:
    """The FX graph cache holds the graph of value 2 already: AOTAutograd's miss is its own
    key's doing."""
    new = sampledev_compiles["that value, AOTAutograd's first"]
    assert (new.fx_graph, new.aot_autograd) == (HIT, MISS)


def test_a_value_seen_before_hits_again(sampledev_compiles: dict[str, Compile]) -> None:
    again = sampledev_compiles["the first value again"]
    assert (again.fx_graph, again.aot_autograd) == (HIT, HIT)


def test_a_new_process_hits_with_the_same_value_and_misses_with_a_new_one(
    tmp_path: Path,
) -> None:
    """The key holds nothing of the process: a fresh one finds what another compiled. Both
    are fresh, with a cache of their own: this process's key also holds what its earlier
    tests left (other devices' SDK identities in CacheBase.get_system, say)."""

    def compiled_in_a_new_process(*levels: int) -> list[list[int]]:
        seen = check_python(
            f"""
import json, torch
import torch._functorch.config
import inductor_device_options as ido
from inductor_device_options import sample
from torch._dynamo.utils import counters
sample.setup({str(shared_test_dir() / "sampledev")!r})
ido.unregister_cpp_device_options("sampledev")
torch._functorch.config.enable_autograd_cache = True
level = 1
def options(device_type, aot_mode=False, compile_only=False):
    return sample.sdk_cpp_device_options(device_type, aot_mode, compile_only)
options.cache_key_details = lambda device_type: {{"deterministic_level": level, "run": {RUN!r}}}
ido.register_cpp_device_options("sampledev", options)
found = []
for level in {levels!r}:
    counters.clear()
    torch._dynamo.reset()
    torch.compile(lambda x: (x.sin() * 2 - 1).sum())(torch.arange(8.0, device="sampledev"))
    found.append([counters[cache][name + outcome] for cache, name in
                  (("inductor", "fxgraph_cache_"), ("aot_autograd", "autograd_cache_"))
                  for outcome in ("hit", "miss")])
print(json.dumps(found))
""",
            env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")},
        )
        found: list[list[int]] = json.loads(seen.strip().splitlines()[-1])
        return found

    [first] = compiled_in_a_new_process(1)
    assert first == [0, 1, 0, 1]  # FX graph miss, AOTAutograd miss: a cache of its own
    same, new = compiled_in_a_new_process(1, 3)
    assert same == [1, 0, 1, 0]  # FX graph hit, AOTAutograd hit
    assert new == [0, 1, 0, 1]


# --- a graph with nothing on the device, and None, keep torch's key -------------------------


def fx_graph_key(device: str) -> tuple[str, list[str]]:
    """torch's FX graph key of ``pointwise_and_sum`` traced on ``device``, as Inductor
    computes it (``compiled_fx_graph_hash``), with its debug lines."""
    from torch._inductor import codecache
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.arange(8.0, device=device)
    # Traced through a lambda: make_fx would keep the function's annotations, str under
    # ``from __future__ import annotations``, which the cache's pickler refuses.
    gm = make_fx(lambda x: pointwise_and_sum(x), tracing_mode="fake")(x)
    return codecache.compiled_fx_graph_hash(gm, [x], {}, [])  # type: ignore[no-any-return]


def torchs_own_fx_graph_key(device: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The key with torch's own ``FxGraphHashDetails.__init__``, the door's wrapper gone."""
    from torch._inductor import codecache

    details = codecache.FxGraphHashDetails
    with monkeypatch.context() as patched:
        patched.setattr(details, "__init__", vars(details)["__init__"].__wrapped__)
        return fx_graph_key(device)[0]


def test_a_cpu_graph_keeps_torchs_exact_key_and_never_asks(
    declared: Setting, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared.level(1)
    declared.asked.clear()
    key, lines = fx_graph_key("cpu")
    assert key == torchs_own_fx_graph_key("cpu", monkeypatch)
    assert not any(door.DETAILS_ATTRIBUTE in line for line in lines)
    assert declared.asked == []


def test_a_cpu_compile_in_the_same_process_ignores_the_value(declared: Setting) -> None:
    """Its AOTAutograd and FX graph keys do not move with the value: no provider is asked."""
    compile_with(declared, "cpu", 1)
    second = compile_with(declared, "cpu", 2)
    assert (second.fx_graph, second.aot_autograd) == (HIT, HIT)
    assert second.asked == []


def test_none_keeps_torchs_exact_key(declared: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
    declared.answer = lambda: None
    declared.asked.clear()
    key, lines = fx_graph_key(DEVICE_NAME)
    assert declared.asked == [DEVICE_NAME]
    assert key == torchs_own_fx_graph_key(DEVICE_NAME, monkeypatch)
    assert not any(door.DETAILS_ATTRIBUTE in line for line in lines)


def test_a_value_joins_the_key_as_canonical_json_under_the_device(declared: Setting) -> None:
    declared.answer = lambda: {"b": [1, 2.5], "a": "x"}
    key, lines = fx_graph_key(DEVICE_NAME)
    declared.answer = lambda: {"a": "x", "b": [1, 2.5]}  # the same value, another order
    assert fx_graph_key(DEVICE_NAME)[0] == key
    expected = str(((DEVICE_NAME, '{"a":"x","b":[1,2.5]}'),))
    assert any(line.endswith(f"] {door.DETAILS_ATTRIBUTE}: {expected}") for line in lines), lines


# --- a bad declaration fails the compile, naming the device, the provider and the attribute --


def chain_of(error: BaseException) -> list[BaseException]:
    """``error`` and what it wraps: torch.compile's ``BackendCompilerFailed`` (2.13 and
    later: ``InductorError``) holds Inductor's error as ``inner_exception``."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        inner = getattr(current, "inner_exception", None)
        current = inner if inner is not None else (current.__cause__ or current.__context__)
    return chain


def failed_compile(setting: Setting, answer: Callable[[], object]) -> BaseException:
    setting.answer = answer
    torch._dynamo.reset()
    with pytest.raises(Exception) as raised:
        torch.compile(pointwise_and_sum)(torch.arange(8.0, device=DEVICE_NAME))
    torch._dynamo.reset()
    return raised.value


def test_a_value_that_is_not_json_fails_the_compile_naming_them(declared: Setting) -> None:
    error = failed_compile(declared, lambda: {"deterministic_level": {1, 2}})
    [found] = [
        item for item in chain_of(error) if isinstance(item, ido.InvalidProviderAttributeError)
    ]
    assert (found.device_type, found.description, found.attribute) == (
        DEVICE_NAME,
        DESCRIPTION,
        "cache_key_details",
    )
    message = str(error)  # torch's own message carries the door's
    for said in (repr(DEVICE_NAME), DESCRIPTION, "its cache_key_details gave dict", "JSON"):
        assert said in message


def test_a_raising_callable_fails_the_compile_with_an_error_naming_them(
    declared: Setting,
) -> None:
    def no_level() -> object:
        raise LookupError("the deterministic level is not set")

    error = failed_compile(declared, no_level)
    message = str(error)  # torch's own message carries the door's
    for said in (
        repr(DEVICE_NAME),
        DESCRIPTION,
        "its cache_key_details raised LookupError: the deterministic level is not set",
    ):
        assert said in message
    [found] = [
        item for item in chain_of(error) if isinstance(item, ido.InvalidProviderAttributeError)
    ]
    assert isinstance(found.__cause__, LookupError)
    assert raised_by_provider(found) == DESCRIPTION


# --- installed once, asked once -------------------------------------------------------------


def test_both_details_classes_are_wrapped_once(declared: Setting) -> None:
    from torch._functorch._aot_autograd import autograd_cache
    from torch._inductor import codecache

    assert door.is_installed(codecache)
    inits = [vars(codecache.FxGraphHashDetails)["__init__"]]
    inits.append(vars(autograd_cache.AOTAutogradCacheDetails)["__init__"])
    door.install_into_codecache(codecache)
    door.install(autograd_cache)
    assert vars(codecache.FxGraphHashDetails)["__init__"] is inits[0]
    assert vars(autograd_cache.AOTAutogradCacheDetails)["__init__"] is inits[1]
    assert door.release_gap() is None


def test_a_backends_wrapper_over_the_door_wrapped_again_asks_once(
    declared: Setting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch_npu wraps ``FxGraphHashDetails.__init__``; ``ido.arm()`` then wraps its wrapper."""
    from torch._inductor import codecache

    details = codecache.FxGraphHashDetails
    doors_init = vars(details)["__init__"]

    def backends_init(self: Any, *args: Any, **kwargs: Any) -> None:
        doors_init(self, *args, **kwargs)
        self.backends_own_detail = "its own"

    monkeypatch.setattr(details, "__init__", backends_init)
    door.install_into_codecache(codecache)
    assert vars(details)["__init__"] is not backends_init  # wrapped in turn
    declared.level(7)
    declared.asked.clear()
    _, lines = fx_graph_key(DEVICE_NAME)
    assert declared.asked == [DEVICE_NAME]
    assert any("backends_own_detail" in line for line in lines)
    assert any(door.DETAILS_ATTRIBUTE in line for line in lines)
