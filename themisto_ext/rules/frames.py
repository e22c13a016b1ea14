"""pandas objects the baseline rebuilds from a snapshot's repr and computes on, bounded.

A pandas notebook's cells mostly read a small Series or DataFrame and aggregate, select or
look at it: ``ser.sum()``, ``data['area']``, ``df.loc['Texas']``, ``df.mean(axis=1)``,
``df.head(2)``. When the snapshot holds the object's whole repr (the kernel writes it with
at most 10 rows and 12 columns, ``kernel/reprs.py``), the object is rebuilt from that text
and the cell's expression computed on it, so the baseline answers instead of copying the
previous output.

A rebuild is used only when it is faithful: the object rebuilt is shown again with the
kernel's display options and must give back exactly the recorded text (a column whose
values have spaces, a dtype the text does not say, a cut-short frame all fail that test,
and the baseline then does not know). A float shown at pandas' precision or in scientific
notation is a rounding of the kernel's value: the baseline keeps a result computed from
one only if it reads the same with the value moved within that rounding. Only the
attributes and methods listed here are computed, on objects of at most ``MAX_ELEMENTS``
values; anything else raises ``ValueError``. pandas is imported only when a cell reads
such an object (and a server without pandas answers nothing here).
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from themisto_ext.contract import PANDAS_DISPLAY
from themisto_ext.rules import arrays, captured, operators
from themisto_ext.rules.flow import Undetermined

MAX_ELEMENTS = 10_000
"""Largest object a guess may make."""

KINDS = frozenset({"Series", "DataFrame"})
_SNAPSHOT_DISPLAY: dict[str, Any] = dict(zip(PANDAS_DISPLAY[::2], PANDAS_DISPLAY[1::2],
                                             strict=True))
"""``PANDAS_DISPLAY`` by option name, for ``shown``."""
_ROUNDED = re.compile(r"\d\.\d{6}|\de[+-]\d")
"""A float pandas shows at its precision (6 decimals) or in scientific notation may be
rounded: what is computed from it may be other numbers than the kernel's."""
_FOOTER = re.compile(r"(?:Name: (?P<name>.*), )?dtype: (?P<dtype>\w+)")
_ATTRIBUTES = {"shape", "size", "ndim", "columns", "index", "values", "dtypes", "dtype",
               "T", "name", "loc", "iloc", "empty", "str", "cat", "dt", "categories",
               "codes", "year", "month", "day", "dayofweek", "hour", "date", "ordered"}
_METHODS = {
    "sum", "mean", "min", "max", "std", "var", "median", "count", "prod", "any", "all",
    "head", "tail", "cumsum", "cumprod", "abs", "round", "sort_values", "sort_index",
    "isnull", "isna", "notnull", "notna", "dropna", "fillna", "unique", "nunique",
    "value_counts", "idxmax", "idxmin", "to_numpy", "copy", "describe", "nlargest",
    "nsmallest", "transpose", "to_dict", "to_list", "tolist",
    # groups (``df.groupby('city')['age'].mean()``) and a column's accessors
    "groupby", "size", "first", "last", "between", "isin", "mode", "cummax", "cummin",
    "upper", "lower", "title", "capitalize", "strip", "len", "contains", "startswith",
    "endswith", "replace", "slice", "get", "day_name", "month_name", "diff", "pct_change",
    "rank", "argmax", "argmin", "clip", "drop_duplicates", "duplicated", "reset_index",
    "set_index", "items", "keys", "astype",
}
_KEYWORDS = {"axis", "ascending", "skipna", "ddof", "how", "thresh", "n", "decimals",
             "normalize", "numeric_only", "value", "keep", "by", "observed", "sort",
             "as_index", "dropna", "inclusive", "case", "regex", "na", "drop", "columns",
             "method", "pct", "lower", "upper", "subset", "periods", "start", "stop"}
_ERRORS = (KeyError, IndexError, AttributeError)
"""What pandas raises on an object rebuilt from data that the kernel raises too (a column
or label that is not there, a position past the end, an attribute it lacks)."""


def pandas() -> Any:
    import pandas as pd  # imported here: only a cell that reads a pandas object pays

    return pd


