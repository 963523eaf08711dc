"""The hook in torch._inductor.cpp_builder, against real torch."""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch._inductor.cpp_builder as cpp_builder
from support import (
    NATIVE,
    TESTS_DIR,
    check_python,
    cpp_builder_keeps_whole,
    definitions_of,
    hook_mode_only,
    outcome,
    passthrough_args_of,
    pythonpath_with,
    torch_consults_device_interface,
    torch_has_custom_op_libs,
)
from torch._inductor import config

import inductor_device_options as ido
from inductor_device_options._errors import raised_by_provider
from inductor_device_options._hook import install as _hook
from inductor_device_options._hook.installation import installed
from inductor_device_options._hook.serve import DEFAULTS_PROBE_DEVICE

pytestmark = pytest.mark.usefixtures("clean_registry")


def stock(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> ido.CppDeviceOptions:
    """torch's function itself, bypassing the package."""
    installation = installed()
    assert installation is not None
    probe = device_type
    if NATIVE and device_type in cpp_builder._cpp_device_options_registry:  # type: ignore[attr-defined]
        probe = DEFAULTS_PROBE_DEVICE
    return ido.CppDeviceOptions(*installation.function_below(probe, aot_mode, compile_only))


def device_options(device_type: str, **kwargs: bool) -> cpp_builder.CppTorchDeviceOptions:
    return cpp_builder.CppTorchDeviceOptions(device_type=device_type, **kwargs)


# `import torch` imports this package through its torch.backends entry point, which arms
# the hook; the subprocess tests that choose the import order themselves turn that off.
# Their code imports helpers from tests/support.py.
NO_AUTOLOAD = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": pythonpath_with(TESTS_DIR)}

calls: list[tuple[str, bool, bool]] = []
# With a space where this torch quotes -I{dir}; torch 2.6 does not, and the package refuses
# such a dir there (test_options_injection.py), so the SDK path has none.
ASCEND_INCLUDE = (
    "/opt/ascend sdk/include" if cpp_builder_keeps_whole("include_dirs") else "/opt/ascend/include"
)


def npu_options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
    calls.append((device_type, aot_mode, compile_only))
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("USE_NPU")
    options.include_dirs.append(ASCEND_INCLUDE)
    options.libraries.append("ascendcl")
    options.passthrough_args.append("-DBUILD_LIBTORCH=ON -Wno-unused-function")
    return options


@pytest.fixture(autouse=True)
def _forget_calls() -> Iterator[None]:
    calls.clear()
    yield
    calls.clear()


def test_the_package_is_installed_in_the_expected_mode() -> None:
    state = ido.introspection.hook_state()
    # Both modes keep an entry of the hook's chain in the module, so that later
    # assignments are adopted (test_hook_coexistence.py).
    assert installed().chain.owns(cpp_builder.get_cpp_torch_device_options)  # type: ignore[union-attr]
    assert state.adopted == () and state.replaced_by is None
    if NATIVE:
        assert state.mode == "native"
    else:
        assert state.mode == "hook"
        assert state.function_below == "torch._inductor.cpp_builder.get_cpp_torch_device_options"
        assert state.replaced_by is None
        assert state.device_interface_backport is not torch_consults_device_interface()
        assert state.describe() == (
            "hook installed, chaining to torch._inductor.cpp_builder.get_cpp_torch_device_options"
        )


def test_registered_options_reach_cpp_torch_device_options() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    built = device_options("npu", aot_mode=True, compile_only=False)
    assert "USE_NPU" in definitions_of(built)
    assert ASCEND_INCLUDE in built.get_include_dirs()
    assert "ascendcl" in built.get_libraries()
    assert "-DBUILD_LIBTORCH=ON -Wno-unused-function" in passthrough_args_of(built)
    assert calls == [("npu", True, False)]


def test_device_index_and_flags_reach_the_callback_normalized() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    options = ido.get_cpp_device_options("npu:1", aot_mode=True, compile_only=True)
    assert calls == [("npu", True, True)]
    assert options == npu_options("npu", True, True)


def test_registered_device_gets_exactly_what_the_callback_returns_plus_nothing() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    expected = npu_options("npu", False, False)
    assert ido.get_cpp_device_options("npu") == expected


def test_default_options_are_torchs_for_the_device_even_while_registered() -> None:
    unregistered_defaults = ido.default_cpp_device_options("npu")
    assert unregistered_defaults == stock("npu")
    ido.register_cpp_device_options("npu", npu_options)
    assert ido.default_cpp_device_options("npu") == unregistered_defaults
    assert calls == []


@pytest.mark.parametrize("device_type", ["cpu", "mps", "unregistered_dev"])
def test_other_devices_stay_exactly_as_torch_computes_them(device_type: str) -> None:
    ido.register_cpp_device_options("npu", npu_options)
    assert ido.get_cpp_device_options(device_type) == stock(device_type)
    assert calls == []


def test_cuda_stays_exactly_as_torch_computes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No CUDA here: torch's CUDA_HOME (read once at import) is pointed at an empty
    directory so torch's own cuda branch runs; nothing of torch's logic is replaced."""
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path))
    ido.register_cpp_device_options("npu", npu_options)
    options = ido.get_cpp_device_options("cuda")
    assert options == stock("cuda")
    assert " USE_CUDA" in options.definitions and "USE_NPU" not in options.definitions


def test_xpu_stays_exactly_as_torch_computes_it_without_its_runtime() -> None:
    """No SYCL runtime here: torch's xpu branch raises where it checks for one (2.7+) and
    returns its xpu options where it does not (2.6); through the hook, exactly the same."""
    ido.register_cpp_device_options("npu", npu_options)
    expected = outcome(lambda: stock("xpu"))
    assert outcome(lambda: ido.get_cpp_device_options("xpu")) == expected
    if expected[0] == "raised":
        assert issubclass(expected[1][0], OSError)  # type: ignore[index]


def test_custom_op_libs_reach_a_registered_device() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    if not torch_has_custom_op_libs():  # torch 2.6: nothing to append
        assert ido.get_cpp_device_options("npu").libraries == npu_options("npu", 0, 0).libraries
        return
    with config.patch({"aot_inductor.custom_op_libs": ["my_ops", "ascendcl"]}):
        libraries = device_options("npu").get_libraries()
    assert libraries.count("ascendcl") == 1
    assert "my_ops" in libraries


def test_a_callback_exception_propagates_with_its_own_type_and_a_note() -> None:
    def broken(device_type: str, aot_mode: bool, compile_only: bool) -> None:
        raise FileNotFoundError("CANN not found")

    ido.register_cpp_device_options("npu", broken)
    with pytest.raises(FileNotFoundError, match="CANN not found") as caught:
        device_options("npu")
    provider = (
        "test_hook.test_a_callback_exception_propagates_with_its_own_type_and_a_note"
        ".<locals>.broken"
    )
    assert raised_by_provider(caught.value) == provider  # on every Python
    if sys.version_info >= (3, 11):  # exceptions carry notes from 3.11
        assert caught.value.__notes__ == [
            f"raised by the C++ options provider {provider} for device 'npu'"
        ]


def test_invalid_options_fail_before_the_compiler_naming_device_and_callback() -> None:
    def spaced(device_type: str, aot_mode: bool, compile_only: bool) -> tuple[list[str], ...]:
        # A newline: no torch renders it as one argument (2.15 quotes -L, a space would pass).
        return (["USE_NPU"], [], [], [], ["/opt/my\nsdk/lib64"], [], [])

    ido.register_cpp_device_options("npu", spaced)
    with pytest.raises(ido.InvalidCppDeviceOptionsError) as caught:
        device_options("npu")
    assert caught.value.device_type == "npu"
    assert "test_invalid_options_fail_before_the_compiler_naming_device_and_callback" in str(
        caught.value
    )
    assert "libraries_dirs[0] = '/opt/my\\nsdk/lib64'" in str(caught.value)


def test_a_failing_device_does_not_affect_others() -> None:
    def broken(device_type: str, aot_mode: bool, compile_only: bool) -> None:
        raise RuntimeError("no SDK")

    ido.register_cpp_device_options("npu", broken)
    ido.register_cpp_device_options("mlu", npu_options)
    with pytest.raises(RuntimeError):
        device_options("npu")
    assert "USE_NPU" in definitions_of(device_options("mlu"))
    assert ido.get_cpp_device_options("cpu") == stock("cpu")


@hook_mode_only
def test_device_interface_get_cpp_device_options_is_backported() -> None:
    """torch 2.15's DeviceInterface hook, on a torch that does not consult it."""
    from torch._dynamo.device_interface import (
        DeviceInterface,
        device_interfaces,
        register_interface_for_device,
    )

    class MockInterface(DeviceInterface):
        @staticmethod
        def get_cpp_device_options(
            aot_mode: bool, compile_only: bool
        ) -> tuple[list[str], ...] | None:
            calls.append(("mockdev", aot_mode, compile_only))
            return (
                ["USE_MOCK"],
                ["/mock/include"],
                ["Wno-mock-cflag"],  # g++ takes any -Wno-<name>: the package asks it
                ["Wno-mock-ldflag"],
                ["/mock/lib"],
                ["mocklib"],
                ["-DMOCK_PASSTHROUGH"],
            )

    class NoOptionsInterface(DeviceInterface):
        @staticmethod
        def get_cpp_device_options(aot_mode: bool, compile_only: bool) -> None:
            return None

    register_interface_for_device("mockdev", MockInterface)
    register_interface_for_device("nooptionsdev", NoOptionsInterface)
    try:
        built = device_options("mockdev", aot_mode=True)
        assert calls == [("mockdev", True, False)]
        for getter, value in [
            (lambda: definitions_of(built), "USE_MOCK"),
            (built.get_include_dirs, "/mock/include"),
            (built.get_cflags, "Wno-mock-cflag"),
            (built.get_ldflags, "Wno-mock-ldflag"),
            (built.get_libraries_dirs, "/mock/lib"),
            (built.get_libraries, "mocklib"),
            (lambda: passthrough_args_of(built), "-DMOCK_PASSTHROUGH"),
        ]:
            assert value in getter()
        assert ido.get_cpp_device_options("nooptionsdev") == stock("nooptionsdev")
        # An explicit registration comes before the interface.
        ido.register_cpp_device_options("mockdev", npu_options)
        assert "USE_NPU" in ido.get_cpp_device_options("mockdev").definitions
    finally:
        device_interfaces.pop("mockdev", None)
        device_interfaces.pop("nooptionsdev", None)


def test_installing_twice_keeps_one_hook() -> None:
    hook = cpp_builder.get_cpp_torch_device_options
    _hook.install(cpp_builder)
    ido._hook.install.arm()
    assert cpp_builder.get_cpp_torch_device_options is hook
    assert hook.__wrapped__ is installed().function_below  # type: ignore[attr-defined,union-attr]


def test_registering_does_not_import_torch_inductor() -> None:
    out = check_python(
        """
        import sys
        import torch
        import inductor_device_options as ido
        ido.register_cpp_device_options("npu", lambda d, a, c: ([], [], [], [], [], [], []))
        print(sorted(m for m in sys.modules if m.startswith("torch._inductor")))
        print(ido.introspection.hook_state().mode)
        """
    )
    assert out.splitlines() == ["[]", "waiting"]


@pytest.mark.parametrize("order", ["package first", "inductor first"])
def test_registrations_apply_whichever_is_imported_first(order: str) -> None:
    imports = ["import inductor_device_options as ido", "import torch._inductor.cpp_builder as cb"]
    if order == "inductor first":
        imports.reverse()
    out = check_python(
        "\n".join(imports)
        + "\nfrom support import definitions_of"
        + """
def mydev(device_type, aot_mode, compile_only):
    return (["USE_MYDEV"], [], [], [], [], [], [])
ido.register_cpp_device_options("mydev", mydev)
import torch._inductor.cpp_builder as cb
print(definitions_of(cb.CppTorchDeviceOptions(device_type="mydev"))[-1])
print(ido.introspection.hook_state().mode)
""",
        env=NO_AUTOLOAD,
    )
    assert out.splitlines() == ["USE_MYDEV", "native" if NATIVE else "hook"]


FOREIGN_PATCH = """
import torch._inductor.cpp_builder as cb
stock = cb.get_cpp_torch_device_options
received = []
def mlu_patch(device_type, aot_mode=False, compile_only=False, **kwargs):
    received.append((device_type, aot_mode, compile_only, kwargs))
    if device_type == "mlu":
        return (["USE_MLU"], [], [], [], [], ["cnrt"], [])
    return stock(device_type, aot_mode, compile_only)
cb.get_cpp_torch_device_options = mlu_patch
"""


@hook_mode_only
def test_a_replacement_installed_before_the_hook_still_serves_its_devices() -> None:
    out = check_python(
        FOREIGN_PATCH
        + """
import inductor_device_options as ido
from support import definitions_of
ido.register_cpp_device_options(
    "npu", lambda d, a, c: (["USE_NPU"], [], [], [], [], ["ascendcl"], []))
print(ido.introspection.hook_state().function_below)
print(definitions_of(cb.CppTorchDeviceOptions(device_type="mlu"))[-1])
print(definitions_of(cb.CppTorchDeviceOptions(device_type="npu"))[-1])
# torch 2.15 passes a keyword torch 2.13 does not know: it must reach the replacement.
print(cb.get_cpp_torch_device_options("mlu", True, compile_only=False, cpp_stdlib="libc++"))
print(received[-1])
""",
        env=NO_AUTOLOAD,
    )
    assert out.splitlines() == [
        "__main__.mlu_patch",
        "USE_MLU",
        "USE_NPU",
        "(['USE_MLU'], [], [], [], [], ['cnrt'], [])",
        "('mlu', True, False, {'cpp_stdlib': 'libc++'})",
    ]


@hook_mode_only
def test_unknown_arguments_pass_through_unchanged_for_unregistered_devices() -> None:
    out = check_python(
        """
import torch._inductor.cpp_builder as cb
seen = []
def patched(*args, **kwargs):
    seen.append((args, kwargs))
    return ([], [], [], [], [], [], [])
cb.get_cpp_torch_device_options = patched
import inductor_device_options as ido
cb.get_cpp_torch_device_options("zdev", False, True, "extra", cpp_stdlib="libstdc++")
cb.get_cpp_torch_device_options(device_type="cpu", aot_mode=True)
print(seen)
""",
        env=NO_AUTOLOAD,
    )
    assert out.strip() == (
        "[(('zdev', False, True, 'extra'), {'cpp_stdlib': 'libstdc++'}), "
        "((), {'device_type': 'cpu', 'aot_mode': True})]"
    )


torch_validates_cpp_stdlib = pytest.mark.skipif(
    not hasattr(cpp_builder, "_validate_cpp_stdlib"),
    reason="cpp_stdlib= and its validation are torch 2.15's",
)


class _InterfaceWithOptions:
    @staticmethod
    def get_cpp_device_options(aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        calls.append(("interface", aot_mode, compile_only))
        return ido.CppDeviceOptions(["USE_ACME_INTERFACE"], [], [], [], [], [], [])


@torch_validates_cpp_stdlib
@pytest.mark.parametrize("source", ["registration", "device interface", "torch's registry"])
def test_cpp_stdlib_is_checked_for_a_served_device_as_torch_checks_its_own(source: str) -> None:
    from torch._dynamo import device_interface

    # One device per source: the package's dispatcher stays in torch's native registry.
    device = "acmestdlib" + {"device interface": "di", "torch's registry": "torch"}.get(source, "")
    native_registry: dict[str, object] = getattr(cpp_builder, "_cpp_device_options_registry", {})
    if source == "registration":
        ido.register_cpp_device_options(device, npu_options)
        provider = ido.introspection.device_options_source(device).description
    elif source == "device interface":
        if NATIVE:
            pytest.skip("with torch's native registry torch asks the device interface itself")
        base = device_interface.DeviceInterface
        interface = type("AcmeInterface", (_InterfaceWithOptions, base), {})
        device_interface.register_interface_for_device(device, interface)
        provider = ido.introspection.device_options_source(device).description
    else:
        if not NATIVE:
            pytest.skip("torch's own registry exists only with the upstream patch")
        cpp_builder.register_cpp_device_options(device, npu_options)  # type: ignore[attr-defined]
        provider = ""  # torch's door: torch's own error, no note
    try:
        for cpp_stdlib, aot_mode in itertools.product(["libc++", "libstdc++"], [True, False]):
            calls.clear()
            expected = outcome(
                functools.partial(cpp_builder._validate_cpp_stdlib, cpp_stdlib, device, aot_mode)
            )
            try:
                cpp_builder.get_cpp_torch_device_options(
                    device, aot_mode, False, cpp_stdlib=cpp_stdlib
                )
            except RuntimeError as error:
                assert expected == ("raised", (type(error), str(error)))
                assert calls == []  # rejected before the provider ran
                if source != "registration":
                    # torch's own doors: torch's own check, exactly as without the package.
                    assert not hasattr(error, "__notes__")
                    continue
                (note,) = error.__notes__
                assert repr(device) in note
                assert provider in note
            else:
                assert expected == ("returned", None)
                assert len(calls) == 1
    finally:
        device_interface.device_interfaces.pop(device, None)
        if source == "torch's registry":
            native_registry.pop(device, None)


@torch_validates_cpp_stdlib
def test_cpp_stdlib_stays_unchecked_for_a_device_the_package_does_not_serve() -> None:
    """What the function below gives such a device is left alone, a request it ignores too."""
    seen: list[dict[str, object]] = []

    def replacement(
        device_type: str, aot_mode: bool = False, compile_only: bool = False, **kwargs: object
    ) -> tuple[list[str], ...]:
        seen.append(kwargs)
        return (["REPLACED"], [], [], [], [], [], [])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpp_builder, "get_cpp_torch_device_options", replacement)
        options = cpp_builder.get_cpp_torch_device_options(
            "acmestdlib", True, False, cpp_stdlib="libc++"
        )
    assert options[0] == ["REPLACED"]
    assert seen == [{"cpp_stdlib": "libc++"}]


def test_sources_say_where_each_device_gets_its_options() -> None:
    from torch._dynamo.device_interface import (
        DeviceInterface,
        device_interfaces,
        register_interface_for_device,
    )

    class WithOptions(DeviceInterface):
        @staticmethod
        def get_cpp_device_options(aot_mode: bool, compile_only: bool) -> None:
            return None

    ido.register_cpp_device_options("mlu", npu_options)
    register_interface_for_device("ifacedev", WithOptions)
    try:
        known = ido.introspection.known_device_options_sources()
        sources = {source.device_type: source for source in known}
    finally:
        device_interfaces.pop("ifacedev", None)
    assert sources["mlu"] == ido.introspection.DeviceOptionsSource(
        "mlu", "registration", "test_hook.npu_options", guaranteed=True
    )
    assert sources["npu"].kind == "entry point"  # declared by this package (Ascend)
    assert sources["npu"].description.startswith(
        "entry point npu = inductor_device_options.ascend:cpp_device_options in group "
        "'inductor_device_options' (distribution inductor-device-options "
    )
    for torch_device in ("cpu", "cuda", "xpu", "mps"):
        assert sources[torch_device].kind == "torch"
    if NATIVE and not torch_consults_device_interface():
        assert "ifacedev" not in sources  # nothing asks the interface: not a source
    else:
        assert sources["ifacedev"].kind == "device interface"
        assert sources["ifacedev"].description.endswith("WithOptions.get_cpp_device_options")
    assert ido.introspection.device_options_source("unknowndev:0").kind == "torch"
