"""Where secrets hide in the runtime state: values under secret-looking names.

A string held by a variable whose name looks secret, or reached through a dict key, an
object field (dataclasses, plain objects, slots, named tuples) or a DataFrame column /
Series whose name looks secret, is a secret; everything inside a secret-named value is
too. The walk reads structures through ``safe.py`` (no user code runs) and is bounded:
``NODES`` objects and ``DEPTH`` levels per variable, and only the first and last
``ROWS`` values of a DataFrame column (a million-row frame is never walked cell by cell).
The snapshot walks each value when it measures it, so a variable's secrets are found in
the cell that binds or changes it; the environment is read when a cell's code mentions it.
"""

from __future__ import annotations

import os
import pickletools
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from themisto_ext.kernel.measure import is_numpy_array, pandas_kind
from themisto_ext.kernel.safe import class_attribute, container_base, instance_fields

NODES = 2_000
DEPTH = 6
ROWS = 500
COLUMNS = 1_000
"""A frame's first and last columns whose names are checked (10^6 columns took seconds)."""
MAX_LENGTH = 4096

IsSecret = Callable[[str], bool]


def secret_strings(name: str, value: Any, is_secret: IsSecret) -> Iterator[str]:
    """Strings found under secret-looking names in ``value``, held as ``name``."""
    stack: list[tuple[Any, bool, int]] = [(value, is_secret(name), 0)]
    seen: set[int] = set()
    visited = 0
    while stack and visited < NODES:
        visited += 1
        node, secret, depth = stack.pop()
        kind = type(node)
        if kind is str or kind is bytes:
            if secret and len(node) <= MAX_LENGTH:
                yield node if kind is str else node.decode("utf-8", "replace")
            elif kind is bytes and node[:1] == b"\x80":
                yield from _pickled_secrets(node, is_secret)
            continue
        if id(node) in seen or depth >= DEPTH:
            continue
        seen.add(id(node))
        if pandas_kind(node) is not None:
            yield from _pandas_secrets(node, secret, is_secret)
            continue
        if is_numpy_array(node):
            continue
        for child, child_secret in islice(_members(node, kind, secret, is_secret), NODES):
            stack.append((child, child_secret, depth + 1))


def _members(node: Any, kind: type, secret: bool,
             is_secret: IsSecret) -> Iterator[tuple[Any, bool]]:
    base = container_base(kind)
    if base is dict:
        for key, child in dict.items(node):
            yield child, secret or (type(key) is str and is_secret(key))
    elif base is not None:
        fields = class_attribute(kind, "_fields") if base is tuple else None
        names = fields if type(fields) is tuple else ()
        for i, child in enumerate(base.__iter__(node)):
            field = names[i] if i < len(names) else None
            yield child, secret or (type(field) is str and is_secret(field))
    else:
        for field, child in instance_fields(node):
            yield child, secret or is_secret(field)


def _pandas_secrets(frame: Any, secret: bool, is_secret: IsSecret) -> Iterator[str]:
    """Strings in the first and last ``ROWS`` rows of secret-named columns (or of every
    column of a secret-named frame)."""
    kind = pandas_kind(frame)
    if kind == "DataFrame":
        width = int(frame.shape[1])
        picked = range(width) if width <= 2 * COLUMNS else \
            [*range(COLUMNS), *range(width - COLUMNS, width)]
        labels = frame.columns
        columns = [(j, name) for j in picked
                   if secret or (type(name := labels[j]) is str and is_secret(name))]
        series = [frame.iloc[:, j] for j, _ in columns]
    elif kind == "Series":
        name = frame.name
        series = [frame] if secret or (type(name) is str and is_secret(name)) else []
    else:
        series = [frame.to_series()] if secret else []
    for column in series:
        n = len(column)
        parts = [column] if n <= 2 * ROWS else [column.iloc[:ROWS], column.iloc[n - ROWS:]]
        for part in parts:
            for item in part.tolist():
                if type(item) is str and len(item) <= MAX_LENGTH:
                    yield item


PICKLE_BYTES = 64 * 1024
_PICKLE_OPS = 20_000
_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                         "SHORT_BINSTRING", "BINSTRING", "STRING"})
_TRANSPARENT_OPS = frozenset({"MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT", "FRAME"})


def _pickled_secrets(data: bytes, is_secret: IsSecret) -> Iterator[str]:
    """Strings pickled right after a secret-looking string (a dict's ``'password'`` key,
    an object's field): ``pickle.dumps(config)`` printed or kept as bytes showed them.
    Read with ``pickletools.genops``, which parses the opcodes and runs nothing, over the
    first ``PICKLE_BYTES``."""
    previous: str | None = None
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(data[:PICKLE_BYTES])):
            if count > _PICKLE_OPS:
                return
            if op.name in _TRANSPARENT_OPS:
                continue
            text = arg if type(arg) is str else None
            if op.name in _STRING_OPS and text is not None:
                if previous is not None and is_secret(previous) and len(text) <= MAX_LENGTH:
                    yield text
                previous = text
            else:
                previous = None
    except Exception:  # cut short at PICKLE_BYTES, or not a pickle after all
        return


# The shell's own variables whose names only look secret: the working directory (PWD is
# "pwd") and the SSH agent's socket path.
_NOT_SECRET_ENVIRONMENT = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})


def environment_secrets(is_secret: IsSecret) -> Iterator[str]:
    """Values of environment variables whose names look secret (``DB_PASSWORD``,
    ``JUPYTER_TOKEN``...)."""
    for name, value in list(os.environ.items()):
        if name not in _NOT_SECRET_ENVIRONMENT and is_secret(name):
            yield value
