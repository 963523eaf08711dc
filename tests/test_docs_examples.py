"""Every Python and shell example of README.md and docs/ runs, and its output is checked.

The convention (written for authors in docs/development/docs.md):

* Every fence names its language. ``python``, ``bash`` and ``console`` blocks are
  examples, and each one runs, unless the line right before it is
  ``<!-- not-run: REASON -->``, REASON saying why it cannot run here and what runs it
  instead. (Other spellings of those languages -- ``sh``, ``py``, ``pycon``... -- are refused,
  so that no example escapes by its spelling.)
* ``python``: runs in the page's namespace, top to bottom. A block that starts with ``>>>`` is
  a doctest: the output it shows is checked (``...`` matches anything, whitespace is
  normalised). A block whose first line is ``# file: NAME`` is the file NAME: it is written
  into the page's directory, for the blocks and commands after it to import.
* ``bash``: one script, run by ``bash -e -o pipefail``; it must exit 0.
* ``console``: ``$ `` lines are commands (a line ending in a backslash continues on the
  next), the lines after each one its output on stdout (``...`` matches anything; write
  ``2>&1`` to show stderr too). The block's commands run in one bash. A command must exit
  0, unless the next command is ``echo $?``, which prints its exit status.
* A page is one terminal session and one Python session, in a directory of its own: what a
  shell block exports or ``cd``s into holds for every block after it, Python included.
  ``HOME`` and ``TMPDIR`` are the page's own; the venv's ``bin`` is first on ``PATH``.
  Registrations, environment, working directory, ``sys.path`` and the modules a page wrote
  are restored after it; a page that leaves a function adopted into the hook's chain fails.
"""

from __future__ import annotations

import difflib
import doctest
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from support import NATIVE
from sybil import Document, Example, Region, Sybil
from sybil.document import PythonDocStringDocument
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.abstract import DocTestStringParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer
from sybil.parsers.myst import CodeBlockParser
from sybil.parsers.rest import DocTestParser

import inductor_device_options

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *(
            path
            for path in (ROOT / "docs").rglob("*.md")
            if not {"_build", "_generated", "_shared"} & set(path.relative_to(ROOT / "docs").parts)
        ),
    ]
)

RUNNABLE = ("python", "bash", "console")
#: Other names of the runnable languages: refused, so that every example runs.
ALIASES = {
    "py": "python",
    "python3": "python",
    "pycon": "python",
    "ipython": "python",
    "sh": "bash",
    "shell": "bash",
    "zsh": "bash",
    "shell-session": "console",
    "{code}": "a plain fence",
    "{code-block}": "a plain fence",
    "{code-cell}": "a plain fence",
    "{sourcecode}": "a plain fence",
}
NOT_RUN = re.compile(r"<!--\s*not-run:(?P<reason>.*?)-->[ \t]*\n\Z", re.DOTALL)
FILE_BLOCK = re.compile(r"\A# file: (?P<name>[\w./-]+)\n")
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def not_run_reason(text: str, fence_start: int) -> str | None:
    """The reason of a ``not-run`` marker on the line right before the fence, or None."""
    before = text[:fence_start]
    opening = before.rfind("<!--")
    if opening < 0:
        return None
    marker = NOT_RUN.match(before, opening)
    return marker.group("reason").strip() if marker else None


# --- running a page -------------------------------------------------------------------------


