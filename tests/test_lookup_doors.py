"""torch's doors behave exactly as torch defines them; the package acts where it is asked.

* ``cpp_builder.register_cpp_device_options`` — the design's API (``upstream/pytorch``,
  PyTorch PR #190614's registry form) — exists wherever the hook is installed, with the
  design's semantics: the callback's seven lists as returned, "already registered" and
  overwrite, exceptions unchanged, unregistered devices unchanged. These are the assertions
  of PyTorch's own test file for that form, in this project's words, on real SDK dirs.
* ``DeviceInterface.get_cpp_device_options`` gives exactly what torch 2.15 gives: torch's
  own answer there, the same answer from the backport before 2.15.
* The package's bundled ``npu`` provider is a fallback: the backend's own answer wins, and
  it never turns a build that works without the package into a failure.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import released_torch_npu
import torch._inductor.cpp_builder as cpp_builder
from support import (
    NATIVE,
    TESTS_DIR,
    check_python,
    definitions_of,
    hook_mode_only,
    passthrough_args_of,
    pythonpath_with,
    torch_consults_device_interface,
    write_distribution,
)
from torch._dynamo import device_interface

import inductor_device_options as ido
from inductor_device_options import _state, ascend
from inductor_device_options._errors import raised_by_provider

pytestmark = pytest.mark.usefixtures("clean_registry")

ROOT = TESTS_DIR.parent
# The function-like macro of the issue: g++ takes it, stock torch builds with it.
MAX2 = "MAX2(a,b)=((a)>(b)?(a):(b))"
KERNEL = """\
#include <mock/mock.h>
static_assert(MAX2(1, 2) == 2, "the function-like macro reached g++");
static_assert(MOCK_HEADER == 1, "the header came through the symlinked include dir");
extern "C" int mock_runtime(void);
extern "C" int kernel(void) { return USE_MOCK + mock_runtime(); }
"""
# Without the package: neither its autoload nor an import of it.
WITHOUT_PACKAGE = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": pythonpath_with(TESTS_DIR)}


class Sdk:
    """A device SDK installed as CANN installs: a versioned dir behind a ``latest`` link."""

    def __init__(self, root: Path):
        versioned = root / "sdk-1.0"
        (versioned / "include" / "mock").mkdir(parents=True)
        (versioned / "include" / "mock" / "mock.h").write_text("#define MOCK_HEADER 1\n")
        (versioned / "lib").mkdir()
        runtime = root / "runtime.c"
        runtime.write_text("int mock_runtime(void) { return 0; }\n")
        subprocess.run(
            ["cc", "-shared", "-fPIC", str(runtime), "-o", str(versioned / "lib" / "libmockrt.so")],
            check=True,
        )
        (root / "latest").symlink_to(versioned)
        self.root = root
        self.include = str(root / "latest" / "include")
        self.lib = str(root / "latest" / "lib")
        (root / "kernel.cpp").write_text(KERNEL)

    def lists(self) -> tuple[list[str], ...]:
        """The seven lists of a working backend: a function-like macro, symlinked dirs."""
        return (
            ["USE_MOCK", MAX2],
            [*ido.default_cpp_device_options("cpu").include_dirs, self.include],
            ["Wno-unused-function"],
            ["Wl,--no-as-needed"],
            [*ido.default_cpp_device_options("cpu").libraries_dirs, self.lib],
            ["mockrt"],
            ["-DMOCK_PASSTHROUGH"],
        )

    def build(self, device_type: str) -> Path:
        """What Inductor does for a kernel of the device: its options, CppBuilder, g++."""
        out = self.root / f"out-{device_type}"
        builder = cpp_builder.CppBuilder(
            "kernel",
            [str(self.root / "kernel.cpp")],
            cpp_builder.CppTorchDeviceOptions(device_type=device_type),
            output_dir=str(out),
        )
        builder.build()
        return Path(builder.get_target_file_path())


@pytest.fixture
def sdk(tmp_path: Path) -> Sdk:
    return Sdk(tmp_path)


@pytest.fixture
def torch_registry() -> Iterator[dict[str, object]]:
    """cpp_builder's registry, emptied after the test as PyTorch's test does (tearDown)."""
    registry: dict[str, object] = cpp_builder._cpp_device_options_registry  # type: ignore[attr-defined]
    saved = dict(registry)
    yield registry
    registry.clear()
    registry.update(saved)


@pytest.fixture
def interfaces() -> Iterator[Callable[[str, Callable[..., object]], None]]:
    """Register a DeviceInterface whose get_cpp_device_options is the given function."""
    added: list[str] = []

    def register(device_type: str, method: Callable[..., object]) -> None:
        interface = type(
            f"{device_type.title()}Interface",
            (device_interface.DeviceInterface,),
            {"get_cpp_device_options": staticmethod(method)},
        )
        device_interface.register_interface_for_device(device_type, interface)
        added.append(device_type)

    yield register
    for device_type in added:
        device_interface.device_interfaces.pop(device_type, None)


def carries(options: cpp_builder.CppTorchDeviceOptions, lists: tuple[list[str], ...]) -> bool:
    """Whether Inductor's options hold each of ``lists``' values as given, in order (torch's
    own build options come around them)."""
    got = (
        definitions_of(options),
        list(options.get_include_dirs()),
        list(options.get_cflags()),
        list(options.get_ldflags()),
        list(options.get_libraries_dirs()),
        list(options.get_libraries()),
        passthrough_args_of(options),
    )
    for values, received in zip(lists, got, strict=True):
        remaining = iter(received)
        if not all(value in remaining for value in values):
            return False
    return True


# --- the design's API, in cpp_builder --------------------------------------------------------


def test_the_designs_api_is_where_the_design_puts_it() -> None:
    from torch._inductor.cpp_builder import (  # noqa: F401 (the design's imports)
        _cpp_device_options_registry,
        get_cpp_torch_device_options,
        register_cpp_device_options,
    )

    assert isinstance(_cpp_device_options_registry, dict)
    backported = getattr(register_cpp_device_options, "_inductor_device_options_backport", False)
    assert backported is not NATIVE  # torch's own with the upstream patch, else the backport
    assert ido.introspection.hook_state().mode == ("native" if NATIVE else "hook")


def test_a_registered_device_gets_the_callbacks_seven_lists_as_returned(
    sdk: Sdk, torch_registry: dict[str, object]
) -> None:
    returned = sdk.lists()
    calls: list[tuple[str, bool, bool]] = []

    def mock_options(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        calls.append((device_type, aot_mode, compile_only))
        return returned

    cpp_builder.register_cpp_device_options("mock", mock_options)  # type: ignore[attr-defined]
    assert cpp_builder.get_cpp_torch_device_options("mock", False, False) is returned
    assert calls == [("mock", False, False)]
    # Inductor's own reading of them: unchanged, symlinks and all, no SDK identity.
    assert carries(cpp_builder.CppTorchDeviceOptions(device_type="mock"), returned)
    assert sdk.build("mock").is_file()  # g++ takes the function-like macro


def test_registering_again_warns_already_registered_and_overwrites(
    torch_registry: dict[str, object],
) -> None:
    def first(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return (["FIRST"], [], [], [], [], [], [])

    def second(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return (["SECOND"], [], [], [], [], [], [])

    register = cpp_builder.register_cpp_device_options  # type: ignore[attr-defined]
    register("mock", first)
    for callback in (first, second):  # the design warns for the same callback too
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            register("mock", callback)
        assert len(caught) == 1
        assert "already registered" in str(caught[0].message)
    assert torch_registry["mock"] is second
    assert cpp_builder.get_cpp_torch_device_options("mock")[0] == ["SECOND"]


def test_a_callback_exception_propagates_unchanged(torch_registry: dict[str, object]) -> None:
    raised = KeyError("no SDK here")

    def failing(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        raise raised

    cpp_builder.register_cpp_device_options("mock", failing)  # type: ignore[attr-defined]
    with pytest.raises(KeyError) as caught:
        cpp_builder.get_cpp_torch_device_options("mock", False, False)
    assert caught.value is raised
    # The package's door adds a note and marks the provider; this door leaves it alone.
    assert not hasattr(caught.value, "__notes__")
    assert raised_by_provider(caught.value) is None


STOCK_ANSWERS = """
import json, sys
import torch._inductor.cpp_builder as cpp_builder
print(json.dumps([cpp_builder.get_cpp_torch_device_options(d, False, False) for d in sys.argv[1:]]))
"""


def stock_answers(*device_types: str) -> list[list[list[str]]]:
    """What torch without the package gives each device."""
    import json

    finished = subprocess.run(
        [sys.executable, "-c", STOCK_ANSWERS, *device_types],
        env={**os.environ, **WITHOUT_PACKAGE},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(finished.stdout)  # type: ignore[no-any-return]


def test_unregistered_devices_are_unchanged(torch_registry: dict[str, object]) -> None:
    cpp_builder.register_cpp_device_options("mock", lambda d, a, c: ([], [], [], [], [], [], []))  # type: ignore[attr-defined]
    devices = ("unregistered_device_xyz", "cpu", "sampledevice")
    got = [
        list(map(list, cpp_builder.get_cpp_torch_device_options(d, False, False))) for d in devices
    ]
    assert got == stock_answers(*devices)
    definitions, _inc, cflags, _ld, _libdirs, libraries, passthrough = got[0]
    assert (definitions, cflags, libraries, passthrough) == ([], [], [], [])


@pytest.mark.skipif(
    NATIVE and torch_consults_device_interface(),
    reason="the 2.15 patch asks torch's registry before its own branches; "
    "the order tested is the backport's, the design's",
)
def test_torchs_own_devices_run_torchs_branches_before_the_registry(
    torch_registry: dict[str, object],
) -> None:
    """The design consults the registry after the cuda/xpu/mps branches: cpu is answered
    by the callback; xpu, without its runtime, raises in torch's branch first (2.7+)."""
    answer = (["REGISTERED"], [], [], [], [], [], [])
    register = cpp_builder.register_cpp_device_options  # type: ignore[attr-defined]
    register("cpu", lambda d, a, c: answer)
    register("xpu", lambda d, a, c: answer)
    assert cpp_builder.get_cpp_torch_device_options("cpu") is answer
    (xpu_stock,) = stock_answers_or_error("xpu")
    if isinstance(xpu_stock, str):
        with pytest.raises(OSError, match=xpu_stock):
            cpp_builder.get_cpp_torch_device_options("xpu")
    else:
        assert cpp_builder.get_cpp_torch_device_options("xpu") is answer
    torch_registry.pop("cpu")
    assert (
        list(map(list, cpp_builder.get_cpp_torch_device_options("cpu"))) == stock_answers("cpu")[0]
    )


