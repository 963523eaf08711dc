"""CppDeviceOptions validation: every rule, table-driven; what depends on how torch renders
a field, against the running CppBuilder."""

from __future__ import annotations

import random
import shlex
from collections import Counter

import pytest
from support import cpp_builder_keeps_whole

from inductor_device_options import CppDeviceOptions, InvalidCppDeviceOptionsError
from inductor_device_options._options.model import FIELDS
from inductor_device_options._options.pipeline import finish
from inductor_device_options._options.rules import rule_cause, rule_problems, snapshot


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
    assert rule_cause(field, value) is None
    options = snapshot(_with(field, value), device_type="npu", description="p")
    assert rule_problems(options) == []
    assert getattr(options, field) == [value]


# (field, value, words of the reason): rules that hold whatever torch's rendering.
REJECTED = [
    ("definitions", "", "is empty"),
    ("libraries_dirs", "C:\\sdk", "is relative"),
    ("libraries_dirs", "lib64", "is relative"),
    ("include_dirs", "./include", "is relative"),
    ("libraries", "-lascendcl", "write 'ascendcl'"),
    ("libraries", "libascendcl.so", "write 'ascendcl'"),
    ("libraries", "libfoo.so.1", "':libfoo.so.1'"),
    ("libraries", "  ", "is empty"),
    ("include_dirs", "/opt/sdk\n/include", "newline or NUL"),
    ("include_dirs", "", "is empty"),
    ("include_dirs", "/opt/sdk\x00", "newline or NUL"),
    ("passthrough_args", "-DX=1\n-DY=2", "newline or NUL"),
    ("passthrough_args", "-DX='unbalanced", "cannot be split"),
    ("passthrough_args", "-O2 @/tmp/response", "response file"),
    ("libraries", "m\r", "newline or NUL"),
]


@pytest.mark.parametrize(("field", "value", "reason"), REJECTED)
def test_rejected_values_name_device_provider_field_and_value(
    field: str, value: str, reason: str
) -> None:
    with pytest.raises(InvalidCppDeviceOptionsError) as caught:
        finish(_with(field, value), device_type="npu", description="torch_npu.options")
    error = caught.value
    message = str(error)
    assert message.startswith("C++ options for device 'npu' from torch_npu.options: ")
    assert f"{field}[0] = {value!r}" in message
    assert reason in message
    assert (error.device_type, error.description, error.field, error.value) == (
        "npu",
        "torch_npu.options",
        field,
        value,
    )


# Whether g++ takes a definition, a flag (one that holds the dash Inductor adds, or any
# other) or a passthrough arg is the compiler's to say: asked, never guessed.
# (field, value, what the package says about it.)
COMPILER_DECIDES = [
    ("definitions", "MAX2(a,b)=((a)>(b)?(a):(b))", None),  # function-like: g++ takes it
    ("definitions", "LOG(...)=__VA_ARGS__", None),
    ("definitions", "FOO-BAR", None),  # g++ warns, and defines FOO as -BAR 1
    ("definitions", "FOO=a//b", None),
    ("cflags", "-std=c++17", None),  # rendered --std=c++17: an alias g++ knows
    ("ldflags", "-shared", None),  # --shared, likewise
    ("definitions", "-DUSE_NPU", "Inductor adds '-D' itself: write 'USE_NPU'?"),
    ("definitions", "-fplugin=x", ""),
    ("definitions", "1X", ""),
    ("definitions", "F(x", ""),
    ("definitions", "F(x,x)=x", ""),
    ("definitions", "FOO=/*", ""),
    ("definitions", "defined", ""),
    ("cflags", "-O2", "Inductor adds '-' itself: write 'O2'?"),
    ("ldflags", "-Wl,--as-needed", "Inductor adds '-' itself: write 'Wl,--as-needed'?"),
    ("cflags", "Wbogus-flag", ""),  # no dash of its own, and still no option of g++'s
    ("cflags", "O2x", ""),
    ("ldflags", "@/opt/sdk/flags.rsp", ""),  # -@...: not a response file, an unknown option
    ("passthrough_args", "-Wbogus-flag", ""),
    ("passthrough_args", "-Wno-unused-function -Wl,-z,now", None),
]