class Page:
    """One page's terminal session: its directory, environment and working directory."""

    IGNORED_VARIABLES = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})

    def __init__(self, directory: Path):
        self.directory = directory

    def run_bash(
        self, script: str, *, strict: bool, merge_stderr: bool
    ) -> subprocess.CompletedProcess[str]:
        """Run ``script`` in bash in the current directory and environment, then take over
        the variables it exported and the directory it ended in."""
        with tempfile.TemporaryDirectory(dir=self.directory / ".state") as state:
            env_file, cwd_file = Path(state, "env"), Path(state, "cwd")
            prologue = (
                f"trap 'env -0 > {shlex.quote(str(env_file))}; "
                f"pwd > {shlex.quote(str(cwd_file))}' EXIT\n"
                + ("exec 2>&1\n" if merge_stderr else "")
            )
            options = ["-e", "-o", "pipefail"] if strict else ["-o", "pipefail"]
            finished = subprocess.run(
                ["bash", *options, "-c", prologue + script],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if env_file.is_file() and cwd_file.is_file():
                self._take_over(env_file.read_text(), cwd_file.read_text().rstrip("\n"))
        return finished

    def _take_over(self, environment: str, cwd: str) -> None:
        exported = dict(entry.split("=", 1) for entry in environment.split("\0") if "=" in entry)
        for name in set(os.environ) - set(exported) - self.IGNORED_VARIABLES:
            del os.environ[name]
        for name, value in exported.items():
            if name not in self.IGNORED_VARIABLES and os.environ.get(name) != value:
                os.environ[name] = value
        tempfile.tempdir = None
        os.chdir(cwd)


@contextmanager
def page_session(directory: Path) -> Iterator[Page]:
    """A fresh directory, HOME and TMPDIR for the page; everything restored afterwards."""
    saved_environment = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    for name in ("home", "tmp", ".state"):
        (directory / name).mkdir()
    os.environ.update(
        HOME=str(directory / "home"),
        TMPDIR=str(directory / "tmp"),
        PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    )
    os.environ.pop("XDG_CACHE_HOME", None)
    os.environ.pop("NO_COLOR", None)
    tempfile.tempdir = None
    os.chdir(directory)
    sys.path.insert(0, str(directory))
    try:
        yield Page(directory)
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_environment)
        tempfile.tempdir = None
        for name in set(sys.modules) - saved_modules:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(str(directory)):
                del sys.modules[name]


def _page(example: Example) -> Page:
    page: Page = example.namespace["__page__"]
    return page


