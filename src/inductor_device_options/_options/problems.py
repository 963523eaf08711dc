"""``Problem``: what is wrong and what to do about it, one type for the validation pipeline's
refusals and doctor's failures alike. Pure.

A problem of one value of the options has its ``Place`` (the field, the position, the
value); its cause is then worded to follow ``field[position] = 'value'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Place(NamedTuple):
    """A value of the options and where it stands: ``field[position] = value``."""

    field: str
    position: int
    value: str


@dataclass(frozen=True)
class Problem:
    """What is wrong (``cause``), what to do (``fix``), supporting lines (compiler output)
    and, for a failure with many instances, each of them (the cause says what they share).

    ``place``: the value the problem is of, when it is of one value of the options; the
    cause then says what is wrong with it (``"is empty"``), and :meth:`stated` says the
    whole sentence.
    """

    cause: str
    fix: str = ""
    details: tuple[str, ...] = ()
    instances: tuple[str, ...] = ()
    place: Place | None = None

    @classmethod
    def of_value(cls, field: str, position: int, value: str, cause: str) -> Problem:
        """The problem of ``value`` at ``field[position]``: ``cause`` follows the value."""
        return cls(cause, place=Place(field, position, value))

    def stated(self, shown: str | None = None) -> str:
        """The cause as a sentence of its own: ``field[position] = 'value'`` and the cause
        for a problem of one value (``shown`` in place of the value's ``repr``)."""
        if self.place is None:
            return self.cause
        field, position, value = self.place
        return f"{field}[{position}] = {shown or repr(value)} {self.cause}"


__all__ = ["Place", "Problem"]
