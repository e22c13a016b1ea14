"""Argument types and the parser: a bad value is one line on stderr and exit status 2,
before anything runs."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """``argparse`` with one-line usage errors (``themisto record: error: ...``)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _number(kind: type[int] | type[float], raw: str) -> float:
    try:
        value = kind(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {raw!r}")
    return value


def positive_int(raw: str) -> int:
    value = int(_number(int, raw))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(raw: str) -> int:
    value = int(_number(int, raw))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(raw: str) -> float:
    value = _number(float, raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {raw}")
    return value
