"""Operators and methods the baseline applies to values it knows from the runtime snapshot:
Python's own, on plain values only (numbers, strings, bytes, bounded ranges, and tuples,
lists, dicts and sets of them), within bounds. A guess must never cost more than a
moment, whatever the cell asks (``2 ** 10**9``, ``'x' * 10**12``, ``'x'.center(10**9)``);
a value of any other type (a NumPy scalar, an object whose ``__add__`` is the user's code)
is not computed. Everything else raises ``Refused``: the baseline then does not know the
answer. Any other exception is Python's own, on plain values: the kernel raises it too."""

from __future__ import annotations

import ast
import operator
import re
import string
from collections.abc import Callable, Iterator
from typing import Any


class Refused(ValueError):
    """Not computed here (not plain, too large): unlike Python's own errors, not a sign
    that the kernel raises."""


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


_SIZED = (str, bytes, tuple, list, dict, set, frozenset, range)


def plain(value: Any, depth: int = 0) -> bool:
    """A value these operators apply to (and the baseline may show)."""
    if type(value) in _SCALARS:
        return True
    if type(value) is range:
        return len(value) <= MAX_LENGTH
    if type(value) in (tuple, list, set, frozenset) and depth < 3 and len(value) <= MAX_LENGTH:
        return all(plain(item, depth + 1) for item in value)
    if type(value) is dict and depth < 3 and len(value) <= MAX_LENGTH:
        return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in value.items())
    return False


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise Refused("too large to guess")
    if isinstance(value, _SIZED) and len(value) > MAX_LENGTH:
        raise Refused("too long to guess")
    return value


def weight(value: Any) -> int:
    """Roughly what making the value cost: its length when it is a string or container."""
    return len(value) if isinstance(value, _SIZED) and not isinstance(value, range) else 1


def _size(value: Any) -> int:
    if isinstance(value, int):
        return value.bit_length()
    return len(value) if isinstance(value, _SIZED) else 1


def binary(op: ast.operator, left: Any, right: Any, in_place: bool = False) -> Any:
    """``left op right``, or ``left op= right`` (``in_place``: a list, dict or set changes)."""
    if not (plain(left) and plain(right)) or type(op) not in BINARY:
        raise Refused("not a plain operation")
    # The costly ones are bounded before they run, not after.
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) \
            and right > 0 and max(1, abs(left).bit_length()) * right > MAX_BITS:
        raise Refused("too large to guess")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_BITS:
        raise Refused("too large to guess")
    if isinstance(op, ast.Mult):
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, str | bytes | tuple | list) and isinstance(times, int) \
                    and len(seq) * max(times, 0) > MAX_LENGTH:
                raise Refused("too long to guess")
        if isinstance(left, int) and isinstance(right, int) \
                and _size(left) + _size(right) > MAX_BITS:
            raise Refused("too large to guess")
    if isinstance(left, list) and isinstance(right, _SIZED) \
            and len(left) + len(right) > MAX_LENGTH:
        raise Refused("too long to guess")  # L += [...] grows L before it is bounded
    return _bounded((IN_PLACE if in_place else BINARY)[type(op)](left, right))


# x op= y: Python's in-place operators (a list changes in place; its errors say "+=")
IN_PLACE: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
    ast.Div: operator.itruediv, ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod,
    ast.Pow: operator.ipow, ast.LShift: operator.ilshift, ast.RShift: operator.irshift,
    ast.BitOr: operator.ior, ast.BitAnd: operator.iand, ast.BitXor: operator.ixor,
}


def unary(op: ast.unaryop, operand: Any) -> Any:
    if not plain(operand) or type(op) not in UNARY:
        raise Refused("not a plain operation")
    return UNARY[type(op)](operand)


def compare(left: Any, ops: list[ast.cmpop], rights: list[Any]) -> bool:
    """``a < b <= c`` as Python chains it."""
    for op, right in zip(ops, rights, strict=True):
        if not (plain(left) and plain(right)) or type(op) not in COMPARE:
            raise Refused("not a plain comparison")
        if not COMPARE[type(op)](left, right):
            return False
        left = right
    return True