def write_file(example: Example) -> str | None:
    """A ``# file: NAME`` block: the file NAME in the page's current directory."""
    source = str(example.parsed)
    match = FILE_BLOCK.match(source)
    assert match is not None
    path = Path(os.getcwd(), match.group("name"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    compile(source, str(path), "exec")  # a syntax error fails here, naming the page's line
    return None


def run_bash_block(example: Example) -> str | None:
    finished = _page(example).run_bash(str(example.parsed), strict=True, merge_stderr=True)
    if finished.returncode != 0:
        return f"bash exited with status {finished.returncode}:\n{finished.stdout}"
    return None


class ConsoleCommand(NamedTuple):
    command: str
    expected: str


def console_commands(source: str) -> list[ConsoleCommand]:
    """The ``$ `` commands of a console block, each with the output shown after it."""
    commands: list[ConsoleCommand] = []
    command: list[str] = []
    output: list[str] = []
    lines = source.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("$ "):
            if command:
                commands.append(ConsoleCommand("\n".join(command), "\n".join(output)))
            command, output = [line[2:]], []
            while command[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                command.append(lines[index])
        elif command:
            output.append(line)
        else:
            raise ValueError(f"console block: output before any `$ ` command: {line!r}")
        index += 1
    if command:
        commands.append(ConsoleCommand("\n".join(command), "\n".join(output)))
    return commands


_SEPARATOR = re.compile(r"\n\x1e(\d+)\x1e\n")
_SHOW_STATUS = "echo $?"


def run_console_block(example: Example) -> str | None:
    commands = console_commands(str(example.parsed))
    # Between two commands, a separator carrying the first one's exit status is printed,
    # and that status restored, so that `echo $?` sees it.
    script = "".join(
        f"{command.command}\n__ido_status=$?\n"
        "printf '\\n\\036%d\\036\\n' $__ido_status\n"
        "(exit $__ido_status)\n"
        for command in commands
    )
    finished = _page(example).run_bash(script, strict=False, merge_stderr=False)
    parts = _SEPARATOR.split(finished.stdout)
    outputs, statuses = parts[0:-1:2], [int(status) for status in parts[1::2]]
    checker = doctest.OutputChecker()
    for index, (command, got, status) in enumerate(zip(commands, outputs, statuses, strict=True)):
        got = "\n".join(line.rstrip() for line in got.rstrip("\n").splitlines())
        want = "\n".join(line.rstrip() for line in command.expected.splitlines())
        shown_status = index + 1 < len(commands) and commands[index + 1].command == _SHOW_STATUS
        if not checker.check_output(want + "\n", got + "\n", doctest.ELLIPSIS):
            diff = "\n".join(
                difflib.unified_diff(
                    want.splitlines(), got.splitlines(), "shown", "printed", lineterm=""
                )
            )
            return (
                f"$ {command.command}\nprinted other output than the page shows:\n{diff}\n"
                f"stderr of the block:\n{finished.stderr}"
            )
        if status != 0 and not shown_status:
            return (
                f"$ {command.command}\nexited with status {status}, and the page does not "
                f"show it (`$ {_SHOW_STATUS}` after the command):\n{finished.stderr}"
            )
    return None


# --- the parsers ------------------------------------------------------------------------


class _Marked:
    """Leaves out the blocks marked ``not-run``."""

    def __init__(self, parser: Any):
        self.parser = parser

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.parser(document):
            if not_run_reason(document.text, region.start) is None:
                yield region


class PythonBlocks:
    """``python`` blocks: code, doctests (``>>>``) and files (``# file: NAME``)."""

    def __init__(self) -> None:
        self.code = PythonEvaluator()
        self.blocks = CodeBlockParser("python", self.code)
        self.doctests = DocTestStringParser(DocTestEvaluator(DOCTEST_FLAGS))

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.blocks(document):
            source = region.parsed
            if FILE_BLOCK.match(source):
                region.evaluator = write_file
                yield region
            elif source.startswith(">>>"):
                for doctest_region in self.doctests(source, document.path):
                    doctest_region.adjust(region, source)
                    yield doctest_region
            else:
                yield region


SYBIL = Sybil(
    parsers=[
        _Marked(PythonBlocks()),
        _Marked(CodeBlockParser("bash", run_bash_block)),
        _Marked(CodeBlockParser("console", run_console_block)),
    ],
    path=str(ROOT),
)


#: The docstrings' ``>>>`` examples, read from the installed package (the one under test).
DOCSTRINGS = Sybil(
    parsers=[DocTestParser(optionflags=DOCTEST_FLAGS)],
    document_types={".py": PythonDocStringDocument},
)
PACKAGE_DIR = Path(inductor_device_options.__file__).resolve().parent
MODULES_WITH_EXAMPLES = sorted(
    path
    for path in PACKAGE_DIR.rglob("*.py")
    if path.name != "__main__.py" and ">>>" in path.read_text()
)


# --- the fences of a page, whatever Sybil makes of them -------------------------------------


class Fence(NamedTuple):
    path: Path
    line: int
    start: int
    end: int
    info: str


_FENCES = RawFencedCodeBlockLexer(
    info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE),
    mapping={"info": "info", "source": "source"},
)


def fences(path: Path) -> list[Fence]:
    document = Document(path.read_text(), str(path))
    return [
        Fence(
            path,
            document.text.count("\n", 0, region.start) + 1,
            region.start,
            region.end,
            region.lexemes["info"].strip(),
        )
        for region in _FENCES(document)
    ]


def _language(fence: Fence) -> str:
    return fence.info.split()[0] if fence.info else ""


def _where(fence: Fence) -> str:
    return f"{fence.path.relative_to(ROOT)}:{fence.line}"


def _ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- the tests ------------------------------------------------------------------------------


@pytest.mark.skipif(
    NATIVE, reason="the pages describe released torch: the package hooks, it does not delegate"
)
@pytest.mark.parametrize("path", DOCUMENTS, ids=_ids)
def test_the_examples_of_the_page_run(path: Path, tmp_path: Path, clean_registry: None) -> None:
    from inductor_device_options.introspection import hook_state

    adopted_before = hook_state().adopted
    document = SYBIL.parse(path)
    with page_session(tmp_path) as page:
        document.namespace.update(__page__=page, __name__="__main__")
        for example in document:
            example.evaluate()
    assert hook_state().adopted == adopted_before, (
        f"{_ids(path)} left a function adopted into the hook's chain: restore what it assigns"
    )


@pytest.mark.skipif(
    NATIVE, reason="the docstrings describe released torch: the package hooks, it does not delegate"
)
@pytest.mark.parametrize(
    "path", MODULES_WITH_EXAMPLES, ids=lambda path: str(path.relative_to(PACKAGE_DIR))
)
def test_the_examples_of_the_docstrings_run(
    path: Path, tmp_path: Path, clean_registry: None
) -> None:
    """Every ``>>>`` example in the package's docstrings (which the reference shows), each
    leaving the environment as it found it: a reader may run them in any order."""
    from inductor_device_options import ascend

    document = DOCSTRINGS.parse(path)
    with page_session(tmp_path):
        try:
            for example in document:
                before = dict(os.environ)
                example.evaluate()
                assert dict(os.environ) == before, f"{example} changed the environment"
        finally:
            ascend.clear_cache()  # the examples' stand-in installs are removed with the page


def test_every_fence_names_its_language() -> None:
    problems = [
        f"{_where(fence)}: a fence without a language (write `text` for output)"
        for path in DOCUMENTS
        for fence in fences(path)
        if not fence.info
    ]
    problems += [
        f"{_where(fence)}: `{_language(fence)}`: write {ALIASES[_language(fence)]}"
        for path in DOCUMENTS
        for fence in fences(path)
        if _language(fence) in ALIASES
    ]
    assert not problems, "\n".join(problems)


def test_every_example_runs_unless_marked_not_run() -> None:
    """An independent reading of the fences: each runnable one holds a region Sybil runs, or
    carries a not-run marker with a reason; no marker stands before anything else."""
    problems = []
    for path in DOCUMENTS:
        run = [region for _, region in SYBIL.parse(path).regions]
        for fence in fences(path):
            reason = not_run_reason(path.read_text(), fence.start)
            runnable = _language(fence) in RUNNABLE
            executed = any(fence.start <= r.start and r.end <= fence.end for r in run)
            if runnable and not executed and reason is None:
                problems.append(f"{_where(fence)}: a {_language(fence)} block nothing runs")
            elif runnable and reason is not None and executed:
                problems.append(f"{_where(fence)}: marked not-run, but it runs")
            elif reason is not None and not runnable:
                problems.append(f"{_where(fence)}: a not-run marker before a {fence.info} block")
            elif reason == "":
                problems.append(f"{_where(fence)}: a not-run marker without a reason")
    assert not problems, "\n".join(problems)


def test_a_not_run_marker_stands_right_before_a_fence() -> None:
    starts = {(fence.path, fence.start) for path in DOCUMENTS for fence in fences(path)}
    problems = []
    for path in DOCUMENTS:
        text = path.read_text()
        for marker in re.finditer(r"<!--\s*not-run:.*?-->[ \t]*\n", text, re.DOTALL):
            if (path, marker.end()) not in starts:
                line = text.count("\n", 0, marker.start()) + 1
                problems.append(f"{path.relative_to(ROOT)}:{line}: a marker with no fence after it")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("$ echo a\na\n", [ConsoleCommand("echo a", "a")]),
        (
            "$ echo a \\\n  b\na b\n$ false\n$ echo $?\n1\n",
            [
                ConsoleCommand("echo a \\\n  b", "a b"),
                ConsoleCommand("false", ""),
                ConsoleCommand("echo $?", "1"),
            ],
        ),
    ],
)
def test_console_blocks_split_into_commands_and_their_output(
    source: str, expected: list[ConsoleCommand]
) -> None:
    assert console_commands(source) == expected


