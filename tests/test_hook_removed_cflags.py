"""The ``removed_cflags`` door (issue 48): the cflags a device's provider removes leave every
g++ command made with the device's options (compile, link, and from torch 2.13 the preprocess
and header precompile steps), whether torch (``-march=native``) or the provider added them;
cpu's builds in the same process and torch's vector-ISA probes keep them. A bad attribute is
an error naming the device, the provider and the attribute before g++ runs; a provider
without the attribute gets exactly torch's command lines.

Real builds throughout: Inductor's ``CppCodeCache`` and ``_precompile_header``, torch's
``CppBuilder`` and its writers, and one cpp_wrapper compile on the sample device. The g++
commands are those this process started (``record_compiler_commands``, an audit hook).
"""

from __future__ import annotations

import ctypes
import inspect
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._inductor.codecache as codecache
import torch._inductor.cpp_builder as cpp_builder
from support import shared_test_dir, torch_writes_cmake
from torch._inductor.cpu_vec_isa import VecISA, invalid_vec_isa, pick_vec_isa

import inductor_device_options as ido
from inductor_device_options._demo.compiler_commands import (
    CompilerCommand,
    record_compiler_commands,
)
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import removed_cflags as door
from inductor_device_options.testing import registered_cpp_device_options

pytestmark = pytest.mark.usefixtures("clean_registry")

DEVICE = "rcflagdev"
MARCH = "-march=native"  # torch's, in every build on x86-64 Linux (_get_optimization_cflags)
PROVIDER_FLAG = "fno-semantic-interposition"  # the provider adds it, and removes it
KEPT_FLAG = "Wno-unused-function"  # the provider adds it, and keeps it
REMOVED = ["march=native", PROVIDER_FLAG]

MAIN = 'extern "C" int helper(void);\nextern "C" int kernel(void) { return helper(); }\n'
OPTIMIZED = 'extern "C" int helper(void) { return 7; }\n'


