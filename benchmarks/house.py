"""The house's figures: what every process loads, module and function sizes, the public face.

    python benchmarks/house.py          # prints the figures and whether each meets its limit

The limits are the project's (docs/development/layout.md); tests/test_house.py asserts them
with the same functions. Line counts, not timings: they are exact on any machine.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "inductor_device_options"

MODULE_LINES_LIMIT = 400
FUNCTION_LINES_LIMIT = 60
RUNTIME_LINES_LIMIT = 2500
PUBLIC_NAMES_LIMIT = 22

#: What a process that imports torch runs for a lookup: torch's own device (what every
#: process that compiles pays), and a device a backend registered (the package's door: the
#: validation pipeline loads with the first lookup that needs it).
LOOKUPS = {
    "cpu": "",
    "registered": (
        "import inductor_device_options as ido\n"
        "ido.register_cpp_device_options('housedev', lambda d, a, c: (['HOUSE'], [], [], [], "
        "[], [], []))\n"
    ),
}

_LOADED = """
import json, sys
import torch
import torch._inductor.cpp_builder as cpp_builder
{setup}
cpp_builder.get_cpp_torch_device_options({device!r}, False, False)
loaded = {{
    name: module.__file__
    for name, module in sys.modules.items()
    if name.split(".")[0] == "inductor_device_options" and getattr(module, "__file__", None)
}}
print(json.dumps(loaded))
"""


#: The lookups held to RUNTIME_LINES_LIMIT: the validation pipeline is the package's work
#: for a device it serves, and loads only where one is looked up.
LIMITED_LOOKUPS = ("cpu",)


class Oversized(NamedTuple):
    where: str
    lines: int
    limit: int


def oversized(package: Path = PACKAGE) -> list[Oversized]:
    """Modules over 400 lines and functions over 60 lines, in the package's source."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        where = str(path.relative_to(package.parent))
        lines = len(text.splitlines())
        if lines > MODULE_LINES_LIMIT:
            found.append(Oversized(where, lines, MODULE_LINES_LIMIT))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES_LIMIT:
                    name = f"{where}:{node.lineno} {node.name}"
                    found.append(Oversized(name, length, FUNCTION_LINES_LIMIT))
    return found


def loaded_modules(lookup: str) -> dict[str, int]:
    """The package's modules a fresh ``import torch`` plus one lookup loads, with their line
    counts (``lookup``: a key of :data:`LOOKUPS`)."""
    device = "cpu" if lookup == "cpu" else "housedev"
    code = _LOADED.format(setup=LOOKUPS[lookup], device=device)
    finished = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    files: dict[str, str] = json.loads(finished.stdout.splitlines()[-1])
    return {name: len(Path(file).read_text().splitlines()) for name, file in sorted(files.items())}


def public_names() -> list[str]:
    import inductor_device_options

    return list(inductor_device_options.__all__)


def main() -> int:
    met = True
    for lookup in LOOKUPS:
        modules = loaded_modules(lookup)
        total = sum(modules.values())
        limit = RUNTIME_LINES_LIMIT if lookup in LIMITED_LOOKUPS else None
        met &= limit is None or total <= limit
        print(
            f"import torch + a {lookup} lookup: {total} lines in {len(modules)} modules "
            f"(limit {limit or '-'})"
        )
        for name, lines in modules.items():
            print(f"    {lines:5d}  {name}")
    found = oversized()
    met &= not found
    print(f"over the size limits: {len(found)}")
    for item in found:
        print(f"    {item.where}: {item.lines} lines (limit {item.limit})")
    names = public_names()
    met &= len(names) <= PUBLIC_NAMES_LIMIT
    print(f"public names: {len(names)} (limit {PUBLIC_NAMES_LIMIT})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
