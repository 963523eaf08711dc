"""A provider's per-device doors as the package reads them: each attribute's values, table by
table, checked the same way wherever a door asks it (the build, the cache key, ``aot_load``,
``show`` and doctor); the error names the device, the provider and the attribute; a raising
callable keeps its type. And where each door is reported: ``list``, ``show``, doctor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import inductor_device_options as ido
from inductor_device_options import _cli as cli
from inductor_device_options._diagnose.checks import Context
from inductor_device_options._diagnose.door_checks import check_provider_doors
from inductor_device_options._hook import provider_doors
from inductor_device_options._hook.sources import found_source
from inductor_device_options._lookup import provider_attributes as attributes
from inductor_device_options.introspection import ProviderDoor, declared_doors

pytestmark = pytest.mark.usefixtures("clean_registry")

DEVICE = "doorsdev"


def provider(**doors: Any) -> Any:
    def doorsdev_options(device_type: str, aot_mode: bool, compile_only: bool) -> Any:
        return ido.default_cpp_device_options(device_type, aot_mode, compile_only)

    for name, value in doors.items():
        setattr(doorsdev_options, name, value)
    return doorsdev_options


def registered(**doors: Any) -> Any:
    function = provider(**doors)
    ido.register_cpp_device_options(DEVICE, function)
    return function


def raises(*args: object) -> object:
    raise LookupError("the SDK's settings file is unreadable")


# --- each attribute's values ------------------------------------------------------------------

REMOVED_CFLAGS = [
    (["march=native"], {"march=native"}),
    (("march=native", "fno-plt"), {"march=native", "fno-plt"}),
    ({"O3"}, {"O3"}),
    ([], set()),
    (lambda device_type: ["march=native"], {"march=native"}),
    (None, set()),
]


@pytest.mark.parametrize(("value", "removed"), REMOVED_CFLAGS)
def test_removed_cflags_read(value: object, removed: set[str]) -> None:
    registered(removed_cflags=value)
    assert provider_doors.removed_cflags(DEVICE) == removed
    assert provider_doors.removed_cflags(f"{DEVICE}:0") == removed


BAD_REMOVED_CFLAGS = [
    ("march=native", "str 'march=native'"),
    (["-march=native"], "'-march=native' is not one"),
    (["march native"], "'march native' is not one"),
    ([""], "'' is not one"),
    ([3], "3 is not one"),
    (7, "int 7"),
    (lambda device_type: "O3", "str 'O3'"),
]


@pytest.mark.parametrize(("value", "said"), BAD_REMOVED_CFLAGS)
def test_bad_removed_cflags_name_device_provider_attribute(value: object, said: str) -> None:
    registered(removed_cflags=value)
    with pytest.raises(ido.InvalidProviderAttributeError) as caught:
        provider_doors.removed_cflags(DEVICE)
    error = caught.value
    assert (error.device_type, error.attribute) == (DEVICE, "removed_cflags")
    assert error.description is not None and error.description.endswith("doorsdev_options")
    assert f"device {DEVICE!r}: its removed_cflags gave" in str(error) and said in str(error)
    assert isinstance(error, ido.InvalidProviderError) and error.fix


SHIM_OPS = [
    ({"aten.histc.default"}, {"aten.histc.default"}),
    (
        ["aten.searchsorted.Tensor", "aten.histc.default"],
        {"aten.searchsorted.Tensor", "aten.histc.default"},
    ),
    ({"aten.histc.default": {}}, {"aten.histc.default"}),  # torch 2.13's dict form
    (lambda device_type: {"aten.histc.default"}, {"aten.histc.default"}),
]


@pytest.mark.parametrize(("value", "ops"), SHIM_OPS)
def test_shim_ops_read(value: object, ops: set[str]) -> None:
    registered(aoti_shim_ops=value)
    assert provider_doors.shim_ops(DEVICE) == ops


@pytest.mark.parametrize(
    "value",
    [
        "aten.histc.default",
        ["histc"],
        ["aten.histc"],
        ["aten.histc.default.x"],
        ["torch.histc.default"],
        [None],
    ],
)
def test_bad_shim_ops(value: object) -> None:
    registered(aoti_shim_ops=value)
    with pytest.raises(ido.InvalidProviderAttributeError, match="its aoti_shim_ops gave"):
        provider_doors.shim_ops(DEVICE)


@pytest.mark.parametrize(
    ("op", "name"),
    [
        ("aten.histc.default", "aoti_torch_doorsdev_histc"),
        ("aten.searchsorted.Tensor", "aoti_torch_doorsdev_searchsorted_Tensor"),
        ("aten.mm.out", "aoti_torch_doorsdev_mm_out"),
    ],
)
def test_shim_names_follow_torch(op: str, name: str) -> None:
    assert attributes.shim_name(DEVICE, op) == name


def test_headers_read_per_mode() -> None:
    registered(
        inductor_headers=lambda device_type, aot_mode: [
            f"{device_type}/{'aot' if aot_mode else 'jit'}.h"
        ]
    )
    assert provider_doors.headers(DEVICE, False) == ("doorsdev/jit.h",)
    assert provider_doors.headers(DEVICE, True) == ("doorsdev/aot.h",)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (["a.h"], "list ['a.h'], not a callable"),
        (lambda device_type, aot_mode: [], "at least one header name"),
        (lambda device_type, aot_mode: "a.h", "str 'a.h'"),
        (lambda device_type, aot_mode: ["<a.h>"], "'<a.h>' is not one"),
        (lambda device_type, aot_mode: ["a b.h"], "'a b.h' is not one"),
    ],
)
def test_bad_headers(value: object, said: str) -> None:
    registered(inductor_headers=value)
    with pytest.raises(ido.InvalidProviderAttributeError) as caught:
        provider_doors.headers(DEVICE, False)
    assert caught.value.attribute == "inductor_headers" and said in str(caught.value)


DETAILS = [
    ({"level": 1}, '{"level":1}'),
    ({"b": [1, 2.5, None, True], "a": "x"}, '{"a":"x","b":[1,2.5,null,true]}'),
    ("fast", '"fast"'),
    (0, "0"),
    (None, None),
]


@pytest.mark.parametrize(("value", "text"), DETAILS)
def test_cache_key_details_become_canonical_json(value: object, text: str | None) -> None:
    registered(cache_key_details=lambda device_type: value)
    assert provider_doors.cache_key_detail(DEVICE) == text


@pytest.mark.parametrize(
    "value", [{"level": {1, 2}}, {1: "int key"}, float("nan"), object(), b"bytes"]
)
def test_cache_key_details_that_cannot_be_serialised(value: object) -> None:
    registered(cache_key_details=lambda device_type: value)
    with pytest.raises(ido.InvalidProviderAttributeError) as caught:
        provider_doors.cache_key_detail(DEVICE)
    assert caught.value.attribute == "cache_key_details"
    assert "not a JSON-serialisable value or None" in str(caught.value)
    assert caught.value.value is value


class Runner:
    def run(self, flat_inputs: list[object]) -> list[object]:
        return flat_inputs

    def get_call_spec(self) -> list[str]:
        return ["", ""]


def test_runner_gets_the_device_as_given() -> None:
    asked = []

    def runner(so_path: str, device: str) -> Runner:
        asked.append((so_path, device))
        return Runner()

    registered(aoti_runner=runner)
    assert isinstance(provider_doors.runner("/m.so", f"{DEVICE}:0"), Runner)
    assert asked == [("/m.so", f"{DEVICE}:0")]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (Runner(), "not a callable"),
        (lambda so_path, device: object(), "it lacks run() and get_call_spec()"),
        (
            lambda so_path, device: type("R", (), {"run": lambda self, i: i})(),
            "it lacks get_call_spec()",
        ),
    ],
)
def test_bad_runners(value: object, said: str) -> None:
    registered(aoti_runner=value)
    with pytest.raises(ido.InvalidProviderAttributeError, match="its aoti_runner gave") as caught:
        provider_doors.runner("/m.so", DEVICE)
    assert said in str(caught.value)


@pytest.mark.parametrize(
    ("name", "ask"),
    [
        ("removed_cflags", lambda: provider_doors.removed_cflags(DEVICE)),
        ("aoti_shim_ops", lambda: provider_doors.shim_ops(DEVICE)),
        ("inductor_headers", lambda: provider_doors.headers(DEVICE, True)),
        ("cache_key_details", lambda: provider_doors.cache_key_detail(DEVICE)),
        ("aoti_runner", lambda: provider_doors.runner("/m.so", DEVICE)),
    ],
)
def test_a_raising_door_is_an_error_naming_it_caused_by_what_it_raised(name: str, ask: Any) -> None:
    """Its message names the door, as torch's BackendCompilerFailed keeps a message alone."""
    registered(**{name: raises})
    with pytest.raises(ido.InvalidProviderAttributeError) as caught:
        ask()
    error = caught.value
    assert (error.device_type, error.attribute) == (DEVICE, name)
    assert isinstance(error.__cause__, LookupError)
    assert str(error).startswith(
        f"the C++ options provider {error.description} for device {DEVICE!r}: its {name} "
        "raised LookupError: the SDK's settings file is unreadable"
    )
    assert ido._errors.raised_by_provider(error) == error.description


