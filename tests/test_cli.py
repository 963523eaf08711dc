"""The command line: each subcommand in a fresh process, against real torch and g++.

The devices are declared by a test distribution (a dist-info directory on PYTHONPATH, as
in test_lookup_entry_points.py) whose providers point at a small SDK written to disk: a header
and a gcc-built library. Each process imports torch._inductor (seconds), so the
invocations a group of tests needs run concurrently, once per module.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch
from support import (
    DOCTOR_CHECKS,
    NATIVE,
    cpp_builder_keeps_whole,
    cpp_wrapper_device_header,
    pythonpath_with,
    write_distribution,
)

import inductor_device_options as ido
from inductor_device_options import _cli as cli

PROVIDER = """\
import os
SDK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clidev_sdk")
# The runpath ldflag inductor_device_options.runpath(lib) gives.
RUNPATH = "Wl,-rpath," + os.path.realpath(os.path.join(SDK, "lib"))

def good(device_type, aot_mode, compile_only):
    import inductor_device_options as ido
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("CLIDEV")
    options.include_dirs.append(os.path.join(SDK, "include"))
    options.libraries_dirs.append(os.path.join(SDK, "lib"))
    options.libraries.append("clidev_runtime")
    options.ldflags.append(RUNPATH)
    return options

def not_utf8(device_type, aot_mode, compile_only):  # the SDK's headers in a dir named b"inc\\xff"
    options = good(device_type, aot_mode, compile_only)
    options.include_dirs[-1] = os.fsdecode(os.path.join(os.fsencode(SDK), b"inc\\xff"))
    return options

def _adding(name, field, value):  # a provider: good's options plus one value
    def provider(device_type, aot_mode, compile_only):
        options = good(device_type, aot_mode, compile_only)
        getattr(options, field).append(value)
        return options
    provider.__qualname__ = name
    return provider

missing_library = _adding("missing_library", "libraries", "clidev_missing")
missing_include_dir = _adding(
    "missing_include_dir", "include_dirs", os.path.join(SDK, "no_such_include")
)
bad_flags = _adding("bad_flags", "cflags", "-O2")
response_file = _adding("response_file", "definitions", "@" + os.path.join(SDK, "rsp"))
spaced_real_path = _adding("spaced_real_path", "libraries_dirs", os.path.join(SDK, "lib-link"))

def raising(device_type, aot_mode, compile_only):
    raise RuntimeError("the clidev SDK is not set up\\nFix: run clidev-setup")

def exiting(device_type, aot_mode, compile_only):
    raise SystemExit(0)  # e.g. a setup script's main() called by mistake
"""

# Modules a --provider names that cannot be loaded, each for its own reason.
BROKEN_MODULES = {
    "raises_at_import": "import os\n\nLIMIT = 1 // 0\n",
    "exits_at_import": "import sys\nprint('setting up')\nsys.exit(0)\n",
    "imports_a_missing_module": "import os\nimport acme_sdk_bindings\n",
    "has_a_syntax_error": "def options(:\n",
    "defines_no_provider": "print('imported')\nNAME = 'acme'\n",
}

ENTRY_POINTS = {
    "clidev": "cli_provider:good",
    "nolibdev": "cli_provider:missing_library",
    "noincdev": "cli_provider:missing_include_dir",
    "raisingdev": "cli_provider:raising",
    "exitdev": "cli_provider:exiting",
    "rspdev": "cli_provider:response_file",
    "spacedev": "cli_provider:spaced_real_path",
}
# Another distribution's entry points that name no device this package serves.
INVALID_ENTRY_POINTS = {"my-dev": "thirdparty:options", "cpu": "thirdparty:options"}

CHECK_NAMES = list(DOCTOR_CHECKS)
#: What doctor cannot check of a device whose backend is not imported (these devices).
NO_BACKEND = ("device_asked", "overrides", "c_shim")
#: The statuses where the options cannot be computed: what needs them is skipped.
OPTIONS_FAILED = ["pass", "pass", "skip", "skip", "fail"] + ["skip"] * 10
# Every device a provider of these tests serves: the SDK has Inductor's headers for each.
SDK_DEVICES = [*ENTRY_POINTS, "mydev", "flagdev", "utfdev", "alldev", "otherdev"]
SOURCE_KEYS = {"device_type", "kind", "source", "description", "guaranteed"}
# The top-level keys of each JSON document.
COMMON_KEYS = {"schema", "version", "torch_version"}
DEVICE_KEYS = COMMON_KEYS | {"device_type", "aot_mode", "source", "error"}
KEYS = {
    "list": COMMON_KEYS
    | {
        "hook",
        "devices",
        "torch_hooks",
        "provider_doors",
        "invalid_declarations",
        "declaration_conflicts",
        "not_asked",
        "sdk_identities",
        "notes",
    },
    "show": DEVICE_KEYS
    | {
        "compile_only",
        "options",
        "commands",
        "asked",
        "notes",
        "torch_hooks",
        "provider_doors",
        "sdk_identity",
        "declared_doors",
    },
    "doctor": DEVICE_KEYS | {"ok", "exit_code", "checks", "notes", "torch_hooks", "provider_doors"},
    "doctor-all": COMMON_KEYS | {"aot_mode", "ok", "exit_code", "devices", "notes"},
}
SOURCES = {"registration", "entry point", "device interface", "torch"}
ANSI = "\x1b["

Run = subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site dir with the distribution `clidist` and the SDK its providers point at."""
    site = tmp_path_factory.mktemp("cli") / "site"
    write_distribution(site, "clidist", "2.0", ENTRY_POINTS)
    (site / "cli_provider.py").write_text(PROVIDER)
    write_distribution(site, "thirdparty", "0.1", INVALID_ENTRY_POINTS)
    sdk = site / "clidev_sdk"
    (sdk / "include").mkdir(parents=True)
    (sdk / "lib").mkdir()
    (sdk / "include" / "clidev.h").write_text('extern "C" int clidev_version(void);\n')
    for include in ("include", os.fsdecode(b"inc\xff")):
        for device in SDK_DEVICES:  # what Inductor's generated code includes, on every torch
            for header in [
                f"torch/csrc/inductor/cpp_wrapper/{device}.h",
                f"torch/csrc/inductor/aoti_include/{device}.h",
                f"torch/csrc/inductor/aoti_torch/generated/c_shim_{device}.h",
            ]:
                path = sdk / include / header
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("#pragma once\n#include <clidev.h>\n")
    (sdk / os.fsdecode(b"inc\xff") / "clidev.h").write_text("int clidev_version(void);\n")
    for name, text in BROKEN_MODULES.items():
        (site / f"{name}.py").write_text(text)
    (sdk / "lib dir").mkdir()
    (sdk / "lib-link").symlink_to("lib dir")
    (site / "rt.c").write_text("int clidev_version(void) { return 1; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", site / "rt.c", "-o", sdk / "lib/libclidev_runtime.so"],
        check=True,
    )
    return site


