"""The house keeps its shape: sizes, what every process loads, the public face, the rooms'
directions, and state in one place (the figures: ``python benchmarks/house.py``)."""

from __future__ import annotations
import __future__

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import house  # noqa: E402

PACKAGE = house.PACKAGE
#: Rooms a lookup never needs: none of them may load in a process that only imports torch
#: and looks up a device.
NOT_RUNTIME = ("sample", "_demo", "_diagnose", "_cli", "ascend", "introspection", "testing")
#: What a user may import: the package and these modules. Every other module has a leading
#: ``_`` in its path (pluggy's line between the face and the house).
FACE = ("introspection", "testing", "ascend", "sample")


def test_no_module_over_400_lines_and_no_function_over_60() -> None:
    assert house.oversized() == []


@pytest.mark.parametrize("lookup", sorted(house.LOOKUPS))
def test_import_torch_and_a_lookup_load_a_small_runtime(lookup: str) -> None:
    modules = house.loaded_modules(lookup)
    rooms = {name.split(".")[1] for name in modules if name.count(".") >= 1}
    assert not rooms & set(NOT_RUNTIME), sorted(rooms & set(NOT_RUNTIME))
    if lookup in house.LIMITED_LOOKUPS:
        assert sum(modules.values()) <= house.RUNTIME_LINES_LIMIT, modules


def test_the_public_face_is_small_and_every_name_is_listed() -> None:
    import inductor_device_options as ido

    names = house.public_names()
    assert len(names) <= house.PUBLIC_NAMES_LIMIT
    # Every public attribute is in __all__: no name leaks in by being imported.
    leaked = {
        name
        for name, value in vars(ido).items()
        if not name.startswith("_")
        and not isinstance(value, (type(ido), type(__future__.annotations)))
    } - set(names)
    assert leaked == set()
    functions = [
        name for name in names if name.islower() and name not in ("arm", "runpath", "value_problem")
    ]
    assert all(name.endswith("_cpp_device_options") for name in functions), functions


def _module_level_state(path: Path) -> list[str]:
    """Module-level names bound to state: a list, dict or set (written out or made), or a
    thread-local. Constants (UPPER_CASE names, ``__all__``) and the caches ``_state.cache``
    makes are not."""
    tree = ast.parse(path.read_text())
    thread_locals = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base) in ("threading.local", "local") for base in node.bases)
    }
    makers = {"dict", "list", "set", "threading.local", "local", *thread_locals}
    containers = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    found = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = [target.id for target in targets if isinstance(target, ast.Name)]
        if all(name.isupper() or name.startswith("__") for name in names):
            continue
        made = isinstance(value, ast.Call) and ast.unparse(value.func) in makers
        if isinstance(value, containers) or made:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {', '.join(names)}")
    return found


def _imported_modules(path: Path) -> set[str]:
    """The package modules ``path`` imports, by full name (relative imports resolved)."""
    package = ".".join(("inductor_device_options", *path.relative_to(PACKAGE).parent.parts))
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("inductor_device_options")}


def _dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join((PACKAGE.name, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def test_nothing_outside_the_face_looks_public() -> None:
    """A module is the package itself, one of the FACE, or has a leading ``_`` in its path."""
    modules = [_dotted(path) for path in sorted(PACKAGE.rglob("*.py"))]
    face = {PACKAGE.name, *(f"{PACKAGE.name}.{name}" for name in FACE)}
    public_looking = [
        name
        for name in modules
        if name not in face and not any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert public_looking == []
    assert {name for name in modules if name in face} == face  # each face module exists


@pytest.mark.parametrize("room", ["ascend", "sample"])
def test_the_model_providers_use_only_the_face(room: str) -> None:
    """ascend/ and sample/ are backends as a user would write them: they import the public
    face (the package's names, ``introspection``, ``testing``) and their own modules,
    nothing behind the face. The sample needs no demo either: the demo's harness (which logs
    a compile subprocess's commands) is hooked in by the autoload entry."""
    import inductor_device_options

    face = {PACKAGE.name, *(f"{PACKAGE.name}.{name}" for name in inductor_device_options.__all__)}
    whole = tuple(f"{PACKAGE.name}.{name}" for name in ("introspection", "testing", room))
    assert (PACKAGE / room).is_dir()
    behind_the_face = {
        str(path.relative_to(PACKAGE)): sorted(
            name
            for name in _imported_modules(path)
            if name not in face and not any(name == w or name.startswith(f"{w}.") for w in whole)
        )
        for path in sorted((PACKAGE / room).rglob("*.py"))
    }
    assert {path: names for path, names in behind_the_face.items() if names} == {}


def test_state_lives_in_one_place() -> None:
    outside = [
        where
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_state.py"
        for where in _module_level_state(path)
    ]
    assert outside == []


def test_the_one_reset_forgets_registrations_guarantees_and_caches() -> None:
    import inductor_device_options as ido
    from inductor_device_options import _state, testing

    ido.register_cpp_device_options("housedev", lambda d, a, c: (["H"], [], [], [], [], [], []))
    ido.guarantee_cpp_device_options("houseguarded")
    assert ido.get_cpp_device_options("housedev").definitions[0] == "H"
    testing.reset()
    assert "housedev" not in _state.registered
    assert "houseguarded" not in _state.guaranteed
    assert all(len(cache) == 0 for cache in _state._caches)
    assert ido.get_cpp_device_options("housedev").definitions[:1] != ["H"]


def test_the_one_reset_forgets_what_the_ascend_provider_found() -> None:
    from inductor_device_options import ascend, testing
    from inductor_device_options.ascend import _cann, _provider, _torch_npu

    caches = (_cann.searched, _torch_npu.searched, _provider.npu_options, _provider.merged)
    with testing.stand_in_ascend():
        ascend.cpp_device_options("npu")
        assert all(cache.cache_info().currsize == 1 for cache in caches)
        testing.reset()
        assert [cache.cache_info().currsize for cache in caches] == [0, 0, 0, 0]


def test_every_cache_is_bounded() -> None:
    from inductor_device_options import _state

    cache = _state.cache(3)
    for key in range(10):
        cache.put(key, key)
    assert list(cache) == [7, 8, 9]
    assert all(made.limit > 0 for made in _state._caches)


def test_diagnose_computes_and_never_prints() -> None:
    printing = []
    assert (PACKAGE / "_diagnose").is_dir()
    for path in sorted((PACKAGE / "_diagnose").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            prints = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            )
            writes = (
                isinstance(node, ast.Attribute)
                and node.attr in ("stdout", "stderr")
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            )
            if prints or writes:
                printing.append(f"{path.name}:{node.lineno}")
    assert printing == []
