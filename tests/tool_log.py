"""The log the tool wrappers of ``builds.py`` write: each call as ``\\x1e<tool>``, then its
argv, every word ended by a NUL; a response file of gcc's own (``@/tmp/ccAbC123``, which
gcc removes after the build) is logged as ``\\x1d<its contents>``. No dependencies: the
build worker reads it too."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

CALL = "\x1e"
RESPONSE_FILE = "\x1d"


def read_tool_log(path: str | Path) -> list[dict[str, Any]]:
    """Each call: ``{"tool": name, "argv": [...]}``, a response file of gcc's read as the
    tool reads it."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    calls: list[dict[str, Any]] = []
    for token in data.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        if token.startswith(CALL):
            calls.append({"tool": token[1:], "argv": []})
        elif token.startswith(RESPONSE_FILE):
            calls[-1]["argv"].extend(shlex.split(token[1:]))
        else:
            calls[-1]["argv"].append(token)
    return calls
