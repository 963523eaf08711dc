"""The tools behind g++: what ld, as and the preprocessor receive, and ``runpath()``.

g++ cuts every ``-Wl,``/``-Wa,``/``-Wp,`` word at its commas and hands the pieces on, and
those tools read a ``@file`` piece as a response file. A provider that writes a runpath from
its SDK home (``Wl,-rpath,<real path of $ACME_HOME>/lib``) gives ld extra arguments when that
real path holds a comma: shown here with stock torch, where ld then reads the payload
``--this-option-was-injected``, and refused by the package before anything reaches g++.
Real builds through ``CppBuilder``, real g++ and ld (``builds.py`` logs what each received).
"""

from __future__ import annotations

import inspect
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from builds import DEVICE, LOG_ENV, Case, Observation, World, added, build_as, make_world
from tool_log import read_tool_log
from torch._inductor import config
from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

import inductor_device_options as ido
from inductor_device_options._demo.elf import read_dynamic_section
from inductor_device_options._options import tools

pytestmark = pytest.mark.usefixtures("clean_registry")

# The three fields a -Wl, word can stand in, as a provider writes it.
RUNPATH_WORDS = {
    "ldflags": "Wl,-rpath,{home}/lib",
    "passthrough_args": "-Wl,-rpath,{home}/lib",
    "cflags": "Wl,-rpath,{home}/lib",
}
ACME_LIBRARY = "acme_rt"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    world = make_world(tmp_path_factory.mktemp("tools"))
    root = world.root
    (root / "acme-at").symlink_to(f"{root}/sdk,@{root}/resp")  # ld: @<root>/resp/lib
    (root / "acme-option").symlink_to(f"{root}/sdk,--some-option")
    return world


# ACME_HOME as installed: a symlink whose real path holds a comma, or a value that is no
# real path at all (then only the environment says the comma is not the provider's).
HOMES = {
    "comma-at": ("{root}/acme-at", "{root}/sdk,@{root}/resp"),
    "comma-option": ("{root}/acme-option", "{root}/sdk,--some-option"),
    "not-a-path": ("{root}/absent,acme", "{root}/absent,acme"),
}


@pytest.fixture(scope="module")
def stock(world: World) -> dict[str, Observation]:
    """What stock torch does with the same values (the real path written out), and the
    payloads behind -Wa,, -Wp,, -Xassembler and -Xpreprocessor."""
    cases = [
        Case(
            f"{field}-{home}",
            field,
            template.format(home=real),
            env={"ACME_HOME": env_value},
        )
        for field, template in RUNPATH_WORDS.items()
        for home, (env_value, real) in HOMES.items()
    ]
    cases += [Case(name, field, value) for name, field, value, _ in TOOL_RESPONSE_FILES]
    return build_as(world, "stock", cases, "tools")


