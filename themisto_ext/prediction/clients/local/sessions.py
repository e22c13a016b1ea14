"""The sessions whose prompts the model process read most recently.

A session (a trajectory x context) grows by appending. llama.cpp's server keeps the KV
state of the prompt in its one slot and, when another session takes the slot, parks the
old state in its prompt cache (``cache_bytes`` of memory), from which the session's next
prompt is restored with its prefix already evaluated. This is the list the status
reports: the session in the slot first, at most ``capacity``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class RecentSessions:
    """Session names, most recently used first, at most ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._names: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()  # status readers see it from other threads

    def touch(self, session: str | None) -> None:
        if session is None:
            return
        with self._lock:
            self._names.pop(session, None)
            self._names[session] = None
            while len(self._names) > self.capacity:
                self._names.popitem(last=False)

    def names(self) -> list[str]:
        with self._lock:
            return list(reversed(self._names))
