"""Other code assigning cpp_builder.get_cpp_torch_device_options, before or after the hook.

Whatever is assigned, in whatever order, behaves as the same stack of functions would
without this package, plus the registrations: a replacement (never calls what it found)
serves what the package does not; a wrapper (calls what it captured) wraps everything
below it, registrations included. torch_npu 2.14.0's replacement is its released file.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import subprocess
import unittest.mock
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import released_torch_npu
import torch
import torch._inductor.cpp_builder as cpp_builder
from support import (
    NATIVE,
    TESTS_DIR,
    check_python,
    cpp_wrapper_device_header,
    definitions_of,
    pythonpath_with,
    run_python,
    torch_has_custom_op_libs,
)
from torch._inductor import config

import inductor_device_options as ido
from inductor_device_options._hook.installation import installed
from inductor_device_options._hook.serve import DEFAULTS_PROBE_DEVICE

pytestmark = pytest.mark.usefixtures("clean_registry")

Function = Callable[..., Any]
Stacking = Callable[[Function], Function]

ACME_MACRO = "ACME_DEVICE"
WRAPPER_MACRO = "OPENREG_WRAPPED"


def acme_options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append(ACME_MACRO)
    return options


@pytest.fixture(scope="session")
def torch_npu_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return released_torch_npu.unpack(tmp_path_factory.mktemp("torch_npu_wheel"))


@pytest.fixture
def torch_npu(torch_npu_package: Path) -> ModuleType:
    """torch_npu 2.14.0's own torch_npu/_inductor/cpp_builder.py, executed."""
    return released_torch_npu.load_cpp_builder(torch_npu_package)


@pytest.fixture(autouse=True)
def restored_function() -> Iterator[Function]:
    """Each test leaves the attribute as it found it, by assigning the saved entry back."""
    saved = cpp_builder.get_cpp_torch_device_options
    yield saved
    cpp_builder.get_cpp_torch_device_options = saved
    assert ido.introspection.hook_state().adopted == ()


def openreg_wrapper(previous: Function) -> Function:
    """What out-of-tree backends built on openreg do: call through, add flags."""

    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: Any
    ) -> Any:
        options = previous(device_type, aot_mode, compile_only, **kwargs)
        if device_type in ("acme", "cpu"):
            options[0].append(WRAPPER_MACRO)
        return options

    return get_cpp_torch_device_options


def assign(stacking: Stacking) -> None:
    cpp_builder.get_cpp_torch_device_options = stacking(cpp_builder.get_cpp_torch_device_options)


def definitions(device_type: str) -> list[str]:
    return definitions_of(cpp_builder.CppTorchDeviceOptions(device_type=device_type))


def test_torch_npu_replacement_after_the_hook_keeps_every_registration(
    torch_npu: ModuleType,
) -> None:
    ido.register_cpp_device_options("acme", acme_options)
    torch_npu.patch_get_cpp_torch_device_options()
    assert ACME_MACRO in definitions("acme")
    # What the package does not serve gets exactly what the replacement gives.
    assert ido.get_cpp_device_options("cpu") == ido.CppDeviceOptions(
        *torch_npu.get_cpp_torch_device_options("cpu")
    )
    if torch_has_custom_op_libs():  # torch 2.7+
        with config.patch({"aot_inductor.custom_op_libs": ["my_ops"]}):
            libraries = cpp_builder.CppTorchDeviceOptions(device_type="acme").get_libraries()
            assert "my_ops" in libraries
    state = ido.introspection.hook_state()
    assert state.registrations_apply and state.replaced_by is None
    assert [function.description for function in state.adopted] == [
        "torch_npu._inductor.cpp_builder.get_cpp_torch_device_options"
    ]
    assert state.adopted[0].behaviour == "replacement"
    assert state.describe().endswith(
        "adopted after it: torch_npu._inductor.cpp_builder.get_cpp_torch_device_options "
        "(replacement)"
    )