def compiler_error(words: list[str]) -> str | None:
    """What the compiler Inductor runs says of ``words`` on an empty C++ source."""
    import os
    import subprocess

    from torch._inductor.cpp_builder import get_cpp_compiler

    finished = subprocess.run(
        [get_cpp_compiler(), "-E", "-x", "c++", os.devnull, "-o", os.devnull, *words],
        capture_output=True,
        text=True,
        check=False,
    )
    if finished.returncode == 0:
        return None
    return next(line.strip() for line in finished.stderr.splitlines() if "error" in line)


@pytest.mark.parametrize(("field", "value", "hint"), COMPILER_DECIDES)
def test_the_compiler_decides_which_definitions_and_flags_it_takes(
    field: str, value: str, hint: str | None
) -> None:
    words = inserted_arguments(field, value)
    error = compiler_error(words)
    assert (error is None) == (hint is None), (words, error)  # the table says what g++ does
    if error is None:
        final = finish(_with(field, value), device_type="npu", description="torch_npu.options")
        assert getattr(final, field)[:1] == [value]
        return
    with pytest.raises(InvalidCppDeviceOptionsError) as caught:
        finish(_with(field, value), device_type="npu", description="torch_npu.options")
    message = str(caught.value)
    assert (
        f"npu' from torch_npu.options: {field}[0] = {value!r} reaches g++ as {words!r}" in message
    )
    assert error in message  # the compiler's own words
    assert hint in message


# What depends on how the running torch renders a field (torch 2.13: only include dirs are
# quoted, 2.15 library dirs too; test_options_injection.py runs torch's CppBuilder as 2.6 renders
# include dirs).
NOT_ONE_WORD = [
    ("definitions", "FOO=a b", "reaches g++ as ['-D', 'FOO=a', 'b'] instead of ['-D', 'FOO=a b']"),
    ("definitions", 'FOO="x"', """reaches g++ as ['-D', 'FOO=x'] instead of ['-D', 'FOO="x"']"""),
    ("cflags", "O2 -g", "reaches g++ as ['-O2', '-g'] instead of ['-O2 -g']"),
    ("ldflags", "Wl,-rpath,/my dir", "renders ldflags as -{value} (not quoted)"),
    ("libraries_dirs", "/opt/my sdk/lib", "renders libraries_dirs as -L{value} (not quoted)"),
    ("libraries_dirs", "/opt/sdk\\lib", "instead of ['-L/opt/sdk\\\\lib']"),
    ("libraries_dirs", "/opt/it's", "cannot be split into compiler arguments (No closing"),
    ("libraries", "lib ascendcl", "reaches g++ as ['-llib', 'ascendcl']"),
    ("passthrough_args", "-Wall \\", "cannot be split"),
]


@pytest.mark.parametrize(("field", "value", "reason"), NOT_ONE_WORD)
def test_values_the_running_cppbuilder_would_split_or_alter_are_refused(
    field: str, value: str, reason: str
) -> None:
    if field == "libraries_dirs" and cpp_builder_keeps_whole(field):  # torch 2.15 quotes -L
        final = finish(_with(field, value), device_type="npu", description="torch_npu.options")
        assert getattr(final, field) == [value]
        assert inserted_arguments(field, value) == ["-L" + value]
        return
    with pytest.raises(InvalidCppDeviceOptionsError) as caught:
        finish(_with(field, value), device_type="npu", description="torch_npu.options")
    message = str(caught.value)
    assert f"npu' from torch_npu.options: {field}[0] = {value!r} " in message
    assert reason in message
    if field != "passthrough_args":
        assert "no whitespace, quotes or backslashes" in message


def inserted_arguments(field: str, value: str) -> list[str]:
    """The arguments the running CppBuilder adds for ``value`` in ``field``, in order."""
    from torch._inductor.cpp_builder import BuildOptionsBase, CppBuilder

    def arguments(**lists: list[str]) -> list[str]:
        options = BuildOptionsBase(compiler="g++", **lists)  # type: ignore[arg-type]
        return shlex.split(CppBuilder("k", ["k.cpp"], options, "/out").get_command_line())

    left = Counter(arguments())
    added = []
    for word in arguments(**{field: [value]}):
        if left[word]:
            left[word] -= 1
        else:
            added.append(word)
    return added


