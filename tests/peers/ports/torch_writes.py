"""What a backend writes in torch: a snapshot of every ``torch.*``/``torchgen.*`` module's
``__dict__`` (the identity of each value, and the shallow contents of module-level dicts,
lists and sets) and of the ``__dict__`` of the classes those modules define, and the diff of
two snapshots as dotted names (``torch._export.aot_load``,
``torch._inductor.codegen.cpp_utils.DEVICE_TO_ATEN['sampledev']``).

A snapshot holds references to every value it saw, so that an identity cannot be reused by
a new object between two snapshots.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

_CONTAINERS = (dict, list, set)


@dataclass
class Snapshot:
    #: "<module>" or "<module>.<Class>" -> {name: value}
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: "<namespace>.<name>" -> shallow copy of a dict/list/set value
    contents: dict[str, Any] = field(default_factory=dict)


def _ours(name: str) -> bool:
    return name == "torch" or name.startswith(("torch.", "torchgen"))


def _copy(value: Any) -> Any:
    try:
        if isinstance(value, dict):
            return dict(value)
        if isinstance(value, list):
            return list(value)
        return set(value)
    except Exception:  # a container that cannot be read now (a lazy proxy): identity only
        return None


def take() -> Snapshot:
    with warnings.catch_warnings():  # reading a deprecated value warns
        warnings.simplefilter("ignore")
        return _take()


def _take() -> Snapshot:
    snapshot = Snapshot()
    for module_name, module in list(sys.modules.items()):
        if not _ours(module_name) or not isinstance(module, ModuleType):
            continue
        namespace = dict(vars(module))
        snapshot.namespaces[module_name] = namespace
        for name, value in namespace.items():
            if type(value) in _CONTAINERS or isinstance(value, dict):
                snapshot.contents[f"{module_name}.{name}"] = _copy(value)
            elif isinstance(value, type) and getattr(value, "__module__", None) == module_name:
                class_name = f"{module_name}.{name}"
                if class_name not in snapshot.namespaces:
                    snapshot.namespaces[class_name] = dict(vars(value))
    return snapshot


def _entries_changed(before: Any, after: Any) -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = set(before) | set(after)
        return sorted(
            repr(key)
            for key in keys
            if key not in before or key not in after or before[key] is not after[key]
        )
    if before is None or after is None or type(before) is not type(after):
        return ["<contents>"]
    if isinstance(before, list):
        if len(before) != len(after) or any(a is not b for a, b in zip(before, after, strict=True)):
            return ["<contents>"]
        return []
    return sorted(repr(item) for item in before ^ after)


def diff(before: Snapshot, after: Snapshot) -> list[str]:
    """Every attribute bound, rebound or deleted, and every entry written into a module-level
    container, between ``before`` and ``after``, of namespaces both snapshots hold. A
    submodule imported meanwhile and set on its package by the import system is left out."""
    written: list[str] = []
    for namespace, old in before.namespaces.items():
        new = after.namespaces.get(namespace)
        if new is None:
            continue
        for name in set(old) | set(new):
            if name in old and name in new and old[name] is new[name]:
                key = f"{namespace}.{name}"
                if key in before.contents and key in after.contents:
                    written += [
                        f"{key}[{entry}]"
                        for entry in _entries_changed(before.contents[key], after.contents[key])
                    ]
                continue
            value = new.get(name)
            if (
                name not in old
                and isinstance(value, ModuleType)
                and value.__name__ == f"{namespace}.{name}"
            ):
                continue  # the import system sets an imported submodule on its package
            written.append(f"{namespace}.{name}")
    return sorted(written)