def run_cli(
    site: Path, args: list[str], env: Mapping[str, str | None] = {}, console_script: bool = False
) -> Run:
    """Run the command line in a fresh process; an env value None unsets the variable."""
    full_env = {**os.environ, "PYTHONPATH": pythonpath_with(site)}
    for name, value in env.items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    script = shutil.which(cli.PROG, path=str(Path(sys.executable).parent))
    if console_script and script is not None:
        command = [script, *args]
    else:
        command = [sys.executable, "-m", "inductor_device_options", *args]
    return subprocess.run(
        command, env=full_env, capture_output=True, text=True, timeout=600, check=False
    )


def run_concurrently(site: Path, runs: Mapping[str, dict[str, object]]) -> dict[str, Run]:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {
            name: pool.submit(run_cli, site, **kwargs)  # type: ignore[arg-type]
            for name, kwargs in runs.items()
        }
        return {name: future.result() for name, future in futures.items()}


def json_of(run: Run, schema: str, exit_code: int) -> dict[str, Any]:
    assert run.returncode == exit_code, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    document = json.loads(run.stdout)
    assert isinstance(document, dict) and set(document) == KEYS[schema]
    assert document["schema"] == f"inductor-device-options/{schema}/v1"
    assert document["version"] == ido.__version__
    assert document["torch_version"] == torch.__version__
    return document


def text_of(run: Run, exit_code: int) -> str:
    assert run.returncode == exit_code, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert ANSI not in run.stdout + run.stderr, "colour on a pipe"
    return run.stdout


def assert_source(source: object, device_type: str, kind: str) -> None:
    assert isinstance(source, dict) and set(source) == SOURCE_KEYS
    assert source["device_type"] == device_type
    assert source["kind"] == source["source"] == kind
    assert isinstance(source["description"], str)


# --- list -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def listing(site: Path) -> dict[str, Run]:
    return run_concurrently(
        site,
        {"json": {"args": ["list", "--json"]}, "text": {"args": ["list"], "console_script": True}},
    )


def test_list_json_names_torch_the_hook_and_each_device_with_its_source(
    listing: dict[str, Run],
) -> None:
    document = json_of(listing["json"], "list", 0)
    hook = document["hook"]
    assert isinstance(hook, dict)
    assert set(hook) == {
        "mode",
        "function_below",
        "chains_to",
        "replaced_by",
        "registrations_apply",
        "device_interface_backport",
        "adopted",
        "description",
    }
    assert hook["adopted"] == []
    assert hook["mode"] == ("native" if NATIVE else "hook")
    assert hook["function_below"] == "torch._inductor.cpp_builder.get_cpp_torch_device_options"
    assert hook["chains_to"] == hook["function_below"]
    assert hook["replaced_by"] is None and hook["registrations_apply"] is True
    assert isinstance(hook["description"], str)
    devices = document["devices"]
    assert isinstance(devices, list)
    by_name = {device["device_type"]: device for device in devices}
    assert list(by_name) == sorted(by_name)
    for name in ["cpu", "cuda", "mps", "xpu"]:
        assert_source(by_name[name], name, "torch")
    for name, value in ENTRY_POINTS.items():
        assert_source(by_name[name], name, "entry point")
        assert f"{name} = {value}" in by_name[name]["description"]
        assert "(distribution clidist 2.0)" in by_name[name]["description"]
    assert_source(by_name["npu"], "npu", "entry point")  # this package's Ascend provider
    assert all(device["kind"] in SOURCES for device in devices)
    assert "my-dev" not in by_name
    assert_source(by_name["cpu"], "cpu", "torch")
    ignored = {entry["name"]: entry for entry in document["invalid_declarations"]}
    assert set(ignored) == set(INVALID_ENTRY_POINTS)
    assert ignored["my-dev"] == {
        "name": "my-dev",
        "value": "thirdparty:options",
        "distribution": "thirdparty 0.1",
        "reason": "'my-dev' is not a device name (a name such as 'npu', without an index); "
        "the entry point is ignored",
    }
    assert ignored["cpu"]["reason"].startswith("torch computes the options of 'cpu' itself")