def test_the_replacement_is_the_default_a_provider_extends(torch_npu: ModuleType) -> None:
    ido.register_cpp_device_options("acme", acme_options)
    torch_npu.patch_get_cpp_torch_device_options()
    replacement = ido.CppDeviceOptions(*torch_npu.get_cpp_torch_device_options("acme"))
    options = ido.get_cpp_device_options("acme")
    # Made fresh: real paths, and the SDK identity of torch_npu's own headers.
    assert options.include_dirs == [os.path.realpath(path) for path in replacement.include_dirs]
    assert options.definitions[:-1] == [*replacement.definitions, ACME_MACRO]
    assert options.definitions[-1].startswith("INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=")
    assert options.libraries_dirs == [os.path.realpath(p) for p in replacement.libraries_dirs]
    assert ido.default_cpp_device_options("acme") == replacement


def test_inductor_keywords_an_adopted_function_does_not_accept_are_not_passed(
    torch_npu: ModuleType,
) -> None:
    """torch 2.15 passes cpp_stdlib=; torch_npu 2.14's function takes three parameters."""
    torch_npu.patch_get_cpp_torch_device_options()
    with pytest.raises(TypeError):
        torch_npu.get_cpp_torch_device_options(
            device_type="cpu", aot_mode=False, compile_only=False, cpp_stdlib="libstdc++"
        )
    result = cpp_builder.get_cpp_torch_device_options(
        device_type="cpu", aot_mode=False, compile_only=False, cpp_stdlib="libstdc++"
    )
    assert result == torch_npu.get_cpp_torch_device_options("cpu")


def test_a_wrapper_after_the_hook_wraps_registrations_without_recursing() -> None:
    ido.register_cpp_device_options("acme", acme_options)
    stock_cpu = definitions("cpu")
    assign(openreg_wrapper)
    assert definitions("acme")[-2:] == [ACME_MACRO, WRAPPER_MACRO]
    assert definitions("cpu") == [*stock_cpu, WRAPPER_MACRO]
    state = ido.introspection.hook_state()
    assert state.registrations_apply
    assert [function.behaviour for function in state.adopted] == ["wraps the hook"]


def torch_npu_replacement(module: ModuleType) -> Stacking:
    def stacking(previous: Function) -> Function:
        return module.get_cpp_torch_device_options  # type: ignore[no-any-return]

    return stacking


def mock_replacement(previous: Function) -> Function:
    return unittest.mock.Mock(return_value=(["MOCKED"], [], [], [], [], [], []))


STACKINGS = ["openreg wrapper", "torch_npu replacement", "mock replacement"]


@pytest.mark.parametrize(
    "names",
    [list(order) for size in (1, 2, 3) for order in itertools.permutations(STACKINGS, size)],
    ids=lambda names: " then ".join(names),
)
def test_any_stack_behaves_as_without_the_package_plus_the_registrations(
    names: list[str], torch_npu: ModuleType, restored_function: Function
) -> None:
    stackings: dict[str, Stacking] = {
        "openreg wrapper": openreg_wrapper,
        "torch_npu replacement": torch_npu_replacement(torch_npu),
        "mock replacement": mock_replacement,
    }
    ido.register_cpp_device_options("acme", acme_options)
    # The same stack without the package: each function over the one before, torch's at
    # the bottom.
    without: Function = installed().function_below
    for name in names:
        without = stackings[name](without)
        assign(stackings[name])
    for device_type in ("cpu", "unregistered_dev"):
        assert ido.get_cpp_device_options(device_type) == ido.CppDeviceOptions(
            *without(device_type, False, False)
        )
    # acme: its registration, with what the wrappers above the topmost replacement add.
    last_replacement = max(
        (index for index, name in enumerate(names) if "replacement" in name), default=-1
    )
    wrappers_above = names[last_replacement + 1 :].count("openreg wrapper")
    acme = [
        definition
        for definition in ido.get_cpp_device_options("acme").definitions
        if not definition.startswith("INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=")
    ]
    assert acme.count(ACME_MACRO) == 1
    assert acme[acme.index(ACME_MACRO) + 1 :] == [WRAPPER_MACRO] * wrappers_above
    assert ido.introspection.hook_state().registrations_apply