def test_a_raising_sdk_identity_raises_as_the_provider_does() -> None:
    """Asked at each lookup, as the provider is: its own exception, with a note."""
    registered(sdk_identity=raises)
    with pytest.raises(LookupError, match="unreadable") as caught:
        ido.get_cpp_device_options(DEVICE)
    assert ido._errors.raised_by_provider(caught.value).endswith("doorsdev_options")  # type: ignore[union-attr]


# --- who is asked -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "cuda", "xpu", "mps", "cpu:0", "cuda:1"])
def test_torch_s_own_devices_have_no_doors(device: str) -> None:
    assert provider_doors.door_source(device) is None
    assert provider_doors.removed_cflags(device) == frozenset()
    assert provider_doors.headers(device, True) is None
    assert provider_doors.runner("/m.so", device) is None


def test_an_unserved_device_and_torch_s_doors_have_none(tmp_path: Path) -> None:
    assert provider_doors.door_source("nobodydev") is None
    import torch._inductor.cpp_builder as cpp_builder

    function = provider(removed_cflags=["march=native"])
    cpp_builder.register_cpp_device_options(DEVICE, function)  # type: ignore[attr-defined]
    try:
        # torch's registry behaves as torch defines it: no attributes.
        assert provider_doors.removed_cflags(DEVICE) == frozenset()
    finally:
        cpp_builder._cpp_device_options_registry.pop(DEVICE, None)  # type: ignore[attr-defined]


