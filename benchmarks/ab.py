"""An A/B of benchmarks between a git revision and the work tree, in one run.

Each side runs its own ``benchmarks/run.py`` on its own source tree (``PYTHONPATH``), in
rounds that alternate A and B, so that both see the same machine; the table gives each
result's median per side and the ratio B / A::

    python benchmarks/ab.py --base HEAD --only lookup --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _export(revision: str, into: Path) -> Path:
    """The revision's ``src`` and ``benchmarks``, written under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "src", "benchmarks"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _run(tree: Path, only: str, out: Path) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": str(tree / "src")}
    subprocess.run(
        [sys.executable, str(tree / "benchmarks" / "run.py"), "--only", only, "--json", str(out)],
        env=environment,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=1800,
    )
    report = json.loads(out.read_text())
    return {result["key"]: float(result["value"]) for result in report["results"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the revision A (default: HEAD)")
    parser.add_argument("--only", default="lookup", help="run.py's --only (default: lookup)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        base = _export(args.base, Path(work))
        sides: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
        for round_ in range(args.rounds):
            for side, tree in (("A", base), ("B", ROOT)):
                out = Path(work) / f"{side}{round_}.json"
                sides[side].append(_run(tree, args.only, out))
    print(f"A = {args.base}, B = the work tree; medians of {args.rounds} alternating rounds")
    print(f"{'result':<22} {'A':>10} {'B':>10} {'B / A':>7}")
    for name in sides["A"][0]:
        a = statistics.median(run[name] for run in sides["A"])
        b = statistics.median(run[name] for run in sides["B"])
        ratio = f"{b / a:7.3f}" if a else "      -"
        print(f"{name:<22} {a:10.4g} {b:10.4g} {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
