"""``doctor DEVICE --compile``: a real Inductor compile of a tiny graph on the device, the
judge of the static checks.

It runs in a fresh Python (``sys.executable``, this environment, its own process group):
``import torch`` first, so that torch's backend autoload loads the device's backend, then
the ``--provider``, if any. There every question Inductor's builders ask
(``cpp_builder.get_cpp_torch_device_options``, through a recording wrapper assigned to it,
which the package adopts into its chain) and every compiler command (an audit hook on
``subprocess.Popen``) is recorded, with each step's outcome, in one JSON file that this
process turns into the checks ``compile_run``, ``builds_asked``, ``options_reached`` and,
with ``--aot``, ``aoti_load``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .checks import Check
from .compile_words import NOT_RUN as _NOT_RUN
from .compile_words import compile_check as _check
from .compile_words import error_cause
from .compile_words import first_line as _first_line
from .compile_words import relevant as _relevant
from .header_checks import is_torch_dir as _is_torch_dir
from .model_checks import door_check, model_checks
from .text import plural as _plural
from .text import shorten as _shorten

DEFAULT_TIMEOUT = 900.0
GRAPH = "x * 2 + 1"
Json = dict[str, Any]
_BOOT = (
    "import sys, torch\n"
    "from inductor_device_options._diagnose.compile_child import child_main\n"
    "sys.exit(child_main(sys.argv[1:]))\n"
)


def compile_checks(
    device: str,
    aot_mode: bool,
    provider_spec: str | None,
    work: Path,
    static: Sequence[Check],
    progress: Callable[[str], Callable[[], None]] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    model: str | None = None,
) -> list[Check]:
    """Run the compile in a fresh Python and judge it: the checks after ``static``
    (``model``: the user's ``MODULE:FUNCTION``, compiled last)."""
    work.mkdir(parents=True, exist_ok=True)
    mode = "AOTInductor" if aot_mode else "cpp_wrapper"
    message = f"compiling {GRAPH} on {device} ({mode}) in a fresh python ..."
    done = progress(message) if progress else None
    try:
        result, failure = _run_child(device, aot_mode, provider_spec, work, timeout, model)
    finally:
        if done is not None:
            done()
    return _Judge(device, aot_mode, static, result, failure, model).checks()


def _run_child(
    device: str,
    aot_mode: bool,
    provider_spec: str | None,
    work: Path,
    timeout: float,
    model: str | None,
) -> tuple[Json | None, tuple[str, list[str]] | None]:
    """The child's result, or None and why there is none (with its last output lines)."""
    result_path, log_path = work / "compile-result.json", work / "compile-output.log"
    # Inductor compiles in this process: where the questions and commands are recorded.
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    env.pop("TORCHINDUCTOR_FX_COMPILE_MODE", None)
    argv = [sys.executable, "-c", _BOOT, device, "aot" if aot_mode else "jit"]
    argv += [provider_spec or "", str(result_path), str(work), model or ""]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            # A process group of its own: _kill_group also ends the compile workers and
            # compilers it started, which a kill of the child alone would leave running.
            start_new_session=True,
        )
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # a timeout, an error, KeyboardInterrupt: nothing outlives doctor
            _kill_group(process)
    output = log_path.read_text(errors="replace").splitlines()
    tail = [_shorten(line) for line in output if line.strip()][-8:]
    if code is None:
        return None, (f"the compile did not finish in {timeout:.0f} s (killed)", tail)
    if not result_path.is_file():
        return None, (f"the fresh python exited with code {code} and wrote no result", tail)
    result: Json = json.loads(result_path.read_text())
    return result, None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# --- judging --------------------------------------------------------------------------------