def test_a_bundled_provider_is_a_fallback_whose_doors_never_act() -> None:
    """The Ascend provider declares inductor_headers for doctor: torch_npu's codegen includes
    what it includes, whatever the package bundles."""
    from inductor_device_options import ascend

    source = ido.introspection.device_options_source("npu")
    assert (source.kind, source.fallback) == ("entry point", True)
    assert ascend.cpp_device_options.inductor_headers("npu", False)  # type: ignore[attr-defined]
    assert provider_doors.door_source("npu") is None
    assert provider_doors.headers("npu", False) is None
    assert declared_doors("npu") == {}


def test_attributes_are_read_at_call_time() -> None:
    function = registered(removed_cflags=["march=native"])
    assert provider_doors.removed_cflags(DEVICE) == {"march=native"}
    function.removed_cflags = ["fno-plt"]
    assert provider_doors.removed_cflags(DEVICE) == {"fno-plt"}
    del function.removed_cflags
    assert provider_doors.removed_cflags(DEVICE) == frozenset()


# --- where they are reported ------------------------------------------------------------------


def test_provider_doors_report_every_door_on_this_torch() -> None:
    doors = ido.introspection.provider_doors()
    assert all(isinstance(door, ProviderDoor) for door in doors)
    assert [door.name for door in doors] == [
        "removed_cflags",
        "aoti_shim_ops",
        "inductor_headers",
        "cache_key_details",
        "aoti_runner",
    ]
    assert {door.status for door in doors} <= {"acts", "acts in part"}