# Methods that read a plain value and return a new one (never the user's code: the owner
# and the arguments are plain), and attributes of plain numbers.
_READERS: dict[type, set[str]] = {
    str: {"upper", "lower", "capitalize", "title", "swapcase", "casefold", "strip", "lstrip",
          "rstrip", "split", "rsplit", "splitlines", "partition", "rpartition", "replace",
          "join", "find", "rfind", "index", "rindex", "count", "startswith", "endswith",
          "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "istitle",
          "isnumeric", "isdecimal", "isidentifier", "isprintable", "isascii", "center",
          "ljust", "rjust", "zfill", "format", "removeprefix", "removesuffix", "encode"},
    bytes: {"decode", "upper", "lower", "hex", "split", "strip", "startswith", "endswith",
            "count", "find", "replace"},
    int: {"bit_length", "bit_count", "conjugate", "as_integer_ratio"},
    float: {"is_integer", "as_integer_ratio", "conjugate", "hex"},
    complex: {"conjugate"},
    list: {"index", "count", "copy"},
    tuple: {"index", "count"},
    dict: {"keys", "values", "items", "get", "copy"},
    set: {"union", "intersection", "difference", "symmetric_difference", "issubset",
          "issuperset", "isdisjoint", "copy"},
}
_READERS[bool] = _READERS[int]
_READERS[frozenset] = _READERS[set] - {"copy"}
# Methods that change a list, dict or set in place.
MUTATORS: dict[type, set[str]] = {
    list: {"append", "extend", "insert", "remove", "pop", "sort", "reverse", "clear"},
    dict: {"update", "pop", "setdefault", "clear"},
    set: {"add", "discard", "remove", "update", "clear", "intersection_update",
          "difference_update", "symmetric_difference_update"},
}
_ATTRIBUTES = {"real", "imag", "numerator", "denominator", "start", "stop", "step"}
_PADDING = {"center", "ljust", "rjust", "zfill"}
_WIDTH = re.compile(r"\d+")


def attribute(owner: Any, name: str) -> Any:
    """``x.real``, ``r.stop``... of a plain number or range."""
    if not plain(owner) or name not in _ATTRIBUTES or not hasattr(owner, name):
        raise Refused("not a plain attribute")
    return getattr(owner, name)


def method(owner: Any, name: str, arguments: list[Any], named: dict[str, Any]) -> Any:
    """``owner.name(*arguments, **named)`` for a str, number, list, tuple, dict or set
    (the caller checked it is plain) and plain arguments, the mutators included (the
    caller keeps the changed owner); bounded before and after."""
    kind = type(owner)  # its items are not checked: the caller's values, never user code
    if name not in _READERS.get(kind, set()) | MUTATORS.get(kind, set()) \
            or not all(plain(a) for a in [*arguments, *named.values()]):
        raise Refused("not a plain method")
    if name in _PADDING and any(isinstance(a, int) and a > MAX_LENGTH for a in arguments):
        raise Refused("too long to guess")
    if name == "replace" and len(arguments) >= 2 and isinstance(owner, str | bytes) and \
            (len(owner) + 1) * (len(arguments[1]) + 1) > MAX_LENGTH:
        raise Refused("too long to guess")
    if name == "format":
        assert isinstance(owner, str)
        _check_template(owner)
    result = getattr(owner, name)(*arguments, **named)
    _bounded(owner)
    return _bounded(result)


def formatted(value: Any, spec: str) -> str:
    """``format(value, spec)``, refused where the spec asks for a huge width or precision."""
    if any(int(digits) > MAX_LENGTH for digits in _WIDTH.findall(spec)):
        raise Refused("too long to guess")
    return format(value, spec)


def _check_template(template: str) -> None:
    """A ``str.format`` template whose fields read no attributes and ask no huge width."""
    for _, field, spec, _ in string.Formatter().parse(template):
        if field is not None and ("." in field or "{" in (spec or "")):
            raise Refused("not a plain template")
        if spec and any(int(digits) > MAX_LENGTH for digits in _WIDTH.findall(spec)):
            raise Refused("too long to guess")


def ordered(value: Any, depth: int = 0) -> bool:
    """Whether the value prints and iterates in an order the rules can know: not a set
    (its order is the kernel's hashes and history), nor a container holding one."""
    if isinstance(value, set | frozenset):
        return False
    if isinstance(value, tuple | list) and depth < 3:
        return all(ordered(item, depth + 1) for item in value)
    if isinstance(value, dict) and depth < 3:
        return all(ordered(k, depth + 1) and ordered(v, depth + 1) for k, v in value.items())
    return True


def items(value: Any) -> Iterator[Any]:
    """What a ``for`` loop over ``value`` gets: a plain value in a known order (a list
    changed in the loop is read live, as Python does), or an iterator made from one
    (``zip``, ``enumerate``, a generator expression: taken as the loop goes, so that a
    ``break`` leaves the rest for later)."""
    if isinstance(value, Iterator):
        return value
    if isinstance(value, range):  # however long: the loop's steps are bounded
        return iter(value)
    if plain(value) and ordered(value) and isinstance(value, _SIZED):
        return iter(value)
    raise Refused("not a plain iterable")
