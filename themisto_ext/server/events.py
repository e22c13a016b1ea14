"""An in-process publish/subscribe bus for what the live stream carries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("themisto_ext.events")

Event = dict[str, Any]
Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # one broken subscriber must not starve the others
                log.exception("themisto: event listener failed")

    @property
    def subscribers(self) -> int:
        return len(self._listeners)