@pytest.fixture
def tool_log(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Inductor runs the logging g++ in this process; the calls go to the returned file."""
    log = world.root / "calls-in-process.log"
    log.unlink(missing_ok=True)
    monkeypatch.setenv(LOG_ENV, str(log))
    with config.patch({"cpp.cxx": (None, str(world.cxx))}):
        yield log


def compiler_calls(log: Path) -> list[list[str]]:
    """What the tools were run with, but torch asking g++ its version."""
    calls = [call["argv"] for call in read_tool_log(log)]
    return [
        argv for argv in calls if not set(argv) <= {"--version", "-dumpfullversion", "-dumpversion"}
    ]


def build(world: World, kernel: str | None = None, name: str = "kernel") -> Path:
    """What Inductor does for a C++ kernel of the device: options, command line, g++."""
    source = Path(kernel) if kernel is not None else Path(world.kernel())
    out = world.root / "out-in-process"
    CppBuilder(
        name, [str(source)], CppTorchDeviceOptions(device_type=DEVICE), output_dir=str(out)
    ).build()
    return out / f"{name}.so"


def adding(field: str, template: str) -> Callable[[str, bool, bool], ido.CppDeviceOptions]:
    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        home = os.path.realpath(os.environ["ACME_HOME"])
        getattr(options, field).append(template.format(home=home))
        return options

    return provider


def test_stock_torch_gives_ld_the_payload_of_a_home_with_a_comma(
    world: World, stock: dict[str, Observation]
) -> None:
    """The control: with stock torch, each home makes ld fail on what it was given."""
    root = world.root
    for field in RUNPATH_WORDS:
        injected = stock[f"{field}-comma-at"]
        assert "ld: unrecognized option '--this-option-was-injected'" in injected.output
        assert added(stock["baseline"].argv("ld"), injected.argv("ld")) == [
            "-rpath",
            f"{root}/sdk",
            "--this-option-was-injected",  # read from <root>/resp/lib
        ]
        option = stock[f"{field}-comma-option"]
        assert "ld: unrecognized option '--some-option/lib'" in option.output
        assert "ld: cannot find acme/lib" in stock[f"{field}-not-a-path"].output


@pytest.mark.parametrize("home", list(HOMES))
@pytest.mark.parametrize("field", list(RUNPATH_WORDS))
def test_a_runpath_from_the_environment_with_a_comma_is_refused_before_g_plus_plus(
    world: World,
    tool_log: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    home: str,
) -> None:
    env_value, real = (world.format(part) for part in HOMES[home])
    monkeypatch.setenv("ACME_HOME", env_value)
    provider = adding(field, RUNPATH_WORDS[field])
    ido.register_cpp_device_options(DEVICE, provider)
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        build(world)
    assert not compiler_calls(tool_log), "g++ ran"
    error = caught.value
    value = RUNPATH_WORDS[field].format(home=real)
    assert (error.device_type, error.field, error.value) == (DEVICE, field, value)
    message = str(error)
    assert message.startswith(
        f"C++ options for device {DEVICE!r} from {error.description}: {field}["
    )
    assert error.description is not None and "adding.<locals>.provider" in error.description
    assert f"= {value!r} reaches g++ as '-{value.removeprefix('-')}'" in message
    pieces = ["-rpath", *f"{real}/lib".split(",")]
    assert f"so ld receives {pieces!r}" in message
    if home == "comma-at":
        assert f"gives ld the argument '@{world.root}/resp/lib'" in message
        assert "ld reads as a response file" in message
    elif home == "comma-option":
        assert f"holds the path {real!r}, which exists with a comma in it" in message
    else:
        assert f"holds the value of $ACME_HOME ({env_value!r})" in message


def test_xlinker_keeps_a_path_with_a_comma_whole(world: World, tool_log: Path) -> None:
    lib = f"{world.root}/sdk,@{world.root}/resp/lib"

    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        options.passthrough_args.append(f"-Xlinker -rpath -Xlinker {shlex.quote(lib)}")
        return options

    ido.register_cpp_device_options(DEVICE, provider)
    module = build(world, name="xlinker")
    assert read_dynamic_section(module).runpath == [lib]
    calls = read_tool_log(tool_log)
    assert any(
        call["tool"] == "ld" and "-rpath" in call["argv"] and lib in call["argv"] for call in calls
    )


@pytest.fixture
def acme_sdk(world: World) -> Path:
    """An SDK whose runtime library is found through a ``latest`` symlink."""
    release = world.root / "acme-1.2"
    if not release.exists():
        (release / "lib").mkdir(parents=True)
        subprocess.run(
            [
                "cc",
                "-shared",
                "-fPIC",
                "-x",
                "c",
                "-",
                "-o",
                str(release / "lib" / f"lib{ACME_LIBRARY}.so"),
            ],
            input="int acme_answer(void) { return 42; }\n",
            text=True,
            check=True,
        )
        (world.root / "acme-latest").symlink_to(release)
        (world.root / "acme_kernel.cpp").write_text(
            'extern "C" int acme_answer(void);\n'
            'extern "C" int kernel(void) { return acme_answer(); }\n'
        )
    return world.root / "acme-latest"


def test_runpath_lets_the_loader_find_the_library_without_ld_library_path(
    world: World, acme_sdk: Path
) -> None:
    lib = acme_sdk / "lib"
    real = os.path.realpath(lib)
    assert ido.runpath(lib) == f"Wl,-rpath,{real}"  # resolved: a re-pointed link changes nothing

    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        options.libraries_dirs.append(str(lib))
        options.libraries.append(ACME_LIBRARY)
        options.ldflags.append(ido.runpath(lib))
        return options

    ido.register_cpp_device_options(DEVICE, provider)
    module = build(world, str(world.root / "acme_kernel.cpp"), name="acme")
    assert read_dynamic_section(module).runpath == [real]
    env = {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}
    loaded = subprocess.run(
        [sys.executable, "-c", f"import ctypes; print(ctypes.CDLL({str(module)!r}).kernel())"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "42"), loaded.stderr


def precompiling_supported() -> bool:
    return "precompiling" in inspect.signature(CppTorchDeviceOptions.__init__).parameters


@pytest.mark.skipif(not precompiling_supported(), reason="this torch precompiles no headers")
@pytest.mark.parametrize(
    ("field", "make", "builds"),
    [
        pytest.param("ldflags", ido.runpath, True, id="runpath-ldflag"),
        pytest.param(
            "passthrough_args",
            lambda lib: f"-Xlinker -rpath -Xlinker {shlex.quote(os.path.realpath(lib))}",
            False,
            id="xlinker-passthrough",
        ),
    ],
)
def test_the_runpath_reaches_only_the_commands_that_link(
    world: World, acme_sdk: Path, field: str, make: Callable[[Path], str], builds: bool
) -> None:
    """Inductor precompiles cpp_wrapper's headers with the device's options but without its
    ldflags: a linker argument among the passthrough args makes g++ link the header."""
    value = make(acme_sdk / "lib")

    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        getattr(options, field).append(value)
        return options

    ido.register_cpp_device_options(DEVICE, provider)
    header = world.root / "acme_header.h"
    header.write_text("#pragma once\nint acme_answer(void);\n")
    options = CppTorchDeviceOptions(device_type=DEVICE, precompiling=True)
    builder = CppBuilder(str(header), str(header), options)
    if builds:
        builder.build()
        assert Path(builder.get_target_file_path()).is_file()
        return
    with pytest.raises(Exception, match="undefined reference to `main'"):
        builder.build()


@pytest.mark.parametrize(
    ("directory", "character"),
    [
        ("relative/lib", None),
        ("{root}/with:colon/lib", ":"),
        ("{root}/with$ORIGIN/lib", "$"),
        ("{root}/sdk,@{root}/resp/lib", ","),
        ("{root}/with space/lib", " "),
        ("{root}/it's/lib", "'"),
        ("{root}/back\\slash/lib", "\\"),
        ("{root}/comma-latest", ","),  # a symlink whose real path holds a comma
    ],
)
def test_runpath_refuses_a_dir_the_loader_would_not_get_as_one_entry(
    world: World, directory: str, character: str | None
) -> None:
    link = world.root / "comma-latest"
    if not link.is_symlink():
        link.symlink_to(world.root / "c,d" / "lib")
    path = world.format(directory)
    with pytest.raises(ido.RunpathError) as caught:
        ido.runpath(path)
    message = str(caught.value)
    assert repr(path) in message
    if character is None:
        assert "relative" in message
        return
    assert repr(character) in message
    if path == str(link):
        assert repr(str(world.root / "c,d" / "lib")) in message  # the real path named


# (id, field, value, what the package says the tool gets)
TOOL_RESPONSE_FILES = [
    (
        "wa",
        "cflags",
        "Wa,--noexecstack,@{root}/tool.rsp",
        "gives as the argument '@{root}/tool.rsp' (through -Wa,)",
    ),
    (
        "wp",
        "cflags",
        "Wp,@{root}/cpp.rsp",
        "gives the preprocessor the argument '@{root}/cpp.rsp' (through -Wp,)",
    ),
    ("xassembler", "passthrough_args", "-Xassembler @{root}/tool.rsp", "response file"),
    ("xpreprocessor", "passthrough_args", "-Xpreprocessor @{root}/cpp.rsp", "response file"),
    ("xlinker", "passthrough_args", "-Xlinker @{root}/tool.rsp", "response file"),
]


@pytest.mark.parametrize(("name", "field", "value", "says"), TOOL_RESPONSE_FILES)
def test_a_response_file_for_the_assembler_or_preprocessor_is_refused(
    world: World,
    stock: dict[str, Observation],
    tool_log: Path,
    name: str,
    field: str,
    value: str,
    says: str,
) -> None:
    value = world.format(value)
    assert stock[name].injected, stock[name].output  # stock torch: the payload is read
    ido.register_cpp_device_options(DEVICE, lambda d, a, c: adding_value(d, a, c, field, value))
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        build(world)
    assert not compiler_calls(tool_log), "g++ ran"
    assert (caught.value.field, caught.value.value) == (field, value)
    assert f"{field}[0] = {value!r}" in str(caught.value)
    assert world.format(says) in str(caught.value)


def adding_value(
    device_type: str, aot_mode: bool, compile_only: bool, field: str, value: str
) -> ido.CppDeviceOptions:
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    getattr(options, field).append(value)
    return options


# (values by field, the refused field or None): -Xlinker hands ld the next argument, which
# must be the options' own, of the same field (torch renders other fields' words between).
XLINKER_PAIRS = [
    ({"passthrough_args": ["-Xlinker --as-needed"]}, None),
    ({"passthrough_args": ["-Xlinker", "--as-needed"]}, None),
    ({"ldflags": ["Xlinker", "-as-needed"]}, None),  # -Xlinker --as-needed
    ({"passthrough_args": ["-Xlinker"]}, "passthrough_args"),
    ({"cflags": ["Xlinker"], "passthrough_args": ["-Wall"]}, "cflags"),
    ({"passthrough_args": ["-Wall -Xassembler"]}, "passthrough_args"),
    ({"ldflags": ["Xlinker"], "libraries": ["m"]}, "ldflags"),
]


@pytest.mark.parametrize(("values", "refused"), XLINKER_PAIRS)
def test_the_word_after_xlinker_is_the_options_own(
    values: dict[str, list[str]], refused: str | None
) -> None:
    from inductor_device_options._options.model import FIELDS
    from inductor_device_options._options.pipeline import finish

    lists = tuple(values.get(field, []) for field in FIELDS)
    if refused is None:
        finish(lists, device_type=DEVICE, description="p")
        return
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        finish(lists, device_type=DEVICE, description="p")
    assert caught.value.field == refused
    assert "which hands the argument after it to" in str(caught.value)
    assert f"and it is the last of {refused}" in str(caught.value)


# A value from the environment that is no path at all: only the environment says the comma
# is not the provider's, and ld would get an option nobody wrote in code.
ENV_OPTION = Case(
    "env-option",
    "ldflags",
    "Wl,--undefined=acme_init,--some-option",
    env={"ACME_SYMBOL": "acme_init,--some-option"},
)


def test_a_value_from_the_environment_with_a_comma_is_refused_path_or_not(world: World) -> None:
    stock = build_as(world, "stock", [ENV_OPTION], "env-stock")["env-option"]
    assert "ld: unrecognized option '--some-option'" in stock.output  # the control
    package = build_as(world, "package", [ENV_OPTION], "env-package")["env-option"]
    assert package.status == "refused"
    assert package.argv("g++") is None
    message = package.result["message"]
    assert "holds the value of $ACME_SYMBOL ('acme_init,--some-option')" in message
    assert "so ld receives ['--undefined=acme_init', '--some-option']" in message


@pytest.mark.parametrize(
    ("word", "environ", "refused"),
    [
        ("-Wl,--foo=x,y", {"MYV": "x,y"}, True),  # no path: refused all the same
        ("-Wl,--foo=x,--wrap=malloc", {"MYV": "x,--wrap=malloc"}, True),
        ("-Wa,--defsym,a=0,1", {"CUDA_VISIBLE_DEVICES": "0,1"}, True),  # cannot tell: refused
        ("-Wl,-rpath,/opt/a,b/lib", {"HOME_DIR": "/opt/a,b"}, True),
        ("-Wl,-z,now", {"CUDA_VISIBLE_DEVICES": "0,1"}, False),  # not in the word
        ("-Wl,-z,now", {"SEPARATOR": ","}, False),  # a comma alone cuts no value
        ("-Wl,-z,now", {"TRAILING": "now,"}, False),  # nor one at an end
        ("-Wl,-z,now", {"LEADING": ",now"}, False),
        ("-Wl,--foo=x", {"MYV": "x"}, False),  # no comma: one piece whatever it holds
    ],
)
def test_which_environment_values_a_split_word_may_not_hold(
    word: str, environ: dict[str, str], refused: bool
) -> None:
    prefix = word[:4]
    cause = tools.split_word_cause(word, prefix, "ld", environ)
    assert (cause is not None) == refused, cause
    if refused:
        [name] = environ
        assert f"holds the value of ${name} ({environ[name]!r})" in str(cause)
