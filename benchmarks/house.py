"""The house's figures: what every process loads, module and function sizes, the public face,
the rooms' imports, every module with the first sentence of its docstring.

    python benchmarks/house.py          # prints the figures and whether each meets its limit

The limits are the project's (docs/development/layout.md); tests/test_house.py asserts them
with the same functions. Line counts, not timings: they are exact on any machine. The layout
page's diagram of the rooms is drawn from :func:`room_arrows`, and its list of modules from
:func:`module_summaries`, when the docs are built.
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "inductor_device_options"

MODULE_LINES_LIMIT = 400
FUNCTION_LINES_LIMIT = 60
RUNTIME_LINES_LIMIT = 1800
PUBLIC_NAMES_LIMIT = 23

#: The rooms (subpackages with a ``/``, top-level modules, and ``__init__``: the package's
#: face), from the top layer down. A room imports rooms of lower layers only, never one of
#: its own layer or a higher one. ``introspection`` and ``testing`` sit below ``__init__``,
#: which loads them on first use (:data:`LOADED_BY_NAME`).
LAYERS = (
    ("__main__", "_autoload"),
    ("_cli/",),
    ("_demo/", "_diagnose/"),
    ("ascend/", "sample/"),
    ("__init__",),
    ("introspection", "testing"),
    ("_defaults",),  # a provider's question, answered from above the rooms a lookup runs in
    ("_hook/",),
    ("_lookup/",),
    ("_options/",),
    ("_fs",),  # its one cache is made by _state.cached, so that the one reset reaches it
    ("_errors", "_state", "_torch_names"),
    ("_source",),  # the records _state holds, typed
)
#: Each room's layer, numbered from 1 at the top.
LAYER_NUMBERS = {name: number for number, names in enumerate(LAYERS, 1) for name in names}
#: Arrows that go up a layer today, each to be taken out of the code and then out of here;
#: no other may come.
KNOWN_UPWARD_ARROWS: tuple[tuple[str, str], ...] = ()

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


def code_lines(text: str) -> int:
    """The lines of ``text`` that hold code: comments, docstrings and blank lines left out
    (the house asks for comments that say why; they cost a process nothing it runs)."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    ignored = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    ignored |= {tokenize.ENCODING, tokenize.ENDMARKER}
    holding: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in ignored:
            holding.update(range(token.start[0], token.end[0] + 1))
    return len(holding - docstrings)


def loaded_modules(lookup: str) -> dict[str, int]:
    """The package's modules a fresh ``import torch`` plus one lookup loads, with their
    lines of code (:func:`code_lines`; ``lookup``: a key of :data:`LOOKUPS`)."""
    device = "cpu" if lookup == "cpu" else "housedev"
    code = _LOADED.format(setup=LOOKUPS[lookup], device=device)
    finished = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    files: dict[str, str] = json.loads(finished.stdout.splitlines()[-1])
    return {name: code_lines(Path(file).read_text()) for name, file in sorted(files.items())}


def public_names() -> list[str]:
    import inductor_device_options

    return list(inductor_device_options.__all__)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """The package's modules by dotted name (a package by its own name, not ``.__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


#: The end of a docstring's first sentence: a full stop before a space or the end.
_SENTENCE_END = re.compile(r"\.(?=\s|$)")


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ("" where it has none)."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    found = _SENTENCE_END.search(paragraph)
    return paragraph[: found.end()] if found else paragraph


def module_summaries(package: Path = PACKAGE) -> dict[str, str]:
    """Every module's path in the package (``_hook/chain.py``) and the first sentence of its
    docstring: the layout page's list of modules. Rooms in :data:`LAYERS` order, from the
    top; in a room, its ``__init__.py`` first."""
    paths = modules(package)

    def place(name: str) -> tuple[int, str, bool, str]:
        path, its_room = paths[name], room(name, package)
        layer = LAYER_NUMBERS.get(its_room, len(LAYERS) + 1)
        return layer, its_room, path.name != "__init__.py", str(path)

    return {
        paths[name].relative_to(package).as_posix(): first_sentence(paths[name])
        for name in sorted(paths, key=place)
    }


class Import(NamedTuple):
    """A module of the package importing another: when the module is imported, at the first
    call of a function (``lazy``), or for the type checker alone (``typing_only``: under
    ``if TYPE_CHECKING:``, never run)."""

    importer: str
    imported: str
    lazy: bool
    typing_only: bool


#: Imports made by name (``importlib``), which no import statement shows: ``ido.introspection``
#: and ``ido.testing`` load their module on first use.
LOADED_BY_NAME = tuple(
    Import("inductor_device_options", f"inductor_device_options.{name}", True, False)
    for name in ("introspection", "testing")
)


TYPE_CHECKING_TESTS = ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _import_statements(
    nodes: Iterable[ast.AST], lazy: bool = False, typing_only: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, lazy, typing_only
        elif isinstance(node, ast.If) and ast.unparse(node.test) in TYPE_CHECKING_TESTS:
            yield from _import_statements(node.body, lazy, True)
            yield from _import_statements(node.orelse, lazy, typing_only)
        else:
            in_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _import_statements(
                ast.iter_child_nodes(node), lazy or in_function, typing_only
            )


def _imported(
    statement: ast.Import | ast.ImportFrom, here: str, known: Collection[str]
) -> set[str]:
    """The package's modules a statement in package ``here`` imports: ``from m import n`` is
    m's submodule n where there is one, else m (n is a name m defines)."""
    if isinstance(statement, ast.Import):
        return {alias.name for alias in statement.names if alias.name in known}
    base = here
    for _ in range(statement.level - 1):
        base = base.rpartition(".")[0]
    module = statement.module or ""
    if statement.level:
        module = f"{base}.{module}" if module else base
    named = {f"{module}.{alias.name}" for alias in statement.names}
    return {name if name in known else module for name in named} & set(known)


