"""The house keeps its shape: sizes, what every process loads, the public face, the rooms'
layers (and the layout page's drawing of them), every module listed on the layout page with
the first sentence of its docstring, and state in one place (the figures:
``python benchmarks/house.py``)."""

from __future__ import annotations
import __future__

import ast
import re
import sys
from pathlib import Path

import pytest
from support import check_python, docs_extension

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
        name for name in names if name.islower() and name not in ("arm", "runpath", "check_value")
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


def test_nothing_outside_the_face_looks_public() -> None:
    """A module is the package itself, one of the FACE, or has a leading ``_`` in its path."""
    modules = list(house.modules())
    face = {PACKAGE.name, *(f"{PACKAGE.name}.{name}" for name in FACE)}
    public_looking = [
        name
        for name in modules
        if name not in face and not any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert public_looking == []
    assert {name for name in modules if name in face} == face  # each face module exists


@pytest.mark.parametrize("room", ["ascend/", "sample/"])
def test_the_model_providers_use_only_the_face(room: str) -> None:
    """ascend/ and sample/ are backends as a user would write them: they import the public
    face (the package's names, ``introspection``, ``testing``) and their own modules,
    nothing behind the face."""
    assert room in house.rooms()
    imported = {end for start, end in house.room_arrows() if start == room}
    assert imported <= {"__init__", "introspection", "testing"}


def test_the_sample_device_needs_no_demo() -> None:
    """The sample is a backend as a user would write one: the demo's harness (which logs a
    compile subprocess's commands to the demo) is hooked in by the autoload entry. Nothing
    the sample imports leads to ``_demo/``, not even further along."""
    assert "sample/" in house.rooms()
    assert "_demo/" not in house.reachable(house.room_arrows(), "sample/")


def test_the_autoload_entry_names_the_sample_s_variable_as_the_sample_does() -> None:
    from inductor_device_options import _autoload, sample

    assert _autoload.SAMPLE_DIR_ENV == sample.SAMPLE_DIR_ENV


def test_every_room_stands_in_one_layer() -> None:
    layered = [name for names in house.LAYERS for name in names]
    assert sorted(layered) == sorted(house.rooms()), "benchmarks/house.py: LAYERS, each room once"


def test_no_room_imports_one_of_its_own_layer_or_a_higher_one() -> None:
    """The layers hold, but for the arrows known to go up (to be taken out: none may come)."""
    upward = house.upward_arrows()
    assert upward == list(house.KNOWN_UPWARD_ARROWS), (
        "an arrow up a layer: turn the import round, or move the room in LAYERS "
        "(benchmarks/house.py); an arrow taken out of the code leaves KNOWN_UPWARD_ARROWS. "
        "`python benchmarks/house.py` lists the arrows up a layer"
    )


def test_the_imports_made_by_name_are_real() -> None:
    """What no import statement shows, and the layers count on: the importer imports the
    module on first use of its attribute, and not before."""
    assert house.LOADED_BY_NAME
    for found in house.LOADED_BY_NAME:
        check_python(
            f"import sys, {found.importer} as importer\n"
            f"assert {found.imported!r} not in sys.modules\n"
            f"importer.{found.imported.rpartition('.')[2]}\n"
            f"assert {found.imported!r} in sys.modules\n"
        )


def _rooms_markdown_of_the_layout_page() -> str:
    ido_docs = docs_extension()
    found = ido_docs.ROOMS_PLACEHOLDER.search((ROOT / "docs/development/layout.md").read_text())
    assert found, "docs/development/layout.md draws the rooms with a {rooms} fence"
    return str(ido_docs.rooms_markdown(house, ido_docs.room_captions(found.group(1))))


def test_the_layout_page_draws_every_room_and_no_more_arrows_than_keep_their_reach() -> None:
    """A solid arrow is an import that runs when its module is imported, a dotted one
    another; solid arrows lead where such imports lead, all arrows where all imports do, and
    taking any drawn arrow away would lose a room it leads to."""
    markdown = _rooms_markdown_of_the_layout_page()
    names = dict(re.findall(r'^    (room_\w+)\["([^ "]+)', markdown, re.MULTILINE))
    assert sorted(names.values()) == sorted(house.rooms())
    drawn: dict[str, set[tuple[str, str]]] = {"-->": set(), "-.->": set()}
    for start, line, end in re.findall(
        r"^    (room_\w+) (\S+) (room_\w+)$", markdown, re.MULTILINE
    ):
        drawn[line].add((names[start], names[end]))
    arrows = house.room_arrows()
    on_import = {arrow for arrow, behind in arrows.items() if house.runs_on_import(behind)}
    solid, everything = drawn["-->"], drawn["-->"] | drawn["-.->"]
    assert solid <= on_import
    assert drawn["-.->"] <= set(arrows) - on_import
    for name in house.rooms():
        assert house.reachable(solid, name) == house.reachable(on_import, name), name
        assert house.reachable(everything, name) == house.reachable(arrows, name), name
    for kind, drawing in (("-->", solid), ("-.->", everything)):
        for arrow in drawn[kind]:
            assert arrow[1] not in house.reachable(drawing - {arrow}, arrow[0]), arrow


def test_the_layout_page_tables_every_room_s_imports_and_the_arrows_up_a_layer() -> None:
    """A row a room, in its layer: the rooms whose imports run when it is imported, then the
    others; under the table, the arrows up a layer, if any."""
    markdown = _rooms_markdown_of_the_layout_page()
    rows = re.findall(r"^\| (\d+) \| `(\S+)` \|(.*)\|(.*)\|$", markdown, re.MULTILINE)
    assert [(name, int(layer)) for layer, name, *_ in rows] == list(house.LAYER_NUMBERS.items())
    tabled = {
        (name, end): column
        for _, name, *cells in rows
        for column, cell in enumerate(cells)
        for end in re.findall(r"`([^`]+)`", cell)
    }
    arrows = house.room_arrows()
    assert tabled == {arrow: int(not house.runs_on_import(arrows[arrow])) for arrow in arrows}
    upward = house.upward_arrows()
    assert ("Up a layer" in markdown) == bool(upward)
    assert all(f"`{start}` → `{end}`" in markdown for start, end in upward)


LAYOUT_PAGE = ROOT / "docs/development/layout.md"
#: Modules without a docstring, which the layout page's list shows as such: each is to be
#: given one, and no other may join them.
WITHOUT_A_DOCSTRING = {
    "__main__.py",
    "_hook/__init__.py",
    "_lookup/__init__.py",
    "_options/__init__.py",
}


def test_the_layout_page_lists_every_module_with_the_first_sentence_of_its_docstring() -> None:
    """The list is made when the site is built (a ``{modules}`` fence): every module under
    src/, once, room by room in the layers' order, and what its docstring says first."""
    ido_docs = docs_extension()
    assert ido_docs.MODULES_PLACEHOLDER.search(LAYOUT_PAGE.read_text()), (
        "docs/development/layout.md lists the modules with a {modules} fence"
    )
    markdown = ido_docs.modules_markdown(house)
    rows = re.findall(r"^\| `([^`]+)` \| (.*) \|$", markdown, re.MULTILINE)
    files = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))
    assert sorted(path for path, _ in rows) == files
    dotted = {path.relative_to(PACKAGE).as_posix(): name for name, path in house.modules().items()}
    rooms = [house.room(dotted[path]) for path, _ in rows]
    # A room in no layer fails test_every_room_stands_in_one_layer.
    layers = [house.LAYER_NUMBERS[name] for name in rooms if name in house.LAYER_NUMBERS]
    assert layers == sorted(layers)
    undocumented = set()
    for path, summary in rows:
        docstring = " ".join(
            (ast.get_docstring(ast.parse((PACKAGE / path).read_text())) or "").split()
        )
        if not docstring:
            undocumented.add(path)
            assert summary == ido_docs.NO_DOCSTRING, path
            continue
        sentence = summary.replace("\\|", "|")
        assert docstring.startswith(sentence) and sentence.endswith("."), (path, summary)
    assert undocumented <= WITHOUT_A_DOCSTRING, "give each new module a docstring"