def test_list_text_is_a_plain_table_on_a_pipe(listing: dict[str, Run]) -> None:
    out = text_of(listing["text"], 0)
    assert f"torch {torch.__version__}" in out
    assert re.search(r"^DEVICE +SOURCE +FROM$", out, re.MULTILINE)
    assert re.search(r"^clidev +entry point +entry point clidev = cli_provider:good", out, re.M)
    assert re.search(r"^cpu +torch +torch\._inductor\.cpp_builder\.", out, re.MULTILINE)
    assert (
        "Ignored declarations:\n  entry point my-dev = thirdparty:options in group "
        "'inductor_device_options' (distribution thirdparty 0.1): 'my-dev' is not a device name"
    ) in out


# --- show -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shows(site: Path) -> dict[str, Run]:
    return run_concurrently(
        site,
        {
            "json": {"args": ["show", "clidev:0", "--aot", "--json"]},
            "provider": {
                "args": ["show", "mydev", "--provider", "cli_provider:good", "--compile-only"]
            },
        },
    )


def test_show_json_gives_the_options_and_the_commands_cppbuilder_renders(
    shows: dict[str, Run], site: Path
) -> None:
    document = json_of(shows["json"], "show", 0)
    assert document["device_type"] == "clidev"
    assert (document["aot_mode"], document["compile_only"], document["error"]) == (
        True,
        False,
        None,
    )
    assert_source(document["source"], "clidev", "entry point")
    options = document["options"]
    assert isinstance(options, dict) and list(options) == list(ido.CppDeviceOptions._fields)
    assert all(isinstance(value, str) for values in options.values() for value in values)
    sdk = site / "clidev_sdk"
    assert "CLIDEV" in options["definitions"]
    torch_include_dirs = ido.default_cpp_device_options("clidev", aot_mode=True).include_dirs
    assert options["include_dirs"] == [
        *map(os.path.realpath, torch_include_dirs),
        str(sdk / "include"),
    ]
    assert options["libraries"] == ["clidev_runtime"]
    commands = document["commands"]
    assert isinstance(commands, dict) and set(commands) == {"compiler", "compile", "link"}
    compile_command, link_command = commands["compile"], commands["link"]
    assert compile_command.startswith(f"{commands['compiler']} ")
    assert compile_command.endswith("inductor_device_options_probe.o")
    assert " -c -o " in compile_command and "-shared" not in compile_command
    for rendered in [compile_command, link_command]:
        assert "-D CLIDEV " in rendered
        assert f"-I{sdk / 'include'} " in rendered
    assert "inductor_device_options_probe.o " in link_command
    assert " -shared " in link_command and " -c " not in link_command
    assert "-lclidev_runtime " in link_command
    assert f"-L{sdk / 'lib'}" in link_command


def test_show_text_with_an_undeclared_provider_and_compile_only(shows: dict[str, Run]) -> None:
    out = text_of(shows["provider"], 0)
    assert "options from registration: cli_provider.good" in out
    assert "(aot_mode=False, compile_only=True)" in out
    assert "definitions       'CLIDEV'" in out
    assert "compile (" in out and "-D CLIDEV" in out
    assert "link (" not in out


# --- doctor ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def doctors(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    # The healthy run gets TORCHINDUCTOR_CACHE_DIR unset and a TMPDIR of its own, which
    # must be empty afterwards: the cache went to the doctor's temporary dir, removed.
    tmpdir = tmp_path_factory.mktemp("doctor-tmp")
    runs = run_concurrently(
        site,
        {
            "good": {
                "args": ["doctor", "clidev", "--json"],
                "env": {"TORCHINDUCTOR_CACHE_DIR": None, "TMPDIR": str(tmpdir)},
            },
            "nolib": {"args": ["doctor", "nolibdev", "--json"]},
            "noinc": {"args": ["doctor", "noincdev"]},
            "raising": {"args": ["doctor", "raisingdev", "--json"]},
            "bad_flags": {"args": ["doctor", "flagdev", "--provider", "cli_provider:bad_flags"]},
            "exit_json": {"args": ["doctor", "exitdev", "--json"]},
            "exit_text": {"args": ["doctor", "exitdev"]},
            "exit_show": {"args": ["show", "exitdev", "--json"]},
            "response_file": {"args": ["doctor", "rspdev", "--json"]},
            "spaced_real_path": {"args": ["doctor", "spacedev", "--json"]},
        },
    )
    runs["good"].stderr += f"\nleft in TMPDIR: {sorted(os.listdir(tmpdir))}"
    yield runs


def checks_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    checks = document["checks"]
    assert isinstance(checks, list)
    assert [check["name"] for check in checks] == CHECK_NAMES
    for check in checks:
        assert set(check) == {"name", "title", "status", "summary", "problems"}
        assert check["status"] in {"pass", "warn", "fail", "skip"}
        assert isinstance(check["title"], str) and isinstance(check["summary"], str)
        for problem in check["problems"]:
            assert set(problem) == {"cause", "fix", "details", "instances"}
            assert isinstance(problem["cause"], str) and isinstance(problem["fix"], str)
            assert all(isinstance(line, str) for line in problem["details"])
            assert all(isinstance(line, str) for line in problem["instances"])
        assert bool(check["problems"]) == (check["status"] in ("fail", "warn"))
    return {check["name"]: check for check in checks}


