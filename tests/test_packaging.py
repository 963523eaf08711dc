"""The distribution as pip installed it (from the wheel in the torch matrix, editable in a
checkout): its version is the package's, and the license travels with it."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import inductor_device_options as ido

DISTRIBUTION = "inductor-device-options"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_the_version_is_written_once_in_the_package() -> None:
    project = PYPROJECT.read_text().split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert re.search(r"^version\s*=", project, re.MULTILINE) is None
    assert re.search(r'^dynamic = \["version"\]', project, re.MULTILINE)
    assert importlib.metadata.version(DISTRIBUTION) == ido.__version__


def test_the_license_is_installed_with_the_distribution() -> None:
    assert importlib.metadata.metadata(DISTRIBUTION)["License-Expression"] == "BSD-3-Clause"
    licenses = [f for f in importlib.metadata.files(DISTRIBUTION) or [] if f.name == "LICENSE"]
    assert len(licenses) == 1, importlib.metadata.files(DISTRIBUTION)
    assert licenses[0].read_text().startswith("BSD 3-Clause License\n")


def _imports_between_modules() -> dict[str, set[str]]:
    """Which of the package's modules each module imports (at the top or in a function)."""
    import ast

    package = Path(ido.__file__).parent
    modules = {
        ".".join(path.relative_to(package.parent).with_suffix("").parts): path
        for path in package.rglob("*.py")
    }
    modules = {name.removesuffix(".__init__"): path for name, path in modules.items()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (
                    (f"{base}.{node.module}" if node.module else base)
                    if node.level
                    else (node.module or "")
                )
                candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            imported.update(c for c in candidates if c in modules and c != name)
        graph[name] = imported
    return graph


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    """No import cycle, lazy imports inside functions included."""
    graph = _imports_between_modules()
    assert "inductor_device_options._options.rendering" in graph  # the walk found the modules
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        for imported in sorted(graph[name]):
            if imported in path:
                cycles.append([*path[path.index(imported) :], imported])
            elif imported != "inductor_device_options":  # the package itself: its __init__
                visit(imported, [*path, imported])

    for name in sorted(graph):
        if name != "inductor_device_options":
            visit(name, [name])
    assert cycles == []
