"""The probe: the smallest source Inductor could build, the temporary directory it is
built in, and the commands Inductor's own ``CppBuilder`` renders for it with
``CppTorchDeviceOptions(device_type=...)``: nothing is re-assembled by hand, so what is
shown and built is what Inductor runs."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .run import run_tool

if TYPE_CHECKING:
    from torch._inductor.cpp_builder import CppBuilder

PROBE_NAME = "inductor_device_options_probe"
PROBE_SOURCE = (
    "// Written by `inductor-device-options`: the smallest shared object Inductor could build.\n"
    f'extern "C" int {PROBE_NAME}(void) {{ return 0; }}\n'
)

#: Linked into the probe that is loaded: every -l library becomes a NEEDED entry, as in a
#: module whose code calls into it (the empty probe calls nothing, and many distributions'
#: g++ link --as-needed, which would drop every library from it).
NO_AS_NEEDED = "-Wl,--no-as-needed"

#: ``progress(message)`` starts a progress display and returns what ends it.
Progress = Callable[[str], Callable[[], None]]


def probe_builder(
    device_type: str, aot_mode: bool, compile_only: bool, source: Path, output_dir: Path
) -> CppBuilder:
    """Inductor's ``CppBuilder`` for ``source`` with the device's options."""
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    options = CppTorchDeviceOptions(
        device_type=device_type, aot_mode=aot_mode, compile_only=compile_only
    )
    return CppBuilder(source.stem, [str(source)], options, output_dir=str(output_dir))


class Commands(NamedTuple):
    compiler: str
    compile: str
    link: str | None


def probe_commands(device_type: str, aot_mode: bool, compile_only: bool, work: Path) -> Commands:
    """The compile command (to an object, as Inductor's AOT path does) and, unless
    ``compile_only``, the command that links that object into a shared library."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = probe_builder(device_type, aot_mode, True, work / f"{PROBE_NAME}.cpp", work)
    link = None
    if not compile_only:
        obj = Path(compiler.get_target_file_path())
        link = probe_builder(device_type, aot_mode, False, obj, work).get_command_line()
    return Commands(get_cpp_compiler(), compiler.get_command_line(), link)


def write_probe_source(work: Path) -> Path:
    """The probe's source in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"{PROBE_NAME}.cpp"
    source.write_text(PROBE_SOURCE)
    return source


@contextmanager
def probe_workspace() -> Iterator[Path]:
    """A temporary directory holding the probe source, removed afterwards.

    ``TORCHINDUCTOR_CACHE_DIR`` points inside it unless the user set it.
    """
    work = Path(tempfile.mkdtemp(prefix="inductor-device-options-"))
    user_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if user_cache is None:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
    try:
        write_probe_source(work)
        yield work
    finally:
        if user_cache is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(work, ignore_errors=True)


def with_progress(progress: Progress | None, message: str, run: Callable[[], object]) -> None:
    """``run()`` with ``message`` displayed meanwhile, when there is a display."""
    done = progress(message) if progress else None
    try:
        run()
    finally:
        if done is not None:
            done()


class ProbeCommand(NamedTuple):
    """A command ``CppBuilder`` renders for a source: the compiler, the arguments, the
    file it builds and the directory it runs in."""

    compiler: str
    argv: list[str]
    target: Path
    cwd: Path


def probe_command(
    device_type: str,
    aot_mode: bool,
    source: Path,
    extra: Sequence[str],
    compile_only: bool = True,
) -> ProbeCommand:
    """The command ``CppBuilder`` renders for ``source`` (to an object, or linked when not
    ``compile_only``) with ``extra`` arguments after the compiler's name, in a directory
    beside ``source`` (created)."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    output_dir = source.parent / source.stem
    builder = probe_builder(device_type, aot_mode, compile_only, source, output_dir)
    command = builder.get_command_line()
    if command.startswith(compiler + " "):
        command = f"{compiler} {shlex.join(extra)}{command[len(compiler) :]}"
    else:  # a compiler spelled otherwise: the extra arguments last
        command = f"{command} {shlex.join(extra)}"
    output_dir.mkdir(parents=True, exist_ok=True)
    target = Path(builder.get_target_file_path())
    return ProbeCommand(compiler, shlex.split(command), target, output_dir)


def run_probe(command: ProbeCommand) -> str | None:
    """Run ``command`` as ``CppBuilder`` does: None when it succeeds, else its output."""
    finished = run_tool(command.argv, cwd=command.cwd, timeout=600)
    return None if finished.ok else finished.stdout + finished.stderr


def run_probe_command(
    device_type: str,
    aot_mode: bool,
    source: Path,
    extra: Sequence[str],
    progress: Progress | None,
    compile_only: bool = True,
) -> tuple[Path, str | None]:
    """``probe_command`` run now: the file it builds, and None when it succeeds, else its
    output."""
    command = probe_command(device_type, aot_mode, source, extra, compile_only)
    ran: list[str | None] = []
    message = f"running {command.compiler} on {source.name} ..."
    with_progress(progress, message, lambda: ran.append(run_probe(command)))
    return command.target, ran[0]


class ProbeBuilds(NamedTuple):
    """Both probes' builds, started at once (``probe_checks.start_probe_builds``): the probe
    ``CppBuilder`` builds, and the one linked so that it needs every library."""

    builder: CppBuilder
    built: Future[float]  # seconds; raises what CppBuilder.build raised
    loadable: ProbeCommand
    linked: Future[str | None]  # run_probe's result
