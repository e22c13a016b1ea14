"""NumPy arrays the baseline rebuilds from a snapshot's repr and computes on, bounded.

Most cells of a NumPy notebook read an array the snapshot holds whole (the kernel writes an
array's repr in full up to 100 elements, ``array([9, 4, 0, 3, 8, 6])``) and index, compare,
reduce or stack it: ``x1[-1]``, ``x2[:2, ::2]``, ``x < 6``, ``np.sum(x < 6, axis=1)``. Those
outputs are determined by the snapshot, so the baseline computes them instead of copying the
previous output. Only what is listed here is computed, and every result is bounded before it
is made (``MAX_ELEMENTS``): a guess never costs more than a moment whatever the cell asks
(``np.arange(10**12)``, a broadcast of two long vectors). Anything else raises
``ValueError``: the baseline then does not know the answer.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_ELEMENTS = 10_000
"""Largest array a guess may make."""

_ARRAY = re.compile(r"array\((.*?)(?:,\s*dtype=([\w<>|']+))?\)", re.S)
_SPECIAL = {"nan": math.nan, "inf": math.inf}
# Functions of the numpy module whose result is no larger than their arguments (reductions,
# element-wise maps, joins) or is bounded by a literal size checked before the call; and
# every ufunc (np.add, np.exp2, np.arcsin...), bounded by the shape its arguments broadcast to.
_REDUCING = {
    "sum", "mean", "min", "max", "any", "all", "count_nonzero", "nansum", "nanmin", "nanmax",
    "nanmean", "prod", "median", "std", "var", "argmin", "argmax", "abs", "sqrt", "sort",
    "cumsum", "cumprod", "unique", "transpose", "square", "exp", "log", "sin", "cos",
    "floor", "ceil", "round", "isnan", "nonzero", "where", "flip", "ravel", "argsort",
    "partition", "argpartition", "diff", "clip", "percentile", "quantile", "average",
}
_JOINING = {"concatenate", "vstack", "hstack", "stack", "column_stack"}
_MAKING = {"array", "arange", "zeros", "ones", "full", "linspace", "eye"}
_METHODS = {
    "sum", "mean", "min", "max", "any", "all", "prod", "std", "var", "argmin", "argmax",
    "cumsum", "cumprod", "copy", "reshape", "ravel", "flatten", "nonzero", "transpose",
    "astype", "round", "argsort", "diagonal", "clip",
}
_UFUNC_METHODS = {"reduce", "accumulate", "outer"}
_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "T", "itemsize", "nbytes"}
_KEYWORDS = {"axis", "dtype", "keepdims", "ddof", "endpoint", "num"}


def numpy() -> Any:
    import numpy as np  # imported here: only a cell that uses arrays pays for it

    return np


def is_array(value: Any) -> bool:
    np = numpy()
    return isinstance(value, np.ndarray | np.generic)


def from_repr(text: str, shape: Sequence[int] | None, nudge: int = 0) -> Any:
    """The array whose whole repr ``text`` is (``array([...], dtype=...)``), or ValueError
    when the repr was cut short (``...``), is not an array's, or disagrees with ``shape``.
    ``nudge`` (+1 or -1): floats the repr rounded (NumPy prints 8 digits) moved up or down
    by most of the rounding (see ``rounded``), so that a caller can tell whether a result
    depends on the digits the repr dropped; +2 or -2: every other one the other way."""
    match = _ARRAY.fullmatch(text.strip())
    if match is None or "..." in text:
        raise ValueError("not a whole array repr")
    body, dtype = match.group(1), match.group(2)
    np = numpy()
    data = _literal(ast.parse(body, mode="eval").body)
    array = np.array(data, dtype=dtype.strip("'") if dtype else None)
    if array.dtype.hasobject or (shape is not None and tuple(array.shape) != tuple(shape)):
        raise ValueError("not the array the snapshot describes")
    if nudge and rounded(array):
        step = 0.4 * 10.0 ** -_precision()  # less than the rounding (5e-9 at 8 digits):
        # the nudged array still reads as its repr
        nudge_rounded(array, math.copysign(step, nudge), SCIENTIFIC.search(body) is not None,
                      _kept(), alternate=abs(nudge) == 2)
    return array


def _precision() -> int:
    """The digits NumPy prints now: 8, or what the notebook set (``display_options``)."""
    precision = numpy().get_printoptions().get("precision")
    return precision if isinstance(precision, int) and 0 <= precision <= 30 else 8


def _kept() -> int:
    """Decimals past which a float NumPy printed is taken as rounded (see ``rounded``)."""
    return max(_precision() - 3, 0)


SCIENTIFIC = re.compile(r"\de[+-]\d")
"""A number a repr writes in scientific notation (its rounding is relative to it)."""


def nudge_rounded(array: Any, step: float, relative: bool, kept: int,
                  alternate: bool = False) -> None:
    """Moves in place every float of ``array`` with more than ``kept`` decimals (one the
    repr may have rounded: see ``rounded``) by ``step``, times its size when ``relative``
    (scientific notation); with ``alternate``, every other element the other way (a
    uniform move leaves differences unchanged: ``arr - arr.mean(1)`` read the same both
    ways while the kernel's digits differed)."""
    np = numpy()
    cut = _rounded_elements(array, kept)
    moves = np.full(array.shape, step)
    if alternate:
        moves[np.indices(array.shape).sum(axis=0) % 2 == 1] *= -1
    array[cut] += moves[cut] * (np.abs(array[cut]) if relative else 1)


def rounded(array: Any) -> bool:
    """Whether the repr an array was rebuilt from may have rounded its floats: NumPy prints
    8 decimals without trailing zeros, so 1.57079633 and 0.6825224 may both be cut; a
    float with 6 decimals or more is taken to be (0.125 and 2.5 are taken as they read).
    Under another precision p, a float with p - 2 decimals or more."""
    np = numpy()
    return array.dtype.kind in "fc" and bool(np.any(_rounded_elements(array, _kept())))


def _rounded_elements(array: Any, kept: int) -> Any:
    np = numpy()
    with np.errstate(all="ignore"):
        return np.isfinite(array) & (np.round(array, kept) != array)


def _literal(node: ast.expr) -> Any:
    """A nested list of numbers, booleans and strings, with NumPy's ``nan`` and ``inf``."""
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal(element) for element in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Name) and node.id in _SPECIAL:
        return _SPECIAL[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if isinstance(value, int | float | complex) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | complex | str):
        return node.value
    raise ValueError("not an array literal")


