"""The differential table: the package refuses a value exactly where stock torch goes wrong.

Each value is built twice by a real ``CppBuilder`` of a tiny kernel (``builds.py``): as
stock torch (a plain replacement function, the package not loaded) and through the package
(a registered provider). Stock torch *goes wrong* with a value when its build fails, when a
payload is injected (a response file or an ``#error`` header reaches g++, ld or as as
arguments), or when g++, ld or as receive other arguments than the value means: one
argument for each value (``-D`` and the definition, ``-I<dir>``, ``-<flag>``, ``-L<dir>``,
``-l<name>``), the words of a passthrough value, and for the words g++ hands to ld and as
(``-Wl,``, ``-Wa,``, ``-Xlinker``) the pieces written, a real path whole. The package must
refuse exactly those values, and a relative dir, whose stock build depends on the directory
g++ runs in; each refusal says what the stock build shows (what g++ or ld receives, the
compiler's own error).

Failure in this table is about the arguments: no value names a library or a file that is
missing, which no check of the arguments can know about.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from builds import (
    DEVICE,
    PROBE_LIBRARY,
    PROVIDER,
    Case,
    Observation,
    World,
    added,
    build_both,
    contains_run,
    make_world,
)

SPLITTING = {"-Wl,": "ld", "-Wa,": "as", "-Wp,": "cpp"}
WHOLE_NEXT = {"-Xlinker": "ld", "-Xassembler": "as", "-Xpreprocessor": "cpp"}
PREFIX = {
    "include_dirs": "-I",
    "cflags": "-",
    "ldflags": "-",
    "libraries_dirs": "-L",
    "libraries": "-l",
}
COMMA_AT = "{root}/sdk,@{root}/resp"  # -Wl, would give ld '@{root}/resp/lib': a response file


@dataclass(frozen=True)
class Row:
    """A value of the table; ``ld``: what ld must receive from it where that is not the
    comma split of its -Wl, words (a real path with a comma, meant whole); ``real``: the
    value is a symlink, and the package gives g++ its real path."""

    case: Case
    ld: tuple[str, ...] | None = None
    real: str | None = None


def row(
    field: str,
    name: str,
    value: str,
    *,
    ld: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    relative: bool = False,
    real: str | None = None,
    extra: dict[str, list[str]] | None = None,
) -> Row:
    case = Case(f"{field}-{name}", field, value, env or {}, extra or {}, relative)
    return Row(case, tuple(ld) if ld is not None else None, real)


TABLE: list[Row] = [
    # --- definitions: -D then the value, its own argument
    row("definitions", "plain", "USE_ACME"),
    row("definitions", "name-value", "ACME_VERSION=3"),
    row("definitions", "leading-space", " USE_ACME"),  # torch's own style
    row("definitions", "function-like", "MAX2(a,b)=((a)>(b)?(a):(b))"),
    row("definitions", "variadic", "LOG(...)=__VA_ARGS__"),
    row("definitions", "dash-in-name", "FOO-BAR"),  # g++ warns, and defines FOO as -BAR 1
    row("definitions", "path-value", "ACME_DIR={root}/sdk"),
    row("definitions", "comma-value", "PAIR=1,2"),
    row("definitions", "dollar", "ACME_ENV=$HOME"),
    row("definitions", "empty-value", "ACME_EMPTY="),
    row("definitions", "slashes", "FOO=a//b"),
    row("definitions", "digit-first", "1FOO"),
    row("definitions", "unclosed-parameters", "F(x"),
    row("definitions", "repeated-parameter", "F(x,x)=x"),
    row("definitions", "open-comment", "FOO=/*"),
    row("definitions", "defined", "defined"),
    row("definitions", "dash-d-prefix", "-DUSE_ACME"),
    row("definitions", "space", "FOO=a b"),
    row("definitions", "double-quotes", 'FOO="x"'),
    row("definitions", "single-quote", "FOO=it's"),
    row("definitions", "backslash", "FOO=a\\b"),
    row("definitions", "response-file", "@{root}/gxx.rsp"),
    row("definitions", "response-file-after-spaces", "   @{root}/gxx.rsp"),
    row("definitions", "split-include", "X -include{root}/evil.h"),
    row("definitions", "empty", ""),
    # --- include_dirs: -I<dir>
    row("include_dirs", "sdk", "{root}/sdk/include"),
    row("include_dirs", "absent", "{root}/absent/include"),
    row("include_dirs", "space", "{root}/with space/include"),
    row("include_dirs", "quote", "{root}/it's/include"),
    row("include_dirs", "backslash", "{root}/back\\slash/include"),
    row("include_dirs", "comma-at", COMMA_AT),
    row("include_dirs", "symlink", "{root}/sdk-latest/include", real="{root}/sdk/include"),
    row(
        "include_dirs",
        "symlink-to-space",
        "{root}/spaced-latest/include",
        real="{root}/with space/include",
    ),
    row("include_dirs", "relative", "include", relative=True),
    row("include_dirs", "dot-relative", "./include", relative=True),
    row("include_dirs", "empty", ""),
    # --- cflags: -<flag>
    row("cflags", "warning", "Wno-unused-function"),
    row("cflags", "optimisation", "O2"),
    row("cflags", "standard", "std=c++17"),
    row("cflags", "visibility", "fvisibility=hidden"),
    row("cflags", "dashed-alias", "-std=c++17"),  # --std=c++17: a GCC alias
    row("cflags", "dashed-unknown", "-O2"),  # --O2: no such option
    row("cflags", "dashed-warning", "-Wall"),
    row("cflags", "unknown-warning", "Wbogus-flag"),
    row("cflags", "bad-argument", "O2x"),
    row("cflags", "at-word", "@{root}/gxx.rsp"),  # -@...: an unknown option
    row("cflags", "two-words", "O2 -g"),
    row("cflags", "quote", "DX=it's"),
    row("cflags", "quoted-space", 'DNAME="a b"'),
    row("cflags", "linker-rpath", "Wl,-rpath,{root}/sdk/lib"),
    row("cflags", "linker-comma-at", f"Wl,-rpath,{COMMA_AT}/lib", ld=["-rpath", f"{COMMA_AT}/lib"]),
    row("cflags", "assembler", "Wa,--noexecstack"),
    row("cflags", "assembler-response-file", "Wa,@{root}/tool.rsp"),
    row("cflags", "preprocessor", "Wp,-DACME_CPP=1"),
    row("cflags", "preprocessor-response-file", "Wp,@{root}/cpp.rsp"),
    row("cflags", "dangling-xlinker", "Xlinker"),
    row("cflags", "empty", ""),
    # --- ldflags: -<flag>
    row("ldflags", "as-needed", "Wl,--as-needed"),
    row("ldflags", "z-now", "Wl,-z,now"),
    row("ldflags", "rpath", "Wl,-rpath,{root}/sdk/lib"),
    row("ldflags", "rpath-origin", "Wl,-rpath,$ORIGIN"),
    row("ldflags", "rpath-and-dtags", "Wl,-rpath,{root}/sdk/lib,--enable-new-dtags"),
    row("ldflags", "soname", "Wl,-soname,libkernel.so"),
    row("ldflags", "shared", "shared"),
    row("ldflags", "dashed-alias", "-shared"),  # --shared: a GCC alias
    row("ldflags", "openmp", "fopenmp"),
    row("ldflags", "dashed-linker", "-Wl,--as-needed"),  # --Wl,...: no such option
    row("ldflags", "unknown", "Wbogus-flag"),
    row("ldflags", "rpath-comma-at", f"Wl,-rpath,{COMMA_AT}/lib", ld=["-rpath", f"{COMMA_AT}/lib"]),
    row(
        "ldflags",
        "rpath-equals-comma-at",
        f"Wl,-rpath={COMMA_AT}/lib",
        ld=[f"-rpath={COMMA_AT}/lib"],
    ),
    row(
        "ldflags",
        "rpath-comma-option",
        "Wl,-rpath,{root}/sdk,--some-option/lib",
        ld=["-rpath", "{root}/sdk,--some-option/lib"],
    ),
    row("ldflags", "rpath-comma-dir", "Wl,-rpath,{root}/c,d/lib", ld=["-rpath", "{root}/c,d/lib"]),
    row(
        "ldflags",
        "rpath-comma-from-environment",
        "Wl,-rpath,/opt/acme-absent,2/lib",
        ld=["-rpath", "/opt/acme-absent,2/lib"],
        env={"ACME_HOME": "/opt/acme-absent,2"},
    ),
    row("ldflags", "response-file", "Wl,@{root}/tool.rsp"),
    row("ldflags", "rpath-space", "Wl,-rpath,{root}/with space/lib"),
    row("ldflags", "xlinker-pair-in-one", "Xlinker --as-needed"),
    row("ldflags", "empty", ""),
    # --- libraries_dirs: -L<dir>
    row("libraries_dirs", "sdk", "{root}/sdk/lib"),
    row("libraries_dirs", "absent", "{root}/absent/lib"),
    row("libraries_dirs", "space", "{root}/with space/lib"),
    row("libraries_dirs", "quote", "{root}/it's/include"),
    row("libraries_dirs", "backslash", "{root}/back\\slash/include"),
    row("libraries_dirs", "comma-at", f"{COMMA_AT}/lib"),
    row("libraries_dirs", "symlink", "{root}/sdk-latest/lib", real="{root}/sdk/lib"),
    row(
        "libraries_dirs",
        "symlink-to-space",
        "{root}/spaced-latest/lib",
        real="{root}/with space/lib",
    ),
    row("libraries_dirs", "relative", "lib", relative=True, extra={"libraries": [PROBE_LIBRARY]}),
    row(
        "libraries_dirs",
        "parent-relative",
        "../cwd/lib",
        relative=True,
        extra={"libraries": [PROBE_LIBRARY]},
    ),
    row("libraries_dirs", "empty", ""),
    # --- libraries: -l<name>
    row("libraries", "name", "m"),
    row("libraries", "exact-file", ":libm.so.6"),
    row("libraries", "stdcxx", "stdc++"),
    row("libraries", "dash-l-prefix", "-lm"),
    row("libraries", "file-name", "libm.so.6"),
    row("libraries", "file-name-so", "libm.so"),
    row("libraries", "two-names", "m pthread"),
    row("libraries", "empty", ""),
    # --- passthrough_args: the words each value splits into
    row("passthrough_args", "words", "-DACME_PT=1 -Wno-unused-function"),
    row("passthrough_args", "linker-state", "-Wl,--push-state,--no-as-needed -lm -Wl,--pop-state"),
    row("passthrough_args", "quoted-definition", "-DNAME='\"quoted value\"'"),
    row("passthrough_args", "force-include", "-include {root}/sdk/include/acme.h"),
    row("passthrough_args", "object-file", "{root}/sdk/lib/extra.o"),
    row("passthrough_args", "empty", ""),
    row("passthrough_args", "xlinker-rpath", "-Xlinker -rpath -Xlinker {root}/sdk/lib"),
    row(
        "passthrough_args",
        "xlinker-comma-at",
        f"-Xlinker -rpath -Xlinker {COMMA_AT}/lib",
    ),
    row("passthrough_args", "xlinker-space", "-Xlinker -rpath -Xlinker '{root}/with space/lib'"),
    row(
        "passthrough_args",
        "linker-comma-at",
        f"-Wl,-rpath,{COMMA_AT}/lib",
        ld=["-rpath", f"{COMMA_AT}/lib"],
    ),
    row(
        "passthrough_args",
        "linker-comma-dir",
        "-Wl,-rpath,{root}/c,d/lib",
        ld=["-rpath", "{root}/c,d/lib"],
    ),
    row("passthrough_args", "xlinker-response-file", "-Xlinker @{root}/tool.rsp"),
    row("passthrough_args", "xassembler-response-file", "-Xassembler @{root}/tool.rsp"),
    row("passthrough_args", "xpreprocessor-response-file", "-Xpreprocessor @{root}/cpp.rsp"),
    row("passthrough_args", "assembler-response-file", "-Wa,@{root}/tool.rsp"),
    row("passthrough_args", "response-file", "-Wall @{root}/gxx.rsp"),
    row("passthrough_args", "unbalanced-quote", "-DX='unbalanced"),
    row("passthrough_args", "trailing-backslash", "-Wall \\"),
    row("passthrough_args", "unknown-option", "-Wbogus-flag"),
    row("passthrough_args", "dangling-xlinker", "-Xlinker"),
]

ROWS = {item.case.id: item for item in TABLE}
assert len(ROWS) == len(TABLE), "row names repeat"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("differential"))


@pytest.fixture(scope="module")
def observed(
    world: World, request: pytest.FixtureRequest
) -> tuple[dict[str, Observation], dict[str, Observation]]:
    """Every row this session runs, built by both workers at once."""
    wanted = {
        item.callspec.params["name"]
        for item in request.session.items
        if item.module is request.module
        and hasattr(item, "callspec")
        and "name" in item.callspec.params
    }
    wanted |= set(CONTROLS.values())
    # A symlink's row is judged by the stock build of its real path: that row's.
    wanted |= {real_row(ROWS[name]).case.id for name in wanted if ROWS[name].real is not None}
    return build_both(world, [ROWS[name].case for name in ROWS if name in wanted], "table")


def real_row(item: Row) -> Row:
    """The row whose value is ``item``'s real path."""
    return next(
        other
        for other in TABLE
        if other.case.field == item.case.field and other.case.value == item.real
    )


