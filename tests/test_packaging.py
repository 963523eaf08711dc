"""The distribution as pip installed it (from the wheel in the torch matrix, editable in a
checkout): its version is the package's, and the license travels with it."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import inductor_device_options as ido

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import house  # noqa: E402

DISTRIBUTION = "inductor-device-options"
PYPROJECT = ROOT / "pyproject.toml"


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
    """Which of the package's modules each module imports (at the top, in a function, by
    name, or for the type checker alone), as installed."""
    package = Path(ido.__file__).parent
    graph: dict[str, set[str]] = {name: set() for name in house.modules(package)}
    for found in house.imports(package):
        graph[found.importer].add(found.imported)
    return graph


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    """No import cycle, lazy imports inside functions and the package's own ``__init__``
    included."""
    graph = _imports_between_modules()
    assert "inductor_device_options._options.rendering" in graph  # the walk found the modules
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        for imported in sorted(graph[name]):
            if imported in path:
                cycles.append([*path[path.index(imported) :], imported])
            else:
                visit(imported, [*path, imported])

    for name in sorted(graph):
        visit(name, [name])
    assert cycles == []