def one_argument_each(field: str, value: str) -> list[str]:
    """What g++ must get for ``value`` as torch 2.13 renders its field: one argument
    (-D's value its own), or the words of a passthrough value."""
    if field == "passthrough_args":
        return shlex.split(value)
    if field == "definitions":
        return ["-D", value.lstrip(" ")]
    prefix = {"include_dirs": "-I", "libraries_dirs": "-L", "libraries": "-l"}.get(field, "-")
    return [prefix + value]


@pytest.mark.parametrize(("field", "value"), ACCEPTED)
def test_accepted_values_reach_g_plus_plus_as_one_argument_each(field: str, value: str) -> None:
    needs_quoting = field == "include_dirs" and shlex.quote(value) != value
    if needs_quoting and not cpp_builder_keeps_whole("include_dirs"):  # torch 2.6: -I{dir} bare
        with pytest.raises(InvalidCppDeviceOptionsError, match=r"include_dirs\[0\]"):
            finish(_with(field, value), device_type="npu", description="p")
        return
    final = finish(_with(field, value), device_type="npu", description="p")
    assert getattr(final, field) == [value]
    assert inserted_arguments(field, value) == one_argument_each(field, value)


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
        finish(result, device_type="npu", description="cb")
    assert detail in str(caught.value)
    assert "expected CppDeviceOptions, or a tuple or list of 7 lists of str" in str(caught.value)


def test_named_tuple_plain_tuple_list_and_tuples_of_str_are_all_accepted() -> None:
    lists = (["USE_NPU"], ["/opt/acme/inc"], [], [], ["/opt/acme/lib"], ["ascendcl"], ["-Wno-x"])
    expected = CppDeviceOptions(*(list(values) for values in lists))
    assert finish(lists, device_type="npu", description="p") == expected
    assert finish(list(lists), device_type="npu", description="p") == expected
    as_tuples = tuple(tuple(values) for values in lists)
    assert finish(as_tuples, device_type="npu", description="p") == expected
    assert finish(expected, device_type="npu", description="p") == expected


def test_validated_options_do_not_share_lists_with_the_provider() -> None:
    provided = CppDeviceOptions(["USE_NPU"], [], [], [], [], [], [])
    options = finish(provided, device_type="npu", description="p")
    options.definitions.append("OTHER")
    assert provided.definitions == ["USE_NPU"]
    plain = options.as_tuple()
    plain[0].append("THIRD")
    assert options.definitions == ["USE_NPU", "OTHER"]


# --- fuzz: random values through the whole pipeline and the running CppBuilder ------------

# Characters that mean something to shlex, g++ or a file system, and some that do not.
ALPHABET = "abXY_09=-,:+@ \t'\"\\$`;#*?~!&|<>(){}[]%/\u00e9\u4e2d\n\r\x00"
# Dirs stay under a prefix that does not exist: real paths then change nothing, and no
# SDK identity walks a real tree.
DIR_PREFIX = "/inductor-device-options-fuzz-absent/"


def random_value(rng: random.Random, field: str) -> str:
    alphabet = ALPHABET.replace(".", "") if field.endswith("_dirs") else ALPHABET + "."
    value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
    if field.endswith("_dirs") and rng.random() < 0.8:
        value = DIR_PREFIX + value
    elif field == "definitions" and rng.random() < 0.5:
        value = rng.choice(["", " ", "X", "NAME="]) + value
    elif field in ("cflags", "ldflags") and rng.random() < 0.6:
        value = "Wno-" + value  # g++ takes any -Wno-<name>: what is left is the rendering
    return value