def test_the_page_gives_this_torch_s_status_of_every_door() -> None:
    """docs/_shared/provider-doors-releases.md's table: the running torch's column, where it
    has one, is what ``list`` reports, door by door, and it lists every door."""
    import torch

    page = Path(__file__).parents[1] / "docs" / "_shared" / "provider-doors-releases.md"
    rows = [
        [cell.strip(" `") for cell in line.strip("|").split("|")]
        for line in page.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]
    header, body = rows[0], rows[1:]
    statuses = {door.name: door.status for door in ido.introspection.provider_doors()}
    assert [row[0] for row in body] == list(statuses)
    release = "torch " + ".".join(torch.__version__.split(".")[:2])
    if release not in header:
        pytest.skip(f"the page has no column for {release}")
    column = header.index(release)
    assert {row[0]: row[column] for row in body} == statuses


def test_declared_doors_list_what_the_provider_declares() -> None:
    registered(
        removed_cflags=["march=native"],
        aoti_shim_ops={"aten.histc.default"},
        cache_key_details=lambda device_type: {"level": 2},
        aoti_runner=lambda so_path, device: Runner(),
    )
    declared = declared_doors(DEVICE)
    assert declared.pop("aoti_runner").endswith("<locals>.<lambda>")
    assert declared == {
        "removed_cflags": "['march=native']",
        "aoti_shim_ops": "aten.histc.default (aoti_torch_doorsdev_histc)",
        "cache_key_details": 'now {"level":2}',
    }
    assert declared_doors("cpu") == {}


def test_list_and_show_give_the_doors_in_json_and_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    registered(removed_cflags=["march=native"])
    expected = [door._asdict() for door in ido.introspection.provider_doors()]
    assert cli.main(["list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["provider_doors"] == expected
    assert cli.main(["show", DEVICE, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["provider_doors"] == expected
    assert document["declared_doors"] == {"removed_cflags": "['march=native']"}
    assert cli.main(["show", DEVICE]) == 0
    text = capsys.readouterr().out
    assert "per-device doors the provider declares:\n  removed_cflags: ['march=native']" in text
    assert "a provider's per-device doors:" in text


def doors_check(tmp_path: Path) -> Any:
    context = Context(found_source(DEVICE), False, tmp_path)
    context.options = ido.get_cpp_device_options(DEVICE)  # what the options check computed
    return check_provider_doors(context)


def test_doctor_passes_declared_doors_saying_what_they_give(tmp_path: Path) -> None:
    registered(removed_cflags=["march=native"], cache_key_details=lambda device_type: "x")
    done = doors_check(tmp_path)
    assert done.status in ("pass", "warn")
    assert "removed_cflags ['march=native']" in done.summary
    assert 'cache_key_details now "x"' in done.summary


def test_doctor_passes_a_provider_without_doors(tmp_path: Path) -> None:
    registered()
    assert (doors_check(tmp_path).status, doors_check(tmp_path).summary) == (
        "pass",
        "none declared",
    )


@pytest.mark.parametrize(
    ("doors", "said"),
    [
        ({"aoti_runner": "not callable"}, "aoti_runner cannot be used"),
        (
            {"cache_key_details": lambda device_type: {"a": object()}},
            "cache_key_details cannot be used",
        ),
        ({"cache_key_details": raises}, "cache_key_details cannot be used: the C++ options"),
        ({"removed_cflags": "march=native"}, "removed_cflags cannot be used"),
    ],
)
def test_doctor_fails_a_door_that_cannot_be_used(
    tmp_path: Path, doors: dict[str, Any], said: str
) -> None:
    registered(**doors)
    done = doors_check(tmp_path)
    assert done.status == "fail"
    [problem] = done.problems
    assert problem.cause.startswith(f"the provider's {said}")
    assert problem.fix