def test_doctor_passes_a_healthy_device_and_leaves_nothing_behind(
    doctors: dict[str, Run], site: Path
) -> None:
    document = json_of(doctors["good"], "doctor", 0)
    assert (document["ok"], document["exit_code"], document["error"]) == (True, 0, None)
    assert_source(document["source"], "clidev", "entry point")
    checks = checks_of(document)
    for name in NO_BACKEND:  # no backend: no wrapper codegen, no overrides
        assert checks.pop(name)["status"] == "skip"
    assert {check["status"] for check in checks.values()} == {"pass"}
    # torch 2.6's own defaults name include/TH and include/THC, which its wheel lacks.
    from torch.utils.cpp_extension import include_paths

    for torch_missing in (d for d in include_paths() if not os.path.isdir(d)):
        assert torch_missing in checks["include_dirs"]["summary"]
    assert "libclidev_runtime.so" in str(checks["libraries"]["summary"])
    assert "compiled and linked inductor_device_options_probe.so" in str(
        checks["probe_build"]["summary"]
    )
    assert checks["headers"]["summary"].startswith(
        f"{cpp_wrapper_device_header('clidev')} in {site / 'clidev_sdk/include'} ("
    )
    runtime = os.path.realpath(site / "clidev_sdk/lib/libclidev_runtime.so")
    assert checks["probe_load"]["summary"] == (
        f"in a fresh python that imported torch: libclidev_runtime.so ({runtime})"
    )
    assert doctors["good"].stderr.endswith("left in TMPDIR: []")


def test_doctor_names_a_missing_library_and_the_linker_error(
    doctors: dict[str, Run], site: Path
) -> None:
    document = json_of(doctors["nolib"], "doctor", 1)
    assert (document["ok"], document["exit_code"]) == (False, 1)
    checks = checks_of(document)
    assert [name for name, check in checks.items() if check["status"] == "fail"] == [
        "libraries",
        "probe_build",
    ]
    assert checks["probe_load"]["status"] == "skip"
    [problem] = checks["libraries"]["problems"]
    assert problem["cause"].startswith(
        f"libclidev_missing.so not found in {torch.__path__[0]}/lib, "
        f"{site / 'clidev_sdk/lib'} or the system linker path"
    )
    # The report's header names the provider: its fixes say "its provider".
    assert problem["fix"] == "install the device SDK or fix its provider"
    [build_problem] = checks["probe_build"]["problems"]
    assert any("cannot find -lclidev_missing" in line for line in build_problem["details"])
    assert "libraries found" in build_problem["fix"]


def test_doctor_names_a_missing_include_dir_in_plain_text(
    doctors: dict[str, Run], site: Path
) -> None:
    out = text_of(doctors["noinc"], 1)
    lines = out.splitlines()
    include_dirs = len(ido.default_cpp_device_options("noincdev").include_dirs) + 2  # torch's
    assert f"FAIL  include dirs exist: 1 of {include_dirs} include dirs missing" in lines
    assert f"      cause: include dir {site / 'clidev_sdk/no_such_include'} does not exist" in lines
    assert "      fix:   install the device SDK or fix its provider" in lines
    assert out.count("entry point noincdev = cli_provider:missing_include_dir") == 1
    assert [line[:4] for line in lines if line[:4] in {"PASS", "WARN", "FAIL", "SKIP"}] == [
        "PASS",
        "PASS",
        "SKIP",
        "SKIP",
        "PASS",
        "PASS",
        "FAIL",
        "PASS",
        "SKIP",
        *["PASS"] * 6,
    ]
    assert lines[-1] == f"1 of {len(CHECK_NAMES)} checks failed."


def test_a_provider_raising_system_exit_0_is_a_failed_check_not_a_success(
    doctors: dict[str, Run],
) -> None:
    checks = checks_of(json_of(doctors["exit_json"], "doctor", 1))
    [problem] = checks["options"]["problems"]
    assert problem["cause"] == "SystemExit: 0"
    assert [check["status"] for check in checks.values()] == OPTIONS_FAILED
    out = text_of(doctors["exit_text"], 1)
    assert "FAIL  options computed: the provider raised SystemExit" in out
    assert out.splitlines()[-1] == f"1 of {len(CHECK_NAMES)} checks failed."
    show = json_of(doctors["exit_show"], "show", 1)
    assert show["error"]["type"] == "SystemExit"
    assert show["options"] is None


def test_flags_are_well_formed_only_if_g_plus_plus_gets_them_as_meant(
    doctors: dict[str, Run], site: Path
) -> None:
    """A response file, and a library dir whose real path has a space: neither is what the
    provider wrote reaching g++ as one argument. No probe is built with them."""
    rsp = checks_of(json_of(doctors["response_file"], "doctor", 1))
    assert [check["status"] for check in rsp.values()][4:] == ["pass", "fail"] + ["skip"] * 9
    [problem] = rsp["flags"]["problems"]
    assert problem["cause"].startswith(
        f"definitions[1] = '@{site}/clidev_sdk/rsp' reaches g++ as the argument "
        f"'@{site}/clidev_sdk/rsp', which g++ reads as a response file"
    )
    if cpp_builder_keeps_whole("libraries_dirs"):  # torch 2.15 quotes -L: g++ takes it
        spaced = checks_of(json_of(doctors["spaced_real_path"], "doctor", 0))
        assert [spaced[name]["status"] for name in ("flags", "probe_build", "probe_load")] == [
            "pass"
        ] * 3
        return
    spaced = checks_of(json_of(doctors["spaced_real_path"], "doctor", 1))
    assert spaced["flags"]["status"] == "fail"
    assert spaced["probe_build"]["status"] == spaced["probe_load"]["status"] == "skip"
    [problem] = spaced["flags"]["problems"]
    link, real = site / "clidev_sdk/lib-link", site / "clidev_sdk/lib dir"
    assert (
        f"libraries_dirs[2] = {str(link)!r} (real path {str(real)!r}) reaches g++ as"
        in (problem["cause"])
    )


