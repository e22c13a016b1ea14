"""A bounded-time guard for calls into user objects (``__repr__``, ``__sizeof__``...).

ipykernel runs ``post_run_cell`` on the main thread, so ``SIGALRM`` can interrupt
Python-level work there. It cannot cut C-level work, which is why the snapshot code
avoids unbounded C calls by choosing per-type paths before it reaches for this guard.
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
