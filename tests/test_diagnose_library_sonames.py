"""doctor --aot's ``library_sonames`` check (_diagnose/soname_checks.py): a WARN for each
shared library of the device's own that has no SONAME, which a model records by its file
name, so that a .pt2 moved where the SDK lies at another path loads only through the package.

The SDK is test_diagnose_doctor's (its ``libacme_rt.so`` built by a plain ``gcc -shared``),
with a second library that has a SONAME; doctor runs in-process on a registration.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support import assert_quoted
from test_diagnose_doctor import Sdk, provider, write_sdk

import inductor_device_options as ido
from inductor_device_options._diagnose.checks import Check
from inductor_device_options._diagnose.doctor import run_doctor
from inductor_device_options._hook.sources import found_source

DEVICE = "acmesoname"
NAMED = "libacme_named.so"


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Sdk:
    sdk = write_sdk(tmp_path_factory.mktemp("soname-sdk"), (DEVICE,))
    source = sdk.root / "acme_named.c"
    source.write_text("int acme_named(void) { return 2; }\n")
    command = ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{NAMED}.2", str(source)]
    subprocess.run([*command, "-o", str(sdk.lib / NAMED)], check=True)
    return sdk


def doctor(sdk: Sdk, work: Path, aot_mode: bool, libraries: tuple[str, ...]) -> dict[str, Check]:
    below = provider(sdk, runpath=True)

    def cpp_device_options(
        device_type: str, aot_mode: bool, compile_only: bool
    ) -> ido.CppDeviceOptions:
        options = below(device_type, aot_mode, compile_only)
        options.libraries[:] = [name for name in options.libraries if name != "acme_rt"]
        options.libraries.extend(libraries)
        return options

    with ido.testing.registered_cpp_device_options(DEVICE, cpp_device_options):
        checks = run_doctor(found_source(DEVICE), aot_mode, work)
    return {check.name: check for check in checks}


def test_a_library_without_a_soname_warns_with_aot_naming_it_the_cause_and_the_fix(
    sdk: Sdk, tmp_path: Path
) -> None:
    checks = doctor(sdk, tmp_path, True, ("acme_rt", "acme_named"))
    check = checks["library_sonames"]
    assert check.status == "warn", check
    [problem] = check.problems  # the library with a SONAME is not one
    unnamed = sdk.lib / "libacme_rt.so"
    assert problem.cause.startswith(f"{unnamed} has no SONAME: "), problem
    assert "-Wl,-soname,libacme_rt.so.<N>" in problem.fix
    assert_quoted(
        "... without a SONAME: a .pt2 loads where the SDK lies at another path only through "
        "inductor-device-options",
        [check.summary],
    )
    assert_quoted(
        "LIBRARY has no SONAME: an AOTInductor model linked against it records it by its file "
        "name, NAME, which the loader finds only on the model's runpath (the library dirs of "
        "the machine that built it) or LD_LIBRARY_PATH",
        [problem.cause],
    )
    assert_quoted(
        "give the library a SONAME: link it with -Wl,-soname,NAME (<N> its ABI version)",
        [problem.fix],
    )
    assert check.title == "the device's libraries have a SONAME"  # the page's heading


def test_libraries_with_a_soname_pass_and_without_aot_nothing_is_checked(
    sdk: Sdk, tmp_path: Path
) -> None:
    check = doctor(sdk, tmp_path / "aot", True, ("acme_named",))["library_sonames"]
    assert (check.status, check.summary) == ("pass", f"SONAME: {NAMED} ({NAMED}.2)"), check
    # Without --aot the options are cpp_wrapper's: a module is loaded where it was built.
    assert "library_sonames" not in doctor(sdk, tmp_path / "jit", False, ("acme_rt",))