def test_mock_patch_object_answers_once_per_lookup_and_is_undone(
    restored_function: Function,
) -> None:
    ido.register_cpp_device_options("acme", acme_options)
    answer = (["MOCKED"], [], [], [], [], [], [])
    with unittest.mock.patch.object(
        cpp_builder, "get_cpp_torch_device_options", return_value=answer
    ) as mocked:
        assert cpp_builder.get_cpp_torch_device_options("cpu", False, False) == answer
        assert mocked.call_count == 1
        assert "MOCKED" in definitions("cpu")
        assert mocked.call_count == 2
        assert ACME_MACRO in definitions("acme")  # a replacement: registrations still win
    assert cpp_builder.get_cpp_torch_device_options is restored_function
    assert ido.introspection.hook_state().adopted == ()
    assert "MOCKED" not in definitions("cpu")


def test_mock_patch_by_name_is_undone_too() -> None:
    target = "torch._inductor.cpp_builder.get_cpp_torch_device_options"
    with (
        unittest.mock.patch(target, side_effect=OSError("no compiler here")),
        pytest.raises(OSError, match="no compiler here"),
    ):
        cpp_builder.get_cpp_torch_device_options("cpu")
    stock = installed().function_below
    assert ido.get_cpp_device_options("cpu") == ido.CppDeviceOptions(*stock("cpu"))


def test_assigning_a_saved_reference_back_restores_that_state(torch_npu: ModuleType) -> None:
    assign(openreg_wrapper)
    with_wrapper = cpp_builder.get_cpp_torch_device_options
    torch_npu.patch_get_cpp_torch_device_options()
    assert len(ido.introspection.hook_state().adopted) == 2
    cpp_builder.get_cpp_torch_device_options = with_wrapper
    assert WRAPPER_MACRO in definitions("cpu")
    adopted = ido.introspection.hook_state().adopted
    assert [function.behaviour for function in adopted] == ["wraps the hook"]


HOOK_ORDER_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import released_torch_npu
from pathlib import Path
from support import definitions_of
torch_npu = released_torch_npu.load_cpp_builder(Path({package!r}))
import torch._inductor.cpp_builder as cb
def wrap(previous):
    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False, **kwargs):
        options = previous(device_type, aot_mode, compile_only, **kwargs)
        options[0].append("OPENREG_WRAPPED")
        return options
    return get_cpp_torch_device_options
def acme(device_type, aot_mode, compile_only):
    import inductor_device_options as ido
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("ACME_DEVICE")
    return options
{first}
{second}
import inductor_device_options as ido
ido.register_cpp_device_options("acme", acme)
for device in ("acme", "cpu", "npu_unserved"):
    print(device, definitions_of(cb.CppTorchDeviceOptions(device_type=device)))
