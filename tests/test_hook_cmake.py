"""The C++ project AOTInductor writes with ``aot_inductor.package_cpp_only``, as torch's
``CppBuilder`` CMake writers write it with the hook around them (_hook/cmake.py).

torch's file for every device the package does not serve, byte for byte. For a device it
serves through its own door: a project whose include dirs, library dirs and ldflags (and in
torch's standalone branch its definitions, cflags and passthrough args) reach the compiler as
g++ gets them from Inductor, the SDK's paths cache variables that another machine sets. A
real cmake configures each project and the commands it generates are read; building and
running a model's project on a device is tests/e2e/test_cmake_project.py's and
tests/peers/test_regdev_cmake.py's.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from cmake_projects import configure, link_command, output, torch_s_writers
from support import NATIVE, outcome, torch_writes_cmake
from test_diagnose_doctor import Sdk, provider, write_sdk
from torch._inductor import config
from torch._inductor import cpp_builder as torch_cpp_builder
from torch._inductor.cpp_builder import CppBuilder

import inductor_device_options as ido
from inductor_device_options._diagnose.cmake_checks import write_project
from inductor_device_options._hook import install
from inductor_device_options._options.cmake import compile_section, link_section
from inductor_device_options._torch_names import CMAKE_WRITERS

WRITES_CMAKE = torch_writes_cmake()
pytestmark = [
    pytest.mark.usefixtures("clean_registry"),
    pytest.mark.skipif(not WRITES_CMAKE, reason="this torch writes no CMake project"),
]
# torch's branches: libtorch, and compile_standalone's where torch has it.
BRANCHES: dict[str, dict[str, object]] = {"libtorch": {}}
if hasattr(config.aot_inductor, "link_libtorch"):
    BRANCHES["standalone"] = {"aot_inductor.link_libtorch": False}
# torch's compile_standalone branch finds TorchStandalone, which no wheel ships: a stand-in
# that gives the project torch's include dir (what cmake configures; nothing is built).
STANDALONE_CONFIG = (
    'set(TorchStandalone_INCLUDE_DIRS "{include}")\nset(TorchStandalone_FOUND TRUE)\n'
)


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Sdk:
    return write_sdk(tmp_path_factory.mktemp("acme-sdk"), ("acme", "torchdoordev"))


def acme_options(sdk: Sdk) -> Callable[[str, bool, bool], ido.CppDeviceOptions]:
    """test_diagnose_doctor's provider, with a runpath, a cflag and a passthrough arg."""
    base = provider(sdk, runpath=True)

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        served = base(device_type, aot_mode, compile_only)
        served.cflags.append("fno-strict-aliasing")
        served.passthrough_args.append("-Wno-unused-function -DACME_PASSTHROUGH=1")
        return served

    return options


# --- torch's file, byte for byte --------------------------------------------------------

# (the device the writers are told, the device its builders' options are asked for, how the
# device is served)
UNSERVED = [
    ("cpu", "cpu", "torch's own"),
    ("mps", "mps", "torch's own"),
    ("xpu", "cpu", "torch's own (its options need Intel's GPU driver)"),
    ("cuda", "cpu", "torch's own (its options need a CUDA toolkit)"),
    ("plaindev", "plaindev", "served by nobody"),
    ("torchdoordev", "torchdoordev", "registered through torch's door"),
]


def both_projects(
    tmp_path: Path, device: str, options_device: str, branch: str
) -> tuple[tuple[str, object], tuple[str, object]]:
    """What the wrapped writers do for ``device``, and what torch's own do: the project's
    bytes, or the error (torch 2.15's cuda writer asks the GPU for its architecture)."""
    projects = []
    for writers in ("package", "torch"):
        directory = tmp_path / branch / writers
        with config.patch(BRANCHES[branch]), _writers(writers):
            write = functools.partial(_write, directory, device, options_device)
            projects.append(outcome(lambda: write().read_bytes()))  # noqa: B023 (called here)
    return projects[0], projects[1]


def _writers(which: str) -> object:
    import contextlib

    return torch_s_writers() if which == "torch" else contextlib.nullcontext()


def _write(directory: Path, device: str, options_device: str) -> Path:
    """write_project, its builders' options asked for ``options_device``, the compile writer
    told ``device``."""
    from torch._inductor.cpp_builder import CppTorchDeviceOptions

    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "model.cpp"
    source.write_text('extern "C" int model(void) { return 0; }\n')
    path = str(directory / "CMakeLists.txt")

    def builder(sources: list[str], compile_only: bool) -> CppBuilder:
        options = CppTorchDeviceOptions(
            device_type=options_device, aot_mode=True, compile_only=compile_only
        )
        return CppBuilder("model", sources, options, output_dir=str(directory))

    wrapper = builder([str(source)], True)
    wrapper.save_compile_cmd_to_cmake(path, device)
    wrapper.save_src_to_cmake(path, str(source))
    builder([wrapper.get_target_file_path()], False).save_link_cmd_to_cmake(path)
    return Path(path)