def test_the_layout_page_names_no_module_that_is_gone() -> None:
    """Every ``.py`` the page names by hand (the reading order, the prose) is a file: a path
    under the package or the repository, or the name of one of the package's modules. A
    module renamed or removed (``sample/device.py``, ``inductor_backend.py``, ``sdk.py``)
    fails here until the page follows."""
    module_names = {path.name for path in PACKAGE.rglob("*.py")}
    named = set(re.findall(r"[\w./-]*\w\.py\b", LAYOUT_PAGE.read_text()))
    gone = sorted(
        name
        for name in named
        if not (PACKAGE / name).is_file()
        and not (ROOT / name).is_file()
        and not ("/" not in name and name in module_names)
    )
    assert gone == []


#: Test files named for what they test rather than for a room: a scenario across rooms, or the
#: project around the package. e2e/ (real compiles) and peers/ (backends we did not write)
#: hold scenarios too.
NOT_A_ROOM_S_TESTS = {
    "test_benchmarks.py": "the benchmark command",
    "test_build.py": "a real build through CppBuilder, every room on the way",
    "test_design_table.py": "the design's validation table, row by row",
    "test_house.py": "the house's shape",
    "test_matrix_legs.py": "CI's torch matrix",
    "test_packaging.py": "the distribution as installed",
    "test_vec_isa_site.py": "the suite's own set-up",
}


