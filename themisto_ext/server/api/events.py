"""``/events``: the live stream (Server-Sent Events) of steps as they land.

SSE rather than a WebSocket: it is a plain authenticated GET, so the server's own
token/cookie authentication applies unchanged and any HTTP client can follow it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from themisto_ext.server.api.base import ThemistoHandler
from themisto_ext.server.events import Event

KEEPALIVE = 15.0
QUEUE_LIMIT = 10_000
CLOSE: Event = {"type": "close"}


class EventsHandler(ThemistoHandler):
    """``GET /events[?notebook=PATH][&kernel=ID][&trajectory=ID]``."""

    def _matches(self, event: Event, filters: dict[str, str]) -> bool:
        return all(event.get(key) == value for key, value in filters.items())

    @web.authenticated
    @authorized
    async def get(self) -> None:
        filters = {key: value for key, value in (
            ("notebook_path", self.get_argument("notebook", None)),
            ("kernel_id", self.get_argument("kernel", None)),
            ("trajectory_id", self.get_argument("trajectory", None)),
        ) if value is not None}
        queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE_LIMIT)

        def listener(event: Event) -> None:
            if event is CLOSE or self._matches(event, filters):
                try:
                    queue.put_nowait(event)
                except asyncio.QueueFull:  # a stalled reader: end its stream, it reconnects
                    queue._queue.clear()  # type: ignore[attr-defined]
                    queue.put_nowait(CLOSE)

        unsubscribe = self.themisto.events.subscribe(listener)
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        try:
            await self._send("hello", {"type": "hello", "filters": filters}, retry=2000)
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    self.write(": keep-alive\n\n")
                    await self.flush()
                    continue
                if event is CLOSE:
                    break
                await self._send(str(event["type"]), event)
        except StreamClosedError:
            pass  # the client went away
        finally:
            unsubscribe()
        if not self._finished:
            self.finish()

    async def _send(self, name: str, data: dict[str, Any], retry: int | None = None) -> None:
        head = f"retry: {retry}\n" if retry is not None else ""
        self.write(f"{head}event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n")
        await self.flush()
