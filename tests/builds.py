"""Real builds of a tiny kernel, as stock torch and through the package, and what g++, ld and
as received in each: the harness of the differential tests (tests/ is on sys.path).

A *world* is a directory with the kernel, the payloads, SDK trees whose names hold commas,
``@``, spaces and quotes, and wrappers for g++, ld and as that log their argv (to the file
``$IDO_TOOL_LOG`` names; ``tool_log.py`` reads it) and exec the real tool. ``CXX`` names
the g++ wrapper, which torch's ``get_cpp_compiler`` honours (``config.cpp.cxx``); the
wrapper puts its own directory first on ``PATH``, where g++ looks for ``as`` and collect2
for ``ld``. Payloads that prove an injection when a tool reads them as arguments:
``evil.h`` (``#error "injected argument"``), the g++ response file ``gxx.rsp``
(``X -include<evil.h>``: after ``-D`` too, one argument becomes two), the preprocessor's
``cpp.rsp`` (``-include<evil.h>``) and the ld/as response file ``tool.rsp``
(``--this-option-was-injected``).

Each case is built by ``build_worker.py`` in a fresh interpreter: ``stock`` there is torch
alone (``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, the package never imported), with a plain
replacement function; ``package``, a provider registered with the package.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support import pythonpath_with

import inductor_device_options

DEVICE = "diffdev"
PROVIDER = "__main__.provider"  # build_worker.py runs as __main__
INJECTED = ("injected argument", "--this-option-was-injected")
WORKER = Path(__file__).resolve().parent / "build_worker.py"
LOG_ENV = "IDO_TOOL_LOG"

KERNEL = 'extern "C" int kernel(void) { return 0; }\n'
PROBE_HEADER = "ido_probe.h"
PROBE_LIBRARY = "ido_probe"
PROBE_KERNEL = f'#include <{PROBE_HEADER}>\nextern "C" int kernel(void) {{ return PROBE; }}\n'

# POSIX sh, not Python: a build runs three of these, a Python start-up each would double it.
_WRAPPER = """#!/bin/sh
if [ -n "${{{log_env}:-}}" ]; then
  {{
    printf '\\036%s\\0' {tool}
    for word in "$@"; do
      case "$word" in
        @*/cc??????)
          if [ -f "${{word#@}}" ]; then printf '\\035%s\\0' "$(cat "${{word#@}}")"; continue; fi;;
      esac
      printf '%s\\0' "$word"
    done
  }} >> "${log_env}"
fi
{path}exec {real} "$@"
"""


@dataclass(frozen=True)
class World:
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def cxx(self) -> Path:
        return self.bin / "g++"

    @property
    def cwd(self) -> Path:
        """The workers' current directory: ``include/`` and ``lib/`` hold the probes."""
        return self.root / "cwd"

    @property
    def out(self) -> Path:
        return self.root / "out"

    def kernel(self, probe: bool = False) -> str:
        return str(self.root / ("probe_kernel.cpp" if probe else "kernel.cpp"))

    def format(self, template: str) -> str:
        return template.format(root=self.root)


def make_world(root: Path) -> World:
    """The files every case of a world may name (``{root}`` in a case's values)."""
    world = World(root)
    world.bin.mkdir(parents=True)
    for tool in ("g++", "ld", "as"):
        real = shutil.which(tool)
        assert real is not None, f"{tool} is not on PATH"
        wrapper = world.bin / tool
        path = f'PATH={shlex.quote(str(world.bin))}:"$PATH"; export PATH\n' if tool == "g++" else ""
        wrapper.write_text(
            _WRAPPER.format(log_env=LOG_ENV, tool=tool, path=path, real=shlex.quote(real))
        )
        wrapper.chmod(0o755)
    (root / "kernel.cpp").write_text(KERNEL)
    (root / "probe_kernel.cpp").write_text(PROBE_KERNEL)
    (root / "evil.h").write_text('#error "injected argument"\n')
    (root / "gxx.rsp").write_text(f"X -include{root}/evil.h\n")
    (root / "cpp.rsp").write_text(f"-include{root}/evil.h\n")
    (root / "tool.rsp").write_text("--this-option-was-injected\n")
    for directory in (
        "sdk/include",
        "sdk/lib",
        "with space/include",
        "with space/lib",
        "it's/include",
        "back\\slash/include",
        f"sdk,@{root}/resp/lib",  # -Wl, would give ld `@<root>/resp/lib`: a response file
        "sdk,--some-option/lib",
        "c,d/lib",
        "cwd/include",
        "cwd/lib",
        "resp",
    ):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "resp" / "lib").write_text("--this-option-was-injected\n")
    (root / "sdk" / "include" / "acme.h").write_text("#pragma once\n#define ACME 1\n")
    (root / "sdk-latest").symlink_to(root / "sdk")
    (root / "spaced-latest").symlink_to(root / "with space")
    (root / "cwd" / "include" / PROBE_HEADER).write_text("#define PROBE 7\n")
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(root / "cwd/lib/libido_probe.so")],
        input="int ido_probe(void) { return 7; }\n",
        text=True,
        check=True,
    )
    subprocess.run(
        ["cc", "-c", "-x", "c", "-", "-o", str(root / "sdk/lib/extra.o")],
        input="int ido_extra(void) { return 1; }\n",
        text=True,
        check=True,
    )
    return world