def stock_answers_or_error(device_type: str) -> list[object]:
    code = f"""
import torch._inductor.cpp_builder as cpp_builder
try:
    cpp_builder.get_cpp_torch_device_options({device_type!r})
    print("returned")
except OSError as error:
    print(str(error)[:40])
"""
    out = check_python(code, env=WITHOUT_PACKAGE).strip()
    return [None if out == "returned" else out]


DESIGN_REGISTRATION = """
import dataclasses, json, sys
import torch._inductor.cpp_builder as cb
import inductor_device_options as ido
from inductor_device_options._cli import main

def acme(device_type, aot_mode, compile_only):
    return (["USE_ACME"], [], [], [], [], [], [])

cb.register_cpp_device_options("acme", acme)
from inductor_device_options import introspection
print(json.dumps([introspection.registered_device_types(),
                  dataclasses.asdict(introspection.device_options_source("acme"))]))
sys.stdout.flush()
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [["list", "--json"], ["show", "acme", "--json"]])
def test_registrations_through_cpp_builder_are_reported(command: list[str]) -> None:
    import json

    finished = subprocess.run(
        [sys.executable, "-c", DESIGN_REGISTRATION, *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    first, rest = finished.stdout.split("\n", 1)
    registered, source = json.loads(first)
    assert "acme" in registered
    assert source == {
        "device_type": "acme",
        "kind": "cpp_builder registration",
        "description": "__main__.acme",
        "guaranteed": False,
        "fallback": False,
    }  # and no provider: the record people see has none (FoundSource holds it)
    # JSON v1 carries the kind under its earlier name too, and neither of the last two.
    in_json = {
        **{key: value for key, value in source.items() if key not in ("fallback", "provider")},
        "source": source["kind"],
    }
    document = json.loads(rest)
    if command[0] == "list":
        assert in_json in document["devices"]
    else:
        assert document["source"] == in_json
        assert document["options"]["definitions"] == ["USE_ACME"]


@hook_mode_only
def test_the_backport_is_not_mistaken_for_torchs_own_api() -> None:
    """A second install (after a dict write and arm(), after a reload) stays in hook mode,
    and registrations made through the backport survive it."""
    out = check_python(
        """