def imports(package: Path = PACKAGE) -> list[Import]:
    """Every import of one of the package's modules by another, at the top of a module or
    in a function, made for the type checker alone or not, or by name."""
    known = modules(package)
    found = [item for item in LOADED_BY_NAME if {item.importer, item.imported} <= set(known)]
    for name, path in known.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        for statement, lazy, typing_only in _import_statements(tree.body):
            for imported in sorted(_imported(statement, here, known) - {name}):
                found.append(Import(name, imported, lazy, typing_only))
    return found


def room(module: str, package: Path = PACKAGE) -> str:
    """The room a module is in: its subpackage (``_hook/``), itself where it is a top-level
    module (``_state``), or ``__init__`` for the package itself."""
    top = module.split(".")[1:2]
    if not top:
        return "__init__"
    return f"{top[0]}/" if (package / top[0]).is_dir() else top[0]


def rooms(package: Path = PACKAGE) -> set[str]:
    return {room(name, package) for name in modules(package)}


def room_arrows(package: Path = PACKAGE) -> dict[tuple[str, str], list[Import]]:
    """(importing room, imported room): the imports between their modules behind the arrow."""
    arrows: dict[tuple[str, str], list[Import]] = {}
    for found in imports(package):
        start, end = room(found.importer, package), room(found.imported, package)
        if start != end:
            arrows.setdefault((start, end), []).append(found)
    return dict(sorted(arrows.items()))


def reachable(arrows: Collection[tuple[str, str]], start: str) -> set[str]:
    """The rooms the arrows lead to from ``start``, directly or further along."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        here = todo.pop()
        for importer, imported in arrows:
            if importer == here and imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return seen


def fewest_arrows(
    arrows: Collection[tuple[str, str]], given: Collection[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """The arrows left once each one a path of the others (or of ``given``) implies is taken
    out, one by one: every room still leads to the same rooms (the transitive reduction)."""
    kept = sorted(arrows)
    for arrow in sorted(arrows):
        others = [other for other in kept if other != arrow]
        if arrow[1] in reachable([*others, *given], arrow[0]):
            kept = others
    return kept


class Drawing(NamedTuple):
    """The arrows a diagram of the rooms draws: ``solid``, imports that run when the importing
    module is imported; ``dotted``, those that run later (in a function, or by name) or
    never (for the type checker alone). A solid arrow a solid path implies is left out, and
    a dotted one any path implies."""

    solid: list[tuple[str, str]]
    dotted: list[tuple[str, str]]


def runs_on_import(behind: Iterable[Import]) -> bool:
    """Whether one of the imports behind an arrow runs when its module is imported."""
    return any(not found.lazy and not found.typing_only for found in behind)


def drawing(arrows: dict[tuple[str, str], list[Import]]) -> Drawing:
    on_import = [arrow for arrow, behind in arrows.items() if runs_on_import(behind)]
    later = [arrow for arrow in arrows if arrow not in on_import]
    solid = fewest_arrows(on_import)
    return Drawing(solid, fewest_arrows(later, given=solid))


def upward_arrows(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """The arrows from a room to one of its own layer or a higher one (:data:`LAYERS`)."""
    unlayered = rooms(package) - set(LAYER_NUMBERS)
    if unlayered:
        raise ValueError(f"rooms in no layer: {sorted(unlayered)}; add them to LAYERS ({__file__})")
    return [
        (start, end)
        for start, end in room_arrows(package)
        if LAYER_NUMBERS[end] <= LAYER_NUMBERS[start]
    ]


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
    upward = upward_arrows()
    met &= upward == list(KNOWN_UPWARD_ARROWS)
    print(
        f"arrows between rooms: {len(room_arrows())}; up a layer: {len(upward)} (limit: the known)"
    )
    for start, end in upward:
        print(f"    {start} -> {end}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
