"""The arrays, Series and DataFrames the kernel captured as data, rebuilt exactly.

``kernel/values.py`` writes a ``ValueData`` record (``schemas/step.schema.json``) for a
small object of plain dtypes: its dtypes, index, columns and values. Rebuilt here, the
object is the kernel's own (a bool column is bool, a category a category, a float has all
its digits), so the rules compute with pandas and NumPy instead of reading a printed table
back. A record this pandas cannot make (a dtype an older pandas does not know) raises
``ValueError``; the caller then reads the repr as for a step recorded without data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from weakref import WeakValueDictionary

from themisto_ext.contract import DATA_ELEMENTS

_ARRAYS: WeakValueDictionary[int, Any] = WeakValueDictionary()
"""Arrays rebuilt from data, by id (an ndarray is unhashable, so no WeakSet)."""

EXACT = "themisto.exact"
"""``attrs`` key of an object rebuilt from data: its index kind is known, not guessed
from ``0 1 2`` in a repr (pandas carries ``attrs`` through most operations)."""


def rebuild(data: Mapping[str, Any], shape: Sequence[int] | None) -> Any:
    """The object of a ``ValueData`` record; ValueError when it is not one this can make,
    or disagrees with the ``shape`` the snapshot recorded."""
    try:
        value = _REBUILD[str(data["kind"])](data)
    except (KeyError, TypeError, IndexError, OverflowError, AttributeError) as exc:
        raise ValueError(f"not a value record this pandas or NumPy makes: {exc}") from None
    if shape is not None and list(value.shape) != list(shape):
        raise ValueError("the record disagrees with the recorded shape")
    if hasattr(value, "attrs"):
        value.attrs[EXACT] = True
    else:  # an ndarray has no attrs: known by identity while it lives
        _ARRAYS[id(value)] = value
    return value


def exact(value: Any) -> bool:
    """Whether ``value`` came from captured data (a pandas object also when computed from
    such a value; an array only as rebuilt)."""
    attrs = getattr(value, "attrs", None)
    if isinstance(attrs, dict):
        return attrs.get(EXACT) is True
    return _ARRAYS.get(id(value)) is value


def _array(data: Mapping[str, Any]) -> Any:
    import numpy as np

    values = data["values"]
    if len(values) > DATA_ELEMENTS:
        raise ValueError("larger than the kernel keeps")
    return _numpy(np.dtype(data["dtype"]), values).reshape(data["shape"])


def _series(data: Mapping[str, Any]) -> Any:
    import pandas as pd

    return pd.Series(_column(data["dtype"], data["values"]), index=_index(data["index"]),
                     name=_plain(data["name"]))


def _frame(data: Mapping[str, Any]) -> Any:
    import pandas as pd

    index = _index(data["index"])
    columns = [_column(dtype, values) for dtype, values in
               zip(data["dtypes"], data["values"], strict=True)]
    if sum(len(column) for column in columns) > DATA_ELEMENTS:
        raise ValueError("larger than the kernel keeps")
    frame = pd.DataFrame({j: pd.Series(column, index=index, copy=False)
                          for j, column in enumerate(columns)}, index=index)
    frame.columns = _index(data["columns"])
    return frame


def _column(dtype: Any, values: Sequence[Any]) -> Any:
    """A column's values as a NumPy array or pandas extension array of its dtype."""
    import numpy as np
    import pandas as pd

    if isinstance(dtype, Mapping):  # {"categories": index record, "ordered": bool}
        return pd.Categorical.from_codes(list(values), categories=_index(dtype["categories"]),
                                         ordered=bool(dtype["ordered"]))
    if dtype == "object":
        column = np.empty(len(values), dtype=object)
        column[:] = [_plain(v) for v in values]
        return column
    if dtype in ("str", "string"):
        return pd.array([_plain(v) for v in values], dtype=dtype)
    return _numpy(np.dtype(dtype), values)


def _numpy(dtype: Any, values: Sequence[Any]) -> Any:
    import numpy as np

    if dtype.kind in "mM":
        return np.array(values, dtype="i8").view(dtype)
    if dtype.kind == "f":
        return np.array([float(v) for v in values], dtype=dtype)  # "nan", "inf": text
    if dtype.kind not in "biuU":
        raise ValueError(f"dtype {dtype} is not captured")
    return np.array(values, dtype=dtype)


def _index(record: Mapping[str, Any]) -> Any:
    import pandas as pd

    name = _plain(record.get("name"))
    if "range" in record:
        start, stop, step = record["range"]
        return pd.RangeIndex(start, stop, step, name=name)
    values = record["values"]
    if len(values) > DATA_ELEMENTS:
        raise ValueError("larger than the kernel keeps")
    dtype = record["dtype"]
    if isinstance(dtype, Mapping):
        return pd.CategoricalIndex(_column(dtype, values), name=name)
    return pd.Index(_column(dtype, values), name=name)


def _plain(value: Any) -> Any:
    """A value of an ``object`` column or a label: ``{"float": "nan"}`` is a float JSON
    cannot write."""
    if isinstance(value, Mapping):
        number = float(value["float"])
        if math.isfinite(number):
            raise ValueError("a finite float written as text")
        return number
    if isinstance(value, list):
        raise ValueError("a label that is a list")
    return value


_REBUILD = {"ndarray": _array, "Series": _series, "DataFrame": _frame}