@pytest.mark.parametrize("branch", BRANCHES)
@pytest.mark.parametrize(
    ("device", "options_device", "served_by"), UNSERVED, ids=[u[0] for u in UNSERVED]
)
def test_a_device_the_package_does_not_serve_gets_torch_s_file_byte_for_byte(
    sdk: Sdk, tmp_path: Path, device: str, options_device: str, served_by: str, branch: str
) -> None:
    ido.register_cpp_device_options("acme", acme_options(sdk))  # served meanwhile: no matter
    if device == "torchdoordev":
        torch_cpp_builder.register_cpp_device_options(device, acme_options(sdk))  # type: ignore[attr-defined]
    package_s, torch_s = both_projects(tmp_path, device, options_device, branch)
    assert package_s == torch_s, served_by


@pytest.mark.parametrize("branch", BRANCHES)
def test_a_served_device_s_project_is_not_torch_s(sdk: Sdk, tmp_path: Path, branch: str) -> None:
    """The comparison above tells the files apart: a served device's differ."""
    ido.register_cpp_device_options("acme", acme_options(sdk))
    (_, package_s), (_, torch_s) = both_projects(tmp_path, "acme", "acme", branch)
    assert isinstance(package_s, bytes) and isinstance(torch_s, bytes)
    assert package_s.startswith(torch_s[: torch_s.index(b"target_sources")])
    assert package_s != torch_s


def test_the_hook_wraps_torch_s_writers_once() -> None:
    for _ in range(2):
        install.install(torch_cpp_builder)
    for name in CMAKE_WRITERS:
        torch_s = CppBuilder.__dict__[name].__wrapped__
        assert torch_s.__module__ == torch_cpp_builder.__name__
        assert not hasattr(torch_s, "__wrapped__")


# --- a served device's project, configured by cmake --------------------------------------


def configured(project: Path, branch: str, *defines: str) -> tuple[list[str], list[str]]:
    """The words of the compile command and of the link command cmake generates."""
    build = project.parent / "build"
    if branch == "standalone":
        standalone = project.parent / "torch-standalone" / "TorchStandaloneConfig.cmake"
        standalone.parent.mkdir(parents=True, exist_ok=True)
        include = Path(torch.__file__).parent / "include"
        standalone.write_text(STANDALONE_CONFIG.format(include=include))
        defines = (f"TorchStandalone_DIR={standalone.parent}", *defines)
    finished = configure(project.parent, build, *defines)
    assert finished.returncode == 0, output(finished)
    [entry] = json.loads((build / "compile_commands.json").read_text())
    return shlex.split(entry["command"]), shlex.split(link_command(build))


def as_cmake_passes(field: str, value: str) -> list[str]:
    """The compiler words a value of ``field`` becomes, as g++ gets them from Inductor."""
    if field == "definitions":
        return [f"-D{value.strip()}"]
    if field == "passthrough_args":
        return shlex.split(value)
    prefix = {"include_dirs": "-I", "libraries_dirs": "-L", "libraries": "-l"}.get(field, "-")
    return [f"{prefix}{value}"]


def own_values(device: str, compile_only: bool) -> dict[str, list[str]]:
    """The device's values torch's defaults lack (what torch's CMake would leave out)."""
    served = ido.get_cpp_device_options(device, True, compile_only)
    defaults = ido.default_cpp_device_options(device, True, compile_only)
    return {
        field: [value for value in values if value not in getattr(defaults, field)]
        for field, values in served._asdict().items()
    }


# The fields each command must carry, by branch: torch writes the libtorch branch's
# definitions, cflags and passthrough args itself.
COMPILE_FIELDS = {
    "libtorch": ("include_dirs",),
    "standalone": ("include_dirs", "definitions", "cflags", "passthrough_args"),
}
LINK_FIELDS = ("libraries_dirs", "ldflags", "libraries")


@pytest.mark.parametrize("branch", BRANCHES)
def test_a_served_device_s_values_reach_the_commands_cmake_generates(
    sdk: Sdk, tmp_path: Path, branch: str
) -> None:
    ido.register_cpp_device_options("acme", acme_options(sdk))
    with config.patch(BRANCHES[branch]):
        project = write_project("acme", tmp_path / "project")
    compile_words, link_words = configured(project, branch)
    reached = {"compile": compile_words, "link": link_words}
    missing = [
        (command, field, value)
        for command, fields, compile_only in (
            ("compile", COMPILE_FIELDS[branch], True),
            ("link", LINK_FIELDS, False),
        )
        for field in fields
        for value in own_values("acme", compile_only)[field]
        if not set(as_cmake_passes(field, value)) <= set(reached[command])
    ]
    assert missing == [], project.read_text()
    assert sdk.runpath() in own_values("acme", False)["ldflags"]
    assert f"-I{sdk.inductor_include}" in compile_words