import importlib
import torch._inductor.cpp_builder as cb
import inductor_device_options as ido
cb.register_cpp_device_options("acme", lambda d, a, c: (["USE_ACME"], [], [], [], [], [], []))
saved = cb.__dict__["get_cpp_torch_device_options"]
cb.__dict__["get_cpp_torch_device_options"] = lambda *args, **kwargs: saved(*args, **kwargs)
ido.arm()
state = ido.introspection.hook_state()
print(state.mode, state.replaced_by, cb.get_cpp_torch_device_options("acme")[0])
importlib.reload(cb)
state = ido.introspection.hook_state()
print(state.mode, state.device_interface_backport, cb.get_cpp_torch_device_options("acme")[0])
"""
    )
    assert out.splitlines() == [
        "hook None ['USE_ACME']",
        f"hook {not torch_consults_device_interface()} ['USE_ACME']",
    ]


def test_the_design_s_torch_npu_adapter_takes_its_new_path(
    tmp_path: Path, torch_registry: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch_npu 2.14.0's own cpp_builder.py with the design's adapter
    (``upstream/torch_npu``) registers npu instead of replacing the function."""
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "cann"))  # read by torch_npu's code
    sys.path.insert(0, str(ROOT / "upstream"))
    try:
        verify = importlib.import_module("verify")
    finally:
        sys.path.remove(str(ROOT / "upstream"))
    package = released_torch_npu.unpack(tmp_path / "wheel")
    original = tmp_path / "original.py"
    original.write_bytes((package / "_inductor" / "cpp_builder.py").read_bytes())
    verify.apply_patch(verify.NPU_PATCH, tmp_path / "tree", verify.NPU_REL_PATH, original)
    (package / "_inductor" / "cpp_builder.py").write_bytes(
        (tmp_path / "tree" / verify.NPU_REL_PATH).read_bytes()
    )
    torch_npu: ModuleType = released_torch_npu.load_cpp_builder(package)
    before = cpp_builder.get_cpp_torch_device_options
    torch_npu.patch_get_cpp_torch_device_options()
    assert torch_registry["npu"] is torch_npu.get_cpp_torch_device_options
    assert cpp_builder.get_cpp_torch_device_options is before  # nothing replaced
    assert ido.introspection.hook_state().adopted == ()
    expected = torch_npu.get_cpp_torch_device_options("npu", False, False)
    assert cpp_builder.get_cpp_torch_device_options("npu", False, False) == expected
    assert ido.introspection.device_options_source("npu").kind == "cpp_builder registration"


