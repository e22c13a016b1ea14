"""``themisto`` entry point: argument parsing and one-line errors, never tracebacks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from themisto_ext.cli import benchmark, migrate, models, predictions, trajectories, tuning
from themisto_ext.cli.args import Parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="themisto",
        description="Record notebook trajectories and work with them.",
    )
    parser.add_argument("--store", help=trajectories.STORE_HELP + " (before or after the "
                        "command name of record, list, export)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    trajectories.register(sub)
    predictions.register(sub)
    benchmark.register(sub)
    migrate.register(sub)
    tuning.register(sub)
    models.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except KeyboardInterrupt:
        print("themisto: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the documented promise: one line, no traceback
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"themisto {args.command}: error: {message}", file=sys.stderr)
        return 1
