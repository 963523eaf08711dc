"""The SDK identity stamped in an AOTInductor package is checked before the model is opened,
by every loader torch has (a real compile and load: tests/e2e/test_fleet.py).

The packages here are archives laid out as torch writes them whose model is not a real one:
the check must decide before torch opens anything, and where it lets a package through,
torch's own loader then refuses the fake model with its own error.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from support import assert_quoted

import inductor_device_options as ido
from inductor_device_options._hook.pt2_stamp import ACCEPT_MISMATCH_ENV, STAMP_KEY, package_stamp

DEVICE = "stampdev"


def write_package(path: Path, metadata: dict[str, str], prefix: str = "model") -> Path:
    """A .pt2 archive with AOTInductor's metadata file and a model that is not one."""
    with zipfile.ZipFile(path, "w") as archive:
        aoti = f"{prefix}/data/aotinductor/model"
        archive.writestr(f"{aoti}/cabc123_metadata.json", json.dumps(metadata))
        archive.writestr(f"{aoti}/cabc123.so", b"not a shared object")
    return path


@pytest.fixture
def sdk(tmp_path: Path, clean_registry: None) -> Iterator[Path]:
    include = tmp_path / "sdk" / "include"
    include.mkdir(parents=True)
    (include / "stampdev.h").write_text("#define STAMPDEV 1\n")

    def stampdev(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [str(include)], [], [], [], [], [])

    ido.register_cpp_device_options(DEVICE, stampdev)
    yield include


def identity_here() -> str:
    [definition] = ido.get_cpp_device_options(DEVICE, aot_mode=True).definitions
    return definition.partition("=")[2]


def aoti_load_package(path: Path) -> object:
    return torch._inductor.aoti_load_package(str(path))


def load_package(path: Path) -> object:
    from torch._inductor.package import load_package as load

    return load(str(path))


def loader_class(path: Path) -> object:
    import torch._inductor.package  # installs the check, as importing any loader does

    loader = torch._C._aoti.AOTIModelPackageLoader
    arguments: tuple[object, ...] = (str(path), "model")
    release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if release >= (2, 7):  # (path, model, run_single_threaded, num_runners, device index)
        arguments += (False, 1, -1)
    return loader(*arguments)


LOADERS: list[Callable[[Path], object]] = [aoti_load_package, load_package, loader_class]
LOADER_IDS = ["aoti_load_package", "load_package", "AOTIModelPackageLoader"]


def test_the_stamp_is_read_from_the_archive_under_any_prefix(tmp_path: Path) -> None:
    stamped = write_package(tmp_path / "a.pt2", {STAMP_KEY: "npu=abc"}, prefix="archive")
    assert package_stamp(str(stamped)) == ("npu", "abc")
    assert package_stamp(str(stamped), model_name="other") is None
    assert package_stamp(str(write_package(tmp_path / "b.pt2", {"x": "y"}))) is None
    (tmp_path / "c.pt2").write_bytes(b"not an archive")
    assert package_stamp(str(tmp_path / "c.pt2")) is None


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_a_package_built_against_another_sdk_is_refused_before_it_is_opened(
    load: Callable[[Path], object], sdk: Path, tmp_path: Path
) -> None:
    other = "0" * 32
    package = write_package(tmp_path / "model.pt2", {STAMP_KEY: f"{DEVICE}={other}"})
    with pytest.raises(ido.SdkMismatchError) as raised:
        load(package)
    error = raised.value
    assert (error.device_type, error.built, error.current) == (DEVICE, other, identity_here())
    assert error.package == str(package)
    message = str(error)
    for part in (repr(DEVICE), other, identity_here(), f"{ACCEPT_MISMATCH_ENV}=1"):
        assert part in message


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_the_same_sdk_passes_the_check_and_torch_opens_the_package(
    load: Callable[[Path], object], sdk: Path, tmp_path: Path
) -> None:
    package = write_package(tmp_path / "model.pt2", {STAMP_KEY: f"{DEVICE}={identity_here()}"})
    with pytest.raises(Exception) as raised:  # torch's loader: the model is not a real one
        load(package)
    assert not isinstance(raised.value, ido.SdkMismatchError)


