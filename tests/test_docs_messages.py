"""docs/guides/troubleshooting.md is indexed by doctor's messages, each quoted in a bold code
span (**`...`**): every quote matches a message a real run prints, so that neither the page
nor the code can change alone.

A quote is read as a pattern (``support.quote_pattern``): ``...`` and the placeholder words
of ``support.PLACEHOLDERS`` (CODEGEN, DEVICE, DIR, DIRS, F, FIELD, HEADER, LIBRARY, M,
METHOD, N, NAME, PROVIDER, TYPE, VALUE, VERSION, X) match any text, the rest is literal,
whitespace normalised; it may be part of a message.

The runs are the command line in fresh processes, run concurrently, over scenarios written to
disk: provider modules broken each in one way, test_diagnose_doctor's SDK, distributions declaring
devices. Two ``doctor --all --json`` runs check most devices (two, because each renames
PrivateUse1 for a device whose ``_inductor_backend_init`` goes wrong in its own way); text
runs give what only text says (``FAIL  ...`` lines, notes and errors on stderr). Every line
they print and every string of their JSON is a produced message.

What only a real compile (``doctor --compile``), an injected bug or a package load produces is
checked where tests/test_diagnose_compile.py, tests/test_diagnose_doctor.py and
tests/test_hook_pt2_stamp.py produce it, with
``support.assert_quoted``: COVERED_ELSEWHERE lists those quotes, and a test here reads those
modules to see that each is in such a call.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator

import pytest
from support import (
    NATIVE,
    TESTS_DIR,
    TROUBLESHOOTING,
    closest,
    creating_needs_op_overrides,
    normalised,
    pythonpath_with,
    quote_matches,
    quotes_of,
    torch_precompiles_cpp_headers,
    write_distribution,
)
from test_cli import INVALID_ENTRY_POINTS, Run, run_concurrently
from test_diagnose_doctor import write_sdk
from torch._inductor.codegen.common import DeviceOpOverrides

PROVIDERS = '''\
"""Providers of the SDK next to this module, each but `complete` wrong in one way."""
import os
import inductor_device_options as ido

SDK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk")
INCLUDE, INDUCTOR_INCLUDE, LIB = (
    os.path.join(SDK, directory) for directory in ("include", "inductor-include", "lib"))

def _options(device_type, aot_mode, compile_only, include_dirs, libraries, runpath=True):
    options = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    options.definitions.append("USE_ACME")
    options.include_dirs.extend(include_dirs)
    options.libraries_dirs.append(LIB)
    options.libraries.extend(libraries)
    options.ldflags.extend([ido.runpath(LIB)] if runpath else [])
    return options

def complete(device_type, aot_mode, compile_only):
    return _options(device_type, aot_mode, compile_only, [INCLUDE, INDUCTOR_INCLUDE], ["acme_rt"])

def off_the_loader_path(device_type, aot_mode, compile_only):  # links, does not load
    dirs = [INCLUDE, INDUCTOR_INCLUDE]
    return _options(device_type, aot_mode, compile_only, dirs, ["acme_rt"], runpath=False)

def incomplete(device_type, aot_mode, compile_only):  # the doc's broken SDK
    dirs = [INCLUDE, os.path.join(SDK, "not-installed")]
    return _options(device_type, aot_mode, compile_only, dirs, ["acme_rt", "acme_driver"])

def shadowing(device_type, aot_mode, compile_only):  # a stale copy of acme/acme.h first
    dirs = [os.path.join(SDK, "stale-include"), INCLUDE, INDUCTOR_INCLUDE]
    return _options(device_type, aot_mode, compile_only, dirs, ["acme_rt"])

def two_bad_flags(device_type, aot_mode, compile_only):
    options = complete(device_type, aot_mode, compile_only)
    options.cflags.extend(["-O2", "-Wall"])
    return options

def a_str_for_a_list(device_type, aot_mode, compile_only):
    return (["USE_ACME"], INCLUDE, [], [], [], [], [])

def six_lists(device_type, aot_mode, compile_only):
    return ([], [], [], [], [], [])

def recursing(device_type, aot_mode, compile_only):
    return ido.get_cpp_device_options(device_type, aot_mode, compile_only)

def raising(device_type, aot_mode, compile_only):
    raise RuntimeError("the acme runtime is not set up")
'''

# Given with --provider, so imported before doctor checks anything: Inductor backends, each
# meeting Inductor in its own wrong way.
BACKENDS = """\
from torch._inductor.codegen import common
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from docs_providers import complete as options

