"""Helpers shared by the test modules (tests/ is on sys.path through conftest.py)."""

from __future__ import annotations

import difflib
import functools
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from inductor_device_options import ENTRY_POINT_GROUP

# Set by upstream/verify.py when the suite runs against torch patched with the
# upstream registry: the package must then delegate to it instead of hooking.
NATIVE = os.environ.get("INDUCTOR_DEVICE_OPTIONS_EXPECT_NATIVE") == "1"
hook_mode_only = pytest.mark.skipif(
    NATIVE, reason="hook mode only: with torch's native registry the package does not hook"
)


def pythonpath_with(*directories: Path) -> str:
    """PYTHONPATH with ``directories`` first, keeping what is there (upstream/verify.py's
    import overlay lives on PYTHONPATH)."""
    existing = os.environ.get("PYTHONPATH")
    return os.pathsep.join([*map(str, directories), *([existing] if existing else [])])


#: This directory: on a subprocess's PYTHONPATH, its code can ``from support import ...``.
TESTS_DIR = Path(__file__).resolve().parent


def docs_extension() -> ModuleType:
    """``docs/_ext/ido_docs.py``, the docs' Sphinx extension, imported without Sphinx."""
    extensions = str(TESTS_DIR.parent / "docs" / "_ext")
    sys.path.insert(0, extensions)
    try:
        import ido_docs
    finally:
        sys.path.remove(extensions)
    return ido_docs


def run_python(
    code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the same venv) and return the finished process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_python(code: str, **kwargs: object) -> str:
    """Like run_python, but fail the test with its output unless it exits 0; return stdout."""
    finished = run_python(code, **kwargs)  # type: ignore[arg-type]
    assert finished.returncode == 0, f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}"
    return finished.stdout


def write_distribution(
    site: Path, name: str, version: str, entry_points: Mapping[str, str]
) -> None:
    """A distribution's dist-info in ``site`` declaring ``entry_points`` (name = value) in
    the ``inductor_device_options`` group, found by importlib.metadata as an installed one."""
    dist_info = site / f"{name}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n"
        + "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    )


#: doctor's checks, in order (a "provider" check comes first only when --provider fails;
#: with --aot, AOT_CHECKS follow).
DOCTOR_CHECKS = (
    "hook",
    "torch_hooks",
    "device_asked",
    "overrides",
    "options",
    "flags",
    "include_dirs",
    "headers",
    "c_shim",
    "shadowed_headers",
    "libraries",
    "cache_keys",
    "provider_doors",
    "probe_build",
    "probe_load",
)
#: What --aot adds to DOCTOR_CHECKS (without --compile).
AOT_CHECKS = ("library_sonames", "cmake_project", "aoti_weights", "aoti_runner")


# --- what differs between torch releases, read off the running torch ----------------------


def definitions_of(options: Any) -> list[str]:
    """``options.get_definitions()``: torch 2.6-2.9 spell it ``get_definations``."""
    getter = getattr(options, "get_definitions", None) or options.get_definations
    return list(getter())


def passthrough_args_of(options: Any) -> list[str]:
    """``options.get_passthrough_args()``: torch 2.6-2.9 spell it ``get_passthough_args``."""
    getter = getattr(options, "get_passthrough_args", None) or options.get_passthough_args
    return list(getter())


def torch_has_custom_op_libs() -> bool:
    """``config.aot_inductor.custom_op_libs`` appeared in torch 2.7."""
    from torch._inductor import config

    return hasattr(config.aot_inductor, "custom_op_libs")


@functools.cache
def torch_writes_cmake() -> bool:
    """Whether AOTInductor's ``package_cpp_only`` writes a CMake project (torch 2.6 does not:
    only the flags, as JSON)."""
    from torch._inductor.cpp_builder import CppBuilder

    return hasattr(CppBuilder, "save_compile_cmd_to_cmake")


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    """What ``call()`` did: ("returned", value) or ("raised", (type, message)), so that two
    calls can be compared whichever way this torch's code goes."""
    try:
        return ("returned", call())
    except Exception as error:
        return ("raised", (type(error), str(error)))


