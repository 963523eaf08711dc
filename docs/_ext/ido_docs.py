"""The Sphinx extension of these docs.

* The command-line reference, generated. A page holds an empty ``{cli-reference}`` fence;
  when Sphinx reads the page, the fence is replaced by Markdown made from the real argparse
  parser, ``inductor_device_options._cli.build_parser()``: every command, its usage line as
  argparse prints it, and every argument with its help. Nothing of it is written by hand,
  so it cannot drift from the code.
* The rooms' imports, drawn. A page holds a ``{rooms}`` fence whose lines caption rooms
  (``_cli/: prints``); when Sphinx reads the page, the fence is replaced by a Mermaid diagram
  and a table of the imports between the package's rooms, computed from its source by
  ``benchmarks/house.py`` (which ``tests/test_house.py`` holds to the layers). The page is
  read again whenever a module of the package changes.
* Every module, listed. A page holds an empty ``{modules}`` fence; when Sphinx reads the
  page, it is replaced by a table of the package's modules, room by room, each with the
  first sentence of its docstring (``benchmarks/house.py``'s ``module_summaries``): the
  docstrings are the record, and the list cannot miss a module or name one that is gone.
* Constants under their public name. A constant re-exported by ``inductor_device_options``
  (``ENTRY_POINT_GROUP``) has its ``#:`` comment in the private module that defines it;
  autodoc, documenting it under the public name, would show the docstring of its type
  (``str``'s) instead. The comment of the defining module is shown.
* Diagrams drawn by the site's own Mermaid, even from disk. sphinxcontrib-mermaid's script
  is a module that imports Mermaid from ``mermaid_use_local``; a page opened as a file
  (``file://``) may import no module file (Chromium refuses: a file has no origin to allow
  it). So the page loads the site's copy as a classic script, and the import takes what it
  defined from a ``data:`` URL, which any page may import. The pages Sphinx generates
  (search, the index) hold no diagram and load no Mermaid.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

#: The first line of sphinxcontrib-mermaid's script (its ``default.js.j2``).
MERMAID_IMPORT = re.compile(r'^import mermaid from "[^"]*";')
#: A module whose default export is the Mermaid that the classic script defined.
MERMAID_FROM_THE_PAGE = (
    'import mermaid from "data:text/javascript,export default globalThis.mermaid;";'
)
PLACEHOLDER = re.compile(r"^```\{cli-reference\}\n```\n", re.MULTILINE)
ROOMS_PLACEHOLDER = re.compile(r"^```\{rooms\}\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
MODULES_PLACEHOLDER = re.compile(r"^```\{modules\}\n```\n", re.MULTILINE)
HOUSE = Path(__file__).resolve().parents[2] / "benchmarks" / "house.py"
#: What the list of modules says of a module without a docstring.
NO_DOCSTRING = "(no docstring)"
#: argparse wraps usage lines at the terminal's width; the docs use a fixed one.
USAGE_WIDTH = "88"


@contextmanager
def _fixed_width() -> Iterator[None]:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = USAGE_WIDTH
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each sub-command, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return found


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return str(action.metavar or action.dest)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    return ", ".join(f"{option} {metavar}" for option in action.option_strings)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        what = action.help or ""
        if isinstance(action, argparse._VersionAction):
            what = what or "print the version and exit"
        default = action.default
        if default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
            what += f" (default: `{default}`)"
        rows.append(f"| `{_argument(action)}` | {_cell(what)} |")
    if not rows:
        return []
    return ["| argument | what it does |", "|---|---|", *rows, ""]


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    with _fixed_width():
        usage = parser.format_usage().rstrip()
    return ["```text", usage, "```", ""]


def cli_reference_markdown(parser: argparse.ArgumentParser, level: int = 2) -> str:
    """The reference of ``parser`` and each of its sub-commands, as MyST Markdown."""
    heading = "#" * level
    lines = [f"{heading} `{parser.prog}`", "", *_usage(parser)]
    if parser.description:
        lines += [_cell(parser.description), ""]
    lines += _arguments_table(parser)
    if parser.epilog:
        lines += [_cell(parser.epilog), ""]
    for name, help_text, sub in _subcommands(parser):
        lines += [f"{heading}# `{parser.prog} {name}`", ""]
        if help_text:
            lines += [_cell(help_text[:1].upper() + help_text[1:]) + ".", ""]
        lines += _usage(sub)
        lines += _arguments_table(sub)
    return "\n".join(lines) + "\n"


def _replace_placeholder(app: Any, docname: str, source: list[str]) -> None:
    if not PLACEHOLDER.search(source[0]):
        return
    from inductor_device_options import _cli as cli

    generated = cli_reference_markdown(cli.build_parser())
    source[0] = PLACEHOLDER.sub(lambda _: generated, source[0])


def load_house() -> ModuleType:
    """``benchmarks/house.py``: the rooms, their layers and their imports."""
    spec = importlib.util.spec_from_file_location("house", HOUSE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mermaid(house: ModuleType, layers: dict[str, int], captions: dict[str, str]) -> list[str]:
    ids = {name: "room_" + re.sub(r"\W", "", name) for name in layers}
    lines = ["```{mermaid}", "flowchart LR"]
    for name in layers:
        label = f"{name} ({captions[name]})" if name in captions else name
        lines.append(f'    {ids[name]}["{label.replace(chr(34), "#quot;")}"]')
    drawn = house.drawing(house.room_arrows())
    lines += [f"    {ids[start]} --> {ids[end]}" for start, end in drawn.solid]
    lines += [f"    {ids[start]} -.-> {ids[end]}" for start, end in drawn.dotted]
    upward = set(house.upward_arrows())
    for number, arrow in enumerate([*drawn.solid, *drawn.dotted]):
        if arrow in upward:
            lines.append(f"    linkStyle {number} stroke:#d33,color:#d33")
    return [*lines, "```", ""]


def _imports_table(house: ModuleType, layers: dict[str, int]) -> list[str]:
    arrows = house.room_arrows()
    lines = [
        "| layer | room | imports that run when it is imported | the others: in a function, by "
        "name, or for types |",
        "|---|---|---|---|",
    ]
    for name, layer in layers.items():
        mine = {end: behind for (start, end), behind in arrows.items() if start == name}
        cells = ["", ""]
        for end in sorted(mine, key=lambda end: (layers[end], end)):
            on_import = house.runs_on_import(mine[end])
            types = " (types)" if all(found.typing_only for found in mine[end]) else ""
            cell = 0 if on_import else 1
            cells[cell] += f"{', ' if cells[cell] else ''}`{end}`{types}"
        lines.append(f"| {layer} | `{name}` | {cells[0]} | {cells[1]} |")
    return [*lines, ""]


def rooms_markdown(house: ModuleType, captions: dict[str, str]) -> str:
    """The rooms' imports as MyST Markdown: a diagram of the fewest arrows (``house.drawing``),
    a table of every room's imports by layer, and the arrows that go up a layer, if any."""
    layers = house.LAYER_NUMBERS
    unknown = sorted(set(captions) - set(layers))
    if unknown:
        raise ValueError(f"captions of rooms that are not in benchmarks/house.py: {unknown}")
    lines = [*_mermaid(house, layers, captions), *_imports_table(house, layers)]
    upward = ", ".join(f"`{start}` → `{end}`" for start, end in house.upward_arrows())
    if upward:
        lines.append(f"Up a layer, to be taken out of the code: {upward}.\n")
    return "\n".join(lines)