IGNORED_NOTE = (
    "note: ignored entry point my-dev = thirdparty:options in group "
    "'inductor_device_options' (distribution thirdparty 0.1): 'my-dev' is not a device name"
)


def test_show_and_doctor_note_ignored_declarations_on_stderr_or_in_the_json(
    doctors: dict[str, Run],
) -> None:
    assert IGNORED_NOTE in doctors["exit_text"].stderr
    assert "Traceback" not in doctors["exit_text"].stderr
    show = doctors["exit_show"]
    assert show.stderr == ""  # --json: the document alone
    assert any(IGNORED_NOTE in note for note in json.loads(show.stdout)["notes"])


def test_doctor_reports_a_provider_error_with_its_fix(doctors: dict[str, Run]) -> None:
    checks = checks_of(json_of(doctors["raising"], "doctor", 1))
    [problem] = checks["options"]["problems"]
    assert problem["cause"] == "RuntimeError: the clidev SDK is not set up"
    assert problem["fix"] == "run clidev-setup"
    assert [check["status"] for check in checks.values()] == OPTIONS_FAILED


def test_doctor_names_each_malformed_flag_of_a_given_provider(doctors: dict[str, Run]) -> None:
    out = text_of(doctors["bad_flags"], 1)
    assert "options from registration: cli_provider.bad_flags" in out
    assert "FAIL  flags well formed: 1 bad value" in out
    assert "cause: cflags[0] = '-O2' reaches g++ as ['--O2'], which g++ rejects: " in out
    assert "(Inductor adds '-' itself: write 'O2'?)" in out
    assert "      fix:   fix the provider" in out.splitlines()
    assert out.count("cli_provider.bad_flags") == 1  # in the header only
    assert "SKIP  probe compiles and links" in out
    assert "SKIP  probe loads" in out


# --- a --provider that cannot be loaded ------------------------------------------------------

LOAD_FAILURES = [
    # (--provider, words of the message, words of the fix)
    (
        "raises_at_import:options",
        "importing module 'raises_at_import' raised ZeroDivisionError: integer division or "
        "modulo by zero, at {site}/raises_at_import.py:3",
        "fix module 'raises_at_import' (or what it imports) so that it imports",
    ),
    (
        "exits_at_import:options",
        "importing module 'exits_at_import' raised SystemExit: 0, at {site}/exits_at_import.py:3",
        "fix module 'exits_at_import'",
    ),
    (
        "imports_a_missing_module:options",
        "raised ModuleNotFoundError: No module named 'acme_sdk_bindings', at "
        "{site}/imports_a_missing_module.py:2",
        "fix module 'imports_a_missing_module'",
    ),
    (
        "has_a_syntax_error:options",
        ", at {site}/has_a_syntax_error.py:1",
        "fix module 'has_a_syntax_error'",
    ),
    (
        "no_such_module_here:f",
        "importing module 'no_such_module_here' raised ModuleNotFoundError: No module named "
        "'no_such_module_here'\n",
        "add that directory to PYTHONPATH",
    ),
    (
        "defines_no_provider:options",
        "getting 'options' of module 'defines_no_provider' ({site}/defines_no_provider.py) "
        "raised AttributeError: module 'defines_no_provider' has no attribute 'options'",
        "name a callable that module defines",
    ),
    ("os:sep", "os:sep is a str, not a callable", "name the provider function"),
]


@pytest.mark.parametrize(("spec", "message", "fix"), LOAD_FAILURES)
def test_show_reports_a_provider_that_cannot_be_loaded_as_a_failure(
    spec: str,
    message: str,
    fix: str,
    site: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    clean_registry: None,
) -> None:
    monkeypatch.syspath_prepend(str(site))
    assert cli.main(["show", "loaddev", "--provider", spec]) == cli.EXIT_FAILED
    captured = capsys.readouterr()
    assert captured.out == ""
    error = "inductor-device-options show: error: "
    assert error in captured.err  # after the notes of the site's ignored declarations
    message_shown = captured.err[captured.err.index(error) :]
    assert message_shown.startswith(
        f"{error}ProviderLoadError: cannot load the C++ options provider {spec} for device "
        "'loaddev' (--provider): "
    )
    assert message.format(site=site) in message_shown + "\n"
    assert fix in message_shown.partition("\nFix: ")[2]
    assert "usage:" not in captured.err and "Traceback" not in captured.err


@pytest.fixture(scope="module")
def load_failures(site: Path) -> dict[str, Run]:
    return run_concurrently(
        site,
        {
            "doctor_json": {
                "args": ["doctor", "loaddev", "--provider", "exits_at_import:options", "--json"]
            },
            "doctor_text": {
                "args": ["doctor", "loaddev", "--provider", "no_such_module_here:options"]
            },
            "show_json": {
                "args": ["show", "loaddev", "--provider", "raises_at_import:options", "--json"]
            },
        },
    )


