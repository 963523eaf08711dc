"""Registration: names, refusals, warnings, the context manager, thread safety, locks."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest
from support import check_python, pythonpath_with, run_python, write_distribution

import inductor_device_options as ido
from inductor_device_options._lookup import entry_points as _entry_points

pytestmark = pytest.mark.usefixtures("clean_registry")


def npu_options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
    return ido.CppDeviceOptions(["USE_NPU"], [], [], [], [], [], [])


def other_npu_options(
    device_type: str, aot_mode: bool, compile_only: bool
) -> tuple[list[str], ...]:
    return (["USE_OTHER"], [], [], [], [], [], [])


def test_register_lists_the_device_and_unregister_removes_it() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    assert "npu" in ido.introspection.registered_device_types()
    registration = _entry_points.own_source("npu")
    assert registration is not None
    assert registration.source == ido.introspection.DeviceOptionsSource(
        "npu", "registration", "test_lookup_registry.npu_options", guaranteed=True
    )
    assert registration is not None and registration.provider is npu_options
    assert ido.unregister_cpp_device_options("npu", other_npu_options) is False  # not its own
    assert ido.unregister_cpp_device_options("npu") is True
    assert "npu" not in ido.introspection.registered_device_types()
    assert ido.unregister_cpp_device_options("npu") is False


@pytest.mark.parametrize("spelling", ["npu:0", "npu:7"])
def test_a_device_index_names_the_same_device(spelling: str) -> None:
    ido.register_cpp_device_options(spelling, npu_options)
    assert ido.introspection.registered_device_types() == ["npu"]
    assert ido.unregister_cpp_device_options("npu:1") is True


def test_registering_again_warns_naming_both_callbacks_and_overwrites() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    with pytest.warns(UserWarning) as caught:
        ido.register_cpp_device_options("npu", other_npu_options)
    assert str(caught[0].message) == (
        "C++ device options for 'npu' are already registered by test_lookup_registry.npu_options; "
        "overwriting with test_lookup_registry.other_npu_options"
    )
    assert caught[0].filename == __file__  # points at the caller, not at the package
    provider = _entry_points.own_source("npu")
    assert provider is not None and provider.provider is other_npu_options


@pytest.mark.parametrize("device_type", ["cpu", "cuda", "xpu", "mps", "cuda:0"])
def test_torchs_own_devices_are_refused(device_type: str) -> None:
    with pytest.raises(ido.ReservedDeviceTypeError) as caught:
        ido.register_cpp_device_options(device_type, npu_options)
    name = device_type.partition(":")[0]
    assert str(caught.value).startswith(
        f"cannot register C++ device options for {name!r} "
        "(callback test_lookup_registry.npu_options)"
    )
    assert caught.value.device_type == name
    assert name not in ido.introspection.registered_device_types()


@pytest.mark.parametrize(
    "device_type",
    ["", " ", "npu:", ":0", "npu:x", "npu:-1", "n pu", "npu-1", "1npu", "npu\n", "npu:0:1"],
)
def test_device_types_that_are_not_names_are_refused(device_type: str) -> None:
    with pytest.raises(ido.InvalidDeviceTypeError) as caught:
        ido.register_cpp_device_options(device_type, npu_options)
    assert f"device_type {device_type!r} is not a device name" in str(caught.value)
    assert ido.introspection.registered_device_types() == []


@pytest.mark.parametrize("device_type", [None, 3, b"npu"])
def test_device_types_that_are_not_str_are_refused(device_type: object) -> None:
    with pytest.raises(ido.InvalidDeviceTypeError, match="device_type must be a str"):
        ido.register_cpp_device_options(device_type, npu_options)  # type: ignore[arg-type]


@pytest.mark.parametrize("callback", [None, "torch_npu:options", 42])
def test_callbacks_that_are_not_callable_are_refused_naming_the_device(callback: object) -> None:
    with pytest.raises(ido.InvalidProviderError) as caught:
        ido.register_cpp_device_options("npu", callback)  # type: ignore[arg-type]
    assert str(caught.value).startswith("callback for device 'npu' must be callable")
    assert repr(callback) in str(caught.value)
    assert isinstance(caught.value, TypeError)


def test_errors_are_specific_classes_under_one_base() -> None:
    for error in (
        ido.InvalidDeviceTypeError,
        ido.ReservedDeviceTypeError,
        ido.InvalidProviderError,
        ido.InvalidCppDeviceOptionsError,
        ido.ProviderLoadError,
    ):
        assert issubclass(error, ido.CppDeviceOptionsError)


def test_context_manager_registers_for_the_block_only() -> None:
    with ido.testing.registered_cpp_device_options("npu", npu_options):
        assert ido.introspection.registered_device_types() == ["npu"]
    assert ido.introspection.registered_device_types() == []


def test_context_manager_restores_the_previous_registration_without_warning() -> None:
    ido.register_cpp_device_options("npu", npu_options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ido.testing.registered_cpp_device_options("npu:0", other_npu_options):
            provider = _entry_points.own_source("npu")
            assert provider is not None and provider.provider is other_npu_options
    provider = _entry_points.own_source("npu")
    assert provider is not None and provider.provider is npu_options


def test_context_manager_restores_even_when_the_block_raises() -> None:
    with pytest.raises(KeyError), ido.testing.registered_cpp_device_options("npu", npu_options):
        raise KeyError("boom")
    assert ido.introspection.registered_device_types() == []


def test_concurrent_registration_and_lookup_lose_nothing() -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def name_of(worker: int, index: int) -> str:
        # Device types are letters and '_': torch.device() parses no digit.
        return f"dev_{'abcdefgh'[worker]}_{''.join('abcdefghij'[int(d)] for d in str(index))}"

    def work(worker: int) -> None:
        try:
            start.wait()
            for index in range(200):
                name = name_of(worker, index)
                ido.register_cpp_device_options(name, npu_options)
                provider = _entry_points.own_source(name)
                assert provider is not None and provider.device_type == name
                if index % 2:
                    assert ido.unregister_cpp_device_options(name)
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = sorted(name_of(w, i) for w in range(8) for i in range(0, 200, 2))
    assert ido.introspection.registered_device_types() == expected


# A provider module that registers another device when imported, slowly: the main thread
# of the script below looks its device up (loading the entry point) while another thread
# is in the middle of importing that module.
REGISTERS_AT_IMPORT = """\
import time
import __main__
import inductor_device_options as ido