def backend(device, codegen, overrides=None):
    common.register_backend_for_device(device, CppScheduling, PythonWrapperCodegen, codegen)
    if overrides is not None:
        common.register_device_op_overrides(device, overrides)

def codegen(device=None, **methods):  # device None: left CppWrapperCpu's "cpu"
    def __init__(self):
        if device is not None:
            self.device = device
        CppWrapperCpu.__init__(self)
    cls = type(f"{device or 'Cpu'}Codegen", (CppWrapperCpu,), {"__init__": __init__})
    cls.create = staticmethod(lambda *args: cls())
    for name, method in methods.items():
        setattr(cls, name, staticmethod(method))
    return cls

backend("askscpudev", codegen())
backend("nooverridesdev", codegen("nooverridesdev"))  # and no DeviceOpOverrides
# Names the SDK's header only: torch's precompile step includes its own.
own = lambda device: "#include <acme/acme.h>"
backend("precompileddev", codegen("precompileddev", get_device_include_path_jit=own,
        get_device_include_path=own), common.DeviceOpOverrides())
# Defines an include method this torch never calls (its other releases do).
uncalled = ("get_device_include_path" if hasattr(CppWrapperCpu, "get_device_include_path_jit")
            else "get_device_include_path_jit")
backend("uncalleddev", codegen("uncalleddev", **{uncalled: own}), common.DeviceOpOverrides())

class GpuWrapperOverrides(common.DeviceOpOverrides):
    def uses_gpu_cpp_wrapper(self):
        return True

common.register_device_op_overrides("gpuwrapperdev", GpuWrapperOverrides())

# Replaces GraphLowering.codegen_with_cpp_wrapper, as torch_npu does: before 2.15 the package's
# backport of uses_gpu_cpp_wrapper() is left out.
from torch._inductor import graph

def codegen_with_cpp_wrapper(self):
    return graph.GraphLowering.codegen(self)

graph.GraphLowering.codegen_with_cpp_wrapper = codegen_with_cpp_wrapper

# An interface registered after torch._inductor.utils built GPU_TYPES, as backends register.
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

class LateGpuInterface(DeviceInterface):
    @staticmethod
    def is_gpu():
        return True

register_interface_for_device("lategpudev", LateGpuInterface)
backend("lategpudev", codegen("lategpudev"), common.DeviceOpOverrides())
"""

# The PrivateUse1 device {device}, whose device module's _inductor_backend_init {does}.
BACKEND_INIT = """\
import types
import torch
from docs_providers import complete as options

torch.utils.rename_privateuse1_backend("{device}")
module = types.ModuleType("torch.{device}")
torch._register_device_module("{device}", module)

def _inductor_backend_init():
    {does}

module._inductor_backend_init = _inductor_backend_init
"""

# A wrapper assigned to Inductor's function, which the hook adopts: it drops the device's
# definitions from what it gets.
DROPPING_WRAPPER = """\
from torch._inductor import cpp_builder
from docs_providers import complete as options

_below = cpp_builder.get_cpp_torch_device_options

def dropping(device_type, aot_mode=False, compile_only=False):
    definitions, *rest = _below(device_type, aot_mode, compile_only)
    if device_type == "droppeddev":
        definitions = [d for d in definitions if d != "USE_ACME"]
    return (definitions, *rest)

cpp_builder.get_cpp_torch_device_options = dropping
"""

# A function calling through to the hook, written to cpp_builder's __dict__: the hook cannot
# adopt it; nothing is missing, but Inductor no longer asks the package.
PAST_THE_HOOK = """\
from torch._inductor import cpp_builder
from docs_providers import shadowing as options

_hook = cpp_builder.get_cpp_torch_device_options

def written_past_the_hook(*args, **kwargs):
    return _hook(*args, **kwargs)