@dataclass(frozen=True)
class Case:
    """Values added to torch's defaults of ``DEVICE`` for one build: ``field`` gets
    ``value`` (its first), ``extra`` more fields' values. ``relative``: the value is a
    relative dir, also built with that dir inside the directory g++ runs in; the kernel
    then includes the probe header (the dir holds it, or the probe library)."""

    id: str
    field: str
    value: str
    env: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)
    relative: bool = False

    def spec(self, world: World) -> dict[str, Any]:
        values: dict[str, list[str]] = {self.field: [world.format(self.value)]}
        for name, more in self.extra.items():
            values.setdefault(name, []).extend(world.format(value) for value in more)
        return {
            "id": self.id,
            "field": self.field,
            "values": values,
            "env": {name: world.format(value) for name, value in self.env.items()},
            "relative": self.relative,
            "kernel": world.kernel(probe=self.relative and self.field == "include_dirs"),
        }


#: Nothing added: what each case's argv is compared with.
BASELINE: dict[str, Any] = {
    "id": "baseline",
    "field": "",
    "values": {},
    "env": {},
    "relative": False,
}


@dataclass(frozen=True)
class Observation:
    """What one build did: ``status`` is built, failed or refused (package only)."""

    status: str
    output: str
    calls: tuple[Mapping[str, Any], ...]
    result: Mapping[str, Any]

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Observation:
        return cls(result["status"], result.get("output", ""), tuple(result["calls"]), result)

    @property
    def injected(self) -> bool:
        return any(marker in self.output for marker in INJECTED)

    def argv(self, tool: str) -> list[str] | None:
        """What ``tool`` received in the build (g++: the call that links, not a question
        the package asked with -E); None if it did not run."""
        for call in self.calls:
            if call["tool"] == tool and (tool != "g++" or _builds(call["argv"])):
                return [_untemp(word) for word in call["argv"]]
        return None

    @property
    def compiler_questions(self) -> list[list[str]]:
        return [
            call["argv"] for call in self.calls if call["tool"] == "g++" and "-E" in call["argv"]
        ]

    @property
    def in_build_dir(self) -> Observation:
        return Observation.of(self.result["in_build_dir"])


def _builds(argv: Sequence[str]) -> bool:
    """A g++ call that builds the kernel (not ``--version`` or an ``-E`` question)."""
    return "-E" not in argv and any(word.endswith("/kernel.so") for word in argv)


def _untemp(word: str) -> str:
    """gcc's temporary file names (``/tmp/ccAbC123.o``) differ from build to build."""
    return re.sub(r"cc[A-Za-z0-9]{6}\.(o|res|s|ld)\b", r"ccTEMP.\1", word)


def added(base: Sequence[str] | None, words: Sequence[str] | None) -> list[str] | None:
    """The words ``words`` has where ``base`` has other ones (or none): what one case
    changed in a tool's argv. None when the tool did not run."""
    if base is None or words is None:
        return None
    matcher = difflib.SequenceMatcher(a=base, b=words, autojunk=False)
    return [
        word
        for tag, _, _, start, end in matcher.get_opcodes()
        if tag in ("insert", "replace")
        for word in words[start:end]
    ]


def contains_run(words: Sequence[str] | None, run: Sequence[str]) -> bool:
    """Whether ``run`` occurs in ``words`` as consecutive words."""
    if words is None:
        return False
    return any(list(words[i : i + len(run)]) == list(run) for i in range(len(words) + 1))


def _worker_env(world: World, mode: str) -> dict[str, str]:
    env = dict(os.environ)
    # The package this test imported, wherever it comes from, for the package's worker.
    env["PYTHONPATH"] = pythonpath_with(Path(inductor_device_options.__file__).parents[1])
    env["CXX"] = str(world.cxx)
    env.pop(LOG_ENV, None)
    if mode == "stock":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    return env


def start_builds(world: World, mode: str, cases: Sequence[Case], tag: str) -> subprocess.Popen[str]:
    """Start the worker that builds ``cases`` (after a baseline) as ``mode``."""
    spec = {
        "device": DEVICE,
        "out": str(world.root / f"out-{tag}-{mode}"),
        "log": str(world.root / f"calls-{tag}-{mode}.log"),
        "results": str(world.root / f"results-{tag}-{mode}.json"),
        "cases": [
            {**BASELINE, "kernel": world.kernel()},
            *(case.spec(world) for case in cases),
        ],
    }
    spec_path = world.root / f"spec-{tag}-{mode}.json"
    spec_path.write_text(json.dumps(spec))
    return subprocess.Popen(
        [sys.executable, str(WORKER), mode, str(spec_path)],
        cwd=world.cwd,
        env=_worker_env(world, mode),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish_builds(
    world: World, process: subprocess.Popen[str], mode: str, tag: str
) -> dict[str, Observation]:
    try:
        output, _ = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if process.returncode != 0:
        pytest.fail(f"the {mode} build worker failed ({process.returncode}):\n{output}")
    results = json.loads((world.root / f"results-{tag}-{mode}.json").read_text())
    return {name: Observation.of(result) for name, result in results.items()}


def build_both(
    world: World, cases: Sequence[Case], tag: str
) -> tuple[dict[str, Observation], dict[str, Observation]]:
    """Each case built as stock torch and through the package, both workers at once."""
    processes = {mode: start_builds(world, mode, cases, tag) for mode in ("stock", "package")}
    try:
        stock = finish_builds(world, processes["stock"], "stock", tag)
        package = finish_builds(world, processes["package"], "package", tag)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return stock, package


def build_as(world: World, mode: str, cases: Sequence[Case], tag: str) -> dict[str, Observation]:
    return finish_builds(world, start_builds(world, mode, cases, tag), mode, tag)
