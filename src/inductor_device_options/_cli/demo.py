"""``inductor-device-options demo``: the sample device, end to end (``_demo/`` runs it)."""

from __future__ import annotations

import argparse
import sys

from .output import Output


def demo_command(args: argparse.Namespace, output: Output) -> int:
    from .._demo.run import run_demo

    return run_demo(sys.stdout, cache_dir=args.cache_dir, ranks=args.ranks)


def ranks_arg(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of ranks >= 1, got {text!r}")
    return int(text)