class _Judge:
    def __init__(
        self,
        device: str,
        aot_mode: bool,
        static: Sequence[Check],
        result: Json | None,
        failure: tuple[str, list[str]] | None,
        model: str | None = None,
    ):
        self.device, self.aot_mode, self.model = device, aot_mode, model
        self.static, self.result, self.failure = static, result, failure
        self.steps: dict[str, Json] = {s["name"]: s for s in (result or {}).get("steps", [])}
        self.show = f"`inductor-device-options show {device}{' --aot' if aot_mode else ''}`"

    def ok(self, step: str) -> bool:
        return bool(self.steps.get(step, {}).get("ok"))

    def checks(self) -> list[Check]:
        asked = self.builds_asked()
        reached = self.options_reached(asked)
        return [
            self.compile_run(asked, reached),
            asked,
            reached,
            *([self.aoti_load()] if self.aot_mode else []),
            *model_checks(self, self._fix(asked, reached)),
        ]

    def compile_run(self, asked: Check, reached: Check) -> Check:
        mode = "AOTInductor" if self.aot_mode else "cpp_wrapper"
        if self.failure is not None:
            cause, tail = self.failure
            what = f"the fresh python that compiles {GRAPH} on {self.device} ({mode}): {cause}"
            fix = self._fix(asked, reached)
            return _check("compile_run", "fail", cause, what, fix, details=tail)
        for name in ("setup", "compile"):
            if not self.ok(name):
                error = self.steps.get(name, {}).get("error") or _NOT_RUN
                what = "setting up" if name == "setup" else f"compiling {GRAPH}"
                summary = f"{what} raised {error['type']}"
                # The child compares the device's result with the CPU's by an assert.
                if error["type"] == "AssertionError" and name == "compile":
                    summary = "the result differs from the CPU's"
                cause, fix = error_cause(error, self._fix(asked, reached), self.device)
                return _check(
                    "compile_run",
                    "fail",
                    summary,
                    f"{what} on {self.device} ({mode}) in a fresh python raised {cause}",
                    fix,
                    details=_relevant(error),
                )
        seconds = self.steps["compile"]["seconds"]
        what = (
            f"aoti_compile_and_package built {GRAPH} for {self.device} in {seconds:.1f} s"
            if self.aot_mode
            else f"torch.compile(cpp_wrapper=True) built and ran {GRAPH} on {self.device} in "
            f"{seconds:.1f} s, the result matches the CPU's"
        )
        return _check("compile_run", "pass", what)

    def _fix(self, asked: Check, reached: Check) -> str:
        failed = [check.title for check in self.static if check.status == "fail"]
        if failed:
            return f"fix what the checks above report ({', '.join(failed)})"
        if asked.status == "fail":
            return f"fix what the check below reports ({asked.title})"
        if reached.status == "pass":
            return (
                "every option reached the compiler, so what is missing is missing from the "
                f"provider's options: {self.show} prints them and the commands"
            )
        return f"{self.show} prints the options and the commands Inductor runs"

    def mine(self) -> list[Json]:
        """The questions for the device (or the type a legacy door answers for it), in the
        mode of the compile."""
        door = (self.result or {}).get("legacy_door")
        asked = door["asked"] if door else self.device
        return [
            q
            for q in (self.result or {}).get("questions", [])
            if q["device_type"].partition(":")[0] == asked and q["aot_mode"] == self.aot_mode
        ]

    def builds_asked(self) -> Check:
        if self.result is None or not self.ok("setup"):
            return _check("builds_asked", "skip", "skipped: the compile did not start")
        questions: list[Json] = self.result["questions"]
        if self.result.get("recording"):
            cause = f"{self.result['recording']}: what Inductor asks is not what the package gives"
            fix = "fix what the check 'options reach Inductor' above reports"
            return _check("builds_asked", "fail", "the questions could not be recorded", cause, fix)
        if mine := self.mine():
            kinds = Counter("compiling" if q["compile_only"] else "linking" for q in mine)
            parts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            asked = mine[0]["device_type"].partition(":")[0]
            summary = f"{_plural(len(mine), 'builder question')} for {asked!r} "
            summary += f"(aot_mode={self.aot_mode}): {parts}"
            if door := self.result.get("legacy_door"):
                return door_check(self.device, door, self.result.get("codegen"), summary)
            return _check("builds_asked", "pass", summary)
        if not questions and not self.ok("compile"):
            return _check("builds_asked", "skip", "skipped: the compile stopped before any build")
        counts = Counter(
            repr(q["device_type"])
            + ("" if q["aot_mode"] == self.aot_mode else f" (aot_mode={q['aot_mode']})")
            for q in questions
        )
        asked = ", ".join(f"{what} {_times(n)}" for what, n in counts.most_common()) or "nothing"
        codegen = self.result.get("codegen") or "none registered for it"
        header = f"{'aoti_include' if self.aot_mode else 'cpp_wrapper'}/{self.device}.h"
        return _check(
            "builds_asked",
            "fail",
            f"no build asked for {self.device!r}",
            f"while compiling on {self.device} Inductor asked get_cpp_torch_device_options for "
            f"{asked}, never for {self.device!r} (aot_mode={self.aot_mode}): the device's C++ "
            f"wrapper codegen, {codegen}, does not report the device, so the provider's "
            "options were never consulted",
            f"make the codegen report the device (self.device = {self.device!r} before "
            f"super().__init__() in its __init__) and ship torch/csrc/inductor/{header} in an "
            "include dir the options add",
        )

    def options_reached(self, asked: Check) -> Check:
        if asked.status == "fail" or asked.status == "skip" or self.result is None:
            return _check("options_reached", "skip", f"skipped: {asked.title} did not pass")
        commands = [c["argv"] for c in self.result["commands"] if c["device_build"]]
        if not commands:
            why = (
                "Inductor's cache (TORCHINDUCTOR_CACHE_DIR) served every build"
                if self.ok("compile")
                else "the compile failed before"
            )
            return _check("options_reached", "skip", f"skipped: no compiler ran ({why})")
        # -l reaches only a linking command (g++ -c ignores it), -I and -D any of them.
        links = [argv for argv in commands if _links(argv)]
        seen, linked = _Seen(commands), _Seen(links)
        expected = _expected(self.result["options"], {q["compile_only"] for q in self.mine()})
        judged = [flag for flag in expected if links or not flag.startswith("-l")]
        missing = [f for f in judged if not (linked if f.startswith("-l") else seen).has(f)]
        if not missing:
            # The device's own first: torch's include dirs are in every command anyway.
            own = sorted(judged, key=lambda flag: flag.startswith("-I") and _is_torch_dir(flag[2:]))
            parts = [
                f"{label}: {_few([f[2:] for f in own if f.startswith(kind)])}"
                for kind, label in _KINDS.items()
            ]
            if not links:
                why = (
                    "Inductor's cache served the module"
                    if self.ok("compile")
                    else "it failed first"
                )
                parts[-1] = f"libraries: nothing linked ({why})"
            counted = _plural(len(commands), "compiler command")
            return _check("options_reached", "pass", f"in {counted}: " + "; ".join(parts))
        return _check(
            "options_reached",
            "fail",
            f"{len(missing)} of {len(judged)} never reached g++",
            f"Inductor got these options for {self.device!r}, but no compiler command of the "
            f"compile ({len(commands)}, {len(links)} linking) has them: {' '.join(missing)}",
            f"{self.show} prints the commands the options give; a build in another process "
            "(compile workers, TORCHINDUCTOR_FX_COMPILE_MODE=subprocess) sees only declared "
            "providers, not --provider",
            details=[_shorten(shlex.join(argv)) for argv in commands[-3:]],
        )

    def aoti_load(self) -> Check:
        if not self.ok("compile"):
            return _check("aoti_load", "skip", "skipped: the package was not built")
        step = self.steps.get("load") or {"ok": False, "error": _NOT_RUN}
        if step["ok"]:
            return _check(
                "aoti_load",
                "pass",
                f"aoti_load_package loaded it and ran it on {self.device} in "
                f"{step['seconds']:.1f} s, the result matches the CPU's",
            )
        error = step["error"]
        fix = f"{self.show} prints the options"
        # What torch 2.13-2.15's C++ package loader (libtorch_cpu) says where no AOTI model
        # runner is registered for the device (torch 2.6's words differ).
        if "Unsupported device key found" in str(error["message"]):
            fix = (
                f"register an AOTI model runner for {self.device!r} in the backend's C++: a "
                "static torch::inductor::RegisterAOTIModelRunner (as the sample device does in "
                "inductor_device_options/sample/csrc/sampledev_backend.cpp)"
            )
        return _check(
            "aoti_load",
            "fail",
            f"loading or running it raised {error['type']}",
            f"aoti_load_package of the package built for {self.device} raised "
            f"{error['type']}: {_first_line(error)}",
            fix,
            details=_relevant(error),
        )