cpp_builder.__dict__["get_cpp_torch_device_options"] = written_past_the_hook
"""

# Devices declared by entry points, by the site of the `doctor --all` run that checks them.
DECLARED = {
    "a": {
        "incompletedev": "docs_providers:incomplete",
        "rejecteddev": "docs_providers:two_bad_flags",
        "strlistdev": "docs_providers:a_str_for_a_list",
        "twicedev": "docs_providers:raising",
        "unloadabledev": "docs_providers:off_the_loader_path",
    },
    "b": {
        "sixlistsdev": "docs_providers:six_lists",
        "recursingdev": "docs_providers:recursing",
        "brokenimportdev": "docs_raises_at_import:options",
    },
}
# --provider registrations of each `doctor --all` run. The device whose backend init raises
# has a run without backends: Inductor calls the init again whenever it creates a codegen.
REGISTERED = {
    "a": {
        "initraisesdev": "docs_init_raises:options",
        "droppeddev": "docs_dropping_wrapper:options",
    },
    "b": {
        "initsilentdev": "docs_init_silent:options",
        "askscpudev": "docs_backends:options",
        "nooverridesdev": "docs_backends:options",
        "precompileddev": "docs_backends:options",
        "uncalleddev": "docs_backends:options",
        "gpuwrapperdev": "docs_backends:options",
        "lategpudev": "docs_backends:options",
    },
}
# A backend that assigns its own CacheBase.get_system, keyed on its SDK release only, when its
# provider is first called (after doctor armed the package: adopted, as the next compile
# adopts it), and whose AOTInductor options name no SDK: the .pt2 stamp lacks the identity.
OWN_GET_SYSTEM = """\
from torch._inductor.codecache import CacheBase
import inductor_device_options as ido
from docs_providers import complete

def acme_get_system():
    return {"acme": "1.0", "hash": "acme-1.0"}

def options(device_type, aot_mode, compile_only):
    CacheBase.get_system = staticmethod(acme_get_system)
    if aot_mode:
        return ido.default_cpp_device_options(device_type, aot_mode, compile_only)
    return complete(device_type, aot_mode, compile_only)