__main__.importing.set()
time.sleep(0.5)  # the lookup in the main thread starts now
ido.register_cpp_device_options("sidedev", lambda d, a, c: (["SIDE"], [], [], [], [], [], []))

def options(device_type, aot_mode, compile_only):
    return (["LOCKDEV"], [], [], [], [], [], [])
"""

LOOKUP_WHILE_ANOTHER_THREAD_IMPORTS = """
import os, sys, threading
from inductor_device_options._lookup import entry_points as _entry_points
from inductor_device_options._lookup import registry as _registry

importing = threading.Event()
def import_provider():
    import lock_provider  # noqa: F401

importer = threading.Thread(target=import_provider, daemon=True)
importer.start()
importing.wait(30)
finder = threading.Thread(
    target=lambda: print(_entry_points.own_source("lockdev").provider("lockdev", 0, 0)[0]),
    daemon=True,
)
finder.start()
for thread in (importer, finder):
    thread.join(20)
if importer.is_alive() or finder.is_alive():
    print("deadlock", flush=True)
    os._exit(1)
print(_entry_points.own_source("sidedev").description)
"""


def test_loading_an_entry_point_never_deadlocks_with_a_module_registering_at_import(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write_distribution(site, "lockdist", "1.0", {"lockdev": "lock_provider:options"})
    (site / "lock_provider.py").write_text(REGISTERS_AT_IMPORT)
    out = check_python(
        LOOKUP_WHILE_ANOTHER_THREAD_IMPORTS,
        env={"PYTHONPATH": pythonpath_with(site)},
        timeout=120,
    )
    assert out.splitlines() == ["['LOCKDEV']", "lock_provider.<lambda>"]


# --- "cpu": torch's own, and what a backend whose builds ask for it does instead ------------

CPU_REGISTERING_BACKEND = """\
import torch
import inductor_device_options as ido


def autoload():
    torch.utils.rename_privateuse1_backend("mydev")
    ido.register_cpp_device_options("cpu", lambda device_type, aot_mode, compile_only: None)
"""


def test_registering_cpu_is_refused_saying_what_to_do_instead(tmp_path: Path) -> None:
    """An openreg-shaped backend whose cpp_wrapper builds ask for "cpu" tries to extend
    them: refused, naming the device PrivateUse1 took and the fix. Raised in the backend's
    torch autoload, the refusal stops `import torch` loudly, with the fix on stderr."""
    (tmp_path / "cpu_backend.py").write_text(CPU_REGISTERING_BACKEND)
    dist_info = tmp_path / "cpu_backend-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: cpu-backend\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[torch.backends]\ncpu_backend = cpu_backend:autoload\n"
    )
    finished = run_python("import torch", env={"PYTHONPATH": pythonpath_with(tmp_path)})
    assert finished.returncode != 0
    assert "Failed to load the backend extension: cpu_backend" in finished.stderr
    assert "ReservedDeviceTypeError: cannot register C++ device options for 'cpu'" in (
        finished.stderr
    )
    for fix in (
        "set self.device = 'mydev' in its __init__ before super().__init__()",
        "register the provider for 'mydev'",
        "ship torch/csrc/inductor/cpp_wrapper/mydev.h",
        "`inductor-device-options doctor mydev` checks all three",
    ):
        assert fix in finished.stderr


def test_only_the_cpu_refusal_suggests_the_codegen_fix() -> None:
    with pytest.raises(ido.ReservedDeviceTypeError) as refused:
        ido.register_cpp_device_options("cuda", print)
    assert "self.device" not in str(refused.value)  # only "cpu" builds are asked for instead
