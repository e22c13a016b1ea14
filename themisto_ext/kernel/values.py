"""Small arrays and pandas objects captured as data, not only as their printed text.

A frame's repr says ``False`` but not whether that is a bool or the text "False", shows a
float rounded to 6 decimals, and never says a column is categorical: rules that rebuilt
objects from reprs gave up on the first boolean column a notebook added. For a NumPy array,
Series or DataFrame of at most ``DATA_ELEMENTS`` values whose dtypes are plain (numbers,
bools, dates and durations, text, categories of those), the snapshot entry also keeps
``data`` (the ``ValueData`` record of ``schemas/step.schema.json``): dtypes, shape, index,
columns and the values themselves, from which the rules rebuild the very object.

Capturing runs no user code: pandas' and NumPy's own methods on their own classes (not
subclasses, ``measure.pandas_kind``), and every Python value taken out of an ``object``
column or index must be exactly a ``str``, ``int``, ``float``, ``bool`` or ``None``
(checked by ``type(v) is ...``, which calls nothing of the value). Anything else: no data,
and the rules read the repr as before.
"""

from __future__ import annotations

import math
from typing import Any

from themisto_ext.contract import DATA_ELEMENTS
from themisto_ext.kernel.measure import is_numpy_array, pandas_kind

_PLAIN = (str, int, float, bool, type(None))
_TIMES = "mM"  # datetime64, timedelta64: kept as their int64 counts
_NUMBERS = "biuf"


class _NotData(Exception):
    pass


def may_hold_data(obj: Any) -> bool:
    """Whether ``obj`` is of a kind ``data_of`` reads (cheap: no value is looked at)."""
    return pandas_kind(obj) in ("DataFrame", "Series") or is_numpy_array(obj)


def data_of(obj: Any) -> dict[str, Any] | None:
    """The ``ValueData`` record of ``obj``, or None when it is not small, plain data."""
    try:
        kind = pandas_kind(obj)
        if kind == "DataFrame":
            return _frame(obj)
        if kind == "Series":
            return _series(obj)
        if kind is None and is_numpy_array(obj):
            return _array(obj)
    except (_NotData, TypeError, ValueError, OverflowError, AttributeError):
        pass
    return None


def _array(array: Any) -> dict[str, Any]:
    if array.size > DATA_ELEMENTS or array.ndim > 2 or array.dtype.names is not None:
        raise _NotData
    dtype = array.dtype
    if dtype.kind not in _NUMBERS + _TIMES and dtype.kind != "U":
        raise _NotData  # (object arrays: their values' reprs may be user code)
    return {"kind": "ndarray", "shape": list(array.shape), "dtype": dtype.str,
            "values": _numbers(array.reshape(-1), dtype)}


def _series(series: Any) -> dict[str, Any]:
    if len(series) > DATA_ELEMENTS:
        raise _NotData
    dtype, values = _column(series)
    return {"kind": "Series", "dtype": dtype, "values": values, "index": _index(series.index),
            "name": _label(series.name)}


def _frame(frame: Any) -> dict[str, Any]:
    rows, width = frame.shape
    if rows * width > DATA_ELEMENTS or (width == 0 and rows > DATA_ELEMENTS):
        raise _NotData
    columns = frame.columns
    if pandas_kind(columns) not in ("Index", "RangeIndex"):
        raise _NotData  # (MultiIndex columns: not kept)
    dtypes, values = [], []
    for j in range(width):
        dtype, column = _column(frame.iloc[:, j])
        dtypes.append(dtype)
        values.append(column)
    return {"kind": "DataFrame", "dtypes": dtypes, "values": values,
            "columns": _index(columns), "index": _index(frame.index)}


def _column(series: Any) -> tuple[Any, list[Any]]:
    """A Series' dtype as its record names it, and its values."""
    import numpy as np

    dtype = series.dtype
    if str(dtype) == "category":
        categories = dtype.categories
        return ({"categories": _index(categories), "ordered": bool(dtype.ordered)},
                [int(code) for code in series.cat.codes.to_numpy()])
    if isinstance(dtype, np.dtype):
        if dtype.kind == "O":
            return "object", [_plain(v) for v in series.to_numpy()]
        return dtype.str, _numbers(series.to_numpy(), dtype)
    if str(dtype) in ("str", "string"):  # pandas' string dtype (pandas 3's default text)
        return str(dtype), [_plain(v) for v in series.to_numpy(dtype=object)]
    raise _NotData  # extension dtypes (Int64, periods, intervals...): not kept


def _index(index: Any) -> dict[str, Any]:
    kind = pandas_kind(index)
    name = _label(index.name)
    if kind == "RangeIndex":
        return {"range": [int(index.start), int(index.stop), int(index.step)], "name": name}
    if kind not in ("Index", "DatetimeIndex", "TimedeltaIndex", "CategoricalIndex") \
            or len(index) > DATA_ELEMENTS:
        raise _NotData
    dtype, values = _column(index.to_series())
    return {"dtype": dtype, "values": values, "name": name}


def _numbers(array: Any, dtype: Any) -> list[Any]:
    kind = dtype.kind
    if kind in _TIMES:
        return [int(v) for v in array.view("i8")]
    if kind == "U":
        return [str(v) for v in array]
    if kind == "f":
        return [_float(float(v)) for v in array]
    if kind == "c":
        raise _NotData
    return [bool(v) if kind == "b" else int(v) for v in array]


def _float(value: float) -> float | str:
    """JSON has no NaN or infinity (PostgreSQL's jsonb refuses them): those go as text."""
    return value if math.isfinite(value) else str(value)


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind not in _PLAIN:
        raise _NotData  # a NumPy scalar, a Timestamp, a user object: its repr is not ours
    if kind is float:
        if not math.isfinite(value):
            return {"float": str(value)}  # (in object columns, None and NaN differ)
        return value
    if kind is int and value.bit_length() > 63:
        raise _NotData
    return value


def _label(label: Any) -> Any:
    if type(label) is tuple:
        raise _NotData
    return _plain(label)
