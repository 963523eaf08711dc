"""The ``inductor_headers`` door (issue 48), with real compiles of the sample device.

A provider of "sampledev" declares headers of a temporary SDK; each includes what torch's
default device header includes (the sample SDK's copy), so the module builds and runs. An
include dir placed first holds torch's default device headers for "sampledev" as
``#error``: a build that included or precompiled one of them would fail. The generated code
includes the declared headers, and torch 2.13+ precompiles the first (torch 2.6 precompiles
none); cpu's code in the same process keeps torch's headers; a wrapper class that overrides
``get_device_include_path_jit`` still wins; a bad declaration fails before g++ runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from support import aoti_device_header, cpp_wrapper_device_header, shared_test_dir

import inductor_device_options as ido
from inductor_device_options._demo.compiler_commands import (
    CompilerCommand,
    record_compiler_commands,
)
from inductor_device_options._diagnose.inductor_headers import device_headers
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import device_headers as door
from inductor_device_options.sample import DEVICE_NAME, SDK_INCLUDE_DIR, sdk_cpp_device_options

DECLARED = {False: "door_headers/sampledev_jit.h", True: "door_headers/sampledev_aot.h"}
SECOND = "door_headers/second.h"
OVERRIDE = "door_headers/override.h"
DEFAULT_ERROR = "torch's default device header was included"


def torch_has_include_methods() -> bool:
    """torch 2.13+: ``CppWrapperCpu.get_device_include_path_jit/_aot``."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    return hasattr(CppWrapperCpu, "get_device_include_path_jit")


def torch_precompiles_the_device_header() -> bool:
    """torch 2.13+: ``codecache._get_cpp_wrapper_header`` (2.6 precompiles no header)."""
    from torch._inductor import codecache

    return hasattr(codecache, "_get_cpp_wrapper_header")


@dataclass(frozen=True)
class Tree:
    """The temporary SDK: ``include`` (the declared headers), ``shadow`` (torch's default
    device headers of "sampledev", each an ``#error``)."""

    root: Path

    @property
    def include(self) -> Path:
        return self.root / "include"

    @property
    def shadow(self) -> Path:
        return self.root / "shadow"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    made = Tree(tmp_path_factory.mktemp("door-headers"))
    defaults = {
        False: cpp_wrapper_device_header(DEVICE_NAME),
        True: aoti_device_header(DEVICE_NAME),
    }
    for aot_mode, default in defaults.items():
        shadowing = made.shadow / default
        shadowing.parent.mkdir(parents=True, exist_ok=True)
        shadowing.write_text(f'#error "{DEFAULT_ERROR}: {default}"\n')
        content = (SDK_INCLUDE_DIR / default).read_text()
        declared = made.include / DECLARED[aot_mode]
        declared.parent.mkdir(parents=True, exist_ok=True)
        declared.write_text(f"// declared by the test's provider\n{content}")
        if not aot_mode:
            (made.include / OVERRIDE).write_text(f"// named by the overriding class\n{content}")
    (made.include / SECOND).write_text("#pragma once\n#define DOOR_HEADERS_SECOND 1\n")
    return made


Provider = Callable[..., ido.CppDeviceOptions]


def declaring_provider(tree: Tree, shadow: bool = True, declaration: object = None) -> Provider:
    """The sample's options with the temporary SDK, declaring its headers (or
    ``declaration``), with torch's default headers shadowed by ``#error`` (``shadow``)."""

    def door_headers_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> ido.CppDeviceOptions:
        options = sdk_cpp_device_options(device_type, aot_mode, compile_only)
        if shadow:
            options.include_dirs.insert(0, str(tree.shadow))
        options.include_dirs.append(str(tree.include))
        return options

    def inductor_headers(device_type: str, aot_mode: bool) -> list[str]:
        return [DECLARED[aot_mode].replace("sampledev", device_type), SECOND]

    door_headers_options.inductor_headers = (  # type: ignore[attr-defined]
        inductor_headers if declaration is None else declaration
    )
    return door_headers_options


@pytest.fixture(scope="module")
def sample_device() -> None:
    from inductor_device_options import sample

    sample.setup(shared_test_dir() / "sampledev")
    # setup() registers the sample's own provider for good: each build here registers its own.
    ido.unregister_cpp_device_options(DEVICE_NAME)