print(ido.introspection.hook_state().registrations_apply)
"""

HOOK = "import inductor_device_options"
PATCHES = """
torch_npu.patch_get_cpp_torch_device_options()
cb.get_cpp_torch_device_options = wrap(cb.get_cpp_torch_device_options)
"""


def test_the_result_does_not_depend_on_import_order(torch_npu_package: Path) -> None:
    outputs = [
        check_python(
            HOOK_ORDER_SCRIPT.format(
                tests=str(Path(__file__).parent),
                package=str(torch_npu_package),
                first=first,
                second=second,
            ),
            env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        )
        for first, second in [(HOOK, PATCHES), (PATCHES, HOOK)]
    ]
    hook_first, patches_first = (output.splitlines() for output in outputs)
    # What the package does not serve: the same, line for line.
    assert hook_first[1:] == patches_first[1:]
    assert patches_first[-1] == "True"
    # acme: the same flags. A wrapper assigned before the hook reaches the registration
    # through the defaults the provider extends; assigned after, it wraps the provider's
    # result: the wrapper's flag then comes last.
    assert sorted(ast.literal_eval(hook_first[0].removeprefix("acme "))) == sorted(
        ast.literal_eval(patches_first[0].removeprefix("acme "))
    )
    assert hook_first[0].endswith("'OPENREG_WRAPPED']")


def test_reload_of_cpp_builder_installs_the_hook_again() -> None:
    out = check_python(
        """
        import importlib
        import torch._inductor.cpp_builder as cb
        import inductor_device_options as ido
        from support import definitions_of
        acme = (["ACME_DEVICE"], [], [], [], [], [], [])
        ido.register_cpp_device_options("acme", lambda d, a, c: acme)
        importlib.reload(cb)
        print(definitions_of(cb.CppTorchDeviceOptions(device_type="acme"))[-1])
        print(ido.introspection.hook_state().replaced_by, ido.introspection.hook_state().mode)
        """,
        env={"PYTHONPATH": pythonpath_with(TESTS_DIR)},
    )
    assert out.splitlines() == ["ACME_DEVICE", "None native" if NATIVE else "None hook"]


def test_writing_the_module_dict_is_the_one_limit_and_is_reported() -> None:
    out = check_python(
        """
        import torch._inductor.cpp_builder as cb
        import inductor_device_options as ido
        from support import definitions_of
        acme = (["ACME_DEVICE"], [], [], [], [], [], [])
        ido.register_cpp_device_options("acme", lambda d, a, c: acme)
        def direct(device_type, aot_mode=False, compile_only=False, **kwargs):  # 2.15: cpp_stdlib
            return (["DIRECT"], [], [], [], [], [], [])
        cb.__dict__["get_cpp_torch_device_options"] = direct
        state = ido.introspection.hook_state()
        print(definitions_of(cb.CppTorchDeviceOptions(device_type="acme"))[-1])
        print(state.registrations_apply, state.replaced_by)
        print("written to the module's __dict__ directly" in state.describe())
        ido.arm()  # installs again, over what was written
        print(definitions_of(cb.CppTorchDeviceOptions(device_type="acme"))[-1])
        state = ido.introspection.hook_state()
        print(state.registrations_apply, state.function_below)
        """,
        env={"PYTHONPATH": pythonpath_with(TESTS_DIR)},
    )
    assert out.splitlines() == [
        "DIRECT",
        "False __main__.direct",
        "True",
        "ACME_DEVICE",
        "True __main__.direct",
    ]


BACKEND_MODULE = """
import os
import torch._inductor.cpp_builder as cb

def acme(device_type, aot_mode, compile_only):
    import inductor_device_options as ido
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("ACME_DEVICE")
    # The header Inductor's generated code includes for acme (doctor checks it).
    options.include_dirs.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "include"))
    return options

previous = cb.get_cpp_torch_device_options

def keeps(device_type, aot_mode=False, compile_only=False, **kwargs):
    options = previous(device_type, aot_mode, compile_only, **kwargs)
    options[0].append("OPENREG_WRAPPED")
    return options

def drops(device_type, aot_mode=False, compile_only=False, **kwargs):
    options = list(previous(device_type, aot_mode, compile_only, **kwargs))
    options[0] = []
    return tuple(options)

def written(device_type, aot_mode=False, compile_only=False, **kwargs):
    return ([], [], [], [], [], [], [])