def is_frame(value: Any) -> bool:
    """A Series, DataFrame or Index, one of their ``.loc``/``.iloc`` indexers, or a
    ``Partial`` one."""
    # (pandas 3 names its classes' module "pandas"; earlier ones "pandas.core.…")
    return isinstance(value, Partial) or type(value).__module__.partition(".")[0] == "pandas"


class Partial:
    """A Series or DataFrame known by its first and last rows only: the kernel's repr of a
    longer one shows 5 of each (``display.min_rows`` 10). ``head``/``tail`` of at most
    those rows and ``columns`` are computed from them; anything else is not known. Shown
    (a bare name) as the recorded text."""

    def __init__(self, text: str, top: Any, bottom: Any) -> None:
        self.text, self.top, self.bottom = text, top, bottom

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)

    def attribute(self, name: str) -> Any:
        if name == "columns" and hasattr(self.top, "columns"):
            return self.top.columns
        raise ValueError(f"{name} of a cut-short object is not known")

    def method(self, name: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> Any:
        n = keywords.get("n", args[0] if args else 5)
        if name not in ("head", "tail") or not isinstance(n, int) or set(keywords) - {"n"} \
                or not 0 <= n <= len(self.top if name == "head" else self.bottom):
            raise ValueError(f"{name} of a cut-short object is not known")
        return self.top.head(n) if name == "head" else self.bottom.tail(n)


_ROWS_LINE = re.compile(r"\[(\d+) rows x (\d+) columns\]")
_LENGTH_FOOTER = re.compile(r"(?P<name>Name: .*, )?Length: (?P<length>\d+), (?P<dtype>dtype: \w+)")


def partial(text: str, kind: str, shape: Sequence[int] | None, nudge: int = 0) -> Partial:
    """The first and last rows of a cut-short repr (``...`` between them), as a
    ``Partial``; ValueError when it is not one this module reads. ``nudge``: as for
    ``from_repr``."""
    if kind not in KINDS or not shape:
        raise ValueError("not a cut-short Series or DataFrame")
    pd = pandas()
    lines = text.splitlines()
    if kind == "DataFrame":
        match = _ROWS_LINE.fullmatch(lines[-1].strip())
        if match is None or lines[-2].strip() or "..." in lines[0] or \
                [int(match.group(1)), int(match.group(2))] != list(shape):
            raise ValueError("not a frame cut short by rows only")
        header, body, footer = lines[0], lines[1:-2], None
    else:
        found = _LENGTH_FOOTER.fullmatch(lines[-1].strip())
        if found is None or int(found.group("length")) != shape[0]:
            raise ValueError("not a Series cut short")
        header, body = None, lines[:-1]
        footer = (found.group("name") or "") + found.group("dtype")
    cut = [i for i, line in enumerate(body) if line.strip() and set(line.split()) <= {"..", "..."}]
    if len(cut) != 1:
        raise ValueError("no one row of dots")
    parts = [body[: cut[0]], body[cut[0] + 1:]]
    if kind == "DataFrame":
        top, bottom = (_frame(pd, "\n".join([str(header), *rows])) for rows in parts)
    else:
        top, bottom = (_series(pd, "\n".join([*rows, str(footer)])) for rows in parts)
    for rows in (top, bottom):
        _nudge(rows, text, nudge)
    return Partial(text, top, bottom)


def from_repr(text: str, kind: str, shape: Sequence[int] | None, nudge: int = 0) -> Any:
    """The ``kind`` object whose whole repr ``text`` is, or ValueError when it cannot be
    rebuilt faithfully (see the module docstring). Floats it shows rounded (``rounded``)
    are taken as shown, or with ``nudge`` (+1 or -1) moved up or down by most of the
    rounding, so that a caller can tell whether a result depends on the dropped digits."""
    if kind not in KINDS or "..." in text or not shape:
        raise ValueError("not a whole Series or DataFrame")
    if _size(tuple(shape)) > MAX_ELEMENTS:
        raise ValueError("too large")
    pd = pandas()
    rebuilt = _series(pd, text) if kind == "Series" else _frame(pd, text)
    if tuple(rebuilt.shape) != tuple(shape) or shown(rebuilt) != text:
        raise ValueError("the rebuilt object does not show as recorded")
    _nudge(rebuilt, text, nudge)
    return rebuilt


_NUDGE = 4e-7
"""Less than the rounding of pandas' 6 decimals (or 7 digits in scientific notation)."""
_KEPT = 5
"""A float rebuilt with more decimals than this is taken as one pandas rounded (whatever
NumPy's print options: they are not pandas')."""


def rounded(text: str) -> bool:
    """Whether a repr shows floats pandas may have rounded (6 decimals, or scientific)."""
    return bool(_ROUNDED.search(text))


def _nudge(value: Any, text: str, nudge: int) -> None:
    """With ``nudge`` (+1 or -1; +2 or -2: alternating) and a repr ``text`` that shows
    rounded floats, moves in place every float of ``value`` it may have cut
    (``arrays.nudge_rounded``)."""
    if not nudge or not rounded(text):
        return
    step, relative = math.copysign(_NUDGE, nudge), arrays.SCIENTIFIC.search(text) is not None
    columns = [value] if value.ndim == 1 else [value[c] for c in value.columns]
    for i, column in enumerate(columns):
        if column.dtype.kind != "f":
            continue
        data = column.to_numpy(dtype=float, copy=True)
        alternate = abs(nudge) == 2  # (column by column, so rows and columns both vary)
        arrays.nudge_rounded(data, -step if alternate and i % 2 else step, relative, _KEPT,
                             alternate)
        if value.ndim == 1:
            value[:] = data
        else:
            value.isetitem(i, data)


def shown(value: Any) -> str:
    """``repr(value)``, a Series or a DataFrame, as the kernel writes it into the snapshot
    (under ``PANDAS_DISPLAY``), with no option of the process changed: ``to_string`` takes
    the same settings as arguments, as pandas' own ``__repr__`` passes them (options are
    the process's, and another thread of the server may be rendering under others).
    ValueError where that cannot be done."""
    pd = pandas()
    display = _SNAPSHOT_DISPLAY
    width = display["display.max_colwidth"]
    rows = {"max_rows": display["display.max_rows"], "min_rows": display["display.min_rows"],
            "length" if isinstance(value, pd.Series) else "show_dimensions":
                pd.get_option("display.show_dimensions")}
    text: str
    if isinstance(value, pd.Series):
        # (its to_string has no max_colwidth: pandas reads it from its options, which cut
        # only a text longer than the width)
        if any(len(str(item)) >= width - 3 for item in (*value.index, *value.array)):
            raise ValueError("a text as long as a column is wide")
        text = value.to_string(name=True, dtype=True, **rows)
        return text
    if pd.get_option("display.large_repr") == "info":
        raise ValueError("a notebook's options that to_string cannot take")
    wrapped = pd.get_option("display.expand_frame_repr")  # else one line, however wide
    text = value.to_string(max_cols=display["display.max_columns"], max_colwidth=width,
                           line_width=display["display.width"] if wrapped else None, **rows)
    return text


def _frame(pd: Any, text: str) -> Any:
    header, *rows = text.splitlines()
    columns = header.split()
    if not columns or not rows:
        raise ValueError("no columns or no rows")
    if any(_scalar(column) != column for column in columns):  # 0 or "0": not told
        raise ValueError("a column label that reads as a number")
    # values hold no spaces (else the check fails); an index label may ("New York")
    cells = [row.rsplit(None, len(columns)) for row in rows]
    if any(len(parts) != len(columns) + 1 for parts in cells):
        raise ValueError("rows and columns do not match")
    frame = pd.DataFrame({c: _typed(pd, [parts[j + 1] for parts in cells])
                          for j, c in enumerate(columns)})
    frame.index = _labels(pd, [parts[0] for parts in cells])
    return frame


def _series(pd: Any, text: str) -> Any:
    *rows, footer = text.splitlines()
    match = _FOOTER.fullmatch(footer.strip())
    if match is None or not rows:
        raise ValueError("no dtype line")
    cells = [row.rsplit(None, 1) for row in rows]
    if any(len(parts) != 2 for parts in cells):
        raise ValueError("not one label and one value a row")
    dtype = match.group("dtype")
    values = [parts[1] for parts in cells]
    if dtype == "bool":
        data = pd.Series([{"True": True, "False": False}[v] for v in values], dtype=bool)
    else:
        data = _typed(pd, values).astype(dtype)
    data.index = _labels(pd, [parts[0] for parts in cells])
    data.name = match.group("name")
    return data


_MISSING = {"NaN": math.nan, "None": None, "<NA>": None}


def _typed(pd: Any, values: list[str]) -> Any:
    """A column's shown values: numbers when they all read as numbers (NaN missing), else
    each as what it reads as (a number, NaN, None, else its text)."""
    try:
        return pd.Series([float(v) if v in _MISSING else _number(v) for v in values])
    except ValueError:
        read = [_MISSING[v] if v in _MISSING else _scalar(v) for v in values]
        if all(isinstance(v, str) for v in read):
            _strings_told(values)
            return pd.Series(read)  # pandas' own string dtype, as the kernel's would be
        return pd.Series(read, dtype=object)


_TIME_LIKE = re.compile(r"\d{4}-\d{2}(?:-\d{2})?(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?|"
                        r"\d{4}Q\d|-?\d+ days?(?: [\d:.]+)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?|NaT")
_CATEGORIES = re.compile(r"categor|Categorical|\bq?cut\s*\(")
_categories_possible: ContextVar[bool] = ContextVar("categories_possible", default=False)


@contextmanager
def reading(codes: Iterable[str]) -> Iterator[None]:
    """Rebuild objects under what the notebook's code tells: where a cell may have made a
    categorical (``pd.cut``, ``astype('category')``...), a column or index of text may be
    one, which a frame's repr does not say (``results['quartile']`` showed ``dtype: str``
    for ``category``): such objects are then not rebuilt."""
    token = _categories_possible.set(any(_CATEGORIES.search(code) for code in codes))
    try:
        yield
    finally:
        _categories_possible.reset(token)


def _strings_told(values: list[str]) -> None:
    """ValueError where text values may stand for another dtype: dates and times
    (``2011-01-02`` is how a DatetimeIndex shows), or categories."""
    if all(_TIME_LIKE.fullmatch(v.strip()) for v in values):
        raise ValueError("dates or times: datetime64 or text, the repr does not say")
    if _categories_possible.get():
        raise ValueError("text that may be a categorical's")


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _scalar(text: str) -> Any:
    try:
        return _number(text)
    except ValueError:
        return text


def _labels(pd: Any, labels: list[str]) -> Any:
    try:
        numbers = [int(label) for label in labels]
    except ValueError:
        _strings_told(labels)
        return pd.Index([label.strip() for label in labels])
    if numbers == list(range(len(numbers))):
        return pd.RangeIndex(len(numbers))  # (or an Index of those: ``attribute`` knows)
    return pd.Index(numbers)


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(int(n) for n in shape)


def _bounded(value: Any) -> Any:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and _size(shape) > MAX_ELEMENTS:
        raise ValueError("the result would be too large")
    return value


_MAKERS = {"Series", "DataFrame", "Index"}
_MAKER_KEYWORDS = {"index", "columns", "name", "dtype"}


def construct(kind: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> Any:
    """``pd.Series(...)``, ``pd.DataFrame(...)``, ``pd.Index(...)`` of values already known
    (literals, rebuilt objects), none larger than ``MAX_ELEMENTS`` values."""
    if kind not in _MAKERS or not set(keywords) <= _MAKER_KEYWORDS or len(args) > 1:
        raise ValueError(f"pd.{kind} is not computed")
    if not all(_data(value) for value in [*args, *keywords.values()]):
        raise ValueError("made of values known only by their text, or cut short")
    if any(_count(value) > MAX_ELEMENTS for value in [*args, *keywords.values()]):
        raise ValueError("too large")
    return _bounded(getattr(pandas(), kind)(*args, **keywords))


def _count(value: Any) -> int:
    """Values in a constructor's argument, roughly (nested containers counted whole)."""
    if isinstance(value, dict):
        return sum(_count(v) for v in value.values()) + len(value)
    if isinstance(value, list | tuple):
        return sum(_count(v) for v in value) + len(value)
    shape = getattr(value, "shape", None)
    return _size(tuple(shape)) if isinstance(shape, tuple) else 1


def _data(value: Any, depth: int = 0) -> bool:
    """Whether a constructor's argument is made of values the rules hold whole: plain
    Python values, arrays, rebuilt Series and frames (not an object known by its text,
    nor a cut-short ``Partial``, at any depth)."""
    if isinstance(value, dict) and depth < 3:
        return all(_data(v, depth + 1) for v in [*value.keys(), *value.values()])
    if isinstance(value, list | tuple) and depth < 3:
        return all(_data(v, depth + 1) for v in value)
    return operators.plain(value) or arrays.is_array(value) or (
        is_frame(value) and not isinstance(value, Partial))


def _whole(*values: Any) -> None:
    """ValueError when any of ``values`` is a cut-short object, whose values are unknown."""
    if any(isinstance(value, Partial) for value in values):
        raise ValueError("a cut-short object's values are not known")


def _raising(value: Any, compute: Any) -> Any:
    """``compute()``; on an object rebuilt from data, an error in ``_ERRORS`` is the
    kernel's too (``Undetermined(raises=True)`` with its traceback's last line)."""
    try:
        return compute()
    except _ERRORS as error:
        if not captured.exact(value):
            raise ValueError("the repr does not tell") from None
        line = traceback.format_exception_only(error)[-1].strip()
        raise Undetermined(raises=True, error=line) from None


def _lacks(value: Any, name: str) -> bool:
    """Whether an object rebuilt from data has no attribute ``name`` (then asking raises
    AttributeError in the kernel too): not its class's, not a column."""
    columns = getattr(value, "columns", ())
    return captured.exact(value) and not hasattr(type(value), name) and name not in columns


def attribute(value: Any, name: str) -> Any:
    if isinstance(value, Partial):
        return value.attribute(name)
    if _lacks(value, name):
        return _raising(value, lambda: getattr(value, name))
    if name not in _ATTRIBUTES:
        pd = pandas()
        if isinstance(value, pd.DataFrame) and name in value.columns \
                and not hasattr(type(value), name):  # data.density: the column
            return value[name]
        raise ValueError(f"{name} is not computed")
    if name == "index" and type(getattr(value, "index", None)).__name__ == "RangeIndex" \
            and not captured.exact(value):
        # 0, 1, 2... in the repr is a RangeIndex or an Index of those integers: unknown
        raise ValueError("the index's kind is not in the repr")
    return _bounded(getattr(value, name))


def method(value: Any, name: str, args: Sequence[Any], keywords: Mapping[str, Any]) -> Any:
    if isinstance(value, Partial):
        return value.method(name, args, keywords)
    _whole(*args, *keywords.values())
    if _lacks(value, name):
        return _raising(value, lambda: getattr(value, name))
    if name not in _METHODS or not set(keywords) <= _KEYWORDS:
        raise ValueError(f"{name} is not computed")
    if any(is_frame(a) and _size(tuple(a.shape)) > MAX_ELEMENTS for a in args):
        raise ValueError("too large")
    if any(callable(a) and not is_frame(a) for a in [*args, *keywords.values()]):
        raise ValueError("a function argument: not computed")
    return _bounded(_raising(value, lambda: getattr(value, name)(*args, **keywords)))


def subscript(value: Any, index: Any) -> Any:
    """``value[index]`` (a column, labels, a mask, ``.loc[...]``/``.iloc[...]``)."""
    _whole(value, index)
    if isinstance(index, list) and len(index) > MAX_ELEMENTS:
        raise ValueError("too large")
    return _bounded(_raising(value, lambda: value[index]))


def binary(function: Any, left: Any, right: Any) -> Any:
    """Arithmetic and comparisons: both sides already bounded, alignment at most adds."""
    _whole(left, right)
    return _bounded(function(left, right))


def unary(function: Any, operand: Any) -> Any:
    _whole(operand)
    return _bounded(function(operand))
