"""A bounded-time guard for code that is slow but not hostile.

``SIGALRM`` interrupts Python-level work on the main thread (ipykernel runs
``post_run_cell`` there), not C-level work, and code that catches ``BaseException``
defeats it. So it guards only what is not the user's own code (library reprs, in
``snapshot.py``) and each value inside the forked child (``sandbox.py``), which is
itself killed on time whatever the code does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class DeadlineExceeded(BaseException):
    """BaseException so that ``except Exception`` inside a user's ``__repr__`` can't eat it."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise DeadlineExceeded


def alarms_usable() -> bool:
    if not hasattr(signal, "setitimer"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    # Never disturb a timer the user armed themselves.
    return signal.getitimer(signal.ITIMER_REAL)[0] == 0


@contextmanager
def deadline(seconds: float, enabled: bool = True) -> Iterator[None]:
    """Raise DeadlineExceeded in the guarded block after ``seconds`` (main thread only)."""
    if not enabled or seconds <= 0:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