# --- what a build did ------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    """A compile's result and the g++ commands it ran."""

    result: Any
    commands: tuple[CompilerCommand, ...]

    def sources(self) -> str:
        """The text of every C++ source the commands compiled: the generated code."""
        paths = {word for c in self.commands for word in c.argv if word.endswith(".cpp")}
        return "".join(Path(path).read_text() for path in sorted(paths) if Path(path).is_file())

    def precompiled(self) -> list[str]:
        """What each header precompile included (its ``-x c++-header`` source)."""
        return [
            Path(command.argv[command.argv.index("c++-header") + 1]).read_text()
            for command in self.commands
            if command.stage == "precompile header"
        ]

    def force_included(self) -> list[str]:
        """What each compile of a source includes through its precompiled header."""
        return [
            Path(command.argv[index + 1]).read_text()
            for command in self.commands
            if command.stage != "precompile header"
            for index, word in enumerate(command.argv[:-1])
            if word == "-include"
        ]

    def ran_with(self, directory: Path) -> bool:
        return any(str(directory) in shlex.join(command.argv) for command in self.commands)


def compiler() -> str:
    from torch._inductor.cpp_builder import get_cpp_compiler

    return get_cpp_compiler()


def scale_and_sine(x: torch.Tensor) -> torch.Tensor:
    # Constants of this module's own: no other test's graph has this code.
    return (x * 1.0471975 + 0.6180339).sin()


def cpp_wrapper_build(device: str) -> Build:
    """``scale_and_sine`` compiled with cpp_wrapper for ``device`` and run, caches off."""
    from torch._inductor import config

    torch._dynamo.reset()
    x = torch.arange(12.0).reshape(3, 4).to(device)
    compiled = torch.compile(scale_and_sine, options={"cpp_wrapper": True})
    with config.patch(force_disable_caches=True), record_compiler_commands(compiler()) as commands:
        result = compiled(x)
    torch.testing.assert_close(result.cpu(), scale_and_sine(x.cpu()))
    return Build(result, tuple(commands))