def meant_words(field: str, value: str) -> list[str] | None:
    """The arguments g++ must get for ``value``; None when no arguments can mean it: a
    passthrough value that is no list of words, or an empty one of another field (a bare
    ``-I``, ``-L``, ``-l`` or ``-D`` takes the next argument as its own)."""
    if field == "passthrough_args":
        try:
            return shlex.split(value)
        except ValueError:
            return None
    if value.strip() == "":
        return None
    if field == "definitions":
        return ["-D", value.lstrip(" ")]
    return [PREFIX[field] + value]


def meant_for(tool: str, words: Sequence[str]) -> list[str | None] | None:
    """What ``tool`` must get from ``words``: the pieces of its -W?, words and the word
    after each -X<tool> (None: an -X<tool> that takes a word not its own); None if no word
    of ``words`` is for ``tool``."""
    pieces: list[str | None] = []
    speaks = False
    for index, word in enumerate(words):
        if index and words[index - 1] in WHOLE_NEXT:
            continue
        if WHOLE_NEXT.get(word) == tool:
            speaks = True
            pieces.append(words[index + 1] if index + 1 < len(words) else None)
        for prefix, receiver in SPLITTING.items():
            if word.startswith(prefix) and receiver == tool:
                speaks = True
                pieces.extend(word[len(prefix) :].split(","))
    return pieces if speaks else None