@functools.cache
def cpp_builder_keeps_whole(field: str) -> bool:
    """Whether this torch's ``CppBuilder`` keeps a dir with a space as one ``-I``
    (``include_dirs``) or ``-L`` (``libraries_dirs``) argument: 2.13 quotes -I but not -L,
    2.15 both, 2.6 neither (its ``shlex.split`` then cuts the dir)."""
    import shlex

    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    import inductor_device_options as ido

    prefix = {"include_dirs": "-I", "libraries_dirs": "-L"}[field]
    probe_dir = "/inductor device options probe/dir"

    def options(device_type: str, aot_mode: bool, compile_only: bool) -> ido.CppDeviceOptions:
        result = ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        getattr(result, field).append(probe_dir)
        return result

    try:
        with ido.testing.registered_cpp_device_options("dirprobe", options):
            line = CppBuilder(
                name="probe",
                sources=["probe.cpp"],
                BuildOption=CppTorchDeviceOptions(device_type="dirprobe"),
                output_dir="",
            ).get_command_line()
    except ido.InvalidCppDeviceOptionsError:  # the package refuses what this torch would cut
        return False
    return f"{prefix}{probe_dir}" in shlex.split(line)


def torch_consults_device_interface() -> bool:
    """Whether torch's own function asks ``DeviceInterface.get_cpp_device_options`` (2.15+);
    before that the package backports the lookup."""
    from torch._dynamo.device_interface import DeviceInterface

    return hasattr(DeviceInterface, "get_cpp_device_options")


def cpp_wrapper_device_header(device: str) -> str:
    """The device header Inductor's cpp_wrapper code includes first for ``device``: torch 2.6
    includes ``aoti_torch/generated/c_shim_<device>.h``, later torch ``cpp_wrapper/<device>.h``
    (named by ``get_device_include_path_jit``; 2.10's ``get_device_include_path`` needs a graph)."""
    return _device_header(device, "jit", "cpp_wrapper")


def aoti_device_header(device: str) -> str:
    """The device header AOTInductor's generated model includes for ``device``: torch 2.6
    includes ``aoti_torch/generated/c_shim_<device>.h`` as in cpp_wrapper mode, later torch
    ``aoti_include/<device>.h`` (``get_device_include_path_aot``, or 2.10's
    ``get_device_include_path`` with an AOT graph)."""
    return _device_header(device, "aot", "aoti_include")


def _device_header(device: str, mode: str, directory: str) -> str:
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    include = getattr(CppWrapperCpu, f"get_device_include_path_{mode}", None)
    if include is not None:
        return str(include(device)).removeprefix("#include <").removesuffix(">")
    if hasattr(CppWrapperCpu, "get_device_include_path"):
        return f"torch/csrc/inductor/{directory}/{device}.h"
    return f"torch/csrc/inductor/aoti_torch/generated/c_shim_{device}.h"


def torch_has_compile_subprocess() -> bool:
    """``TORCHINDUCTOR_FX_COMPILE_MODE=subprocess`` exists (not in torch 2.6)."""
    from torch._inductor import compile_fx

    return hasattr(compile_fx, "fx_compile_mode")


def torch_precompiles_cpp_headers() -> bool:
    """Inductor precompiles the headers of cpp_wrapper code in every process that compiles
    (``config.cpp_cache_precompile_headers``; torch 2.6 has no such step)."""
    from torch._inductor import config

    return bool(getattr(config, "cpp_cache_precompile_headers", False))


# The session's directory: under pytest-xdist the controller's, which its workers share
# (each worker's own is made inside it). tests/conftest.py sets it.
SHARED_DIR_ENV = "INDUCTOR_DEVICE_OPTIONS_TESTS_DIR"


def shared_test_dir() -> Path:
    """The directory every process of this test run shares, removed at its end."""
    return Path(os.environ[SHARED_DIR_ENV])


