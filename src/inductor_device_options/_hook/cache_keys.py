"""The SDK identity in Inductor's FX graph and AOTAutograd cache keys, on every torch.

Both keys hold ``CacheBase.get_system()``, which torch computes once per process and which,
before torch 2.15, holds nothing of a PrivateUse1 device's SDK: a remote cache (Redis) or a
shared cache dir would hand a machine graphs generated against another SDK. So
``get_system`` is wrapped, on every torch:

* before 2.15, it asks each registered and available ``DeviceInterface`` for
  ``get_cache_system_info()`` exactly as torch 2.15 does (a dict or None, JSON-serialisable,
  a failing backend logged and left out, sampled once per process), under
  ``"device_interfaces"``;
* on every torch, it adds ``"inductor_device_options"``: the SDK identity of each device
  whose options name an SDK of its own, whichever door serves it (``device_identity``),
  beside a backend's own answer, never replacing it. It is computed at each call, so a
  device served after the first compile still keys the compiles after it.

A function a backend assigns to ``CacheBase.get_system`` later (torch_npu does, at its first
compile) is adopted at the next compile's start (``compile_boundary``): wrapped in turn,
whether or not it calls the function it replaced, so that its own fields and the package's
both key the compile.

Where nothing is added, torch's own answer is returned unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import _state
from .device_identity import device_identity, identity_device_types

#: The field of ``get_system()``'s answer that holds the SDK identities.
CACHE_KEY_FIELD = "inductor_device_options"
#: torch 2.15's field for the devices' own answers.
INTERFACES_FIELD = "device_interfaces"
GET_SYSTEM = "get_system"
_MARK = "_inductor_device_options_sdk_identities"

log = logging.getLogger(__name__)

SystemInfo = dict[str, Any]
# The interfaces' answers, sampled once per process as torch 2.15 samples them.
_sampled: _state.BoundedCache[str, dict[str, object]] = _state.cache(1)


def install(codecache: ModuleType) -> None:
    """Wrap ``codecache.CacheBase.get_system``; idempotent (a function assigned over the
    wrapper is wrapped in turn at the next compile, and by ``arm()``)."""
    from torch._dynamo.device_interface import DeviceInterface

    cache_base = codecache.CacheBase
    # torch 2.6-2.15 define get_system as a staticmethod over a functools cache; a backend's
    # replacement may be a plain function (getattr_static sees which).
    current = inspect.getattr_static(cache_base, GET_SYSTEM)
    function = current.__func__ if isinstance(current, staticmethod) else current
    if getattr(function, _MARK, False):
        return
    # torch 2.15 added DeviceInterface.get_cache_system_info and asks it in its own
    # CacheBase.get_system; 2.6-2.14 have neither, and get the backport.
    backport = not hasattr(DeviceInterface, "get_cache_system_info")
    wrapper = with_sdk_identities(function, backport, _rehash_function(codecache))
    setattr(cache_base, GET_SYSTEM, staticmethod(wrapper))


def is_installed(codecache: ModuleType) -> bool:
    """Whether ``CacheBase.get_system`` is this package's wrapper."""
    current = inspect.getattr_static(codecache.CacheBase, GET_SYSTEM)
    function = current.__func__ if isinstance(current, staticmethod) else current
    return bool(getattr(function, _MARK, False))


def with_sdk_identities(
    get_system: Callable[[], SystemInfo],
    backport: bool,
    rehash: Callable[[SystemInfo], str],
) -> Callable[[], SystemInfo]:
    def get_system_with_sdk_identities() -> SystemInfo:
        system = get_system()
        added: SystemInfo = {}
        if backport:
            interfaces = interface_cache_infos()
            if interfaces:
                added[INTERFACES_FIELD] = interfaces
        identities = sdk_identities()
        if identities:
            added[CACHE_KEY_FIELD] = identities
        if not added:
            return system
        # The hash is over every other field (torch's own scheme): recomputed with the added
        # fields, so the key changes with them whichever field a cache reads.
        keyed = {key: value for key, value in system.items() if key != "hash"}
        keyed.update(added)
        return {**keyed, "hash": rehash(keyed)}

    # Sets __wrapped__ alone: the name and the doc stay the wrapper's.
    functools.update_wrapper(get_system_with_sdk_identities, get_system, assigned=(), updated=())
    # torch's tests and tools clear the cached answer: clear torch's, and the interfaces'.
    get_system_with_sdk_identities.cache_clear = _cache_clear(get_system)  # type: ignore[attr-defined]
    setattr(get_system_with_sdk_identities, _MARK, True)
    return get_system_with_sdk_identities


def sdk_identities() -> dict[str, str]:
    """Device type -> SDK identity, for each device whose identity keys the caches; a
    device whose provider fails is logged and left out (its own compiles fail anyway)."""
    identities: dict[str, str] = {}
    for device_type in identity_device_types():
        try:
            identity = device_identity(device_type)
        except Exception:
            log.warning(
                "inductor-device-options: the SDK identity of device %r cannot be computed; "
                "it is left out of the cache key",
                device_type,
                exc_info=True,
            )
            continue
        if identity is not None:
            identities[device_type] = identity
    return identities


def interface_cache_infos() -> dict[str, object]:
    """torch 2.15's ``get_cache_system_info()`` of each registered, available interface,
    sampled once per process (as torch 2.15's cached ``get_system`` samples it)."""
    sampled = _sampled.get("interfaces")
    if sampled is None:
        sampled = _sampled.put("interfaces", _sample_interfaces())
    return sampled


def _sample_interfaces() -> dict[str, object]:
    """torch 2.15's loop in ``codecache.CacheBase.get_system``, its log message included."""
    from torch._dynamo.device_interface import get_registered_device_interfaces

    infos: dict[str, object] = {}
    for name, interface in get_registered_device_interfaces():
        if ":" in name:  # indexed instances of a backend: once per backend
            continue
        method = getattr(interface, "get_cache_system_info", None)
        if method is None:
            continue
        # Part of every compile's key: a broken backend must not break CPU compiles.
        try:
            if not interface.is_available():
                continue
            info = method()
            if info is None:
                continue
            if not isinstance(info, dict):
                raise TypeError(f"expected a dict or None, got {type(info)}")
            json.dumps(info, sort_keys=True)
            infos[name] = info
        except Exception:
            log.warning(
                "Failed to collect cache system info from device interface %s",
                name,
                exc_info=True,
            )
    return infos


def _cache_clear(get_system: Callable[[], SystemInfo]) -> Callable[[], None]:
    def cache_clear() -> None:
        _sampled.clear()
        clear = getattr(get_system, "cache_clear", None)
        if clear is not None:
            clear()

    return cache_clear


def _rehash_function(codecache: ModuleType) -> Callable[[SystemInfo], str]:
    """How the running torch hashes the system info (2.6: sha256 of its sorted JSON)."""
    # torch 2.13-2.15's CacheBase.get_system hashes with cache_key.SYSTEM_CACHE_KEY_STRATEGY
    # (imported into codecache); 2.6's inlines hashlib.sha256(json.dumps(..., sort_keys)).
    strategy = getattr(codecache, "SYSTEM_CACHE_KEY_STRATEGY", None)
    if strategy is not None:
        key_from_json: Callable[[SystemInfo], str] = strategy.key_from_json
        return key_from_json

    def sha256_of_json(info: SystemInfo) -> str:
        return hashlib.sha256(json.dumps(info, sort_keys=True).encode("utf-8")).hexdigest()

    return sha256_of_json