def stock_goes_wrong(item: Row, world: World, stock: Observation, base: Observation) -> str | None:
    """Why the stock build of the row's value is wrong, or None when it is right."""
    value = world.format(item.case.value)
    if stock.status != "built":
        return f"the build fails: {stock.output[-600:]}"
    meant = meant_words(item.case.field, value)
    received = added(base.argv("g++"), stock.argv("g++"))
    if received == [] and meant and contains_run(base.argv("g++"), meant):
        received = meant  # torch removes a value its own options hold already
    if received != meant or meant is None:
        return f"g++ receives {received!r} instead of {meant!r}"
    for tool in ("ld", "as"):
        wanted: Sequence[str | None] | None = meant_for(tool, meant)
        if tool == "ld" and item.ld is not None:
            wanted = [world.format(piece) for piece in item.ld]
        if wanted is None:
            continue
        got = passed_on(added(base.argv(tool), stock.argv(tool)), meant)
        if got != list(wanted):
            return f"{tool} receives {got!r} instead of {list(wanted)!r}"
    return None


def passed_on(received: list[str] | None, words: Sequence[str]) -> list[str] | None:
    """What a tool received from the words g++ hands it: without the libraries, dirs and
    files of ``words``, which g++ gives ld itself (``-lm`` after libstdc++, say)."""
    if received is None:
        return None
    own = {word for word in words if word.startswith(("-l", "-L")) or word.endswith((".o", ".so"))}
    return [word for word in received if word not in own]