def test_doctor_fails_its_first_check_when_the_provider_cannot_be_loaded(
    load_failures: dict[str, Run], site: Path
) -> None:
    run = load_failures["doctor_json"]
    assert run.stderr == ""  # --json: nothing but the document, on stdout
    document = json_of(run, "doctor", 1)
    assert (document["ok"], document["exit_code"], document["error"]) == (False, 1, None)
    assert document["source"] == {
        "device_type": "loaddev",
        "kind": "registration",
        "source": "registration",
        "description": "exits_at_import:options",
        "guaranteed": True,
    }
    checks = document["checks"]
    assert [check["name"] for check in checks] == ["provider", *CHECK_NAMES]
    assert [check["status"] for check in checks] == ["fail"] + ["skip"] * len(CHECK_NAMES)
    assert checks[0]["summary"] == "exits_at_import:options could not be loaded: SystemExit"
    [problem] = checks[0]["problems"]
    assert f"raised SystemExit: 0, at {site}/exits_at_import.py:3" in problem["cause"]
    assert any("setting up" in note for note in document["notes"])  # what the module printed
    out = text_of(load_failures["doctor_text"], 1)
    assert "FAIL  provider loads: no_such_module_here:options could not be loaded: " in out
    assert "ModuleNotFoundError" in out and "PYTHONPATH" in out
    assert out.splitlines()[-1] == f"1 of {len(CHECK_NAMES) + 1} checks failed."


def test_show_json_reports_a_provider_that_cannot_be_loaded_in_the_document_alone(
    load_failures: dict[str, Run], site: Path
) -> None:
    run = load_failures["show_json"]
    assert run.stderr == ""
    document = json_of(run, "show", 1)
    assert (document["options"], document["commands"]) == (None, None)
    assert document["error"]["type"] == "ProviderLoadError"
    assert document["error"]["provider"] == "raises_at_import:options"
    assert f"at {site}/raises_at_import.py:3" in document["error"]["message"]


# --- paths that are not UTF-8 -------------------------------------------------------------


@pytest.fixture(scope="module")
def not_utf8(site: Path) -> dict[str, Run]:
    provider = ["--provider", "cli_provider:not_utf8"]
    return run_concurrently(
        site,
        {
            "list": {"args": ["list"]},
            "list_json": {"args": ["list", "--json"]},
            "show": {"args": ["show", "utfdev", *provider]},
            "show_json": {"args": ["show", "utfdev", *provider, "--json"]},
            "doctor": {"args": ["doctor", "utfdev", *provider]},
            "doctor_json": {"args": ["doctor", "utfdev", *provider, "--json"]},
        },
    )


def test_paths_that_are_not_utf8_are_shown_escaped_and_nothing_fails(
    not_utf8: dict[str, Run], site: Path
) -> None:
    """An include dir named b"inc\\xff": the escape is the json module's \\udcff, in text too."""
    directory = os.path.join(os.fsencode(site / "clidev_sdk"), b"inc\xff")
    escaped = os.fsdecode(directory).encode("ascii", "backslashreplace").decode()
    assert escaped.endswith("inc\\udcff")
    text_of(not_utf8["list"], 0)
    json_of(not_utf8["list_json"], "list", 0)
    show = json_of(not_utf8["show_json"], "show", 0)
    assert os.fsencode(show["options"]["include_dirs"][-1]) == directory
    assert escaped in text_of(not_utf8["show"], 0)
    doctor = json_of(not_utf8["doctor_json"], "doctor", 0)
    headers = checks_of(doctor)["headers"]
    assert headers["status"] == "pass"
    assert os.fsencode(headers["summary"]).startswith(
        os.fsencode(f"{cpp_wrapper_device_header('utfdev')} in ") + directory + b" ("
    )
    out = text_of(not_utf8["doctor"], 0)
    assert f"{cpp_wrapper_device_header('utfdev')} in {escaped} (" in out
    # The device's builds: no backend in the process registered a codegen for it.
    skipped = len(NO_BACKEND)
    assert out.splitlines()[-1] == f"All {len(CHECK_NAMES) - skipped} checks passed; 3 skipped."


# --- doctor --all -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def every_device(site: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """A process whose declared devices are alldev (healthy) and otherdev (a library
    missing), plus two given with --provider: flagdev (healthy) and brokendev (its module
    raises at import). The SDK and provider modules are the clidist site's."""
    all_site = tmp_path_factory.mktemp("all") / "site"
    write_distribution(
        all_site,
        "alldist",
        "1.0",
        {"alldev": "cli_provider:good", "otherdev": "cli_provider:missing_library"},
    )
    for name in ("cli_provider.py", "clidev_sdk", "raises_at_import.py"):
        (all_site / name).symlink_to(site / name)
    providers = [
        *("--provider", "flagdev=cli_provider:good"),
        *("--provider", "brokendev=raises_at_import:options"),
    ]
    return run_concurrently(
        all_site,
        {
            "text": {"args": ["doctor", "--all", *providers]},
            "json": {"args": ["doctor", "--all", *providers, "--json"]},
        },
    )


