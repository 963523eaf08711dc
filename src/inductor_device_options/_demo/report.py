"""What the demo prints: numbered, timed steps and their checks, counted as they happen."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class Report:
    """Prints steps and checks as they happen, and counts the checks."""

    def __init__(self, out: TextIO, step_count: int) -> None:
        self.out = out
        self.step_count = step_count
        self.step_number = 0
        self.passed = 0
        self.failed: list[str] = []

    def say(self, text: str = "", indent: int = 4) -> None:
        for line in text.splitlines() or [""]:
            print(" " * indent + line if line else "", file=self.out)
        self.out.flush()

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        self.step_number += 1
        self.say(f"\n[{self.step_number}/{self.step_count}] {title}", indent=0)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.say(f"({time.perf_counter() - started:.1f} s)")

    def check(self, description: str, passed: bool, detail: str = "") -> bool:
        if passed:
            self.passed += 1
        else:
            self.failed.append(description)
        suffix = f": {detail}" if detail else ""
        self.say(f"{'ok  ' if passed else 'FAIL'}  {description}{suffix}")
        return passed


def shorten(text: str, width: int) -> str:
    """``text`` cut in the middle to ``width`` characters: file names keep both ends."""
    return (
        text if len(text) <= width else text[: width // 2 - 2] + "..." + text[-(width // 2) + 1 :]
    )
