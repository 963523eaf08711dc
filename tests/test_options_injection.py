"""What is validated is exactly what g++ receives: injection attempts, as real builds.

Provider code is trusted; the values it returns are built from environment variables,
symlinks and the current directory. Each case below is such a value carrying a payload
that, were it to become a compiler argument of its own, force-includes ``evil.h``, whose
``#error`` stops g++ with "injected argument". A build that fails that way proves an
injected argument; the package must refuse the value (``InvalidCppDeviceOptionsError``,
naming the device, the provider, the field and the value) before g++ runs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from support import (
    check_python,
    cpp_builder_keeps_whole,
    definitions_of,
    torch_has_custom_op_libs,
)
from torch._inductor import config
from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

import inductor_device_options as ido

pytestmark = pytest.mark.usefixtures("clean_registry")

DEVICE = "injdev"
KERNEL = 'extern "C" int kernel(void) { return 0; }\n'


@dataclass(frozen=True)
class Payload:
    root: Path
    evil: Path  # #error "injected argument"
    response: Path  # a g++ response file: `X -include<evil>`

    @property
    def include(self) -> str:
        """One compiler argument that force-includes evil.h."""
        return f"-include{self.evil}"


@pytest.fixture
def payload(tmp_path: Path) -> Payload:
    evil = tmp_path / "evil.h"
    evil.write_text('#error "injected argument"\n')
    response = tmp_path / "rsp"
    response.write_text(f"X -include{evil}\n")
    (tmp_path / "kernel.cpp").write_text(KERNEL)
    return Payload(tmp_path, evil, response)


def build(root: Path, device_type: str = DEVICE) -> None:
    """What Inductor does for a C++ kernel of the device: options, command line, g++."""
    builder = CppBuilder(
        "kernel",
        [str(root / "kernel.cpp")],
        CppTorchDeviceOptions(device_type=device_type),
        output_dir=str(root / "out"),
    )
    builder.build()


def provider_adding(field: str, value: object) -> Callable[[str, bool, bool], object]:
    def provider(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        getattr(options, field).append(value)
        return options

    return provider


def test_the_payloads_inject_when_they_reach_g_plus_plus_as_arguments(payload: Payload) -> None:
    """The control: g++ given the payload as arguments stops at the #error."""
    for arguments in (["-D", f"@{payload.response}"], [payload.include]):
        finished = subprocess.run(
            ["g++", "-c", str(payload.root / "kernel.cpp"), "-o", "/dev/null", *arguments],
            capture_output=True,
            text=True,
            check=False,
        )
        assert finished.returncode != 0
        assert "injected argument" in finished.stderr


def test_a_valid_value_builds(payload: Payload) -> None:
    """The other control: the same build with a plain value compiles."""
    ido.register_cpp_device_options(DEVICE, provider_adding("definitions", "INJDEV=1"))
    build(payload.root)
    assert (payload.root / "out" / "kernel.so").is_file()


def symlinked_dir(payload: Payload, target: str) -> str:
    """A dir the provider names through a symlink; its real path is ``target``."""
    Path(target).mkdir(parents=True)
    link = payload.root / "sdk-latest"
    link.symlink_to(target)
    return str(link)


# (id, field, value made from the payload, words of the error)
CASES: list[tuple[str, str, Callable[[Payload], object], str]] = [
    (
        "definition-response-file",
        "definitions",
        lambda p: f"@{p.response}",
        "response file",
    ),
    (
        "definition-response-file-after-spaces",
        "definitions",
        lambda p: f"   @{p.response}",
        "response file",
    ),
    (
        "passthrough-response-file",
        "passthrough_args",
        lambda p: f"-Wall @{p.response}",
        "response file",
    ),
    (
        "library-dir-symlink-to-a-path-with-a-space",
        "libraries_dirs",
        lambda p: symlinked_dir(p, f"{p.root}/sdk {p.include}/lib"),
        "real path",
    ),
    (
        "include-dir-relative-to-the-current-directory",
        "include_dirs",
        lambda p: "include",
        "is relative",
    ),
    (
        "library-dir-relative-to-the-current-directory",
        "libraries_dirs",
        lambda p: "lib64",
        "is relative",
    ),
]