def test_doctor_all_checks_every_device_one_line_each(every_device: dict[str, Run]) -> None:
    out = text_of(every_device["text"], 1)
    lines = out.splitlines()
    checks = len(CHECK_NAMES)
    for line in [
        f"PASS  alldev     entry point: all {checks - 3} checks passed; 3 skipped",
        f"FAIL  brokendev  registration: 1 of {checks + 1} checks failed: provider loads",
        f"PASS  flagdev    registration: all {checks - 3} checks passed; 3 skipped",
        "SKIP  npu        entry point: skipped: torch_npu is not installed (the bundled Ascend "
        "provider's device); `inductor-device-options doctor npu` checks it anyway",
        f"FAIL  otherdev   entry point: 2 of {checks} checks failed: libraries found, probe "
        "compiles and links",
    ]:
        assert line in lines, out
    assert lines[-1] == (
        "2 of 5 devices failed: brokendev, otherdev. `inductor-device-options doctor DEVICE` "
        "shows why."
    )
    assert not any(line.startswith(("PASS  cpu", "PASS  cuda")) for line in lines)


def test_doctor_all_json_is_one_document(every_device: dict[str, Run]) -> None:
    run = every_device["json"]
    assert run.stderr == ""
    document = json_of(run, "doctor-all", 1)
    assert (document["aot_mode"], document["ok"], document["exit_code"]) == (False, False, 1)
    devices = {device["device_type"]: device for device in document["devices"]}
    assert list(devices) == ["alldev", "brokendev", "flagdev", "npu", "otherdev"]
    assert {name: device["status"] for name, device in devices.items()} == {
        "alldev": "pass",
        "brokendev": "fail",
        "flagdev": "pass",
        "npu": "skip",
        "otherdev": "fail",
    }
    for device in devices.values():
        assert set(device) == {"device_type", "source", "status", "skipped", "checks"}
        assert_source(device["source"], device["device_type"], device["source"]["kind"])
    assert devices["npu"]["checks"] == [] and "torch_npu" in devices["npu"]["skipped"]
    assert [check["name"] for check in devices["alldev"]["checks"]] == CHECK_NAMES
    assert devices["brokendev"]["checks"][0]["name"] == "provider"


# --- unknown device, usage errors, colour ---------------------------------------------------


@pytest.fixture(scope="module")
def unknown(site: Path) -> dict[str, Run]:
    return run_concurrently(
        site,
        {
            "doctor": {"args": ["doctor", "nosuchdev"]},
            "show": {"args": ["show", "nosuchdev", "--json"]},
        },
    )


def test_an_unknown_device_exits_3_and_says_how_to_declare_one(unknown: dict[str, Run]) -> None:
    assert text_of(unknown["doctor"], cli.EXIT_UNKNOWN_DEVICE) == ""
    message = unknown["doctor"].stderr
    assert "error: unknown device 'nosuchdev'" in message
    assert "[project.entry-points.inductor_device_options]" in message
    assert 'nosuchdev = "your_backend.module:cpp_device_options"' in message
    assert "--provider module:callable" in message
    document = json_of(unknown["show"], "show", cli.EXIT_UNKNOWN_DEVICE)
    assert (document["options"], document["commands"]) == (None, None)
    error = document["error"]
    assert isinstance(error, dict) and set(error) == {"type", "message", "provider"}
    assert error["type"] == "UnknownDeviceError"
    assert_source(document["source"], "nosuchdev", "torch")


