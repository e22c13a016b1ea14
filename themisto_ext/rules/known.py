"""What the snapshot tells of one value: the object itself, or only its printed form.

``from_snapshot`` turns a snapshot entry into what the rules compute with: the very object
where the kernel captured it as data (``captured.py``) or its repr is a literal or an array
or pandas object rebuilt faithfully (``arrays.py``, ``frames.py``); otherwise a ``Shown``,
known only by its texts (``Undetermined`` where even those are not known). ``displayed``
is what IPython shows for a value, refusing what shows an address or an unsortable set.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import Any

from themisto_ext.rules import arrays, captured, frames
from themisto_ext.rules.flow import Lambda, Undetermined

# Snapshot reprs that are not the value's repr (see docs/format.md).
_PLACEHOLDER = re.compile(
    r"<(redacted|repr of .* timed out|repr raised .*|int with \d+ bits|pending:.*)>"
)
_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|complex)\d*\((.*)\)")
# Types whose repr is a Python literal: one that does not parse was cut short by the snapshot.
_LITERAL_TYPES = {"str", "bytes", "int", "float", "complex", "bool"}
_LITERAL_TYPES |= {"list", "tuple", "dict", "set", "frozenset"}
_STR_IS_REPR = {"DataFrame", "Series"}  # print(frame) shows the same text as its repr
# IPython shows these with its own printers (signatures, qualified names), not their repr.
_NOT_SHOWN_BY_REPR = {"function", "type", "builtin_function_or_method", "method", "ABCMeta"}


class Shown:
    """A value known only by its texts: IPython's display, repr(), str() (None: unknown)."""

    def __init__(self, display: str, text: str | None, representation: str | None = None) -> None:
        self.display = display
        self.text = text
        self.representation = display if representation is None else representation

    def __repr__(self) -> str:
        return self.representation

    def __str__(self) -> str:
        if self.text is None:
            raise Undetermined
        return self.text

    def __format__(self, spec: str) -> str:
        if spec:
            raise Undetermined
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.display)


def from_snapshot(entry: Mapping[str, Any], nudge: int = 0) -> Any:
    """The value a snapshot entry stands for: a literal when its repr is one, else texts
    (``nudge``: see ``arrays.from_repr``)."""
    kind, text = entry.get("type"), entry.get("repr")
    if kind == "NoneType":
        return None
    data = entry.get("data")
    if isinstance(data, Mapping):  # captured as data: the very object, whatever its repr
        try:
            return captured.rebuild(data, entry.get("shape"))
        except (ValueError, ImportError):
            pass  # a dtype this pandas lacks, or no pandas here: read the repr below
    if not isinstance(text, str) or _PLACEHOLDER.fullmatch(text) or kind in _NOT_SHOWN_BY_REPR:
        raise Undetermined
    if kind in _LITERAL_TYPES:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise Undetermined from None
        if type(value).__name__ != kind or not _complete(value, entry.get("length")):
            raise Undetermined
        return value
    if kind == "ndarray":
        try:
            return arrays.from_repr(text, entry.get("shape"), nudge)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass  # cut short, or not plain data: known by its text only
    if kind in frames.KINDS:
        for rebuild in (frames.from_repr, frames.partial):  # whole, else its ends
            try:
                return rebuild(text, str(kind), entry.get("shape"), nudge)
            except (ValueError, TypeError, KeyError, IndexError, ImportError):
                pass  # not plain data, or no pandas here: known by its text only
    scalar = _NUMPY_SCALAR.fullmatch(text)
    if scalar:
        return Shown(text, scalar.group(1))
    return Shown(text, text if kind in _STR_IS_REPR else None)


def _complete(value: Any, length: int | None) -> bool:
    """False when the bounded repr cut the value short (its length or an "...")."""
    if length is not None and hasattr(value, "__len__") and len(value) != length:
        return False
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if item is Ellipsis:
            return False
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            pending.extend(item)
    return True


_AT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def displayed(value: Any) -> str:
    """The text/plain IPython shows for a cell's last expression."""
    if value is None:
        return ""
    if isinstance(value, Shown):
        return value.display
    if isinstance(value, Iterator | Lambda) or not _sortable_sets(value):
        raise Undetermined  # an address; a set IPython cannot sort shows in hash order
    from IPython.lib.pretty import pretty  # imported here: IPython takes a while to import

    text = str(pretty(value))
    if _AT_ADDRESS.search(text):
        raise Undetermined  # <... object at 0x...> (a GroupBy, an accessor): another address
    return text


def _sortable_sets(value: Any, depth: int = 0) -> bool:
    """Whether every set in the value sorts (IPython's pretty printer shows sets sorted)."""
    if isinstance(value, set | frozenset):
        try:
            sorted(value)
        except TypeError:
            return False
    if isinstance(value, list | tuple | set | frozenset) and depth < 3:
        return all(_sortable_sets(item, depth + 1) for item in value)
    if isinstance(value, dict) and depth < 3:
        return all(_sortable_sets(item, depth + 1) for item in value.values())
    return True