@pytest.mark.parametrize("branch", BRANCHES)
def test_torch_s_own_file_leaves_the_served_device_s_dirs_out_and_its_ldflags_dashless(
    sdk: Sdk, tmp_path: Path, branch: str
) -> None:
    """What the package's section adds: torch's file, configured alike, lacks it."""
    ido.register_cpp_device_options("acme", acme_options(sdk))
    with config.patch(BRANCHES[branch]), torch_s_writers():
        project = write_project("acme", tmp_path / "project")
    compile_words, link_words = configured(project, branch)
    assert f"-I{sdk.include}" not in compile_words
    assert f"-L{sdk.lib}" not in link_words
    if branch == "standalone":
        assert "-DUSE_ACME" not in compile_words
    # torch writes the ldflag without its '-': ld takes it for an input file. torch patched
    # with upstream/pytorch's 0002 (verify.py's overlay) writes it with its '-'.
    dashed = "-" + sdk.runpath()
    assert (dashed in link_words, sdk.runpath() in link_words) == (NATIVE, not NATIVE)


def test_another_machine_configures_the_sdk_s_paths_through_cache_variables(
    sdk: Sdk, tmp_path: Path
) -> None:
    ido.register_cpp_device_options("acme", acme_options(sdk))
    project = write_project("acme", tmp_path / "project")
    text = project.read_text()
    for variable in ("ACME_SDK_INCLUDE_DIRS", "ACME_SDK_LIBRARY_DIRS", "ACME_SDK_RUNPATH_DIRS"):
        assert f"set({variable} " in text
    elsewhere = tmp_path / "elsewhere"
    include, lib = elsewhere / "include", elsewhere / "lib"
    compile_words, link_words = configured(
        project,
        "libtorch",
        f"ACME_SDK_INCLUDE_DIRS={include};{sdk.inductor_include}",
        f"ACME_SDK_LIBRARY_DIRS={lib}",
    )
    assert f"-I{include}" in compile_words and f"-I{sdk.include}" not in compile_words
    assert f"-L{lib}" in link_words and f"-L{sdk.lib}" not in link_words
    # The runpath follows the library dirs, configured anew in the same build dir too.
    assert f"-Wl,-rpath,{lib}" in link_words and f"-{sdk.runpath()}" not in link_words
    moved = elsewhere / "lib64"
    _, link_words = configured(project, "libtorch", f"ACME_SDK_LIBRARY_DIRS={moved}")
    assert f"-Wl,-rpath,{moved}" in link_words and f"-Wl,-rpath,{lib}" not in link_words
    _, link_words = configured(project, "libtorch", "ACME_SDK_RUNPATH_DIRS=/opt/acme/lib")
    assert "-Wl,-rpath,/opt/acme/lib" in link_words and f"-Wl,-rpath,{moved}" not in link_words


def test_a_runpath_cmake_would_split_is_refused_when_configured(sdk: Sdk, tmp_path: Path) -> None:
    ido.register_cpp_device_options("acme", acme_options(sdk))
    project = write_project("acme", tmp_path / "project")
    finished = configure(
        project.parent, project.parent / "build", "ACME_SDK_RUNPATH_DIRS=/opt/acme,1/lib"
    )
    assert finished.returncode != 0
    message = " ".join(finished.stderr.split())
    assert "ACME_SDK_RUNPATH_DIRS: '/opt/acme,1/lib' is not an absolute dir free of ','" in message


def test_a_value_cmake_cannot_carry_is_refused_naming_the_device_and_the_provider(
    sdk: Sdk, tmp_path: Path
) -> None:
    odd = tmp_path / "acme;2" / "include"
    odd.mkdir(parents=True)
    base = acme_options(sdk)

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        served = base(device_type, aot_mode, compile_only)
        served.include_dirs.append(str(odd))
        return served

    ido.register_cpp_device_options("acme", options)
    directory = tmp_path / "project"
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as raised:
        write_project("acme", directory)
    error = raised.value
    assert (error.device_type, error.field, error.value) == ("acme", "include_dirs", str(odd))
    assert error.description is not None and "options" in error.description
    assert "CMake splits a list at ';'" in str(error)
    assert not (directory / "CMakeLists.txt").exists()  # nothing half-written


DEPLOYMENT = Path(__file__).resolve().parent.parent / "docs" / "guides" / "deployment.md"


def test_the_deployment_guide_shows_the_section_the_package_writes() -> None:
    """The page's example, rendered by the code for the options it describes."""
    page = DEPLOYMENT.read_text()
    block = page.split("<!-- cmake-section:")[1].split("```text\n", 1)[1].split("```", 1)[0]
    shown_compile, shown_link = block.split("\n...\n")
    own = ido.CppDeviceOptions.empty()
    own.include_dirs.append("/opt/acme/include")
    own.libraries_dirs.append("/opt/acme/lib")
    own.libraries.append("acme_rt")
    own.ldflags.append("Wl,-rpath,/opt/acme/lib")
    source = ido.introspection.DeviceOptionsSource(
        "acme", "registration", "acme_backend.cpp_device_options", guaranteed=True
    )
    libraries = ["torch", "torch_cpu", "gomp", "acme_rt"]
    compiled = compile_section("aoti_model", source, own, standalone=False)
    assert compiled.strip() == shown_compile.strip()
    assert link_section("aoti_model", source, own, [], libraries).strip() == shown_link.strip()