def no_sdk(device_type: str, aot_mode: bool, compile_only: bool) -> object:
    return (["USE_STAMPDEV"], [], [], [], [], [], [])


# Why a package is refused, as docs/guides/troubleshooting.md quotes it: the device's SDK
# here is another one, unknown (nothing serves the device) or none (its options name none).
WHY: dict[str, Callable[[list[str]], None]] = {
    "another SDK": lambda produced: assert_quoted(
        "the AOTInductor package was built for device 'DEVICE' against SDK identity ..., but "
        "its SDK identity here is ...; its code would run against another SDK than it was "
        "built for",
        produced,
    ),
    "not served": lambda produced: assert_quoted(
        "no C++ options provider serves 'DEVICE' in this process (import or register its "
        "backend before loading), so its SDK here is unknown",
        produced,
    ),
    "no SDK": lambda produced: assert_quoted(
        "the options of 'DEVICE' here name no SDK of the device's own", produced
    ),
}


@pytest.mark.parametrize("case", WHY)
def test_the_refusal_says_why_and_what_to_do(
    case: str, tmp_path: Path, clean_registry: None, request: pytest.FixtureRequest
) -> None:
    if case == "another SDK":
        request.getfixturevalue("sdk")
    elif case == "no SDK":
        ido.register_cpp_device_options(DEVICE, no_sdk)
    package = write_package(tmp_path / "model.pt2", {STAMP_KEY: f"{DEVICE}={'1' * 32}"})
    with pytest.raises(ido.SdkMismatchError) as raised:
        aoti_load_package(package)
    assert (raised.value.current is None) is (case != "another SDK")
    WHY[case]([str(raised.value)])
    assert_quoted(
        "Fix: rebuild the package on this machine's SDK (or install the SDK it was built "
        "against); to load it anyway, knowingly, set INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1",
        [str(raised.value)],
    )


def test_a_mismatch_accepted_knowingly_warns_and_goes_on(
    sdk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCEPT_MISMATCH_ENV, "1")
    package = write_package(tmp_path / "model.pt2", {STAMP_KEY: f"{DEVICE}={'2' * 32}"})
    with warnings.catch_warnings(record=True) as caught, pytest.raises(Exception) as raised:
        warnings.simplefilter("always")
        aoti_load_package(package)
    assert not isinstance(raised.value, ido.SdkMismatchError)
    [warning] = [w for w in caught if "loaded anyway" in str(w.message)]
    assert warning.category is RuntimeWarning
    assert "2" * 32 in str(warning.message)
    assert_quoted(
        "loaded anyway (INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1)", [str(warning.message)]
    )


def test_a_package_without_a_stamp_loads_as_without_the_package(tmp_path: Path) -> None:
    package = write_package(tmp_path / "model.pt2", {"AOTI_DEVICE_KEY": "cpu"})
    with warnings.catch_warnings(record=True) as caught, pytest.raises(Exception) as raised:
        warnings.simplefilter("always")
        aoti_load_package(package)
    assert not isinstance(raised.value, ido.SdkMismatchError)
    assert not [w for w in caught if "inductor-device-options" in str(w.message)]


def test_a_library_of_the_device_that_does_not_load_is_named(
    tmp_path: Path, clean_registry: None
) -> None:
    """The identity matches, so the device's libraries are loaded from its dirs here: one
    that is there but is not a library the loader can load says so, before torch opens the
    package."""
    lib = tmp_path / "sdk" / "lib"
    lib.mkdir(parents=True)
    (lib / "libstampdev_rt.so").write_text("not an ELF file")

    def broken_runtime(device_type: str, aot_mode: bool, compile_only: bool) -> object:
        return ([], [], [], [], [str(lib)], ["stampdev_rt"], [])

    ido.register_cpp_device_options(DEVICE, broken_runtime)
    package = write_package(tmp_path / "model.pt2", {STAMP_KEY: f"{DEVICE}={identity_here()}"})
    with pytest.raises(OSError) as raised:
        aoti_load_package(package)
    assert type(raised.value).__name__ == "DeviceLibraryError"
    assert_quoted(
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which does not load",
        [str(raised.value)],
    )