@pytest.mark.parametrize("name", list(ROWS))
def test_refused_exactly_where_stock_torch_goes_wrong(
    name: str, world: World, observed: tuple[dict[str, Observation], dict[str, Observation]]
) -> None:
    stock_builds, package_builds = observed
    item = ROWS[name]
    stock, package = stock_builds[name], package_builds[name]
    base = stock_builds["baseline"]
    assert base.status == "built" and base.argv("g++") and base.argv("ld"), base.output
    if item.real is not None:  # the package gives g++ the real path: what stock does with it
        stock = stock_builds[real_row(item).case.id]
        wrong = stock_goes_wrong(real_row(item), world, stock, base)
    elif item.case.relative:
        wrong = None
        assert stock.status == "failed", "the process's current directory has it, g++ not"
        assert stock.in_build_dir.status == "built", stock.in_build_dir.output
    else:
        wrong = stock_goes_wrong(item, world, stock, base)
    refused = package.status == "refused"
    should_refuse = wrong is not None or item.case.relative
    assert refused == should_refuse, (
        f"stock: {wrong or 'right'}; package: {package.status} "
        f"{package.result.get('message', package.output)}"
    )
    if refused:
        check_refusal(item, world, package, stock, base, wrong)
    else:
        check_build(item, world, package)