{install}
"""


@pytest.mark.parametrize(
    ("install", "status", "words"),
    [
        ("cb.get_cpp_torch_device_options = keeps", "pass", "backend.keeps (wraps the hook)"),
        ("cb.get_cpp_torch_device_options = drops", "fail", "dropped them from what it got: "),
        ("cb.__dict__['get_cpp_torch_device_options'] = written", "fail", "__dict__ directly"),
    ],
    ids=["chaining wrapper", "wrapper that drops options", "module dict written"],
)
def test_doctor_asks_inductor_whether_the_options_arrive(
    tmp_path: Path, install: str, status: str, words: str
) -> None:
    (tmp_path / "backend.py").write_text(BACKEND_MODULE.format(install=install))
    header = tmp_path / "include" / cpp_wrapper_device_header("acme")
    header.parent.mkdir(parents=True)
    header.write_text("#pragma once\n")
    finished = run_python(
        """
        from inductor_device_options._cli import main
        raise SystemExit(main(["doctor", "acme", "--provider", "backend:acme", "--json"]))
        """,
        env={"PYTHONPATH": pythonpath_with(tmp_path)},
    )
    document = json.loads(finished.stdout)
    hook_check = document["checks"][0]
    assert hook_check["name"] == "hook"
    assert hook_check["status"] == status, hook_check
    assert words in json.dumps(hook_check)
    assert finished.returncode == (0 if status == "pass" else 1), finished.stderr


# --- torch_npu's own headers, built by Inductor's CppBuilder ------------------------------

# What Inductor's generated code includes for npu: cpp_wrapper mode and AOTInductor.
NPU_HEADERS = (
    "torch_npu/csrc/inductor/cpp_wrapper/npu.h",
    "torch_npu/csrc/inductor/aoti_include/npu.h",
)


def torch_headers_npu_headers_need_but_torch_lacks(torch_npu_package: Path) -> list[str]:
    """The torch headers that torch_npu's own headers include and the running torch does not
    ship (torch 2.6 has no torch/csrc/inductor/cpp_wrapper/common.h)."""
    torch_include = Path(torch.__file__).parent / "include"
    needed = {
        name
        for header in NPU_HEADERS
        for name in re.findall(
            r"#include\s*<(torch/[^>]+)>", (torch_npu_package / "include" / header).read_text()
        )
    }
    return sorted(name for name in needed if not (torch_include / name).is_file())


def aoti_macros_npu_headers_use_but_torch_lacks(work: Path) -> list[str]:
    """The ``AOTI_*(...)`` macros torch_npu's headers call that nothing they include defines,
    asked of the preprocessor with the options Inductor gets for npu (torch 2.10 defines
    AOTI_RUNTIME_CHECK only in its own model_base.h, which torch_npu's does not include)."""
    options = cpp_builder.CppTorchDeviceOptions(device_type="npu")
    arguments = [
        *(f"-D{definition}" for definition in definitions_of(options)),
        *(f"-I{directory}" for directory in options.get_include_dirs()),
    ]
    work.mkdir(parents=True)
    source = work / "npu_headers.cpp"
    source.write_text("".join(f"#include <{header}>\n" for header in NPU_HEADERS))
    preprocess = ["g++", "-std=c++17", "-E", *arguments, str(source)]
    included = (
        subprocess.run([*preprocess, "-M"], capture_output=True, text=True, check=True)
        .stdout.replace("\\\n", " ")
        .split()
    )
    defined = subprocess.run([*preprocess, "-dM"], capture_output=True, text=True, check=True)
    macros = set(re.findall(r"^#define (AOTI_\w+)", defined.stdout, re.MULTILINE))
    called = {
        name
        for path in included
        if "torch_npu" in path and path.endswith(".h")
        for name in re.findall(r"\b(AOTI_[A-Z_]+)\s*\(", Path(path).read_text())
    }
    return sorted(called - macros)


def synthetic_cann(root: Path) -> Path:
    """The least of a CANN toolkit the Ascend provider accepts: acl/acl.h and the runtime
    libraries, real (empty) shared objects."""
    home = root / "cann"
    (home / "include" / "acl").mkdir(parents=True)
    (home / "include" / "acl" / "acl.h").write_text("#pragma once\n")
    (home / "lib64").mkdir()
    for library in ("ascendcl", "runtime"):
        source = root / f"{library}.c"
        source.write_text(f"int {library}_stub(void) {{ return 0; }}\n")
        subprocess.run(
            [
                "gcc",
                "-shared",
                "-fPIC",
                str(source),
                "-o",
                str(home / "lib64" / f"lib{library}.so"),
            ],
            check=True,
        )
    return home


def build_npu_probes(work: Path) -> list[Path]:
    """One module per header, compiled and linked with the options Inductor gets for npu."""
    built = []
    for index, header in enumerate(NPU_HEADERS):
        directory = work / str(index)
        directory.mkdir(parents=True)
        source = directory / "npu_probe.cpp"
        source.write_text(f'#include <{header}>\nextern "C" int npu_probe(void) {{ return 42; }}\n')
        builder = cpp_builder.CppBuilder(
            name="npu_probe",
            sources=[str(source)],
            BuildOption=cpp_builder.CppTorchDeviceOptions(device_type="npu"),
            output_dir=str(directory),
        )
        builder.build()
        built.append(Path(builder.get_target_file_path()))
    return built


@pytest.mark.parametrize("ascend_home_when_torch_npu_loads", [True, False])
def test_torch_npu_headers_build_with_the_options_the_package_gives_npu(
    tmp_path: Path,
    torch_npu_package: Path,
    monkeypatch: pytest.MonkeyPatch,
    ascend_home_when_torch_npu_loads: bool,
) -> None:
    """Served by the package's entry point, then again with torch_npu's replacement
    adopted (which raises for npu when ASCEND_HOME_PATH was unset as it loaded); the
    negative control is torch's own options for npu."""
    from inductor_device_options import ascend

    missing = torch_headers_npu_headers_need_but_torch_lacks(torch_npu_package)
    if missing:
        pytest.skip(f"torch_npu's headers include {missing}, which torch {torch.__version__} lacks")
    built_for = released_torch_npu.release_of(released_torch_npu.VERSION)
    if released_torch_npu.release_of(torch.__version__) > built_for:
        # Its AOTI runtime headers mirror torch 2.14's (2.15 renamed MaybeOwningAtenTensorHandle).
        pytest.skip(
            f"torch_npu {released_torch_npu.VERSION}'s headers are written for an older torch "
            f"than {torch.__version__}"
        )
    cann = synthetic_cann(tmp_path)
    monkeypatch.setenv("PYTORCH_NPU_INSTALL_PATH", str(torch_npu_package))
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    if ascend_home_when_torch_npu_loads:
        monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))
    torch_npu = released_torch_npu.load_cpp_builder(torch_npu_package)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))
    ascend.clear_cache()
    assert ido.introspection.device_options_source("npu").kind == "entry point"
    lacking = aoti_macros_npu_headers_use_but_torch_lacks(tmp_path / "macros")
    if lacking:
        pytest.skip(f"torch_npu's headers call {lacking}, which torch {torch.__version__} lacks")

    assert all(path.is_file() for path in build_npu_probes(tmp_path / "served"))

    torch_npu.patch_get_cpp_torch_device_options()
    options = ido.get_cpp_device_options("npu")
    for field, values in zip(ido.CppDeviceOptions._fields, options, strict=True):
        if field == "passthrough_args":
            values = [word for value in values for word in value.split()]
        assert len(values) == len(set(values)), f"{field} has duplicates: {values}"
    assert "-DBUILD_LIBTORCH=ON" in " ".join(options.passthrough_args).split()
    assert all(path.is_file() for path in build_npu_probes(tmp_path / "adopted"))

    def torch_own(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        # torch's function, for a device nothing registers: what every out-of-tree device gets.
        stock = installed().function_below
        return stock(DEFAULTS_PROBE_DEVICE, aot_mode, compile_only)

    with (
        ido.testing.registered_cpp_device_options("npu", torch_own),
        pytest.raises(Exception, match=r"torch_npu/csrc/inductor/cpp_wrapper/npu\.h"),
    ):
        build_npu_probes(tmp_path / "stock")
    ascend.clear_cache()


def test_a_provider_extending_the_defaults_gets_the_lookups_own_keywords() -> None:
    """torch 2.15 passes cpp_stdlib=: the defaults a provider extends are computed with it."""
    received: list[dict[str, object]] = []

    def replacement(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: object
    ) -> tuple[list[str], ...]:
        received.append(kwargs)
        return (["REPLACED"], [], [], [], [], [], [])

    ido.register_cpp_device_options("acme", acme_options)
    cpp_builder.get_cpp_torch_device_options = replacement
    options = cpp_builder.get_cpp_torch_device_options(
        device_type="acme", aot_mode=False, compile_only=False, cpp_stdlib="libstdc++"
    )
    assert options[0] == ["REPLACED", ACME_MACRO]
    assert received == [{"cpp_stdlib": "libstdc++"}]  # called once: the lookup's default