def test_a_test_file_is_found_by_the_room_it_tests() -> None:
    """``tests/test_<room>[_<topic>].py``: ``test_hook_cmake.py`` tests ``_hook/``; docs
    tests are ``test_docs_*``."""
    rooms = {name.strip("_/") for name in house.rooms()} | {"docs"}
    unplaced = [
        path.name
        for path in sorted((ROOT / "tests").glob("test_*.py"))
        if path.name not in NOT_A_ROOM_S_TESTS
        and path.stem.removeprefix("test_").split("_")[0] not in rooms
    ]
    assert unplaced == []
    assert all((ROOT / "tests" / name).is_file() for name in NOT_A_ROOM_S_TESTS)


#: The function in ``cpp_builder.get_cpp_torch_device_options`` when the hook went in (torch's
#: own, or a backend's replacement) and what it gives a device: one name each, as in the
#: glossary, and the alias of the answer's type.
NAMES_BELOW = {"function_below", "answer_below", "AnswerBelow"}
#: Retired names of the same two things that contain no "below".
RETIRED_NAMES_BELOW = {"Thunk", "chains_to"}


def _identifiers(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.update(filter(None, (node.name.rpartition(".")[2], node.asname)))
    return found


def test_one_name_for_the_function_below_and_one_for_its_answer() -> None:
    """``answers_below``, ``answer_below_for``, ``offered_answer_below``, ``below``,
    ``Thunk``... are gone. ``chains_to`` stays only as schema v1's key in ``list --json``."""
    named = {
        name
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in _identifiers(ast.parse(path.read_text()))
        if "below" in name.lower() or name in RETIRED_NAMES_BELOW
    }
    assert named <= NAMES_BELOW
    old_key = [
        (path.relative_to(PACKAGE).as_posix(), line)
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in path.read_text().splitlines()
        if "chains_to" in line
    ]
    assert [where for where, _ in old_key] == ["_cli/listing.py"]
    assert re.search(r'"chains_to":.*#.*\bv1\b.*\bearlier name\b', old_key[0][1])


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


def _source_records() -> dict[str, ast.ClassDef]:
    """The classes that record where a device's options come from: fields naming a device
    (or a source) beside its kind, description or provider."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                fields = {
                    statement.target.id
                    for statement in node.body
                    if isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                }
                if fields & {"kind", "description", "provider"} and fields & {
                    "device_type",
                    "source",
                }:
                    found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = node
    return found


def test_one_record_of_where_a_device_s_options_come_from_and_the_provider_beside_it() -> None:
    records = _source_records()
    assert sorted(records) == ["_source.py:DeviceOptionsSource", "_source.py:FoundSource"]
    for node in records.values():  # immutable: a loaded entry point is a new record
        frozen = [
            keyword.value
            for decorator in node.decorator_list
            if isinstance(decorator, ast.Call)
            for keyword in decorator.keywords
            if keyword.arg == "frozen"
        ]
        assert [ast.literal_eval(value) for value in frozen] == [True], node.name
