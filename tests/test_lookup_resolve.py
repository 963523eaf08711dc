"""The pipeline provider -> validation -> custom_op_libs -> fresh: re-entry, threads, and each
value checked once."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from torch._inductor.cpp_builder import CppTorchDeviceOptions

import inductor_device_options as ido
from inductor_device_options import testing
from inductor_device_options._options import rules
from inductor_device_options._options.identity import IDENTITY_DEFINITION
from inductor_device_options._options.model import FIELDS

pytestmark = pytest.mark.usefixtures("clean_registry")


def asks_for_itself(device_type: str, aot_mode: bool, compile_only: bool) -> object:
    # The mistake: the function Inductor calls, instead of default_cpp_device_options.
    return ido.get_cpp_device_options(device_type, aot_mode, compile_only)


def builds_options_for_itself(device_type: str, aot_mode: bool, compile_only: bool) -> object:
    options = CppTorchDeviceOptions(device_type=device_type, aot_mode=aot_mode)
    return ([*options.get_definitions()], [], [], [], [], [], [])


@pytest.mark.parametrize("provider", [asks_for_itself, builds_options_for_itself])
def test_a_provider_asking_for_its_own_device_gets_one_clear_error(provider: object) -> None:
    ido.register_cpp_device_options("loopdev", provider)  # type: ignore[arg-type]
    with pytest.raises(ido.ProviderRecursionError) as caught:
        ido.get_cpp_device_options("loopdev")
    error = caught.value
    assert isinstance(error, RecursionError)
    assert error.device_type == "loopdev"
    assert error.description == f"test_lookup_resolve.{provider.__name__}"  # type: ignore[attr-defined]
    assert str(error).startswith(
        f"the C++ options provider test_lookup_resolve.{provider.__name__} for device 'loopdev' "  # type: ignore[attr-defined]
        "asked for the C++ options of 'loopdev' itself"
    )
    assert "default_cpp_device_options(device_type, aot_mode, compile_only)" in str(error)
    assert len(getattr(error, "__notes__", [])) <= 1  # not one note per level
    # Nothing is left half-done: the next lookup of another device works.
    ido.register_cpp_device_options("okdev", lambda d, a, c: (["OK"], [], [], [], [], [], []))
    assert ido.get_cpp_device_options("okdev").definitions[0] == "OK"


def test_a_provider_may_ask_for_another_device() -> None:
    ido.register_cpp_device_options("basedev", lambda d, a, c: (["BASE"], [], [], [], [], [], []))

    def derived(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.get_cpp_device_options("basedev", aot_mode, compile_only)
        return options._replace(definitions=["DERIVED"])

    ido.register_cpp_device_options("deriveddev", derived)
    assert ido.get_cpp_device_options("deriveddev").definitions == ["DERIVED"]


def test_the_same_device_in_two_threads_at_once_is_no_recursion() -> None:
    both_inside = threading.Barrier(2, timeout=30)

    def slow(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
        both_inside.wait()  # each thread is inside the provider when the other asks
        time.sleep(0.01)
        return (["SLOW"], [], [], [], [], [], [])

    ido.register_cpp_device_options("slowdev", slow)
    results: list[object] = []

    def lookup() -> None:
        try:
            results.append(ido.get_cpp_device_options("slowdev").definitions)
        except BaseException as error:  # collected and checked in the main thread
            results.append(error)

    threads = [threading.Thread(target=lookup) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == [["SLOW"], ["SLOW"]]


def test_each_value_is_checked_once_per_uncached_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules see each value once per lookup the cache does not serve: what the provider
    returned, then only what the pipeline made new (here the SDK identity); a lookup the
    cache serves checks nothing again."""
    include = tmp_path / "include"
    include.mkdir()
    (include / "checkdev.h").write_text("#define CHECKDEV 1\n")
    provided = (
        ["USE_CHECKDEV", "LEVEL=2"],
        [os.path.realpath(include)],  # real already: the fresh step keeps it
        ["Wno-unused-function"],
        ["Wl,--as-needed"],
        [os.path.realpath(tmp_path)],
        ["m"],
        ["-Wno-unused-variable"],
    )
    checked: Counter[tuple[str, str]] = Counter()
    rule = rules.rule_cause

    def counted_rule(field: str, value: str) -> str | None:
        checked[(field, value)] += 1
        return rule(field, value)

    monkeypatch.setattr(rules, "rule_cause", counted_rule)
    testing.reset()  # nothing finished before: this lookup runs every step
    ido.register_cpp_device_options("checkdev", lambda d, a, c: provided)
    options = ido.get_cpp_device_options("checkdev")
    final = Counter(
        (field, value) for field, values in zip(FIELDS, options, strict=True) for value in values
    )
    assert any(value.startswith(IDENTITY_DEFINITION) for value in options.definitions)
    assert checked == final  # every value once, none twice
    checked.clear()
    assert ido.get_cpp_device_options("checkdev") == options
    assert not checked  # served by the cache