# --- DeviceInterface, as torch 2.15 defines it ------------------------------------------------


def test_a_device_interface_gets_exactly_torch_2_15s_answer(
    sdk: Sdk, interfaces: Callable[[str, Callable[..., object]], None]
) -> None:
    if NATIVE and not torch_consults_device_interface():
        pytest.skip("the backport needs the hook; torch's native registry has none of its own")
    returned = sdk.lists()
    interfaces("mock", lambda aot_mode, compile_only: returned)
    assert cpp_builder.get_cpp_torch_device_options("mock", False, False) is returned
    assert carries(cpp_builder.CppTorchDeviceOptions(device_type="mock"), returned)
    assert sdk.build("mock").is_file()
    source = ido.introspection.device_options_source("mock")
    assert (source.kind, source.guaranteed) == ("device interface", False)


STOCK_INTERFACE = """
import json, sys
from torch._dynamo import device_interface
import torch._inductor.cpp_builder as cpp_builder
returned = json.loads(sys.argv[1])
class MockInterface(device_interface.DeviceInterface):
    @staticmethod
    def get_cpp_device_options(aot_mode, compile_only):
        return returned
device_interface.register_interface_for_device("mock", MockInterface)
print(json.dumps(cpp_builder.get_cpp_torch_device_options("mock", False, False)))
"""