"""

MODULES = {
    "docs_providers": PROVIDERS,
    "docs_backends": BACKENDS,
    "docs_init_raises": BACKEND_INIT.format(
        device="initraisesdev", does='raise RuntimeError("the device runtime is not set up")'
    ),
    "docs_init_silent": BACKEND_INIT.format(device="initsilentdev", does="pass"),
    "docs_dropping_wrapper": DROPPING_WRAPPER,
    "docs_past_hook": PAST_THE_HOOK,
    "docs_raises_at_import": "LIMIT = 1 // 0\n",
    "docs_own_get_system": OWN_GET_SYSTEM,
}
# Every device whose options name the SDK's dirs: the SDK has Inductor's headers for each.
SDK_DEVICES = (
    *("initraisesdev", "initsilentdev", "droppeddev", "askscpudev", "nooverridesdev"),
    *("precompileddev", "uncalleddev", "gpuwrapperdev", "unloadabledev", "pastdev"),
    *("ownkeysdev", "lategpudev"),
)

# Quotes of what only a real compile or an injected bug produces, by the test module whose
# runs produce them and call assert_quoted.
COVERED_ELSEWHERE = {
    "test_hook_pt2_soname.py": (
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which lies here as ..., in a "
        "library dir the options of 'DEVICE' name, but the loader does not take it: LIBRARY has "
        "no SONAME, so the model records it by ...",
        "Fix: give the library a SONAME (link it with -Wl,-soname,NAME, <N> its ABI version) "
        "and build the package again, or put DIR on LD_LIBRARY_PATH before the process starts, "
        "or keep the SDK at the path the package was built at",
    ),
    "test_diagnose_library_sonames.py": (
        "... without a SONAME: a .pt2 loads where the SDK lies at another path only through "
        "inductor-device-options",
        "LIBRARY has no SONAME: an AOTInductor model linked against it records it by its file "
        "name, NAME, which the loader finds only on the model's runpath (the library dirs of "
        "the machine that built it) or LD_LIBRARY_PATH",
        "give the library a SONAME: link it with -Wl,-soname,NAME (<N> its ABI version)",
    ),
    "test_diagnose_compile.py": (
        "a real compile on the device",
        "compiling x * 2 + 1 on DEVICE (cpp_wrapper) in a fresh python raised ...",
        "the compile asked for the device",
        "no build asked for 'DEVICE'",
        "while compiling on DEVICE Inductor asked get_cpp_torch_device_options for 'cpu' N "
        "times, never for 'DEVICE' ...",
        "the options reach g++",
        "N of M never reached g++",
        "Inductor got these options for 'DEVICE', but no compiler command of the compile (...) "
        "has them: ...",
        "the AOTInductor package loads and runs",
        "... Unsupported device key found: DEVICE",
        "a model with weights and extern kernels",
        "a Linear with and without bias and a bmm raised TYPE",
        "... raised TYPE: ... (F not declared)",
        "doctor did so, and the model then loads and runs",
        "TYPE with no message, raised in F (...), which NAME inherits, called from ...",
        "your model compiles and runs",
        "your model M:F raised TYPE",
        "N builder questions for 'cpu' (aot_mode=False): ..., answered with DEVICE's options",
    ),
    "test_diagnose_doctor.py": (
        "inductor-device-options failed (internal error TYPE)",
        # Backends registered in-process in each of these ways.
        "cpp_wrapper builds ask for 'cpu', answered with DEVICE's options",
        "... the builds work, and every 'cpu' build in the process gets DEVICE's flags too, and "
        "the cache keys they make ...",
        "NAME: METHOD() raised",
        "NAME.METHOD() raised TYPE, inherited from torch's DeviceOpOverrides, which does not "
        "implement it: torch VERSION calls it in every ... build of 'DEVICE' (...)",
        "N of M not declared: F",
        "Inductor's generated code for 'DEVICE' calls F for ..., and nothing it includes "
        "declares it",
        "a model with parameters fails to load with its weights in the .so (torch VERSION)",
    ),
    "test_hook_pt2_stamp.py": (
        "the AOTInductor package was built for device 'DEVICE' against SDK identity ..., but "
        "its SDK identity here is ...; its code would run against another SDK than it was "
        "built for",
        "no C++ options provider serves 'DEVICE' in this process (import or register its "
        "backend before loading), so its SDK here is unknown",
        "the options of 'DEVICE' here name no SDK of the device's own",
        "Fix: rebuild the package on this machine's SDK (or install the SDK it was built "
        "against); to load it anyway, knowingly, set INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1",
        "loaded anyway (INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1)",
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which does not load",
    ),
    "e2e/test_pt2_moves.py": (
        "the AOTInductor model of device 'DEVICE' needs LIBRARY, which the loader does not find "
        "here",
        "Fix: install the device's SDK on this machine and have its provider name the dir that "
        "holds LIBRARY in libraries_dirs, or put that dir on LD_LIBRARY_PATH",
    ),
    "test_diagnose_cmake.py": (
        "cmake failed",
        "cmake VERSION (...) could not build the C++ project AOTInductor writes for the device",
        "the project lacks N parts",
        "the CMakeLists.txt AOTInductor writes for 'DEVICE' (aot_inductor.package_cpp_only) "
        "lacks ...",
        "torch VERSION writes no CMake project",
    ),
}
ELSEWHERE = {quote for quotes in COVERED_ELSEWHERE.values() for quote in quotes}
# Quotes of what the running torch cannot produce: why (None: it can).
HOOKS = "with torch's native registry the package does not hook" if NATIVE else None
NOT_ON_THIS_TORCH = {
    "N of the provider's options do not reach Inductor": HOOKS,
    "missing: ...; a function adopted after the hook dropped them from what it got: ...": HOOKS,
    "F was written to torch._inductor.cpp_builder.__dict__ directly": HOOKS,
    "torch._inductor.cpp_builder.get_cpp_torch_device_options was written past the hook": HOOKS,
    "torch VERSION never asks uses_gpu_cpp_wrapper()": (
        "this torch asks it" if hasattr(DeviceOpOverrides, "uses_gpu_cpp_wrapper") else None
    ),  # before 2.15: the backend replaced the method the package's backport extends
    "torch precompiles it for 'DEVICE' (codecache._get_cpp_wrapper_header)": (
        None if torch_precompiles_cpp_headers() else "this torch precompiles no header"
    ),
    "creating CODEGEN raised TYPE": (
        None if creating_needs_op_overrides() else "this torch creates any codegen"
    ),
}
#: The page quotes at least this many messages: a parser that finds none cannot pass.
LEAST_QUOTES = 48
# "**`...`** (exit code N": the exit code the page gives for the run that prints a quote.
EXIT_CODE = re.compile(r"\*\*(`+)(.+?)\1\*\*\s*\(exit\s+code\s+(\d)", re.DOTALL)


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, list[str]]]:
    """Each run's exit code and messages: each line it printed, each string of its JSON."""
    root = tmp_path_factory.mktemp("docs-messages")
    shared = root / "shared"
    shared.mkdir()
    for name, text in MODULES.items():
        (shared / f"{name}.py").write_text(text)
    sdk = write_sdk(shared / "sdk", SDK_DEVICES)
    stale = sdk.root / "stale-include" / "acme" / "acme.h"
    stale.parent.mkdir(parents=True)
    stale.write_text("#pragma once\n// acme 0.9, a stale copy\n")
    sites = {name: root / f"site-{name}" for name in DECLARED}
    for name, declared in DECLARED.items():
        write_distribution(sites[name], f"docs{name}", "1.0", declared)  # no "-": one name
    # A device two distributions declare, and entry points that name no device.
    write_distribution(sites["a"], "docsother", "0.1", {"twicedev": "docs_providers:raising"})
    write_distribution(sites["a"], "thirdparty", "0.1", INVALID_ENTRY_POINTS)

    def run(site: str, *args: str) -> dict[str, object]:
        env = {"PYTHONPATH": pythonpath_with(sites[site], shared)}
        return {"args": ["doctor", *args], "env": env}

    def every_device(site: str) -> dict[str, object]:
        registered = [f"--provider={device}={spec}" for device, spec in REGISTERED[site].items()]
        return run(site, "--all", "--json", *registered)

    runs = run_concurrently(
        root,
        {  # the longest first
            "all_a": every_device("a"),
            "all_b": every_device("b"),
            "past_the_hook": run("b", "pastdev", "--provider", "docs_past_hook:options"),
            "own_get_system": run("b", "ownkeysdev", "--provider", "docs_own_get_system:options"),
            "provider_not_loaded": run("a", "loaddev", "--provider", "no_such_module:options"),
            "aot": run("b", "aotdev", "--aot", "--provider", "docs_providers:raising"),
            "unknown_device": run("b", "nosuchdev"),
            "usage": run("b", "somedev", "--provider", "no_colon"),
        },
    )
    return {name: (run.returncode, list(_messages(run))) for name, run in runs.items()}