@pytest.mark.parametrize("field", FIELDS)
def test_fuzz_refused_or_one_argument_per_value(field: str) -> None:
    """Seeded random values: validation refuses a value, or what Inductor gets for it
    reaches g++ as exactly the arguments meant, none of them a response file."""
    rng = random.Random(f"inductor-device-options {field}")
    accepted = 0
    for _ in range(400):
        value = random_value(rng, field)
        try:
            final = finish(_with(field, value), device_type="npu", description="fuzz")
        except InvalidCppDeviceOptionsError:
            continue
        accepted += 1
        [final_value] = getattr(final, field)
        arguments = inserted_arguments(field, final_value)
        assert arguments == one_argument_each(field, final_value), (field, value)
        assert not any(argument.startswith("@") for argument in arguments), (field, value)
    assert accepted > 20  # the generator does produce values that pass


def test_where_the_rendering_is_not_recognised_only_plain_words_pass() -> None:
    from inductor_device_options._options.problems import Place
    from inductor_device_options._options.rendering import _plain_word_problems

    options = CppDeviceOptions(
        [" USE_X", "A=b c"], ["/my sdk"], ["Wall"], [], ["/opt/lib"], ["it's"], ["-a 'b c'"]
    )
    assert [problem.place for problem in _plain_word_problems(options)] == [
        Place("definitions", 1, "A=b c"),
        Place("include_dirs", 0, "/my sdk"),
        Place("libraries", 0, "it's"),
    ]


# --- fuzz: words g++ hands to ld, with real paths whose names hold commas, @ and spaces ---

LINKER_FIELDS = ("ldflags", "cflags", "passthrough_args")
NAME_ALPHABET = "ab_-,@ '"


def linker_value(rng: random.Random, dirs: list[str]) -> tuple[str, str, list[str]]:
    """A field, a value that gives ld words through -Wl, or -Xlinker, and the pieces ld
    must receive from it: a real dir (however many commas it holds) is one piece."""
    field = rng.choice(LINKER_FIELDS)

    def path() -> str:
        if rng.random() < 0.6:
            return rng.choice(dirs)
        return "/inductor-device-options-fuzz-absent/" + "".join(
            rng.choice("ab_-@ ") for _ in range(rng.randint(1, 6))
        )

    if field == "passthrough_args" and rng.random() < 0.4:
        target = path()
        return field, f"-Xlinker -rpath -Xlinker {shlex.quote(target)}", ["-rpath", target]
    pieces: list[str] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        if kind == 0:
            pieces += ["-rpath", path()]
        elif kind == 1:
            pieces.append(f"-rpath={path()}")
        elif kind == 2:
            pieces += ["-z", "now"]
        elif kind == 3:
            pieces.append(
                rng.choice(["--enable-new-dtags", "--as-needed", "--no-undefined-version"])
            )
        else:
            pieces.append("@" + path())
    word = "Wl," + ",".join(pieces)
    if field == "passthrough_args":
        return field, shlex.quote("-" + word), pieces
    return field, word, pieces


def test_fuzz_linker_words_refused_or_received_by_ld_as_meant(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Seeded random -Wl, and -Xlinker values naming real dirs whose names hold commas, '@'
    and spaces, built through the package: each is refused, or ld receives exactly the
    pieces it means."""
    from builds import Case, build_as, make_world

    world = make_world(tmp_path_factory.mktemp("linker-fuzz"))
    rng = random.Random("inductor-device-options linker words")
    dirs = []
    for index in range(8):
        name = "".join(rng.choice(NAME_ALPHABET) for _ in range(rng.randint(2, 6)))
        directory = world.root / "dirs" / f"{index}{name}"
        directory.mkdir(parents=True)
        dirs.append(str(directory))
    values = [linker_value(rng, dirs) for _ in range(60)]
    cases = [Case(f"fuzz-{index}", field, value) for index, (field, value, _) in enumerate(values)]
    built = build_as(world, "package", cases, "fuzz")
    accepted = 0
    for case, (field, value, pieces) in zip(cases, values, strict=True):
        observation = built[case.id]
        if observation.status == "refused":
            continue
        accepted += 1
        assert observation.status == "built", (field, value, observation.output)
        ld = observation.argv("ld")
        assert ld is not None
        assert any(ld[i : i + len(pieces)] == pieces for i in range(len(ld))), (field, value, ld)
    assert accepted > 10  # the generator does produce values that pass