def room_captions(fence_body: str) -> dict[str, str]:
    """The captions a ``{rooms}`` fence gives, one ``room: caption`` a line."""
    captions = {}
    for line in filter(str.strip, fence_body.splitlines()):
        name, _, caption = line.partition(":")
        captions[name.strip()] = caption.strip()
    return captions


def _replace_rooms_placeholder(app: Any, docname: str, source: list[str]) -> None:
    found = ROOMS_PLACEHOLDER.search(source[0])
    if not found:
        return
    house = load_house()
    # Read again, on an incremental build, whenever an import may have changed.
    for path in (HOUSE, *house.modules().values()):
        app.env.note_dependency(str(path))
    generated = rooms_markdown(house, room_captions(found.group(1)))
    source[0] = source[0][: found.start()] + generated + source[0][found.end() :]


def modules_markdown(house: ModuleType) -> str:
    """Every module of the package as a MyST table: its path under the package and the first
    sentence of its docstring, rooms in layer order (``house.module_summaries``)."""
    lines = ["| module | the first sentence of its docstring |", "|---|---|"]
    for path, summary in house.module_summaries().items():
        lines.append(f"| `{path}` | {_cell(summary) or NO_DOCSTRING} |")
    return "\n".join([*lines, ""]) + "\n"


def _replace_modules_placeholder(app: Any, docname: str, source: list[str]) -> None:
    found = MODULES_PLACEHOLDER.search(source[0])
    if not found:
        return
    house = load_house()
    # Read again, on an incremental build, whenever a module or its docstring may have changed.
    for path in (HOUSE, *house.modules().values()):
        app.env.note_dependency(str(path))
    source[0] = source[0][: found.start()] + modules_markdown(house) + source[0][found.end() :]