def options_adding_flags(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> ido.CppDeviceOptions:
    """torch's defaults for the device, with one flag the provider removes and one it keeps."""
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.cflags.extend([PROVIDER_FLAG, KEPT_FLAG])
    return options


def provider(removed: object = None) -> Callable[..., ido.CppDeviceOptions]:
    """A provider of its own (a function object per test) carrying ``removed_cflags``."""

    def cpp_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> ido.CppDeviceOptions:
        return options_adding_flags(device_type, aot_mode, compile_only)

    if removed is not None:
        cpp_device_options.removed_cflags = removed  # type: ignore[attr-defined]
    return cpp_device_options


@pytest.fixture
def removing() -> Iterator[None]:
    """DEVICE served by a provider that removes ``-march=native`` and its own flag."""
    with registered_cpp_device_options(DEVICE, provider(REMOVED)):
        yield


def compiler() -> str:
    return cpp_builder.get_cpp_compiler()


def flags_of(command: CompilerCommand) -> set[str]:
    return set(command.argv)


def builds(commands: Sequence[CompilerCommand]) -> list[CompilerCommand]:
    """The commands that build (not ``g++ --version``, nor the package's check that g++
    takes the provider's flags, which asks with ``-E`` on an empty source)."""
    return [
        command for command in commands if not {"-v", "--version", os.devnull} & set(command.argv)
    ]


def torch_precompiles_headers() -> bool:
    """``codecache._precompile_header`` (2.13 and later): torch 2.6 has no preprocess nor
    header precompile step."""
    return hasattr(codecache, "_precompile_header")


def code_cache_splits() -> bool:
    """Whether ``CppCodeCache`` compiles a module's kernels apart (``optimized_code``, 2.13+)."""
    return "optimized_code" in inspect.signature(codecache.CppCodeCache.load_async).parameters


def load_with_code_cache(device_type: str, split: bool = True) -> tuple[list[CompilerCommand], int]:
    """What Inductor's C++ code cache runs for a module of ``device_type``, and what the
    module's ``kernel()`` returns. ``split`` (2.13+): the main code and the kernels compiled
    apart, then linked, as cpp_wrapper modules are built; else one compile-and-link (cpu's
    split build would precompile ``cpp_prefix.h`` first, a minute's work)."""
    tag = f"// {uuid.uuid4().hex}\n"  # never a hit of an earlier test's module
    bool(pick_vec_isa())  # torch's vector-ISA probes, built at their first use: not recorded
    with record_compiler_commands(compiler()) as commands:
        if split and code_cache_splits():
            library = codecache.CppCodeCache.load(
                tag + MAIN, device_type=device_type, optimized_code=tag + OPTIMIZED
            )
        else:
            library = codecache.CppCodeCache.load(tag + MAIN + OPTIMIZED, device_type=device_type)
    assert builds(commands), "g++ did not run"
    return builds(commands), int(ctypes.CDLL(library._name).kernel())


# --- the door acts for the declaring device, in every command its options make ------------


@pytest.mark.usefixtures("removing")
def test_the_code_caches_commands_for_the_device_lack_the_removed_cflags_and_cpus_keep_them() -> (
    None
):
    device_commands, result = load_with_code_cache(DEVICE)
    assert result == 7
    stages = [command.stage for command in device_commands]
    assert stages == (["compile", "compile", "link"] if code_cache_splits() else ["link"]), stages
    for command in device_commands:
        assert MARCH not in flags_of(command), command.argv
        assert f"-{PROVIDER_FLAG}" not in flags_of(command), command.argv
        assert f"-{KEPT_FLAG}" in flags_of(command), command.argv

    cpu_commands, result = load_with_code_cache("cpu", split=False)
    assert result == 7
    assert [command.stage for command in cpu_commands] == ["link"]
    assert MARCH in flags_of(cpu_commands[0]), cpu_commands[0].argv


@pytest.mark.skipif(not torch_precompiles_headers(), reason="torch 2.6 precompiles no header")
@pytest.mark.usefixtures("removing")
def test_the_header_torch_precompiles_for_the_device_is_preprocessed_and_built_without_them() -> (
    None
):
    def precompile(device_type: str) -> list[CompilerCommand]:
        with record_compiler_commands(compiler()) as commands:
            # What CppCodeCache.load_async and AotCodeCompiler.compile call (the command line
            # made unique: torch remembers each header per process by its arguments).
            codecache._precompile_header(
                "cstddef", f"{device_type} {uuid.uuid4().hex}", device_type=device_type
            )
        return builds(commands)

    device_commands = precompile(DEVICE)
    assert [command.stage for command in device_commands] == ["preprocess", "precompile header"]
    for command in device_commands:
        assert MARCH not in flags_of(command), command.argv
        assert f"-{PROVIDER_FLAG}" not in flags_of(command), command.argv
        assert f"-{KEPT_FLAG}" in flags_of(command), command.argv
    cpu_commands = precompile("cpu")
    assert [command.stage for command in cpu_commands] == ["preprocess", "precompile header"]
    assert all(MARCH in flags_of(command) for command in cpu_commands)


@pytest.mark.usefixtures("removing")
def test_torchs_vector_isa_probe_keeps_them_while_the_device_removes_them() -> None:
    isa = pick_vec_isa()
    if not isa:
        pytest.skip("no vector ISA on this machine: torch probes none")
    with record_compiler_commands(compiler()) as commands:
        # A probe of its own (the code made unique): torch's are built once per cache dir.
        assert isa.check_build(VecISA._avx_code + f"\n// {uuid.uuid4().hex}\n")
    probes = builds(commands)
    assert len(probes) == 1 and MARCH in flags_of(probes[0]), [c.argv for c in commands]


@pytest.mark.usefixtures("removing")
def test_what_aotinductor_writes_of_the_options_lacks_them(tmp_path: Path) -> None:
    """``package_cpp_only``'s CMake project (2.13+; 2.6's flags file): torch's writers, and
    the package's section of a standalone project, render the device's options."""
    if not torch_writes_cmake():  # torch 2.6 writes the options' flags as JSON instead
        options = cpp_builder.CppTorchDeviceOptions(device_type=DEVICE, aot_mode=True)
        options.save_flags_to_file(str(tmp_path / "flags.json"))
        cflags = json.loads((tmp_path / "flags.json").read_text())["cflags"]
        assert KEPT_FLAG in cflags and not set(REMOVED) & set(cflags), cflags
        return
    from torch._inductor import config

    builder = cpp_builder.CppBuilder(
        "model",
        ["model.cpp"],
        cpp_builder.CppTorchDeviceOptions(device_type=DEVICE, aot_mode=True, compile_only=True),
        output_dir=str(tmp_path),
    )
    projects = {}
    for link_libtorch in (True, False):  # torch's cflags; the package's (standalone branch)
        path = tmp_path / f"CMakeLists-{link_libtorch}.txt"
        with config.patch({"aot_inductor.link_libtorch": link_libtorch}):
            builder.save_compile_cmd_to_cmake(str(path), DEVICE)
        projects[link_libtorch] = path.read_text()
    for text in projects.values():
        assert f"-{KEPT_FLAG}" in text and MARCH not in text, text
        assert f"-{PROVIDER_FLAG}" not in text, text


# --- the attribute's forms, and the device without it -----------------------------------


def test_a_callable_is_asked_with_the_device_type_at_each_build() -> None:
    asked: list[str] = []

    def removed(device_type: str) -> list[str]:
        asked.append(device_type)
        return ["march=native"]

    with registered_cpp_device_options(DEVICE, provider(removed)):
        first = cpp_builder.CppTorchDeviceOptions(device_type=DEVICE).get_cflags()
        # device_type by position too (vec_isa, include_pytorch, device_type)
        second = cpp_builder.CppTorchDeviceOptions(invalid_vec_isa, False, DEVICE).get_cflags()
    assert asked == [DEVICE, DEVICE]
    assert "march=native" not in first and PROVIDER_FLAG in first
    assert second == first


def command_lines(options_of: Callable[..., Any]) -> list[str]:
    """The command lines ``CppBuilder`` renders of the options for DEVICE and cpu, in each
    kind of build this torch makes."""
    kinds: list[dict[str, Any]] = [{}, {"compile_only": True}, {"aot_mode": True}]
    if torch_precompiles_headers():
        kinds += [{"preprocessing": True}, {"precompiling": True}]
    return [
        cpp_builder.CppBuilder(
            "o", ["i.cpp"], options_of(device_type=device_type, **kind)
        ).get_command_line()
        for device_type in (DEVICE, "cpu")
        for kind in kinds
    ]


def torchs_own(**kwargs: Any) -> Any:
    """The options as torch's ``CppTorchDeviceOptions.__init__`` alone makes them."""
    options = cpp_builder.CppTorchDeviceOptions.__new__(cpp_builder.CppTorchDeviceOptions)
    inspect.unwrap(cpp_builder.CppTorchDeviceOptions.__init__)(options, **kwargs)
    return options


@pytest.mark.parametrize("removed", [None, [], ["no-such-flag"]], ids=["unset", "empty", "absent"])
def test_a_device_that_removes_nothing_gets_torchs_command_lines_byte_for_byte(
    removed: object,
) -> None:
    with registered_cpp_device_options(DEVICE, provider(removed)):
        assert command_lines(cpp_builder.CppTorchDeviceOptions) == command_lines(torchs_own)


def test_with_a_removing_device_cpu_gets_torchs_command_lines_byte_for_byte() -> None:
    with registered_cpp_device_options(DEVICE, provider(REMOVED)):
        ours, torchs = command_lines(cpp_builder.CppTorchDeviceOptions), command_lines(torchs_own)
    half = len(ours) // 2
    assert ours[half:] == torchs[half:]  # cpu's
    assert all(MARCH in line.split() for line in ours[half:])
    assert all(MARCH not in line.split() for line in ours[:half])
    assert ours[:half] == [
        line.replace(f" {MARCH} ", " ").replace(f" -{PROVIDER_FLAG} ", " ")
        for line in torchs[:half]
    ]


def sdk_probe_failed(device_type: str) -> list[str]:
    raise RuntimeError("the SDK's flag probe failed")


@pytest.mark.parametrize(
    ("removed", "error_type", "said"),
    [
        ("march=native", ido.InvalidProviderAttributeError, "gave str 'march=native'"),
        (["march=native", 3], ido.InvalidProviderAttributeError, "3 is not one"),
        (["-march=native"], ido.InvalidProviderAttributeError, "'-march=native' is not one"),
        (
            sdk_probe_failed,
            ido.InvalidProviderAttributeError,
            "raised RuntimeError: the SDK's flag probe failed",
        ),
    ],
    ids=["a-str", "a-non-str-item", "a-leading-dash", "a-raising-callable"],
)
def test_a_bad_attribute_is_an_error_naming_device_provider_and_attribute_before_gplusplus(
    removed: object, error_type: type[Exception], said: str
) -> None:
    bad = provider(removed)
    with (
        registered_cpp_device_options(DEVICE, bad),
        record_compiler_commands(compiler()) as commands,
        pytest.raises(error_type) as raised,
    ):
        codecache.CppCodeCache.load(
            f"// {uuid.uuid4().hex}\n" + MAIN + OPTIMIZED, device_type=DEVICE
        )
    assert builds(commands) == []  # the package asked g++ about the flags at most
    text = str(raised.value)
    assert said in text
    for name in (repr(DEVICE), bad.__qualname__, "removed_cflags"):
        assert name in text, text
    assert raised.value.attribute == "removed_cflags"  # type: ignore[attr-defined]
    if isinstance(raised.value.__cause__, RuntimeError):  # what the provider's callable raised
        assert bad.__qualname__ in (raised_by_provider(raised.value) or "")
    assert raised.value.device_type == DEVICE  # type: ignore[attr-defined]
    # cpu builds on, with its flags
    cpu_commands, result = load_with_code_cache("cpu", split=False)
    assert result == 7 and all(MARCH in flags_of(command) for command in cpu_commands)


# --- the door itself ----------------------------------------------------------------------


def test_install_is_idempotent_and_the_door_acts_on_this_torch() -> None:
    init = cpp_builder.CppTorchDeviceOptions.__init__
    assert door.is_installed(cpp_builder)
    door.install(cpp_builder)
    door.install(cpp_builder)
    assert cpp_builder.CppTorchDeviceOptions.__init__ is init
    assert inspect.signature(init) == inspect.signature(inspect.unwrap(init))
    assert door.release_gap() is None


# --- end to end: a cpp_wrapper compile on the sample device -----------------------------


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (torch.sin(x) * 2 + 1).sum(dim=0)


def sample_options_removing(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> ido.CppDeviceOptions:
    from inductor_device_options.sample import sdk_cpp_device_options

    options = sdk_cpp_device_options(device_type, aot_mode, compile_only)
    options.cflags.extend([PROVIDER_FLAG, KEPT_FLAG])
    return options


sample_options_removing.removed_cflags = REMOVED  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def sample_device() -> str:
    """The sample backend (tests/e2e/conftest.py builds it the same way, once a run)."""
    from inductor_device_options import sample, unregister_cpp_device_options

    sample.setup(shared_test_dir() / "sampledev")
    unregister_cpp_device_options(sample.DEVICE_NAME)  # each test registers its own
    return sample.DEVICE_NAME


def made_with_sample_options(commands: Sequence[CompilerCommand]) -> list[CompilerCommand]:
    from inductor_device_options.sample import DEVICE_MACRO

    return [command for command in commands if command.has(("-D", DEVICE_MACRO))]


def test_a_cpp_wrapper_compile_on_the_sample_device_builds_without_them(sample_device: str) -> None:
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    try:
        with (
            registered_cpp_device_options(sample_device, sample_options_removing),
            record_compiler_commands(compiler()) as commands,
        ):
            compiled = torch.compile(
                Model(), options={"cpp_wrapper": True, "fx_graph_cache": False}
            )
            result = compiled(x.to(sample_device))
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(result.cpu(), Model()(x))
    device_commands = made_with_sample_options(builds(commands))
    stages = {command.stage for command in device_commands}
    # The module is compiled and linked in one command, after (2.13+) its header is
    # preprocessed and precompiled; torch 2.6 precompiles no header.
    expected = {"link"} | (
        {"preprocess", "precompile header"} if torch_precompiles_headers() else set()
    )
    assert expected <= stages, [command.argv for command in commands]
    for command in device_commands:
        assert MARCH not in flags_of(command), command.argv
        assert f"-{PROVIDER_FLAG}" not in flags_of(command), command.argv
        assert f"-{KEPT_FLAG}" in flags_of(command), command.argv
