"""What the hook calls that user code could replace, taken when the hook is imported (in a
recording kernel, before any user code) and kept where neither an assignment
(``builtins.repr = counting_repr``, ``time.perf_counter = lambda: 0.0``) nor freezegun's
scan of every module's attributes for the real functions reaches it: values of a dict.

A frozen ``perf_counter`` made the snapshot's budget endless (+3.1 s a cell with 100 slow
values); a user's ``repr`` wrapper was called 20 times a cell by the hook.
"""

from __future__ import annotations

import builtins
import datetime as _datetime
import sys
import time as _time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_REAL: dict[str, Any] = {
    "repr": builtins.repr, "perf_counter": _time.perf_counter,
    "datetime": _datetime.datetime, "utc": _datetime.timezone.utc,
    "gettrace": sys.gettrace, "settrace": sys.settrace,
}


def clock() -> float:
    """Seconds of the real monotonic clock (the hook's budgets and timings)."""
    seconds: float = _REAL["perf_counter"]()
    return seconds


def now_iso() -> str:
    """The real time now, as a step's timestamps are written."""
    stamp: str = _REAL["datetime"].now(_REAL["utc"]).isoformat(timespec="microseconds")
    return stamp


def real_repr(obj: Any) -> str:
    text: str = _REAL["repr"](obj)
    return text


def get_trace() -> Any:
    """The thread's trace function (``sys.gettrace`` as it was, whatever the user did)."""
    return _REAL["gettrace"]()


def set_trace(function: Any) -> None:
    _REAL["settrace"](function)


_PYTHON_HOOKS = (types.FunctionType, types.MethodType)


@contextmanager
def untraced() -> Iterator[None]:
    """The user's ``sys.settrace`` / ``sys.setprofile`` function off while the hook works:
    it saw 1,166 / 779 of the hook's frames a cell; now only the hook's entry frame (the
    call that reaches this). A C-level tracer or profiler (coverage's, cProfile's) is left
    alone: setting it back from Python would turn it into a slower Python-level one."""
    trace, profile = sys.gettrace(), sys.getprofile()
    off_trace = trace is not None and isinstance(trace, _PYTHON_HOOKS)
    off_profile = profile is not None and isinstance(profile, _PYTHON_HOOKS)
    if off_trace:
        sys.settrace(None)
    if off_profile:
        sys.setprofile(None)
    try:
        yield
    finally:
        if off_profile:
            sys.setprofile(profile)
        if off_trace:
            sys.settrace(trace)