_KINDS = {"-I": "include dirs", "-D": "definitions", "-l": "libraries"}


def _expected(options: list[Json], compile_only: set[bool]) -> list[str]:
    """``-I<dir>``, ``-D<def>``, ``-l<lib>`` of the device's options as Inductor got them
    for the kinds of build it asked (both, when it asked none)."""
    flags: list[str] = []
    for entry in options:
        if entry["options"] is None or (compile_only and entry["compile_only"] not in compile_only):
            continue
        values = entry["options"]
        flags += [f"-I{d}" for d in values["include_dirs"]]
        flags += [f"-D{d.strip()}" for d in values["definitions"]]
        flags += [f"-l{lib}" for lib in values["libraries"]]
    return list(dict.fromkeys(flags))


class _Seen:
    """The -I, -D and -l of compiler commands, parsed from their argv (``-D X`` too)."""

    def __init__(self, commands: Sequence[Sequence[str]]) -> None:
        self.flags: set[str] = set()
        for words in commands:
            for index, word in enumerate(words):
                for prefix in _KINDS:
                    if word == prefix and index + 1 < len(words):
                        self.flags.add(prefix + words[index + 1].strip())
                    elif word.startswith(prefix) and len(word) > 2:
                        self.flags.add(prefix + word[2:].strip())

    def has(self, flag: str) -> bool:
        if flag in self.flags:
            return True
        # An include dir may reach g++ by its real path (the package resolves symlinks).
        real = os.path.realpath(flag[2:]) if flag.startswith("-I") else None
        return real is not None and any(
            seen.startswith("-I") and os.path.realpath(seen[2:]) == real for seen in self.flags
        )


def _links(argv: Sequence[str]) -> bool:
    # A command that writes an output and neither stops before linking (-c, -E, -S) nor
    # precompiles a header (torch 2.13+'s ``-x c++-header``).
    return "-o" in argv and not {"-c", "-E", "-S", "c++-header"} & set(argv)


def _few(values: Sequence[str], shown: int = 3) -> str:
    if not values:
        return "none"
    more = f" and {len(values) - shown} more" if len(values) > shown else ""
    return ", ".join(values[:shown]) + more


def _times(count: int) -> str:
    return "once" if count == 1 else "twice" if count == 2 else f"{count} times"