class ScaleAndSine(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_and_sine(x)


def aoti_build(device: str, package_path: Path) -> Build:
    """``ScaleAndSine`` compiled by AOTInductor for ``device``, loaded and run."""
    from torch._inductor import config

    x = torch.arange(12.0).reshape(3, 4).to(device)
    with config.patch(force_disable_caches=True), record_compiler_commands(compiler()) as commands:
        exported = torch.export.export(ScaleAndSine(), (x,))
        package = torch._inductor.aoti_compile_and_package(exported, package_path=str(package_path))
    result = torch._inductor.aoti_load_package(package)(x)
    torch.testing.assert_close(result.cpu(), scale_and_sine(x.cpu()))
    return Build(result, tuple(commands))


@pytest.fixture(scope="module")
def declared_builds(sample_device: None, tree: Tree) -> dict[str, Build]:
    """With the declaring provider registered: sampledev's cpp_wrapper and cpu's, in one
    process."""
    with ido.testing.registered_cpp_device_options(DEVICE_NAME, declaring_provider(tree)):
        return {"sampledev": cpp_wrapper_build(DEVICE_NAME), "cpu": cpp_wrapper_build("cpu")}


@pytest.fixture(scope="module")
def declared_aoti_build(sample_device: None, tree: Tree) -> Build:
    with ido.testing.registered_cpp_device_options(DEVICE_NAME, declaring_provider(tree)):
        return aoti_build(DEVICE_NAME, tree.root / "model.pt2")


def include(header: str) -> str:
    return f"#include <{header}>"


def assert_includes_the_declared(build: Build, aot_mode: bool) -> None:
    code = build.sources()
    assert include(DECLARED[aot_mode]) in code
    assert include(SECOND) in code
    assert code.index(include(DECLARED[aot_mode])) < code.index(include(SECOND))
    default = (
        aoti_device_header(DEVICE_NAME) if aot_mode else cpp_wrapper_device_header(DEVICE_NAME)
    )
    assert include(default) not in code
    if torch_precompiles_the_device_header():
        assert build.precompiled() == [f"{include(DECLARED[aot_mode])}\n"]
        assert f"{include(DECLARED[aot_mode])}\n" in build.force_included()
    else:  # torch 2.6
        assert build.precompiled() == []


# --- the declaration acts for the declaring device ----------------------------------------


def test_cpp_wrapper_code_includes_the_declared_headers_and_precompiles_the_first(
    declared_builds: dict[str, Build],
) -> None:
    assert declared_builds["sampledev"].result.device.type == DEVICE_NAME
    assert_includes_the_declared(declared_builds["sampledev"], aot_mode=False)


def test_aotinductor_code_includes_the_declared_headers_and_precompiles_the_first(
    declared_aoti_build: Build,
) -> None:
    assert declared_aoti_build.result.device.type == DEVICE_NAME
    assert_includes_the_declared(declared_aoti_build, aot_mode=True)


def test_cpu_in_the_same_process_keeps_torch_s_headers(
    declared_builds: dict[str, Build], tree: Tree
) -> None:
    from torch._inductor import codecache
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    cpu = declared_builds["cpu"]
    code = cpu.sources()
    assert include(cpp_wrapper_device_header("cpu")) in code
    assert "door_headers/" not in code
    assert not cpu.ran_with(tree.root)
    assert "door_headers/" not in "".join(cpu.force_included() + cpu.precompiled())
    if torch_precompiles_the_device_header():  # torch's own header, as stock torch's
        torch_header = codecache._get_cpp_wrapper_header.__wrapped__("cpu")
        assert f"{include(torch_header)}\n" in cpu.force_included()
    if torch_has_include_methods():
        for aot_mode in (False, True):
            method = getattr(
                CppWrapperCpu, f"get_device_include_path_{'aot' if aot_mode else 'jit'}"
            )
            assert method("cpu") == method.__wrapped__("cpu")
            torch_header = codecache._get_cpp_wrapper_header.__wrapped__
            got = codecache._get_cpp_wrapper_header("cpu", aot_mode=aot_mode)
            assert got == torch_header("cpu", aot_mode=aot_mode)


# --- a wrapper class of its own wins ----------------------------------------------------------


@pytest.fixture
def overriding_wrapper(sample_device: None) -> Iterator[type]:
    from torch._inductor.codegen import common

    from inductor_device_options.sample._inductor_backend import (
        SampledevCppWrapperCodegen,
        register_inductor_backend,
    )

    class OverridingCppWrapperCodegen(SampledevCppWrapperCodegen):
        @staticmethod
        def get_device_include_path_jit(device: str) -> str:
            return include(OVERRIDE)

        @staticmethod
        def create(*args: Any) -> OverridingCppWrapperCodegen:
            return OverridingCppWrapperCodegen()

    register_inductor_backend()
    registered = common.device_codegens[DEVICE_NAME]
    common.register_backend_for_device(
        DEVICE_NAME,
        registered.scheduling,
        registered.wrapper_codegen,
        OverridingCppWrapperCodegen,
    )
    try:
        yield OverridingCppWrapperCodegen
    finally:
        common.device_codegens[DEVICE_NAME] = registered


@pytest.mark.skipif(
    not torch_has_include_methods(), reason="torch 2.6 has no get_device_include_path_jit"
)
def test_a_wrapper_class_that_overrides_the_include_method_wins(
    overriding_wrapper: type, tree: Tree
) -> None:
    from torch._inductor import codecache

    provider = declaring_provider(tree, shadow=False)
    with ido.testing.registered_cpp_device_options(DEVICE_NAME, provider):
        torch_header = codecache._get_cpp_wrapper_header.__wrapped__(DEVICE_NAME)
        assert codecache._get_cpp_wrapper_header(DEVICE_NAME) == torch_header
        build = cpp_wrapper_build(DEVICE_NAME)
        headers = device_headers(DEVICE_NAME, False, provider, "the provider")
    code = build.sources()
    assert include(OVERRIDE) in code
    assert "door_headers/sampledev" not in code and include(SECOND) not in code
    assert build.precompiled() == [f"{include(torch_header)}\n"]
    assert f"{include(torch_header)}\n" in build.force_included()
    assert headers.names == (OVERRIDE,)
    assert "OverridingCppWrapperCodegen.get_device_include_path_jit, which wins" in headers.origin


# --- a declaration that cannot be used -------------------------------------------------------


def raises_key_error(device_type: str, aot_mode: bool) -> list[str]:
    raise KeyError(device_type)


@pytest.mark.parametrize(
    ("declaration", "error", "said"),
    [
        (
            raises_key_error,
            ido.InvalidProviderAttributeError,
            "its inductor_headers raised KeyError: 'sampledev'",
        ),
        (
            lambda device_type, aot_mode: "door_headers/one.h",
            ido.InvalidProviderAttributeError,
            "its inductor_headers gave str 'door_headers/one.h', not header names",
        ),
        (
            lambda device_type, aot_mode: [],
            ido.InvalidProviderAttributeError,
            "its inductor_headers gave list [], not at least one header name",
        ),
        (
            lambda device_type, aot_mode: ["door headers/one.h"],
            ido.InvalidProviderAttributeError,
            "'door headers/one.h' is not one",
        ),
    ],
    ids=["raises", "one-str", "empty", "space"],
)
def test_a_bad_declaration_fails_the_compile_before_g_plus_plus_runs(
    sample_device: None, tree: Tree, declaration: object, error: type, said: str
) -> None:
    provider = declaring_provider(tree, declaration=declaration)
    with ido.testing.registered_cpp_device_options(DEVICE_NAME, provider):
        with record_compiler_commands(compiler()) as commands, pytest.raises(Exception) as raised:
            cpp_wrapper_build(DEVICE_NAME)
        if torch_precompiles_the_device_header():  # asked by AotCodeCompiler before g++
            from torch._inductor import codecache

            with pytest.raises(error):
                codecache._get_cpp_wrapper_header(DEVICE_NAME, aot_mode=True)
    torch._dynamo.reset()
    assert not Build(None, tuple(commands)).ran_with(tree.root)
    chain = []
    current: BaseException | None = raised.value
    while current is not None:
        chain.append(current)
        current = current.__cause__ or current.__context__
    [found] = [item for item in chain if type(item) is error][:1]
    if isinstance(found.__cause__, KeyError):  # what the declaration raised, as the cause
        assert "door_headers_options" in str(raised_by_provider(found))
    text = str(found)
    assert said in text
    assert repr(DEVICE_NAME) in text and "door_headers_options" in text


# --- doctor says which applies -----------------------------------------------------------


@pytest.mark.parametrize("aot_mode", [False, True])
def test_doctor_names_the_declaration_where_it_applies_and_torch_s_default_otherwise(
    declared_builds: dict[str, Build], tree: Tree, aot_mode: bool
) -> None:
    """The sample's wrapper class (registered by the builds) inherits torch's method."""
    provider = declaring_provider(tree)
    headers = device_headers(DEVICE_NAME, aot_mode, provider, "the provider")
    assert headers.names == (DECLARED[aot_mode], SECOND)
    assert headers.origin == "inductor_headers of the provider"

    headers = device_headers(DEVICE_NAME, aot_mode, sdk_cpp_device_options, "the provider")
    default = (
        aoti_device_header(DEVICE_NAME) if aot_mode else cpp_wrapper_device_header(DEVICE_NAME)
    )
    assert headers.names == (default,)
    if torch_has_include_methods():  # the class is asked, and answers torch's default
        mode = "aot" if aot_mode else "jit"
        assert headers.origin.endswith(f"SampledevCppWrapperCodegen.get_device_include_path_{mode}")


def test_doctor_fails_a_declared_header_that_is_not_found(
    sample_device: None, tree: Tree, tmp_path: Path
) -> None:
    from inductor_device_options._diagnose.doctor import run_doctor
    from inductor_device_options._hook.sources import found_source

    def missing(device_type: str, aot_mode: bool) -> list[str]:
        return ["door_headers/missing.h", SECOND]

    provider = declaring_provider(tree, declaration=missing)
    with ido.testing.registered_cpp_device_options(DEVICE_NAME, provider):
        checks = {
            check.name: check for check in run_doctor(found_source(DEVICE_NAME), False, tmp_path)
        }
    headers = checks["headers"]
    assert (headers.status, headers.summary) == ("fail", "1 of 2 not found")
    [problem] = headers.problems
    assert "`#include <door_headers/missing.h>` (inductor_headers of the provider)" in problem.cause


def test_the_door_says_what_this_torch_lacks() -> None:
    gap = door.release_gap()
    if torch_has_include_methods():
        assert gap is None
    else:
        assert gap is not None
        assert "c_shim_<device>.h" in gap and "precompiles no device header" in gap