def _messages(run: Run) -> Iterator[str]:
    yield from run.stdout.splitlines()
    yield from run.stderr.splitlines()
    if run.stdout.startswith("{"):
        yield from _strings(json.loads(run.stdout))


def _strings(document: object) -> Iterator[str]:
    if isinstance(document, str):
        yield document
    elif isinstance(document, (dict, list)):
        for value in document.values() if isinstance(document, dict) else document:
            yield from _strings(value)


@pytest.fixture(scope="module")
def quotes() -> list[str]:
    found = quotes_of(TROUBLESHOOTING.read_text())
    assert len(found) >= LEAST_QUOTES, found
    return found


def test_every_quote_of_the_page_is_a_message_a_real_run_prints(
    quotes: list[str], produced: dict[str, tuple[int, list[str]]]
) -> None:
    messages = [message for _, printed in produced.values() for message in printed]
    unmatched = [
        quote
        for quote in quotes
        if quote not in ELSEWHERE
        and not NOT_ON_THIS_TORCH.get(quote)
        and not quote_matches(quote, messages)
    ]
    report = [
        f"{quote!r}, closest:\n  " + "\n  ".join(closest(quote, messages)) for quote in unmatched
    ]
    assert not unmatched, "quotes no real run matches:\n" + "\n".join(report)


def test_the_exit_code_the_page_gives_after_a_quote_is_the_run_s(
    produced: dict[str, tuple[int, list[str]]],
) -> None:
    given = [
        (normalised(match.group(2)), int(match.group(3)))
        for match in EXIT_CODE.finditer(TROUBLESHOOTING.read_text())
    ]
    assert len(given) >= 3, given
    for quote, exit_code in given:
        codes = {code for code, printed in produced.values() if quote_matches(quote, printed)}
        assert exit_code in codes, (quote, exit_code, codes)


def test_the_quotes_only_a_compile_or_a_bug_produces_are_asserted_where_they_are_produced(
    quotes: list[str],
) -> None:
    assert set(quotes) >= ELSEWHERE, ELSEWHERE - set(quotes)
    for module, covered in COVERED_ELSEWHERE.items():
        calls = [
            node
            for node in ast.walk(ast.parse((TESTS_DIR / module).read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "assert_quoted"
        ]
        asserted = {call.args[0].value for call in calls if isinstance(call.args[0], ast.Constant)}
        assert set(covered) <= asserted, f"no assert_quoted call of {module} for " + repr(
            set(covered) - asserted
        )


def test_a_quote_reads_placeholders_and_ellipses_as_any_text() -> None:
    """The pattern itself: what a quote may and may not match."""
    assert quote_matches("N of M include dirs missing", ["1 of 3 include dirs missing"])
    assert quote_matches("SKIP ... no C++ wrapper", ["SKIP  builds ask: no C++ wrapper here"])
    assert quote_matches("libNAME.so not found", ["cause: libacme.so not found in /x"])
    assert not quote_matches("N of M include dirs missing", ["1 of 3 include dirs found"])
    assert not quote_matches("FAIL  AOTInductor", ["FAIL  AOTXInductor"])  # not a placeholder
    assert not quote_matches("g++ failed", ["g++ failedly"])  # ends at a word boundary
