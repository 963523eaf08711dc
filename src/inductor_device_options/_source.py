"""Where a device's options come from: the one record, and the provider beside it.

:class:`DeviceOptionsSource` is what people and tools see (``introspection``, ``list``,
``show``, doctor). :class:`FoundSource` is what a lookup finds: that record, whether the
package serves the device from it, and the provider the package calls. Both are immutable;
a loaded entry point is a new :class:`FoundSource`. Nothing here imports another module of
the package, so ``_state`` can hold them typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

#: The provider contract: ``callback(device_type, aot_mode, compile_only)`` returns the
#: seven lists (a :class:`CppDeviceOptions`, or a tuple or list of seven lists of ``str``).
CppDeviceOptionsCallback = Callable[[str, bool, bool], Any]

SourceKind = Literal[
    "registration", "cpp_builder registration", "entry point", "device interface", "torch"
]


@dataclass(frozen=True)
class DeviceOptionsSource:
    """Where a device's options come from, in lookup order.

    ``kind``: ``"registration"`` (this package's), ``"cpp_builder registration"``
    (``torch._inductor.cpp_builder.register_cpp_device_options``), ``"entry point"``,
    ``"device interface"`` (``DeviceInterface.get_cpp_device_options``) or ``"torch"`` (the
    function below: torch's own or a replacement). ``description``: where to
    find it in the code. ``guaranteed``: the options get this package's guarantees
    (validation, custom_op_libs, real paths, SDK identity). ``fallback``: a provider bundled
    with this package, which gives way to the function below when it cannot compute them,
    and to a registration, another distribution's entry point or the device's
    DeviceInterface.

    Example:
        >>> import inductor_device_options as ido
        >>> source = ido.introspection.device_options_source("npu")  # the Ascend provider, bundled
        >>> source.kind, source.guaranteed, source.fallback
        ('entry point', True, True)
    """

    device_type: str
    kind: SourceKind
    description: str
    guaranteed: bool = False
    fallback: bool = False


DeviceOptionsSource.__module__ = "inductor_device_options.introspection"  # where users find it


@dataclass(frozen=True)
class FoundSource:
    """A normalized device's source as the lookup order finds it.

    ``source``: the record people see. ``served``: whether the package serves the device from
    it (False: the function below does, torch's own or a replacement, or torch asks the
    device's DeviceInterface itself). ``provider``: what the package calls, where it serves
    the device; None until a declared entry point's module is imported (``loaded``)."""

    source: DeviceOptionsSource
    served: bool = True
    provider: CppDeviceOptionsCallback | None = field(default=None, repr=False, compare=False)

    @property
    def device_type(self) -> str:
        return self.source.device_type

    @property
    def description(self) -> str:
        return self.source.description