def check_build(item: Row, world: World, package: Observation) -> None:
    """What the package accepts builds, and g++ and ld get the value as meant."""
    assert package.status == "built" and not package.injected, package.output
    value = world.format(item.real or item.case.value)
    meant = meant_words(item.case.field, value)
    assert meant is not None
    if meant:
        assert contains_run(package.argv("g++"), meant), (meant, package.argv("g++"))
    ld = [world.format(piece) for piece in item.ld] if item.ld else meant_for("ld", meant)
    if ld:
        assert contains_run(package.argv("ld"), ld), (ld, package.argv("ld"))


class Seen(NamedTuple):
    """A row and what its stock build did (``base``: the build with nothing added)."""

    item: Row
    world: World
    stock: Observation
    base: Observation

    @property
    def value(self) -> str:
        return self.world.format(self.item.case.value)

    @property
    def goes_wrong(self) -> bool:
        return stock_goes_wrong(self.item, self.world, self.stock, self.base) is not None

    def received(self, tool: str) -> list[str] | None:
        return added(self.base.argv(tool), self.stock.argv(tool))


def check_refusal(
    item: Row,
    world: World,
    package: Observation,
    stock: Observation,
    base: Observation,
    wrong: str | None,
) -> None:
    """The refusal names the device, the provider, the field and the value, and its
    reason is what the stock build shows."""
    field, value = item.case.field, world.format(item.case.value)
    message: str = package.result["message"]
    position = package.result["positions"][field]
    shown = repr(value)
    if item.real is not None:
        shown = f"{value!r} (real path {world.format(item.real)!r})"
    error = (package.result["device_type"], package.result["field"], package.result["value"])
    assert error == (DEVICE, field, value)
    assert package.result["description"] == PROVIDER
    head = f"C++ options for device {DEVICE!r} from {PROVIDER}: {field}[{position}] = {shown} "
    assert message.startswith(head), message
    reason = message[len(head) :]
    for check in REASONS:
        verdict = check(reason, Seen(item, world, stock, base))
        if verdict is not None:
            assert verdict, f"{reason}\nstock: {wrong}\n{stock.output[-800:]}"
            return
    pytest.fail(f"a reason this test does not know: {reason}")


# Each reason the package gives, and whether the stock build shows it: None when the
# reason is another one.


def _relative(reason: str, seen: Seen) -> bool | None:
    if not reason.startswith("is relative: Inductor runs the compiler in a directory of its own"):
        return None
    return seen.item.case.relative  # its stock builds showed it depends on g++'s directory


def _empty(reason: str, seen: Seen) -> bool | None:
    if reason != "is empty":
        return None
    return seen.value.strip() == "" and seen.goes_wrong


def _not_as_meant(reason: str, seen: Seen) -> bool | None:
    """ "reaches g++ as X instead of Y": X is what stock g++ received, Y what is meant."""
    found = re.match(r"reaches g\+\+ as (\[.*?\]) instead of (\[.*?\]): this torch's", reason)
    if found is None:
        return None
    meant = meant_words(seen.item.case.field, seen.world.format(seen.item.real or seen.value))
    return found[1] == repr(seen.received("g++")) and found[2] == repr(meant)


def _does_not_split(reason: str, seen: Seen) -> bool | None:
    found = re.match(r"cannot be split into compiler arguments \((.+?)\)", reason)
    if found is None:
        return None
    try:
        shlex.split(seen.value)
    except ValueError as error:
        return str(error) == found[1] and seen.goes_wrong
    return False


