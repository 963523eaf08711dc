"""CppDeviceOptions validation: every rule, table-driven. Pure Python, no torch."""

from __future__ import annotations

import shlex

import pytest

from inductor_device_options import CppDeviceOptions, InvalidCppDeviceOptionsError
from inductor_device_options._options import FIELDS, validate_cpp_device_options, value_problem


def _with(field: str, value: object) -> tuple[list[object], ...]:
    lists: list[list[object]] = [[] for _ in FIELDS]
    lists[FIELDS.index(field)] = [value]
    return tuple(lists)


ACCEPTED = [
    ("definitions", "USE_NPU"),
    ("definitions", "BUILD_LIBTORCH=ON"),
    ("definitions", " USE_CUDA"),  # torch's own style: -D then the next word
    ("include_dirs", "/opt/my sdk/include"),  # quoted by Inductor
    ("include_dirs", "/opt/it's/include"),
    ("cflags", "Wno-unused-function"),
    ("cflags", "std=c++17"),
    ("ldflags", "Wl,--no-as-needed"),
    ("ldflags", "Wl,-rpath,/opt/sdk/lib64"),
    ("libraries_dirs", "/usr/local/Ascend/cann/lib64"),
    ("libraries", "ascendcl"),
    ("libraries", ":libacl_rt.so.1"),
    ("libraries", "stdc++"),
    ("passthrough_args", "-DBUILD_LIBTORCH=ON -Wno-unused-function"),
    ("passthrough_args", "-Wl,-Bstatic -lcudart_static -Wl,-Bdynamic"),
    ("passthrough_args", "-DNAME='\"quoted value\"'"),
    ("passthrough_args", ""),
]


@pytest.mark.parametrize(("field", "value"), ACCEPTED)
def test_accepted_values(field: str, value: str) -> None:
    assert value_problem(field, value) is None
    options = validate_cpp_device_options(_with(field, value), device_type="npu", provider="p")
    assert getattr(options, field) == [value]


REJECTED = [
    # (field, value, words of the reason)
    ("definitions", "FOO=a b", "whitespace"),
    ("definitions", 'FOO="x"', "quote"),
    ("definitions", "-DUSE_NPU", "Inductor adds '-D'"),
    ("definitions", "USE\tNPU", "whitespace"),
    ("definitions", "", "is empty"),
    ("cflags", "-O2", "write 'O2'"),
    ("cflags", "O2 -g", "whitespace"),
    ("ldflags", "-Wl,--as-needed", "write 'Wl,--as-needed'"),
    ("ldflags", "Wl,-rpath,/my dir", "whitespace"),
    ("libraries_dirs", "/opt/my sdk/lib", "whitespace"),
    ("libraries_dirs", "C:\\sdk", "backslash"),
    ("libraries", "-lascendcl", "write 'ascendcl'"),
    ("libraries", "lib ascendcl", "whitespace"),
    ("libraries", "libascendcl.so", "write 'ascendcl'"),
    ("libraries", "libfoo.so.1", "':libfoo.so.1'"),
    ("libraries", "  ", "is empty"),
    ("include_dirs", "/opt/sdk\n/include", "newline or NUL"),
    ("include_dirs", "", "is empty"),
    ("include_dirs", "/opt/sdk\x00", "newline or NUL"),
    ("passthrough_args", "-DX=1\n-DY=2", "newline or NUL"),
    ("passthrough_args", "-DX='unbalanced", "cannot be split"),
    ("libraries", "m\r", "newline or NUL"),
]


@pytest.mark.parametrize(("field", "value", "reason"), REJECTED)
def test_rejected_values_name_device_provider_field_and_value(
    field: str, value: str, reason: str
) -> None:
    with pytest.raises(InvalidCppDeviceOptionsError) as caught:
        validate_cpp_device_options(
            _with(field, value), device_type="npu", provider="torch_npu.options"
        )
    error = caught.value
    message = str(error)
    assert message.startswith("C++ options for device 'npu' from torch_npu.options: ")
    assert f"{field}[0] = {value!r}" in message
    assert reason in message
    assert (error.device_type, error.provider, error.field, error.value) == (
        "npu",
        "torch_npu.options",
        field,
        value,
    )


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, v in ACCEPTED if f != "include_dirs"])
def test_accepted_unquoted_values_survive_the_command_line_split(field: str, value: str) -> None:
    """What the validator accepts is what g++ receives after CppBuilder's shlex.split."""
    rendered = {
        "definitions": f"-D {value}",
        "cflags": f"-{value}",
        "ldflags": f"-{value}",
        "libraries_dirs": f"-L{value}",
        "libraries": f"-l{value}",
        "passthrough_args": value,
    }[field]
    words = shlex.split(rendered)
    if field == "definitions":
        assert words == ["-D", value.strip()]
    elif field == "passthrough_args":
        assert words == shlex.split(value)
    else:
        assert words == [rendered]


MALFORMED = [
    (None, "got NoneType"),
    ("USE_NPU", "got str"),
    ((["a"],) * 6, "of length 6"),
    ((["a"],) * 8, "of length 8"),
    ((["USE_NPU"], "/inc", [], [], [], [], []), "include_dirs is a str, not a list"),
    (([], [], [], [], [], {"ascendcl"}, []), "libraries is a set, not a list"),
    (([], [], [], [], [], [b"ascendcl"], []), "libraries[0] is a bytes"),
    (([], [1], [], [], [], [], []), "include_dirs[0] is a int (1), not a str"),
]


@pytest.mark.parametrize(("result", "detail"), MALFORMED)
def test_results_that_are_not_seven_lists_of_str(result: object, detail: str) -> None:
    with pytest.raises(InvalidCppDeviceOptionsError, match="device 'npu' from cb") as caught:
        validate_cpp_device_options(result, device_type="npu", provider="cb")
    assert detail in str(caught.value)
    assert "expected CppDeviceOptions or a 7-tuple of lists of str" in str(caught.value)


def test_named_tuple_plain_tuple_and_tuples_of_str_are_all_accepted() -> None:
    lists = (["USE_NPU"], ["/inc"], [], [], ["/lib"], ["ascendcl"], ["-Wno-x"])
    expected = CppDeviceOptions(*(list(values) for values in lists))
    assert validate_cpp_device_options(lists, device_type="npu", provider="p") == expected
    assert validate_cpp_device_options(list(lists), device_type="npu", provider="p") == expected
    as_tuples = tuple(tuple(values) for values in lists)
    assert validate_cpp_device_options(as_tuples, device_type="npu", provider="p") == expected
    assert validate_cpp_device_options(expected, device_type="npu", provider="p") == expected


def test_validated_options_do_not_share_lists_with_the_provider() -> None:
    provided = CppDeviceOptions(["USE_NPU"], [], [], [], [], [], [])
    options = validate_cpp_device_options(provided, device_type="npu", provider="p")
    options.definitions.append("OTHER")
    assert provided.definitions == ["USE_NPU"]
    plain = options.as_tuple()
    plain[0].append("THIRD")
    assert options.definitions == ["USE_NPU", "OTHER"]