def defining_doc_comment(module_name: str, attribute: str, value: object) -> list[str] | None:
    """The ``#:`` comment of ``attribute`` in the package's module that defines ``value``."""
    from sphinx.pycode import ModuleAnalyzer

    package = importlib.import_module(module_name.split(".")[0])
    # The modules the package imported itself: where a re-exported value was defined.
    prefix = package.__name__ + "."
    for name, module in sorted(sys.modules.items()):
        if not name.startswith(prefix) or getattr(module, attribute, None) is not value:
            continue
        comments = ModuleAnalyzer.for_module(name).find_attr_docs()
        if ("", attribute) in comments:
            return list(comments[("", attribute)])
    return None


def _data_docstring(
    app: Any, what: str, name: str, obj: object, options: Any, lines: list[str]
) -> None:
    type_doc = type(obj).__doc__
    if what != "data" or not type_doc or lines[:1] != inspect.cleandoc(type_doc).splitlines()[:1]:
        return
    module_name, _, attribute = name.rpartition(".")
    lines[:] = defining_doc_comment(module_name, attribute, obj) or []


def _mermaid_from_the_site(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    site_copy = app.config.mermaid_use_local
    scripts = context.get("script_files", [])
    module = next(
        (js for js in scripts if MERMAID_IMPORT.match(js.attributes.get("body") or "")), None
    )
    if not site_copy or module is None:
        return
    scripts.remove(module)
    if doctree is None:  # a page Sphinx generates (search, index): it holds no diagram
        return
    body = MERMAID_IMPORT.sub(lambda _: MERMAID_FROM_THE_PAGE, module.attributes["body"], count=1)
    # Added on html-page-context, both are this page's alone, as sphinxcontrib-mermaid's was.
    # Deferred, the 2.7 MB script holds up no rendering, and still runs before the module.
    app.add_js_file(site_copy, priority=module.priority, defer="defer")
    app.add_js_file(None, priority=module.priority, **{**module.attributes, "body": body})


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _replace_placeholder)
    app.connect("source-read", _replace_rooms_placeholder)
    app.connect("source-read", _replace_modules_placeholder)
    app.connect("autodoc-process-docstring", _data_docstring)
    # After sphinxcontrib-mermaid's own handler (priority 500), which adds its script.
    app.connect("html-page-context", _mermaid_from_the_site, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