def _response_file(reason: str, seen: Seen) -> bool | None:
    found = re.match(
        r"(?:holds|reaches g\+\+ as) the argument '(@[^']+)', which g\+\+ reads as a response",
        reason,
    )
    if found is None:
        return None
    return seen.stock.injected and found[1] in seen.value


def _compiler_rejects(reason: str, seen: Seen) -> bool | None:
    """The words are the value's, and the compiler's error is the stock build's."""
    found = re.match(
        r"reaches g\+\+ as (\[.*?\]), which (\S+) rejects: (.+?)(?: \(Inductor|$)", reason
    )
    if found is None:
        return None
    first_error = found[3].split("; ")[0]
    return (
        found[1] == repr(meant_words(seen.item.case.field, seen.value))
        and os.path.basename(found[2]) == "g++"
        and seen.stock.status == "failed"
        and first_error in seen.stock.output
    )


def _tool_receives(reason: str, seen: Seen) -> bool | None:
    """What the package says ld or as receives is what they received in the stock build
    (with a response file read, as collect2 reads it for ld); the preprocessor, which no
    wrapper sees, shows it by the payload's #error."""
    pieces = re.search(r"so (ld|as|the preprocessor) receives (\[[^\]]*\])", reason)
    whole = re.search(
        r"gives (ld|as|the preprocessor) the argument '(@[^']+)' \(through -X", reason
    )
    found = pieces or whole
    if found is None:
        return None
    if found[1] == "the preprocessor":
        return seen.stock.injected
    failed_on_it = seen.stock.injected or any(
        words in seen.stock.output for words in ("unrecognized option", "cannot find")
    )
    if seen.stock.status != "failed" or not failed_on_it:
        return False
    if pieces is None:
        return seen.stock.injected
    written = ast.literal_eval(pieces[2])
    read = [
        word
        for piece in written
        for word in (response_file(piece) if piece.startswith("@") else [piece])
    ]
    return seen.received(found[1]) in (read, written)  # as reads @file itself


def response_file(piece: str) -> list[str]:
    """The arguments ``@file`` stands for, or itself if there is no such file."""
    try:
        with open(piece[1:], encoding="utf-8") as words:
            return shlex.split(words.read())
    except OSError:
        return [piece]


def _library_spelling(reason: str, seen: Seen) -> bool | None:
    if not reason.startswith(
        ("starts with '-'; Inductor adds '-l' itself", "is a file name; Inductor passes")
    ):
        return None
    return seen.stock.status == "failed" and f"cannot find -l{seen.value}" in seen.stock.output


def _takes_a_word_not_its_own(reason: str, seen: Seen) -> bool | None:
    found = re.match(
        r"reaches g\+\+ as '(-X\w+)', which hands the argument after it to \w+, "
        r"and it is the last of (\w+)",
        reason,
    )
    if found is None:
        return None
    meant = meant_words(seen.item.case.field, seen.value) or []
    return found[2] == seen.item.case.field and meant[-1:] == [found[1]] and seen.goes_wrong


REASONS = (
    _relative,
    _takes_a_word_not_its_own,
    _empty,
    _not_as_meant,
    _does_not_split,
    _response_file,
    _compiler_rejects,
    _tool_receives,
    _library_spelling,
)


# Rows whose stock builds show the harness at work.
CONTROLS = {
    "gxx": "definitions-response-file",
    "ld": "ldflags-response-file",
    "as": "cflags-assembler",
}


def test_the_harness_sees_each_tool_and_each_payload(
    world: World, observed: tuple[dict[str, Observation], dict[str, Observation]]
) -> None:
    """The controls: CXX names the wrapper, which sees g++, ld and as; the payloads stop
    g++ and ld when they get them as arguments."""
    stock, _ = observed
    base = stock["baseline"]
    assert base.status == "built"
    gxx = base.argv("g++")
    assert gxx is not None and f"{world.root}/out-table-stock/kernel.so" in gxx
    assert base.argv("ld") is not None and base.argv("as") is not None
    assert 'error: #error "injected argument"' in stock[CONTROLS["gxx"]].output
    ld_payload = stock[CONTROLS["ld"]].output
    assert "ld: unrecognized option '--this-option-was-injected'" in ld_payload
    assert added(base.argv("as"), stock[CONTROLS["as"]].argv("as")) == ["--noexecstack"]