USAGE_ERRORS = [
    # (arguments, the command, words of the message)
    (["show", "not a device"], "show", "argument DEVICE: device_type 'not a device' is not"),
    (["doctor", "dev", "--provider", "no_colon"], "doctor", "'no_colon' is not of the form"),
    (["show", "dev", "--provider", "=m:f"], "show", "'=m:f' names no device before '='"),
    (["doctor", "cpu", "--provider", "os:getcwd"], "doctor", "cannot register C++ device options"),
    (["doctor"], "doctor", "the following arguments are required: DEVICE (or --all)"),
    (["doctor", "dev", "--all"], "doctor", "give DEVICE or --all, not both"),
    (["doctor", "--all", "--provider", "os:getcwd"], "doctor", "with --all, give DEVICE=os:getcwd"),
    (
        ["doctor", "dev", "--provider", "m:f", "--provider", "n:g"],
        "doctor",
        "argument --provider: give it once for DEVICE (or use --all)",
    ),
    (["show", "dev", "--provider", "other=m:f"], "show", "other=m:f is for device 'other'"),
    (["frobnicate"], None, "invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(("args", "command", "message"), USAGE_ERRORS)
def test_usage_errors_exit_2(
    args: list[str],
    command: str | None,
    message: str,
    as_json: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    clean_registry: None,
) -> None:
    """With --json, a JSON error document on stdout too."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(SystemExit) as exited:
        cli.main([*args, "--json"] if as_json else args)
    assert exited.value.code == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert message in captured.err
    if not as_json:
        assert captured.out == ""
        return
    document = json.loads(captured.out)
    assert set(document) == COMMON_KEYS | {"command", "exit_code", "error"}
    assert document["schema"] == "inductor-device-options/error/v1"
    assert (document["command"], document["exit_code"]) == (command, cli.EXIT_USAGE)
    assert document["error"]["type"] == "UsageError"
    assert message in document["error"]["message"]


def test_a_reader_that_goes_away_ends_the_command_quietly(site: Path) -> None:
    """`list | head -1`, and a reader that closes the pipe before anything is written."""
    env = {**os.environ, "PYTHONPATH": pythonpath_with(site)}
    command = [sys.executable, "-m", "inductor_device_options"]
    process = subprocess.Popen(
        [*command, "list"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # long before the child has imported torch and printed
    stderr = process.stderr.read()
    assert process.wait(timeout=600) == cli.EXIT_FAILED
    assert stderr == ""
    head = subprocess.run(
        ["sh", "-c", '"$@" | head -1', "sh", *command, "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert head.stdout.startswith("inductor-device-options ") and head.stdout.count("\n") == 1
    assert head.stderr == ""


def test_a_closed_stdout_runs_the_command_quietly(site: Path) -> None:
    closed = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", sys.executable, "-m", "inductor_device_options", "list"],
        env={**os.environ, "PYTHONPATH": pythonpath_with(site)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert (closed.returncode, closed.stderr) == (cli.EXIT_OK, "")


# The console script's exit: a module-level object that only the interpreter's teardown
# frees, and an atexit handler, in the process that runs a command.
_EXITING = """
import atexit, sys
class FreedAtTeardown:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
kept = FreedAtTeardown()
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
sys.argv = ["inductor-device-options", *sys.argv[1:]]
from inductor_device_options._cli import run_and_exit
run_and_exit()
"""


@pytest.mark.parametrize(
    ("args", "exit_code", "printed"),
    [
        (["list"], cli.EXIT_OK, "inductor-device-options 0"),
        (["show", "nosuchdev"], cli.EXIT_UNKNOWN_DEVICE, "error: unknown device 'nosuchdev'"),
    ],
)
def test_the_console_script_runs_atexit_handlers_and_skips_the_teardown(
    site: Path, args: list[str], exit_code: int, printed: str
) -> None:
    """torch's teardown at exit takes about a second: the console script skips it, and
    keeps what an exit must do: the atexit handlers, the output flushed, the exit code."""
    ran = subprocess.run(
        [sys.executable, "-c", _EXITING, *args],
        env={**os.environ, "PYTHONPATH": pythonpath_with(site)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == exit_code
    assert "atexit ran" in ran.stderr
    assert "teardown ran" not in ran.stderr
    assert printed in ran.stdout + ran.stderr  # flushed, though stdout is a pipe


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "no_color", "coloured"),
    [(_Terminal(), None, True), (_Terminal(), "1", False), (io.StringIO(), None, False)],
)
def test_colour_only_on_a_terminal_without_no_color(
    stream: io.StringIO, no_color: str | None, coloured: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TERM", raising=False)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert (ANSI in cli.Style.for_stream(stream).fail("FAIL")) is coloured


# --- a backend whose builds ask for another device type ----------------------------------

OPENREG_SHAPED_BACKEND = """\
import inductor_device_options as ido
from torch._inductor.codegen import common
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen


class OpenregShapedCodegen(CppWrapperCpu):  # device left as CppWrapperCpu's "cpu"
    @staticmethod
    def create(*args):
        return OpenregShapedCodegen()


common.register_backend_for_device(
    "cliasked", CppScheduling, PythonWrapperCodegen, OpenregShapedCodegen
)


def options(device_type, aot_mode, compile_only):
    return ido.default_cpp_device_options(device_type, aot_mode, compile_only)
"""


def test_show_and_doctor_say_when_the_builds_ask_for_another_device(tmp_path: Path) -> None:
    (tmp_path / "cliasked_backend.py").write_text(OPENREG_SHAPED_BACKEND)
    provider = ["--provider", "cliasked_backend:options"]
    runs = run_concurrently(
        tmp_path,
        {
            "show": {"args": ["show", "cliasked", *provider, "--json"]},
            "show_text": {"args": ["show", "cliasked", *provider]},
            "doctor": {"args": ["doctor", "cliasked", *provider]},
        },
    )
    asked = json_of(runs["show"], "show", 0)["asked"]
    assert (asked["asked"], asked["codegen"]) == ("cpu", "cliasked_backend.OpenregShapedCodegen")
    assert (
        "builds: cpp_wrapper builds ask for 'cpu' (cliasked_backend.OpenregShapedCodegen "
        "reports 'cpu' (CppWrapperCpu's default: it never sets self.device)); these options "
        "never reach them"
    ) in text_of(runs["show_text"], 0).splitlines()
    out = text_of(runs["doctor"], 1)
    assert "FAIL  builds ask for the device: cpp_wrapper builds ask for 'cpu', not 'cliasked'" in (
        out.splitlines()
    )
    assert "set self.device = 'cliasked' before super().__init__()" in out


def test_a_usage_error_with_json_prints_argparse_s_usage_to_stderr_too(tmp_path: Path) -> None:
    """What docs/reference/cli.md says of --json: a usage error is the one thing on stderr."""
    run = run_cli(tmp_path, ["doctor", "--json", "--no-such-option"])
    assert run.returncode == cli.EXIT_USAGE == 2
    assert json.loads(run.stdout)["error"] == {
        "type": "UsageError",
        "message": "unrecognized arguments: --no-such-option",
        "provider": None,
    }
    assert run.stderr.startswith(f"usage: {cli.PROG} ")
    assert "error: unrecognized arguments: --no-such-option" in run.stderr


def test_doctor_all_does_not_call_a_skipped_device_passed(tmp_path: Path) -> None:
    """Here the bundled npu provider is the only device, skipped (torch_npu is missing)."""
    out = text_of(run_cli(tmp_path, ["doctor", "--all"]), 0)
    assert out.splitlines()[-1] == "0 of 1 devices passed; skipped: npu."
