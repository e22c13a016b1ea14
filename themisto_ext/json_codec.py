"""JSON as the server reads and writes it in bulk: orjson, with the standard library for
what orjson refuses.

A class's traffic is mostly steps of a few kB each, read from journals, sent to the hub's
service, stored and published on the live stream; the standard library's codec spent
about 25 us writing and 40 us reading each (``benchmarks/multiuser.py --service``),
orjson a seventh and two thirds of that. Where the two differ: orjson refuses NaN and
infinities when reading, lone surrogates and integers past 64 bits both ways (the
standard library then does the work), and writes NaN as ``null`` (which a browser's
``JSON.parse`` and PostgreSQL's ``jsonb`` can read, and ``NaN`` they cannot).

Reading thousands of steps at once (a journal's window) builds about a hundred objects
a step, and Python's cyclic garbage collector, counting them, ran full collections of
the whole process over and over: two thirds of the time of reading a step went to it
(``bulk``).
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    import orjson
except ImportError:  # a kernel's environment installed without it: the journal reads anyway
    orjson = None  # type: ignore[assignment]


def loads(data: bytes | str) -> Any:
    """The value of a JSON document; ``ValueError`` (or ``RecursionError``) if it is none."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # NaN, an escaped lone surrogate, a huge int
            pass
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON of ``value`` (a lone surrogate escaped)."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a huge int
            pass
    return json.dumps(value, separators=(",", ":")).encode()


def dumps_text(value: Any) -> str:
    """Compact JSON text of ``value``, non-ASCII as it is (a lone surrogate too: a
    database refuses it when it stores the text, rather than hold JSON it cannot read)."""
    if orjson is not None:
        try:
            return orjson.dumps(value).decode()
        except TypeError:
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_lock = threading.Lock()
_readers = 0
_was_enabled = False


@contextmanager
def bulk() -> Iterator[None]:
    """The garbage collector paused while a batch is read (a parsed document has no
    cycles: there is nothing for it to find); it runs again when the last reader in the
    process is done. Left alone if something else had turned it off."""
    global _readers, _was_enabled
    with _lock:
        if _readers == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _readers += 1
    try:
        yield
    finally:
        with _lock:
            _readers -= 1
            if _readers == 0 and _was_enabled:
                gc.enable()
