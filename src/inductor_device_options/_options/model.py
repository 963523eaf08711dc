"""The data: ``CppDeviceOptions`` and its fields. Pure.

The seven lists are those torch's ``get_cpp_torch_device_options`` returns; what each value
must meet, and in which order it is checked, is the validation pipeline's
(``options.pipeline``, the rules in ``options.rules``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class CppDeviceOptions(NamedTuple):
    """The seven lists ``get_cpp_torch_device_options`` returns, by name.

    A provider may return it or a plain tuple or list of seven lists of ``str``; the package hands
    Inductor the record itself, a copy, which Inductor unpacks as it unpacks torch's 7-tuple
    (:meth:`as_tuple` gives that plain tuple).

    Example:
        >>> import inductor_device_options as ido
        >>> options = ido.CppDeviceOptions.empty()
        >>> options.definitions.append("USE_ACME")
        >>> options.as_tuple()
        (['USE_ACME'], [], [], [], [], [], [])
    """

    definitions: list[str]
    include_dirs: list[str]
    cflags: list[str]
    ldflags: list[str]
    libraries_dirs: list[str]
    libraries: list[str]
    passthrough_args: list[str]

    @classmethod
    def empty(cls) -> CppDeviceOptions:
        return cls([], [], [], [], [], [], [])

    @classmethod
    def of(cls, lists: Iterable[Iterable[str]]) -> CppDeviceOptions:
        """The options of seven lists (torch's 7-tuple), as fresh lists."""
        return cls(*(list(values) for values in lists))

    def copy(self) -> CppDeviceOptions:
        """Fresh lists, so that a caller appending to them cannot change ours."""
        return CppDeviceOptions.of(self)

    def as_tuple(
        self,
    ) -> tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]:
        """The plain 7-tuple of fresh lists, the type torch's own function returns."""
        copied = self.copy()
        return (
            copied.definitions,
            copied.include_dirs,
            copied.cflags,
            copied.ldflags,
            copied.libraries_dirs,
            copied.libraries,
            copied.passthrough_args,
        )


FIELDS: tuple[str, ...] = CppDeviceOptions._fields
#: Fields whose values stand for several compiler arguments; every other value is one.
MULTI_WORD_FIELDS = frozenset({"passthrough_args"})


__all__ = [
    "FIELDS",
    "MULTI_WORD_FIELDS",
    "CppDeviceOptions",
]
