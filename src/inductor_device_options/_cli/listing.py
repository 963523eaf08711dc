"""``inductor-device-options list``: torch, the hook, every device this process knows a
source of options for, which of torch 2.15's hooks torch has or this package provides, the
declarations that are ignored or in conflict, and the SDK identities Inductor's caches key
on."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._diagnose.asked import AskedDevice, asked_device_type
from .._diagnose.cache_keying import CacheKeying, served_keying
from .._hook.asked import seen as seen_not_asked
from .._lookup import entry_points as _entry_points
from .._lookup.device_types import RESERVED_DEVICE_TYPES
from ..introspection import DeviceOptionsSource, hook_state, known_device_options_sources
from .device_command import import_inductor
from .output import (
    EXIT_OK,
    PROG,
    Document,
    Output,
    Style,
    described,
    header,
    provider_doors_document,
    provider_doors_lines,
    source_document,
    torch_hooks_document,
    torch_hooks_lines,
)

if TYPE_CHECKING:
    from importlib import metadata


def list_command(args: argparse.Namespace, output: Output) -> int:
    import_inductor()
    sources = known_device_options_sources()
    if args.json:
        _print_document(output, sources)
        return EXIT_OK
    style = Style.for_stream(sys.stdout)
    print(header(style, "list") + "\n")
    width = max(len("DEVICE"), *(len(source.device_type) for source in sources))
    kinds = max(len("SOURCE"), *(len(source.kind) for source in sources))
    print(style.bold(f"{'DEVICE':<{width}}  {'SOURCE':<{kinds}}  FROM"))
    for source in sources:
        print(f"{source.device_type:<{width}}  {source.kind:<{kinds}}  {described(source)}")
    print("\n" + "\n".join(torch_hooks_lines(style)))
    print("\n" + "\n".join(provider_doors_lines(style)))
    sections = [
        ("Ignored declarations:", [d.describe() for d in _entry_points.invalid_declarations()]),
        (
            "Devices declared by several distributions:",
            [conflict.describe() for conflict in _entry_points.declaration_conflicts()],
        ),
        (
            "Not asked for by their cpp_wrapper builds (their options never reach them):",
            [f"{asked.device_type}: {asked.describe()}" for asked in _not_asked(sources)],
        ),
        ("SDK identities (what Inductor's caches key on):", _keying_lines()),
    ]
    for title, lines in sections:
        if lines:
            print(style.bold(f"\n{title}"))
            for line in lines:
                print(f"  {line}")
    print(
        style.dim(
            "\nRegistrations made in a program are not seen here; check one with "
            f"`{PROG} doctor DEVICE --provider module:callable`."
        )
    )
    return EXIT_OK


def _print_document(output: Output, sources: Sequence[DeviceOptionsSource]) -> None:
    state = hook_state()
    output.print_json(
        "list",
        hook={
            **{key: value for key, value in state._asdict().items() if key != "torch_version"},
            "adopted": [function._asdict() for function in state.adopted],
            "chains_to": state.function_below,  # v1's earlier name of function_below
            "registrations_apply": state.registrations_apply,
            "description": state.describe(),
        },
        devices=[source_document(source) for source in sources],
        torch_hooks=torch_hooks_document(),
        provider_doors=provider_doors_document(),
        invalid_declarations=[
            _declaration_json(declaration) for declaration in _entry_points.invalid_declarations()
        ],
        declaration_conflicts=[
            _conflict_json(conflict) for conflict in _entry_points.declaration_conflicts()
        ],
        not_asked=[asked._asdict() for asked in _not_asked(sources)],
        sdk_identities=[
            keying.document()
            if isinstance(keying, CacheKeying)
            else {"device_type": keying[0], "error": repr(keying[1])}
            for keying in served_keying()
        ],
    )


def _keying_lines() -> list[str]:
    lines = []
    for keying in served_keying():
        if isinstance(keying, CacheKeying):
            first, *rest = keying.describe()
            lines += [f"{keying.device_type}: {first}", *rest]
        else:
            lines.append(f"{keying[0]}: cannot be computed: {keying[1]!r}")
    return lines


def _not_asked(sources: Sequence[DeviceOptionsSource]) -> list[AskedDevice]:
    """The served devices whose cpp_wrapper builds ask for another device type: as their
    registered codegen reports, or as builds of this process asked."""
    found = []
    for source in sources:
        if source.kind == "torch" or source.device_type in RESERVED_DEVICE_TYPES:
            continue
        asked = asked_device_type(source.device_type, aot_mode=False)
        if asked.mismatch:
            found.append(asked)
    for (device_type, asked_type), codegen in sorted(seen_not_asked.items()):
        if all(asked.device_type != device_type for asked in found):
            found.append(
                AskedDevice(device_type, False, asked_type, codegen, "seen in a build", None)
            )
    return found


def _entry_point_json(entry_point: metadata.EntryPoint) -> Document:
    dist = entry_point.dist
    return {
        "name": entry_point.name,
        "value": entry_point.value,
        "distribution": f"{dist.name} {dist.version}" if dist is not None else None,
    }


def _declaration_json(declaration: _entry_points.InvalidDeclaration) -> Document:
    return {**_entry_point_json(declaration.entry_point), "reason": declaration.reason}


def _conflict_json(conflict: _entry_points.DeclarationConflict) -> Document:
    return {
        "device_type": conflict.device_type,
        "chosen": _entry_point_json(conflict.chosen),
        "others": [_entry_point_json(entry_point) for entry_point in conflict.others],
        "reason": conflict.reason,
    }
