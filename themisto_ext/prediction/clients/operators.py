"""Operators the baseline applies to values it knows from the runtime snapshot: Python's
own, on plain values only (numbers, strings, bytes, and tuples and lists of them), within
bounds. A guess must never cost more than a moment, whatever the cell asks (``2 ** 10**9``,
``'x' * 10**12``); a value of any other type (a NumPy scalar, an object whose ``__add__``
is the user's code) is not computed. Everything else raises ``ValueError``: the baseline
then does not know the answer."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

MAX_BITS = 4096
"""Largest integer a result may be (bits)."""
MAX_LENGTH = 100_000
"""Longest string, bytes, tuple or list a result may be."""

_SCALARS = (bool, int, float, complex, str, bytes, type(None))
BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
}
UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}


def plain(value: Any, depth: int = 0) -> bool:
    """A value these operators apply to (and the baseline may show)."""
    if type(value) in _SCALARS:
        return True
    if type(value) in (tuple, list) and depth < 3 and len(value) <= MAX_LENGTH:
        return all(plain(item, depth + 1) for item in value)
    return False


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise ValueError("too large to guess")
    if isinstance(value, str | bytes | tuple | list) and len(value) > MAX_LENGTH:
        raise ValueError("too long to guess")
    return value


def _size(value: Any) -> int:
    if isinstance(value, int):
        return value.bit_length()
    return len(value) if isinstance(value, str | bytes | tuple | list) else 1


def binary(op: ast.operator, left: Any, right: Any) -> Any:
    if not (plain(left) and plain(right)) or type(op) not in BINARY:
        raise ValueError("not a plain operation")
    # The costly ones are bounded before they run, not after.
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) \
            and right > 0 and max(1, abs(left).bit_length()) * right > MAX_BITS:
        raise ValueError("too large to guess")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_BITS:
        raise ValueError("too large to guess")
    if isinstance(op, ast.Mult):
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, str | bytes | tuple | list) and isinstance(times, int) \
                    and len(seq) * max(times, 0) > MAX_LENGTH:
                raise ValueError("too long to guess")
        if isinstance(left, int) and isinstance(right, int) \
                and _size(left) + _size(right) > MAX_BITS:
            raise ValueError("too large to guess")
    return _bounded(BINARY[type(op)](left, right))


def unary(op: ast.unaryop, operand: Any) -> Any:
    if not plain(operand) or type(op) not in UNARY:
        raise ValueError("not a plain operation")
    return UNARY[type(op)](operand)


def compare(left: Any, ops: list[ast.cmpop], rights: list[Any]) -> bool:
    """``a < b <= c`` as Python chains it."""
    for op, right in zip(ops, rights, strict=True):
        if not (plain(left) and plain(right)) or type(op) not in COMPARE:
            raise ValueError("not a plain comparison")
        if not COMPARE[type(op)](left, right):
            return False
        left = right
    return True
