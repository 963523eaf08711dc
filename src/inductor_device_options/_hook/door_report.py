"""What each of a provider's per-device doors acts on in the running torch, or what this
release lacks for it (``list``, ``show`` and ``doctor`` print them, as they print torch
2.15's hooks)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Literal, NamedTuple

from .._lookup import provider_attributes as attributes
from .._lookup.provider_attributes import (
    CACHE_KEY_DETAILS_ATTRIBUTE,
    HEADERS_ATTRIBUTE,
    REMOVED_CFLAGS_ATTRIBUTE,
    RUNNER_ATTRIBUTE,
    SHIM_OPS_ATTRIBUTE,
)
from .._lookup.registry import describe_callable

DoorStatus = Literal["acts", "acts in part"]


class ProviderDoor(NamedTuple):
    """One per-device door of a provider and what it acts on in the running torch."""

    #: The provider attribute, e.g. ``"removed_cflags"``.
    name: str
    #: ``acts`` or ``acts in part`` (the running torch lacks some of the code it acts on).
    status: DoorStatus
    #: What it acts on, or what this release lacks.
    detail: str

    def describe(self) -> str:
        return f"{self.name}: {self.status} ({self.detail})"


def provider_doors() -> list[ProviderDoor]:
    """Every per-device door on the running torch (imports the torch modules each reads)."""
    doors = []
    for name, door in _DOORS.items():
        gap = importlib.import_module(f"{__package__}.{door.module}").release_gap()
        doors.append(
            ProviderDoor(name, "acts", door.acts_on)
            if gap is None
            else ProviderDoor(name, "acts in part", gap)
        )
    return doors


def described_door(name: str, provider: object, device_type: str, description: str) -> str:
    """What ``provider`` declares for the door ``name``, asked as the door asks it (the
    runner only for being callable: making one needs a model's ``.so``), for people.
    Raises what the door would raise."""
    return _DOORS[name].described(provider, device_type, description)


def _removed_cflags(provider: object, device: str, description: str) -> str:
    return repr(sorted(attributes.removed_cflags_of(provider, device, description)))


def _shim_ops(provider: object, device: str, description: str) -> str:
    ops = sorted(attributes.shim_ops_of(provider, device, description))
    return ", ".join(f"{op} ({attributes.shim_name(device, op)})" for op in ops) or "none"


def _headers(provider: object, device: str, description: str) -> str:
    jit, aot = (
        attributes.headers_of(provider, device, mode, description) for mode in (False, True)
    )
    return f"cpp_wrapper {list(jit or ())}, AOTInductor {list(aot or ())}"


def _cache_key_details(provider: object, device: str, description: str) -> str:
    return f"now {attributes.cache_key_detail_of(provider, device, description)}"


def _runner(provider: object, device: str, description: str) -> str:
    return describe_callable(attributes.runner_factory_of(provider, device, description))


class _Door(NamedTuple):
    #: Its module in ``_hook``, which says what the running torch lacks (``release_gap``).
    module: str
    #: What it acts on where the running torch has all of it.
    acts_on: str
    #: What a provider declares for it, asked as the door asks it, for people.
    described: Callable[[object, str, str], str]


#: Every per-device door, in the order the docs, ``show`` and doctor list them.
_DOORS = {
    REMOVED_CFLAGS_ATTRIBUTE: _Door(
        "removed_cflags",
        "CppTorchDeviceOptions: every g++ command made with the device's options (compile, "
        "link, and where torch has them, preprocess and header precompile); cpu's builds and "
        "the vector-ISA probes keep them",
        _removed_cflags,
    ),
    SHIM_OPS_ATTRIBUTE: _Door(
        "shim_ops",
        "FallbackKernel.codegen (and 2.15's lowering): the op's C shim instead of the proxy "
        "executor (AOTInductor) or the run-time dispatch (cpp_wrapper), for the declaring "
        "device's kernels",
        _shim_ops,
    ),
    HEADERS_ATTRIBUTE: _Door(
        "device_headers",
        "CppWrapperCpu's device include, and the header codecache precompiles, for the "
        "declaring device (a wrapper class overriding get_device_include_path_jit/_aot wins)",
        _headers,
    ),
    CACHE_KEY_DETAILS_ATTRIBUTE: _Door(
        "cache_key_details",
        "FxGraphHashDetails and AOTAutogradCacheDetails of each compile with an input, "
        "output or buffer on the device",
        _cache_key_details,
    ),
    RUNNER_ATTRIBUTE: _Door(
        "aot_load",
        "torch._export.aot_load(so_path, device) for the declaring device; cpu's and "
        "aoti_load_package's runners are torch's",
        _runner,
    ),
}

#: The per-device doors, in that order.
DOOR_NAMES = tuple(_DOORS)