@pytest.mark.parametrize(
    ("block", "failure"),
    [
        ("$ echo out; echo err >&2\nout\n", None),  # stderr is not compared
        ("$ false\n$ echo $?\n1\n", None),  # a failure the page shows
        ("$ false\n", "exited with status 1"),  # a failure the page does not show
        ("$ echo a\nb\n", "printed other output"),
        ("$ echo one two three\none ... three\n", None),
        ("$ export SHOWN=yes\n$ echo $SHOWN\nyes\n", None),  # one bash per block
    ],
)
def test_a_console_block_checks_output_and_exit_status(
    tmp_path: Path, block: str, failure: str | None
) -> None:
    with page_session(tmp_path) as page:
        example = SimpleNamespace(parsed=block, namespace={"__page__": page})
        result = run_console_block(example)  # type: ignore[arg-type]
    assert (result is None) if failure is None else (failure in (result or "")), result


def test_a_page_is_one_terminal_session(tmp_path: Path) -> None:
    with page_session(tmp_path) as page:
        example = SimpleNamespace(
            parsed="mkdir sub && cd sub\nexport FROM_THE_PAGE=1\n", namespace={"__page__": page}
        )
        assert run_bash_block(example) is None  # type: ignore[arg-type]
        assert os.getcwd() == str(tmp_path / "sub")
        assert os.environ["FROM_THE_PAGE"] == "1"
    assert "FROM_THE_PAGE" not in os.environ
    assert os.getcwd() != str(tmp_path / "sub")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<!-- not-run: downloads torch -->\n", "downloads torch"),
        ("<!--\n  not-run: two\n  lines\n-->\n", "two\n  lines"),
        ("<!-- not-run: x -->\n\n", None),  # a blank line between: not the block's marker
        ("<!-- a comment -->\n", None),
        ("text\n", None),
    ],
)
def test_a_marker_counts_only_right_before_the_fence(text: str, reason: str | None) -> None:
    assert not_run_reason(text, len(text)) == reason