# The pytest process (controller or worker) that started a process, under it: its id is in
# the environment of all it starts. tests/conftest.py sets it, and at the end of each pytest
# process stops what is left of the distributed jobs it started.
TESTS_PROCESS_ENV = "INDUCTOR_DEVICE_OPTIONS_TESTS_PROCESS"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def creating_needs_op_overrides() -> bool:
    """Whether CppWrapperCpu.__init__ fails for a device without DeviceOpOverrides: it asks
    for them, and torch 2.6 answers even for a device that registered none."""
    from torch._inductor.codegen.common import get_device_op_overrides

    try:
        get_device_op_overrides("no_overrides_registered")
    except KeyError:
        return True
    return False


# --- the messages the docs quote ----------------------------------------------------------

#: The page indexed by doctor's messages: each is quoted in a bold code span (**`...`**).
TROUBLESHOOTING = TESTS_DIR.parent / "docs" / "guides" / "troubleshooting.md"

#: The words a quote writes in capitals for what varies (a device, a type, a count...):
#: each matches any text. Other capitals (FAIL, SKIP, WARN, MODULE:CALLABLE) are literal.
PLACEHOLDERS = frozenset(
    {
        "CODEGEN",
        "DEVICE",
        "DIR",
        "DIRS",
        "F",
        "FIELD",
        "HEADER",
        "LIBRARY",
        "M",
        "METHOD",
        "N",
        "NAME",
        "PROVIDER",
        "TYPE",
        "VALUE",
        "VERSION",
        "X",
    }
)
_BOLD_CODE = re.compile(r"\*\*(`+)(.+?)\1\*\*", re.DOTALL)
# A word in capitals: not part of a capitalised word ("Inductor", "AOTInductor"), but it
# may follow lower case ("libNAME.so").
_CAPITALS = re.compile(r"(?<![A-Z])[A-Z][A-Z_]*(?![A-Za-z_])")


def normalised(text: str) -> str:
    """``text`` with each run of whitespace one space (a quote may wrap across lines)."""
    return " ".join(text.split())


def quotes_of(page: str) -> list[str]:
    """The messages ``page`` quotes: the text of each bold code span, normalised."""
    return [normalised(match.group(2)) for match in _BOLD_CODE.finditer(page)]


def quote_pattern(quote: str) -> re.Pattern[str]:
    """What ``quote`` stands for: a placeholder or ``...`` matches any text, the rest is
    literal; the match starts and ends at word boundaries (a quote may be part of a message,
    as the doc quotes the part of a cause it explains)."""
    parts = []
    for piece in re.split(r"(\.\.\.)", quote):
        if piece == "...":
            parts.append(".*?")
            continue
        end = 0
        for word in _CAPITALS.finditer(piece):
            if word.group() in PLACEHOLDERS:
                parts += [re.escape(piece[end : word.start()]), ".+?"]
                end = word.end()
        parts.append(re.escape(piece[end:]))
    return re.compile(r"(?<!\w)" + "".join(parts) + r"(?!\w)")


def quote_matches(quote: str, messages: Iterable[str]) -> bool:
    pattern = quote_pattern(quote)
    return any(pattern.search(normalised(message)) for message in messages)


def closest(quote: str, messages: Iterable[str], count: int = 3) -> list[str]:
    """The messages most like ``quote``, to show beside a quote none matches."""
    shown = {normalised(message)[:300] for message in messages}
    return difflib.get_close_matches(quote, shown, n=count, cutoff=0)


def assert_quoted(quote: str, produced: Iterable[str], page: Path = TROUBLESHOOTING) -> None:
    """``quote`` is quoted on ``page`` (troubleshooting.md) and matches a message ``produced``
    by a real run: a test that produces a message the page quotes calls it with what it got,
    so that neither can change alone. tests/test_docs_messages.py checks the other quotes,
    and that each quote is covered."""
    produced = list(produced)
    assert quote in quotes_of(page.read_text()), f"{page.name} does not quote {quote!r}"
    assert quote_matches(quote, produced), (
        f"{page.name} quotes {quote!r}, but no message matches it; the closest:\n"
        + "\n".join(closest(quote, produced))
    )


def rewrite_keeping_size_and_mtime(path: Path, contents: bytes) -> None:
    """What an archive unpacked with its recorded times, ``rsync -a`` or a package manager
    does to a file: new contents, the same size and modification time, the same inode."""
    before = path.stat()
    with path.open("r+b") as file:
        file.write(contents)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
