"""Where a command's output goes: text on stdout (coloured on a terminal), or with
``--json`` one document on stdout and nothing else, what would have gone to stderr in its
``notes``. One ``Output`` per command run, passed along."""

from __future__ import annotations

import collections
import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from .. import __version__
from ..introspection import DeviceOptionsSource, hook_state, provider_doors, torch_hooks

PROG = "inductor-device-options"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_DEVICE = 3

#: A JSON document being filled in.
Document = dict[str, object]

# The documents that carry "notes" (what would have gone to stderr).
_WITH_NOTES = ("list", "show", "doctor", "doctor-all")


class Output:
    """A command run's output. ``json_requested``: ``--json`` was given (a usage error is
    a JSON document too). While ``only_the_document()`` holds, stdout and stderr go to a
    buffer, and ``print_json`` writes the document, with that buffer as its notes, to the
    real stdout."""

    def __init__(self, json_requested: bool = False):
        self.json_requested = json_requested
        self._document_stream: TextIO | None = None
        self._captured: io.StringIO | None = None

    @contextmanager
    def only_the_document(self) -> Iterator[None]:
        """stdout and stderr into a buffer (torch's warnings, a provider's prints), the JSON
        document alone to stdout; what the buffer holds goes to the document's notes, or
        to stderr if the command ends with an exception (a usage error, a crash)."""
        real_out, real_err = sys.stdout, sys.stderr
        captured = io.StringIO()
        self._document_stream, self._captured = real_out, captured
        sys.stdout = sys.stderr = captured
        try:
            yield
        except BrokenPipeError:
            raise  # the reader went away: nothing more to say
        except BaseException:
            real_err.write(captured.getvalue())
            raise
        finally:
            sys.stdout, sys.stderr = real_out, real_err
            self._document_stream = self._captured = None

    def print_json(self, schema: str, **fields: object) -> None:
        """The document of ``schema`` (``list``, ``show``...), with the fields every one has."""
        import torch

        document = {
            "schema": f"{PROG}/{schema}/v1",
            "version": __version__,
            "torch_version": torch.__version__,
            **fields,
        }
        if schema in _WITH_NOTES:
            notes = self._captured.getvalue().splitlines() if self._captured is not None else []
            document["notes"] = notes
        # ensure_ascii: a lone surrogate (a path byte that is not UTF-8) is written \udcXX.
        text = json.dumps(document, indent=2, ensure_ascii=True)
        print(text, file=self._document_stream or sys.stdout)


class Style:
    """ANSI colour when writing to a terminal and NO_COLOR is unset, else plain text."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        return cls(
            stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        )

    def _paint(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def ok(self, text: str) -> str:
        return self._paint("32", text)

    def fail(self, text: str) -> str:
        return self._paint("31;1", text)

    def skip(self, text: str) -> str:
        return self._paint("33", text)

    def bold(self, text: str) -> str:
        return self._paint("1", text)

    def dim(self, text: str) -> str:
        return self._paint("2", text)


def header(style: Style, command: str, detail: str = "") -> str:
    """The first lines of a text report: the package, the command, torch and the hook."""
    state = hook_state()
    lines = [
        style.bold(f"{PROG} {__version__} {command}") + (f" ({detail})" if detail else ""),
        f"torch {state.torch_version}; {state.describe()}",
    ]
    return "\n".join(lines)


#: What a bundled provider's description says wherever a command prints it.
_BUNDLED = (
    "; bundled: it gives way to a registration, another distribution's entry point or the "
    "device's DeviceInterface"
)


def described(source: DeviceOptionsSource) -> str:
    """``source``'s description as every command prints it (text and JSON): a bundled
    provider's (``fallback``) says what it gives way to."""
    return source.description + (_BUNDLED if source.fallback else "")


def options_from(source: DeviceOptionsSource) -> str:
    """The line of ``show``'s and ``doctor``'s reports that says where the options come
    from."""
    return f"options from {source.kind}: {described(source)}"


def source_document(source: DeviceOptionsSource) -> Document:
    """A source in JSON: ``kind``, and under v1's earlier name ``source`` too (keys are only
    ever added within a version)."""
    return {
        "device_type": source.device_type,
        "kind": source.kind,
        "description": described(source),
        "guaranteed": source.guaranteed,
        "source": source.kind,
    }


def torch_hooks_lines(style: Style) -> list[str]:
    """The text section on torch 2.15's out-of-tree hooks: which the running torch has
    (native), which this package provides, which are left out, and what serves each."""
    hooks = torch_hooks()
    paint = {"native": style.ok, "provided": style.bold, "left out": style.skip}
    width = max(len(hook.status) for hook in hooks)
    return [style.bold("torch 2.15's hooks:")] + [
        f"  {paint[hook.status](f'{hook.status:<{width}}')}  {hook.name}: {hook.detail}"
        for hook in hooks
    ]


def torch_hooks_line(style: Style, device: str) -> str:
    """The section on torch 2.15's hooks in one line, for a device whose backend registered
    no Inductor backend in this process: what the hooks are for is not in play."""
    counts = collections.Counter(hook.status for hook in torch_hooks())
    said = ", ".join(f"{count} {status}" for status, count in counts.items())
    title = style.bold("torch 2.15's hooks:")
    return f"{title} {said} (`show {device}` lists them)"


def torch_hooks_document() -> list[Document]:
    """The JSON of torch 2.15's hooks: ``name``, ``status`` and ``detail`` each."""
    return [hook._asdict() for hook in torch_hooks()]


def provider_doors_lines(style: Style) -> list[str]:
    """The text section on a provider's per-device doors: what each acts on in the running
    torch, or what this release lacks for it."""
    doors = provider_doors()
    paint = {"acts": style.ok, "acts in part": style.skip}
    width = max(len(door.status) for door in doors)
    return [style.bold("a provider's per-device doors:")] + [
        f"  {paint[door.status](f'{door.status:<{width}}')}  {door.name}: {door.detail}"
        for door in doors
    ]


def provider_doors_document() -> list[Document]:
    """The JSON of the per-device doors: ``name``, ``status`` and ``detail`` each."""
    return [door._asdict() for door in provider_doors()]