@pytest.mark.parametrize(
    ("field", "make_value", "reason"),
    [pytest.param(field, make, reason, id=name) for name, field, make, reason in CASES],
)
def test_an_injected_argument_is_refused_before_g_plus_plus(
    payload: Payload,
    field: str,
    make_value: Callable[[Payload], object],
    reason: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(payload.root)
    value = make_value(payload)
    provider = provider_adding(field, value)
    ido.register_cpp_device_options(DEVICE, provider)
    if reason == "real path" and cpp_builder_keeps_whole(field):
        # torch 2.15 quotes -L: the real path reaches g++ as one argument, so the build works
        # (an injected -include of the payload would fail it with its #error).
        build(payload.root)
        assert (payload.root / "out" / "kernel.so").is_file()
        return
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        build(payload.root)
    error = caught.value
    assert (error.device_type, error.field, error.value) == (DEVICE, field, value)
    assert (
        error.description is not None and "provider_adding.<locals>.provider" in error.description
    )
    assert f"C++ options for device {DEVICE!r} from {error.description}: {field}[" in str(error)
    assert reason in str(error)
    assert not (payload.root / "out" / "kernel.so").exists()


def test_a_symlink_to_a_path_with_a_quote_is_refused_not_a_crash_in_inductor(
    payload: Payload,
) -> None:
    """Inductor's own shlex.split raised ValueError on the real path's quote."""
    target = f"{payload.root}/it's/lib"
    link = symlinked_dir(payload, target)
    ido.register_cpp_device_options(DEVICE, provider_adding("libraries_dirs", link))
    if cpp_builder_keeps_whole("libraries_dirs"):  # torch 2.15 quotes -L: g++ gets it whole
        build(payload.root)
        assert (payload.root / "out" / "kernel.so").is_file()
        return
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        build(payload.root)
    assert f"libraries_dirs[1] = {link!r} (real path {target!r})" in str(caught.value)


def test_custom_op_libs_are_validated_with_the_providers_options(payload: Payload) -> None:
    if not torch_has_custom_op_libs():
        pytest.skip(f"torch {torch.__version__} has no config.aot_inductor.custom_op_libs (2.7+)")

    def own_lists(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
        return (["INJDEV"], [], [], [], [], [], [])

    ido.register_cpp_device_options(DEVICE, own_lists)
    bad = f"m {payload.include}"
    with (
        config.patch({"aot_inductor.custom_op_libs": [bad]}),
        pytest.raises(ido.InvalidCppDeviceOptionsError) as caught,
    ):
        build(payload.root)
    assert caught.value.field == "libraries"
    assert f"libraries[0] = {bad!r} (from config.aot_inductor.custom_op_libs)" in str(caught.value)


class Sneaky(str):
    """A str whose formatting differs from its characters."""

    payload = ""

    def __format__(self, spec: str) -> str:
        return f"X {self.payload}"

    def __str__(self) -> str:
        return f"X {self.payload}"


class Fickle(Sequence[str]):
    """A list that answers its first two reads with one list and later reads with another
    (like a view of an environment variable another thread changes)."""

    def __init__(self, first: list[str], later: list[str]):
        self._answers = (first, first, later)
        self._reads = 0

    def _current(self) -> list[str]:
        return self._answers[min(self._reads, 2)]

    def __len__(self) -> int:
        return len(self._current())

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return self._current()[index]

    def __iter__(self) -> Iterator[str]:
        answer = self._current()
        self._reads += 1
        return iter(answer)


def test_a_str_subclass_reaches_g_plus_plus_as_the_characters_validated(
    payload: Payload,
) -> None:
    Sneaky.payload = payload.include
    ido.register_cpp_device_options(DEVICE, provider_adding("definitions", Sneaky("INJDEV")))
    definitions = definitions_of(CppTorchDeviceOptions(device_type=DEVICE))
    assert "INJDEV" in definitions
    assert all(type(definition) is str for definition in definitions)
    build(payload.root)


def test_a_sequence_read_once_reaches_g_plus_plus_as_validated(payload: Payload) -> None:
    def fickle(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[object, ...]:
        return (Fickle(["INJDEV"], [f"X {payload.include}"]), [], [], [], [], [], [])

    ido.register_cpp_device_options(DEVICE, fickle)
    build(payload.root)
    assert "INJDEV" in definitions_of(CppTorchDeviceOptions(device_type=DEVICE))


# --- validation follows the running torch's rendering ---------------------------------------

# Torch's own cpp_builder with one line as torch 2.6 has it: include dirs not quoted.
UNQUOTED_INCLUDE_DIRS = """
import importlib.machinery, importlib.util, sys
import torch  # not torch._inductor yet: it imports cpp_builder

QUOTED = 'self._include_dirs_args += f"-I{shlex.quote(inc_dir)} "'
AS_IN_2_6 = 'self._include_dirs_args += f"-I{inc_dir} "'

class Loader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        source = super().get_data(path).decode()
        # torch 2.6 renders it so already.
        assert QUOTED in source or AS_IN_2_6 in source, "torch's -I rendering changed"
        return source.replace(QUOTED, AS_IN_2_6).encode()

    def path_stats(self, path):
        raise OSError("no bytecode: always the edited source")

class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "torch._inductor.cpp_builder":
            return None
        origin = importlib.machinery.PathFinder.find_spec(name, path).origin
        return importlib.util.spec_from_file_location(name, origin, loader=Loader(name, origin))

sys.meta_path.insert(0, Finder)
import torch._inductor.cpp_builder
import inductor_device_options as ido
ido.get_cpp_device_options("cpu")  # installs the hook into this cpp_builder
assert ido.introspection.hook_state().mode == "hook"
"""

BUILD_WITH_INCLUDE_DIR = """
import os
import inductor_device_options as ido
from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions
root = os.environ["ROOT"]
include_dir = f"{root}/inc -include{root}/evil.h"
def options(device_type, aot_mode, compile_only):
    result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    result.include_dirs.append(include_dir)
    return result
ido.register_cpp_device_options("injdev", options)
try:
    builder = CppBuilder("kernel", [f"{root}/kernel.cpp"],
                         CppTorchDeviceOptions(device_type="injdev"), output_dir=f"{root}/out")
    builder.build()
    print("built")
except ido.InvalidCppDeviceOptionsError as error:
    print("refused:", error)
except Exception as error:
    print("g++ failed:", type(error).__name__, "injected argument" in str(error))
"""


@pytest.mark.parametrize(
    ("rendering", "outcome"),
    [
        pytest.param("", None, id="as-this-torch-renders"),
        pytest.param(UNQUOTED_INCLUDE_DIRS, "refused:", id="unquoted-as-in-2.6"),
    ],
)
def test_an_include_dir_with_a_space_is_refused_only_where_torch_does_not_quote_it(
    payload: Payload, rendering: str, outcome: str | None
) -> None:
    if outcome is None:  # 2.13 quotes -I{dir}, 2.6 does not
        outcome = "built" if cpp_builder_keeps_whole("include_dirs") else "refused:"
    out = check_python(rendering + BUILD_WITH_INCLUDE_DIR, env={"ROOT": str(payload.root)})
    assert out.startswith(outcome), out
    if outcome == "refused:":
        assert "include_dirs[" in out and "reaches g++ as" in out
        assert "-I{value} (not quoted)" in out


def test_a_provider_macro_that_starts_like_the_identity_is_kept(tmp_path: Path) -> None:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "injdev.h").write_text("#pragma once\n")
    mode = "INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY_MODE=2"

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
        return ([mode], [str(tmp_path / "include")], [], [], [], [], [])

    ido.register_cpp_device_options(DEVICE, options)
    definitions = ido.get_cpp_device_options(DEVICE).definitions
    assert definitions[0] == mode
    assert definitions[1].startswith("INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=")
    assert len(definitions) == 2


def test_the_current_directory_does_not_change_a_cached_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative dir used to be resolved against the current directory and cached by its
    relative spelling: the first directory won for good. It is refused wherever it is."""
    ido.register_cpp_device_options(DEVICE, provider_adding("include_dirs", "include"))
    for directory in (tmp_path / "a", tmp_path / "b"):
        (directory / "include").mkdir(parents=True)
        monkeypatch.chdir(directory)
        with pytest.raises(ido.InvalidCppDeviceOptionsError, match="is relative"):
            ido.get_cpp_device_options(DEVICE)
    assert os.getcwd() == str(tmp_path / "b")