def _size(shape: Any) -> int:
    if isinstance(shape, int):
        return shape
    if isinstance(shape, tuple | list) and all(isinstance(n, int) for n in shape):
        return math.prod(shape)
    raise ValueError("not a shape")


def _bounded(value: Any) -> Any:
    np = numpy()
    if isinstance(value, np.ndarray) and (value.size > MAX_ELEMENTS or value.dtype.hasobject):
        raise ValueError("too large to guess")
    return value


def _operand(value: Any) -> bool:
    np = numpy()
    if isinstance(value, np.ndarray | np.generic):
        return not (isinstance(value, np.ndarray) and value.dtype.hasobject)
    return type(value) in (bool, int, float, complex)


_TYPES = (bool, int, float, complex, str)


def _argument(value: Any) -> bool:
    """A value NumPy computes with as the kernel would: numbers, strings, None, what
    converts to an array (arrays, pandas objects), a dtype, or lists, tuples and dicts of
    them. Anything else is refused: ``np.sum`` of an object it does not know returns that
    object (a value known only by its cut repr was "summed" into itself)."""
    np = numpy()
    if value is None or isinstance(value, str) or _operand(value):
        return True
    if isinstance(value, list | tuple):
        return all(_argument(item) for item in value)
    if isinstance(value, dict):  # a structured dtype
        return all(isinstance(k, str) and _argument(v) for k, v in value.items())
    if isinstance(value, type):
        return value in _TYPES or issubclass(value, np.generic)
    return hasattr(type(value), "__array__")


def _check_arguments(args: Sequence[Any], keywords: Mapping[str, Any]) -> None:
    if not all(_argument(a) for a in args) or not all(_argument(v) for v in keywords.values()):
        raise ValueError("not values NumPy computes with")


def binary(function: Any, left: Any, right: Any) -> Any:
    """``function(left, right)`` where one side is an array and both are numeric."""
    np = numpy()
    if not (_operand(left) and _operand(right)):
        raise ValueError("not an array operation")
    shape = np.broadcast_shapes(np.shape(left), np.shape(right))
    if _size(shape) > MAX_ELEMENTS:
        raise ValueError("too large to guess")
    with np.errstate(all="ignore"):
        return _bounded(function(left, right))


def unary(function: Any, operand: Any) -> Any:
    if not _operand(operand):
        raise ValueError("not an array operation")
    np = numpy()
    with np.errstate(all="ignore"):
        return _bounded(function(operand))


