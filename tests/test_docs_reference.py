"""The reference documents every public name, the CLI reference is the real parser's, and
the sample page's steps are the demo's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import docs_extension

import inductor_device_options
from inductor_device_options import _cli as cli
from inductor_device_options import ascend, introspection, testing

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
AUTODOC = re.compile(r"^\.\. auto(?:function|class|exception|data)::\s+(\S+)", re.MULTILINE)


#: Documented though not in ``__all__``: ``arm`` is the target of the package's
#: ``torch.backends`` entry point, and what the docs tell a user to call to install the hook
#: again after ``cpp_builder.__dict__`` was written past it.
DOCUMENTED_BEYOND_ALL = {"inductor_device_options.arm"}


@pytest.mark.parametrize(
    ("module", "page"),
    [
        ((inductor_device_options, introspection, testing), "api.md"),
        ((ascend,), "ascend.md"),
    ],
    ids=["inductor_device_options", "ascend"],
)
def test_every_public_name_is_in_the_reference(module: tuple[object, ...], page: str) -> None:
    public = {
        f"{each.__name__}.{name}"  # type: ignore[attr-defined]
        for each in module
        for name in each.__all__  # type: ignore[attr-defined]
    }
    documented = set(AUTODOC.findall((REFERENCE / page).read_text()))
    assert sorted(public - documented) == [], f"not documented in docs/reference/{page}"
    not_public = documented - public - DOCUMENTED_BEYOND_ALL
    assert sorted(not_public) == [], f"documented in docs/reference/{page}, not public"


def test_the_cli_reference_is_generated_from_the_parser() -> None:
    ido_docs = docs_extension()
    parser = cli._parser()
    reference = ido_docs.cli_reference_markdown(parser)
    assert ido_docs.PLACEHOLDER.search((REFERENCE / "cli.md").read_text())
    commands = [name for name, _, _ in ido_docs._subcommands(parser)]
    assert commands == ["list", "show", "doctor", "demo"]
    for name, _, sub in ido_docs._subcommands(parser):
        assert f"## `inductor-device-options {name}`" in reference
        for action in sub._actions:
            assert f"`{ido_docs._argument(action)}`" in reference, (name, action)


def test_a_reexported_constant_shows_the_comment_of_the_module_that_defines_it() -> None:
    ido_docs = docs_extension()
    comment = ido_docs.defining_doc_comment(
        "inductor_device_options", "ENTRY_POINT_GROUP", inductor_device_options.ENTRY_POINT_GROUP
    )
    assert comment is not None and "entry point group" in " ".join(comment)


def test_the_sample_page_numbers_the_demos_steps() -> None:
    """The guide's numbered list has one item per step the demo prints (``[n/6]``), and
    names the step ``--ranks`` adds."""
    from inductor_device_options._demo.run import STEP_COUNT

    page = (ROOT / "docs" / "guides" / "sample-device.md").read_text()
    steps = page.split("It runs the whole chain, in steps:", 1)[1].split("`--ranks N`", 1)[0]
    numbers = [int(number) for number in re.findall(r"^(\d+)\. ", steps, re.MULTILINE)]
    assert numbers == list(range(1, STEP_COUNT + 1))
    next_ordinal = {6: "seventh", 7: "eighth"}[STEP_COUNT]
    assert f"`--ranks N` adds a {next_ordinal} step" in page
