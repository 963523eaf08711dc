"""Loading an AOTInductor package whose SDK identity is not the device's here is refused,
before the model is opened, with an error that names the device, both identities and the
fix (``hook/pt2_stamp.py``).

The packages here hold only their metadata, stamped as a build stamps it: the check refuses
them before torch's loader opens anything, so no model is needed. tests/e2e/test_fleet.py
builds real packages on one SDK and loads them on another and on the same contents.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from support import assert_quoted

import inductor_device_options as ido
from inductor_device_options.hook.pt2_stamp import ACCEPT_MISMATCH_ENV, STAMP_KEY, check_package

BUILT = "0123456789abcdef0123456789abcdef"  # the identity of an SDK no test has
Provider = Callable[[str, bool, bool], tuple[list[str], ...]]


def stamped_package(path: Path, stamp: str) -> str:
    """An archive laid out as a ``.pt2``, whose model metadata carries ``stamp``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "package/data/aotinductor/model/model_metadata.json",
            json.dumps({"AOTI_DEVICE_KEY": "stampdev", STAMP_KEY: stamp}),
        )
    return str(path)


def sdk_options(root: Path) -> Provider:
    (root / "include").mkdir(parents=True)
    (root / "include" / "stampdev.h").write_text("#define STAMPDEV_SDK 2\n")
    include_dir = str(root / "include")
    return lambda device_type, aot_mode, compile_only: ([], [include_dir], [], [], [], [], [])


def no_sdk_options(root: Path) -> Provider:
    return lambda device_type, aot_mode, compile_only: (["USE_STAMPDEV"], [], [], [], [], [], [])


# The device's provider here (None: nothing serves it), and the check that the error says why
# as docs/guides/troubleshooting.md quotes it.
CASES: dict[str, tuple[Callable[[Path], Provider] | None, Callable[[list[str]], None]]] = {
    "another SDK": (
        sdk_options,
        lambda produced: assert_quoted(
            "the AOTInductor package was built for device 'DEVICE' against SDK identity ..., "
            "but its SDK identity here is ...; its code would run against another SDK than it "
            "was built for",
            produced,
        ),
    ),
    "not served": (
        None,
        lambda produced: assert_quoted(
            "no C++ options provider serves 'DEVICE' in this process (import or register its "
            "backend before loading), so its SDK here is unknown",
            produced,
        ),
    ),
    "no SDK": (
        no_sdk_options,
        lambda produced: assert_quoted(
            "the options of 'DEVICE' here name no SDK of the device's own", produced
        ),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_package_built_against_another_sdk_is_refused_at_load(
    case: str, tmp_path: Path, clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ACCEPT_MISMATCH_ENV, raising=False)
    make_provider, says_why = CASES[case]
    if make_provider is not None:
        ido.register_cpp_device_options("stampdev", make_provider(tmp_path / "sdk"))
    package = stamped_package(tmp_path / "model.pt2", f"stampdev={BUILT}")
    with pytest.raises(ido.SdkMismatchError) as raised:
        torch._inductor.aoti_load_package(package)
    error = raised.value
    here = ido.get_cpp_device_options("stampdev").definitions if case == "another SDK" else []
    assert (error.device_type, error.built, error.package) == ("stampdev", BUILT, package)
    assert error.current == (here[0].partition("=")[2] if here else None)
    says_why([str(error)])
    assert_quoted(
        "Fix: rebuild the package on this machine's SDK (or install the SDK it was built "
        "against); to load it anyway, knowingly, set INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1",
        [str(error)],
    )


def test_a_mismatch_accepted_knowingly_warns_and_lets_the_load_go_on(
    tmp_path: Path, clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ACCEPT_MISMATCH_ENV, "1")
    ido.register_cpp_device_options("stampdev", sdk_options(tmp_path / "sdk"))
    package = stamped_package(tmp_path / "model.pt2", f"stampdev={BUILT}")
    with pytest.warns(RuntimeWarning) as warned:
        check_package(package)
    assert_quoted(
        "loaded anyway (INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1)",
        [str(warning.message) for warning in warned],
    )


@pytest.mark.parametrize("stamped", ["the identity here", "no stamp"])
def test_a_package_of_the_same_sdk_or_without_a_stamp_goes_on_to_torchs_loader(
    stamped: str, tmp_path: Path, clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ACCEPT_MISMATCH_ENV, raising=False)
    ido.register_cpp_device_options("stampdev", sdk_options(tmp_path / "sdk"))
    [definition] = ido.get_cpp_device_options("stampdev").definitions
    package = tmp_path / "model.pt2"
    if stamped == "no stamp":
        with zipfile.ZipFile(package, "w") as archive:
            archive.writestr("package/data/aotinductor/model/model_metadata.json", "{}")
    else:
        stamped_package(package, f"stampdev={definition.partition('=')[2]}")
    check_package(str(package))  # raises nothing: torch's loader opens it next