def subscript(value: Any, index: Any) -> Any:
    """``value[index]``: an index array may not make more than ``MAX_ELEMENTS``."""
    np = numpy()
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, list | np.ndarray) and np.size(part) > MAX_ELEMENTS:
            raise ValueError("too large to guess")
    return _bounded(value[index])


def assign(value: Any, index: Any, item: Any) -> None:
    """``value[index] = item`` on an array the cell holds."""
    if not (_operand(item) or isinstance(item, list | tuple)):
        raise ValueError("not an array assignment")
    subscript(value, index)  # the index is checked as a read is
    value[index] = item


def attribute(value: Any, name: str) -> Any:
    if name not in _ATTRIBUTES:
        raise ValueError("not a known attribute")
    return getattr(value, name)


def method(value: Any, name: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> Any:
    """``value.name(*args, **keywords)`` for the methods listed above."""
    np = numpy()
    if name not in _METHODS or not set(keywords) <= _KEYWORDS:
        raise ValueError("not a known method")
    _check_arguments(args, keywords)
    if name == "reshape":
        shape = args[0] if len(args) == 1 else tuple(args)
        if _size(tuple(shape) if isinstance(shape, list) else shape) > MAX_ELEMENTS:
            raise ValueError("too large to guess")
    with np.errstate(all="ignore"):
        return _bounded(getattr(value, name)(*args, **keywords))


def function(name: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> Any:
    """``np.name(*args, **keywords)`` for the functions listed above."""
    np = numpy()
    if not set(keywords) <= _KEYWORDS:
        raise ValueError("not a known keyword")
    _check_arguments(args, keywords)
    if name in _REDUCING or name in _JOINING:
        arrays = args[0] if name in _JOINING and args and isinstance(args[0], list | tuple) \
            else args
        if sum(int(np.size(a)) for a in arrays) > MAX_ELEMENTS:
            raise ValueError("too large to guess")
    elif name in _MAKING:
        _check_making(name, args, keywords)
    elif isinstance(getattr(np, name, None), np.ufunc):  # element-wise: np.add, np.exp2...
        if _size(np.broadcast_shapes(*(np.shape(a) for a in args))) > MAX_ELEMENTS:
            raise ValueError("too large to guess")
    else:
        raise ValueError("not a known function")
    with np.errstate(all="ignore"):
        return _bounded(getattr(np, name)(*args, **keywords))


def ufunc_method(name: str, method: str, args: Sequence[Any],
                 keywords: Mapping[str, Any]) -> Any:
    """``np.name.method(...)`` for a ufunc: ``np.add.reduce(x)``, ``np.multiply.outer(x, x)``."""
    np = numpy()
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or method not in _UFUNC_METHODS \
            or not set(keywords) <= _KEYWORDS:
        raise ValueError("not a known ufunc method")
    _check_arguments(args, keywords)
    sizes = [int(np.size(a)) for a in args]
    if (math.prod(sizes) if method == "outer" else sum(sizes)) > MAX_ELEMENTS:
        raise ValueError("too large to guess")
    with np.errstate(all="ignore"):
        return _bounded(getattr(ufunc, method)(*args, **keywords))


def _check_making(name: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> None:
    """The size a constructor will make, checked before it makes it."""
    if name == "array":
        size = len(str(args[0])) if args else 0  # no larger than its literal's text
    elif name == "arange":
        numbers = [a for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
        if len(numbers) != len(args) or not 1 <= len(numbers) <= 3:
            raise ValueError("not a plain arange")
        start, stop, step = (0, numbers[0], 1) if len(numbers) == 1 else (
            numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 1)
        if step == 0:
            raise ValueError("a zero step")
        size = max(0, math.ceil((stop - start) / step))
    elif name == "linspace":
        size = int(keywords.get("num", args[2] if len(args) > 2 else 50))
    elif name == "eye":
        size = int(args[0]) ** 2 if args else 0
    else:  # zeros, ones, full
        size = _size(args[0]) if args else 0
    if size > MAX_ELEMENTS:
        raise ValueError("too large to guess")


def constant(name: str) -> Any:
    """``np.name`` for NumPy's constants and scalar types (``np.nan``, ``np.newaxis``,
    ``np.int32``); ValueError for anything else (a function is called, not read)."""
    np = numpy()
    if name in {"nan", "inf", "pi", "e", "newaxis"}:
        return getattr(np, name)
    value = getattr(np, name, None)
    if isinstance(value, type) and issubclass(value, np.generic):
        return value
    raise ValueError("not a NumPy constant")