@pytest.mark.skipif(not torch_consults_device_interface(), reason="torch 2.15's own lookup")
def test_on_torch_2_15_the_package_changes_nothing(
    sdk: Sdk, interfaces: Callable[[str, Callable[..., object]], None]
) -> None:
    import json

    returned = [list(values) for values in sdk.lists()]
    finished = subprocess.run(
        [sys.executable, "-c", STOCK_INTERFACE, json.dumps(returned)],
        env={**os.environ, **WITHOUT_PACKAGE},
        capture_output=True,
        text=True,
        check=True,
    )
    interfaces("mock", lambda aot_mode, compile_only: returned)
    with_package = cpp_builder.get_cpp_torch_device_options("mock", False, False)
    assert with_package is returned
    assert json.loads(finished.stdout) == returned


@pytest.mark.parametrize("answer", ["None", "NotImplementedError"])
def test_an_interface_without_an_answer_gives_the_defaults(
    answer: str, interfaces: Callable[[str, Callable[..., object]], None]
) -> None:
    def method(aot_mode: bool, compile_only: bool) -> object:
        if answer == "None":
            return None
        raise NotImplementedError

    interfaces("mock", method)
    got = list(map(list, cpp_builder.get_cpp_torch_device_options("mock", False, False)))
    assert got == stock_answers("mock")[0]


def test_libcxx_for_an_interface_device_is_refused_as_torch_2_15_refuses_it(
    interfaces: Callable[[str, Callable[..., object]], None],
) -> None:
    if NATIVE and not torch_consults_device_interface():
        pytest.skip("no backport under torch's native registry")
    interfaces("mock", lambda aot_mode, compile_only: (["USE_MOCK"], [], [], [], [], [], []))
    with pytest.raises(RuntimeError, match=r"cpp_stdlib='libc\+\+' is only supported in fbcode"):
        cpp_builder.get_cpp_torch_device_options("mock", True, False, cpp_stdlib="libc++")


def test_a_function_assigned_after_the_hook_still_answers_before_the_interface(
    interfaces: Callable[[str, Callable[..., object]], None],
) -> None:
    """As on torch 2.15 without the package: the replacement is what Inductor calls."""
    if NATIVE and not torch_consults_device_interface():
        pytest.skip("no backport under torch's native registry")
    interfaces("mock", lambda aot_mode, compile_only: (["FROM_INTERFACE"], [], [], [], [], [], []))
    saved = cpp_builder.get_cpp_torch_device_options

    def replacement(device_type: str, aot_mode: bool = False, compile_only: bool = False) -> object:
        return (["REPLACED"], [], [], [], [], [], [])

    name = f"test_lookup_doors.{replacement.__qualname__}"
    try:
        cpp_builder.get_cpp_torch_device_options = replacement
        # Not called yet: whether it calls through is not known.
        source = ido.introspection.device_options_source("mock")
        assert source.kind == "device interface"
        assert "asked only where " in source.description
        assert ".<locals>.replacement (not called yet) calls through" in source.description
        assert cpp_builder.get_cpp_torch_device_options("mock")[0] == ["REPLACED"]
        # Seen: introspection names what served, not the interface it hides.
        source = ido.introspection.device_options_source("mock")
        assert source.kind == "torch"
        assert source.description.startswith(f"{name} over ")
        assert source.description.endswith(
            f"; {name} replaces it, so "
            "test_lookup_doors.MockInterface.get_cpp_device_options is never asked"
        )
    finally:
        cpp_builder.get_cpp_torch_device_options = saved
    assert ido.introspection.device_options_source("mock").kind == "device interface"


# --- the package's guarantees, on request --------------------------------------------------


