"""Loading a built module as Inductor does, for ``doctor``, and what the loader made of each
library (as ``ldd`` shows it). The module is loaded in a fresh Python process with the
user's environment that has imported torch, with ``dlopen`` (``RTLD_NOW``, as Python's
extension loader and AOTInductor's model runner open a module).

The process is started as ``doctor`` starts, so that its ``import torch`` runs while
``doctor`` works (and with the environment exactly as the user set it); it loads one
module and exits, so that no library a previous load brought in can satisfy the next.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from typing import NamedTuple

from .run import run_tool

# Run by the fresh process: import torch (its backend autoload included), then load the
# module named on stdin and report, on the last line of stdout, what the loader said
# and every file mapped into the process.
_LOADER = r"""
import ctypes, json, os, sys
import torch
path = sys.stdin.buffer.readline().rstrip(b"\n")
if not path:
    raise SystemExit(0)
try:
    ctypes.CDLL(os.fsdecode(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    error = None
except OSError as exc:
    error = str(exc)
loaded = set()
with open("/proc/self/maps", errors="surrogateescape") as maps:
    for line in maps:
        fields = line.rstrip("\n").split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            loaded.add(fields[5])
sys.stdout.write("\n" + REPORT + json.dumps({"error": error, "loaded": sorted(loaded)}) + "\n")
sys.stdout.flush()
os._exit(0)  # torch's teardown at exit takes ~0.6 s, and doctor waits for the exit
"""
_REPORT = "inductor-device-options-load-report: "
TIMEOUT = 300.0

_ADDRESS = re.compile(r" \(0x[0-9a-f]+\)$")  # where ldd's own run mapped it: noise here
_CANNOT_OPEN = re.compile(r"^([^\s:]+): cannot open shared object file", re.MULTILINE)


class LoadResult(NamedTuple):
    """``error``: the loader's message (None: loaded); ``loaded``: the files mapped into
    the process afterwards (empty when the process failed before loading)."""

    error: str | None
    loaded: tuple[str, ...]


class FreshPython:
    """One fresh ``python`` that imports torch now and loads one module when asked.

    A context manager: leaving it ends the process (and its process group) if it is
    still running.
    """

    def __init__(self, cwd: str = os.sep):  # a dir that holds no module to import by mistake
        self._process: subprocess.Popen[bytes] | None = None
        self._start_error: str | None = None
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _LOADER.replace("REPORT", repr(_REPORT))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                start_new_session=True,  # its compile workers, if any, go with it
            )
        except OSError as error:
            self._start_error = f"cannot start {sys.executable}: {error}"

    def __enter__(self) -> FreshPython:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def load(self, path: str) -> LoadResult:
        """Load ``path`` in the process; the process then exits."""
        process = self._process
        if process is None:
            return LoadResult(self._start_error or "this python has loaded a module already", ())
        try:
            stdout, stderr = process.communicate(os.fsencode(path) + b"\n", timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.close()
            return LoadResult(f"python did not load the module within {TIMEOUT:.0f} s", ())
        finally:
            self._process = None
        out = stdout.decode("utf-8", "surrogateescape")
        report = next(
            (line for line in reversed(out.splitlines()) if line.startswith(_REPORT)), None
        )
        if report is None:
            err = stderr.decode("utf-8", "surrogateescape").strip().splitlines()
            return LoadResult(
                f"python exited with status {process.returncode} before loading the module"
                + (f": {err[-1]}" if err else ""),
                (),
            )
        document = json.loads(report[len(_REPORT) :])
        return LoadResult(document["error"], tuple(document["loaded"]))

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                process.kill()
        process.communicate()


def missing_library(error: str) -> str | None:
    """The library the loader could not find, from its message."""
    match = _CANNOT_OPEN.search(error)
    return match.group(1) if match else None


def resolution(path: str, loaded: tuple[str, ...]) -> list[str]:
    """How each library of ``path`` resolves, as ``ldd`` shows it with the user's
    environment; a library ``ldd`` cannot find but that torch had loaded into the fresh
    process already is marked so (the loader reuses it: Inductor's modules count on that)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return ["(ldd is not installed: no listing of how each library resolved)"]
    ran = run_tool([ldd, path])
    by_name = {os.path.basename(file): file for file in loaded}
    lines = []
    for line in (ran.stdout + ran.stderr).splitlines():
        line = _ADDRESS.sub("", line.strip())
        name, arrow, where = line.partition(" => ")
        if arrow and where.startswith("not found") and name in by_name:
            line += f" (loaded with torch: {by_name[name]})"
        if line:
            lines.append(line)
    return lines