def test_one_line_brings_torchs_doors_under_the_packages_guarantees(
    sdk: Sdk,
    torch_registry: dict[str, object],
    interfaces: Callable[[str, Callable[..., object]], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_state, "guaranteed", set())
    returned = sdk.lists()
    cpp_builder.register_cpp_device_options("mock", lambda d, a, c: returned)  # type: ignore[attr-defined]
    interfaces("ifdev", lambda aot_mode, compile_only: returned)
    for device_type in ("mock", "ifdev"):
        ido.guarantee_cpp_device_options(device_type)
        options = ido.get_cpp_device_options(device_type)
        assert os.path.realpath(sdk.include) in options.include_dirs  # real paths
        assert any(
            d.startswith("INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=") for d in options.definitions
        )
        assert ido.introspection.device_options_source(device_type).guaranteed
    bad = (["USE_MOCK"], ["relative/include"], [], [], [], [], [])
    with pytest.warns(UserWarning, match="already registered"):
        cpp_builder.register_cpp_device_options("mock", lambda d, a, c: bad)  # type: ignore[attr-defined]
    with pytest.raises(ido.InvalidCppDeviceOptionsError, match="is relative"):
        ido.get_cpp_device_options("mock")


def test_the_guarantee_reaches_other_processes_through_the_environment() -> None:
    out = check_python(
        """
import torch._inductor.cpp_builder as cb
import inductor_device_options as ido
cb.register_cpp_device_options("acme", lambda d, a, c: (["USE_ACME"], ["inc"], [], [], [], [], []))
try:
    ido.get_cpp_device_options("acme")
except ido.InvalidCppDeviceOptionsError as error:
    print("refused", error.field)
""",
        env={"INDUCTOR_DEVICE_OPTIONS_GUARANTEE": "other,acme"},
    )
    assert out.split() == ["refused", "include_dirs"]


# --- the bundled provider is a fallback ------------------------------------------------------


@pytest.fixture
def no_cann(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LIBTORCH_NPU_PATH"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(ascend._cann, "DEFAULT_CANN_ROOTS", (str(tmp_path / "no-cann"),))
    ascend.clear_cache()


@pytest.mark.usefixtures("no_cann")
def test_a_device_interface_for_npu_beats_the_bundled_provider(
    interfaces: Callable[[str, Callable[..., object]], None],
) -> None:
    answer = (["USE_NPU_FROM_INTERFACE"], [], [], [], [], [], [])
    interfaces("npu", lambda aot_mode, compile_only: answer)
    if NATIVE and not torch_consults_device_interface():
        # nobody asks the interface
        assert ido.introspection.device_options_source("npu").kind == "torch"
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning either: the provider never ran
        assert cpp_builder.get_cpp_torch_device_options("npu") is answer
    assert ido.introspection.device_options_source("npu").kind == "device interface"


@pytest.mark.usefixtures("no_cann")
def test_a_registration_through_either_door_beats_the_bundled_provider(
    torch_registry: dict[str, object],
) -> None:
    answer = (["USE_NPU_REGISTERED"], [], [], [], [], [], [])
    cpp_builder.register_cpp_device_options("npu", lambda d, a, c: answer)  # type: ignore[attr-defined]
    assert cpp_builder.get_cpp_torch_device_options("npu") is answer
    ido.register_cpp_device_options("npu", lambda d, a, c: (["OWN_DOOR"], [], [], [], [], [], []))
    assert cpp_builder.get_cpp_torch_device_options("npu")[0] == ["OWN_DOOR"]


@pytest.mark.usefixtures("no_cann")
@pytest.mark.parametrize("below", ["stock torch", "an adopted replacement"])
def test_the_bundled_provider_that_cannot_compute_gives_way_with_a_warning(below: str) -> None:
    saved = cpp_builder.get_cpp_torch_device_options
    expected = stock_answers("npu")[0]

    def replacement(device_type: str, aot_mode: bool = False, compile_only: bool = False) -> object:
        return (["USE_NPU_FROM_TORCH_NPU"], [], [], [], [], [], [])

    try:
        if below == "an adopted replacement":
            cpp_builder.get_cpp_torch_device_options = replacement
            expected = [["USE_NPU_FROM_TORCH_NPU"], [], [], [], [], [], []]
        with pytest.warns(RuntimeWarning, match="bundled C.. options provider for 'npu'") as record:
            got = cpp_builder.get_cpp_torch_device_options("npu", False, False)
    finally:
        cpp_builder.get_cpp_torch_device_options = saved
    assert list(map(list, got)) == expected
    message = str(record[0].message)
    assert "CannNotFoundError" in message
    assert "gets what it gets without inductor-device-options" in message


# --- two distributions, one device -------------------------------------------------------------

PROVIDERS = """
def options(device_type, aot_mode, compile_only):
    return (["FROM_" + __name__.upper()], [], [], [], [], [], [])
"""


def _two_declarations(site: Path) -> None:
    for name in ("zeta_backend", "alpha_backend"):
        (site / f"{name}.py").write_text(PROVIDERS)
    write_distribution(site, "zeta-backend", "1.0", {"dupdev": "zeta_backend:options"})
    write_distribution(
        site,
        "alpha-backend",
        "2.0",
        {"dupdev": "alpha_backend:options", "npu": "alpha_backend:options"},
    )


DUPLICATES = """
import json, warnings
import inductor_device_options as ido
from inductor_device_options._lookup import entry_points as _entry_points
from inductor_device_options._lookup import registry as _registry
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    options = ido.get_cpp_device_options("dupdev")
    npu = ido.get_cpp_device_options("npu")
print(json.dumps({
    "dupdev": options.definitions, "npu": npu.definitions,
    "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
    "conflicts": [c.describe() for c in _entry_points.declaration_conflicts()],
}))
"""


LIST = """
import sys
from inductor_device_options._cli import main
raise SystemExit(main(["list", "--json"]))
"""


@pytest.mark.parametrize("prefer", [None, "dupdev=zeta_backend"])
def test_two_distributions_declaring_one_device_follow_a_rule_and_warn(
    tmp_path: Path, prefer: str | None
) -> None:
    import json

    _two_declarations(tmp_path)
    env = {"PYTHONPATH": pythonpath_with(tmp_path)}
    if prefer is not None:
        env["INDUCTOR_DEVICE_OPTIONS_PREFER"] = prefer
    document = json.loads(check_python(DUPLICATES, env=env).strip().splitlines()[-1])
    winner = "ZETA_BACKEND" if prefer else "ALPHA_BACKEND"
    assert document["dupdev"] == [f"FROM_{winner}"]
    # npu: another distribution's declaration comes before the bundled Ascend provider.
    assert document["npu"] == ["FROM_ALPHA_BACKEND"]
    (warning,) = document["warnings"]  # only dupdev: the bundled fallback gives way silently
    for part in (
        "alpha-backend 2.0",
        "zeta-backend 1.0",
        "alpha_backend:options",
        "zeta_backend:options",
    ):
        assert part in warning
    assert "INDUCTOR_DEVICE_OPTIONS_PREFER=dupdev=<distribution>" in warning
    assert len(document["conflicts"]) == 2
    if prefer:
        assert "INDUCTOR_DEVICE_OPTIONS_PREFER names zeta-backend" in warning
    # `list` shows the conflict, text and JSON.
    listing = json.loads(check_python(LIST, env=env, cwd=tmp_path))
    conflict = {c["device_type"]: c for c in listing["declaration_conflicts"]}["dupdev"]
    assert conflict["chosen"]["distribution"] == (
        "zeta-backend 1.0" if prefer else "alpha-backend 2.0"
    )
    assert [other["value"] for other in conflict["others"]] == [
        "alpha_backend:options" if prefer else "zeta_backend:options"
    ]
    text = check_python(LIST.replace('"--json"', ""), env=env, cwd=tmp_path)
    assert "Devices declared by several distributions:" in text
    assert "device 'dupdev' is declared by several distributions" in text


# --- device types Inductor can ask for, and re-registration ---------------------------------


@pytest.mark.parametrize(
    ("device_type", "reason"),
    [
        ("NPU", "Inductor asks for 'npu', never 'NPU'"),
        ("Npu:0", "Inductor asks for 'npu', never 'Npu'"),
        ("npu2", "'npu2' has a digit"),
    ],
)
def test_device_types_inductor_cannot_ask_for_are_refused(device_type: str, reason: str) -> None:
    def options(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [], [], [], [], [], [])

    with pytest.raises(ido.InvalidDeviceTypeError, match=reason):
        ido.register_cpp_device_options(device_type, options)
    assert ido.introspection.registered_device_types() == sorted(
        d for d in ido.introspection.registered_device_types() if d.islower()
    )


class Backend:
    def options(self, device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [], [], [], [], [], [])


def test_registering_the_same_callback_again_is_silent_another_one_warns() -> None:
    backend = Backend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ido.register_cpp_device_options("acme", backend.options)
        ido.register_cpp_device_options("acme", backend.options)  # a new bound method, same one
    with pytest.warns(UserWarning, match="already registered by .*Backend.options; overwriting"):
        ido.register_cpp_device_options("acme", Backend().options)


# --- paths that are not UTF-8 -------------------------------------------------------------------


def test_an_include_dir_whose_name_is_not_utf_8_builds_as_with_stock_torch(sdk: Sdk) -> None:
    odd = os.fsdecode(os.fsencode(str(sdk.root)) + b"/inc\xff")
    os.makedirs(odd)
    Path(odd, "odd.h").write_text("#define ODD 1\n")
    (sdk.root / "kernel.cpp").write_text(
        '#include "odd.h"\nextern "C" int kernel(void) { return ODD; }\n'
    )

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        result.include_dirs.append(odd)
        return result

    ido.register_cpp_device_options("acme", options)
    assert odd in ido.get_cpp_device_options("acme").include_dirs
    assert sdk.build("acme").is_file()


# --- doctor diagnoses every door; only the package's own is enforced ----------------------

DOCTOR_TORCH_DOOR = """
import json, sys
import torch._inductor.cpp_builder as cpp_builder
from torch._dynamo import device_interface
import inductor_device_options as ido
from inductor_device_options._cli import main

door, include, lib = sys.argv[1:4]
lists = (["USE_MOCK", "MAX2(a,b)=((a)>(b)?(a):(b))"], [include], [], [ido.runpath(lib)], [lib],
         ["mockrt"], [])
if door == "cpp_builder":
    cpp_builder.register_cpp_device_options("mock", lambda d, a, c: lists)
else:
    class MockInterface(device_interface.DeviceInterface):
        @staticmethod
        def get_cpp_device_options(aot_mode, compile_only):
            return lists
    device_interface.register_interface_for_device("mock", MockInterface)
code = main(["doctor", "mock", "--json"])
# Diagnosing changes nothing in what Inductor gets.
print(json.dumps({"exact": cpp_builder.get_cpp_torch_device_options("mock") is lists}))
raise SystemExit(code)
"""


@pytest.mark.parametrize("door", ["cpp_builder", "device interface"])
@pytest.mark.parametrize("include_dir", ["complete", "relative"])
def test_doctor_diagnoses_a_device_served_through_torchs_doors(
    sdk: Sdk, door: str, include_dir: str
) -> None:
    import json

    if door == "device interface" and NATIVE and not torch_consults_device_interface():
        pytest.skip("no backport under torch's native registry")
    for header in (
        "cpp_wrapper/mock.h",
        "aoti_include/mock.h",
        "aoti_torch/generated/c_shim_mock.h",
    ):
        path = Path(sdk.include, "torch/csrc/inductor", header)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#pragma once\n")
    include = sdk.include if include_dir == "complete" else "relative/include"
    finished = subprocess.run(
        [sys.executable, "-c", DOCTOR_TORCH_DOOR, door, include, sdk.lib],
        capture_output=True,
        text=True,
        check=False,
        cwd=sdk.root,
    )
    document, tail = finished.stdout.rsplit("\n{", 1)
    assert json.loads("{" + tail) == {"exact": True}
    doctor = json.loads(document)
    checks = {check["name"]: check for check in doctor["checks"]}
    expected_source = "cpp_builder registration" if door == "cpp_builder" else "device interface"
    assert doctor["source"]["source"] == expected_source
    assert doctor["source"]["guaranteed"] is False
    if include_dir == "complete":
        assert finished.returncode == 0, doctor
        for name in ("device_asked", "overrides", "c_shim"):  # no codegen: no backend
            assert checks.pop(name)["status"] == "skip"
        assert {check["status"] for check in checks.values()} <= {"pass", "warn"}
        return
    assert finished.returncode == 1
    assert checks["flags"]["status"] == "fail"
    (problem,) = checks["flags"]["problems"]
    assert problem["cause"].startswith("include_dirs[0] = 'relative/include' is relative")
    assert "guarantee_cpp_device_options('mock')" in problem["fix"]
