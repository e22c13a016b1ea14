"""``/events``: the live stream (Server-Sent Events) of what lands and what is predicted.

SSE rather than a WebSocket: it is a plain authenticated GET, so the server's own
token/cookie authentication applies unchanged and any HTTP client can follow it. Events
are built by ``themisto_ext.events`` in the shapes of ``schemas/live-event.schema.json``.
"""

from __future__ import annotations

import asyncio
import json
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from themisto_ext.events import EventBus
from themisto_ext.records import HelloEvent, LiveEvent
from themisto_ext.server.api.base import ThemistoHandler

KEEPALIVE = 15.0
QUEUE_BYTES = 32 * 1024 * 1024
"""Most bytes of events waiting for one reader; a reader further behind has its stream
ended (it reconnects). A count would not bound memory: a step event carries the cell's
output, and 10,000 waiting events of 150 KB held 1.5 GB."""
_CLOSE = object()
"""Put in a stream's queue to end it: the server stops, or the reader fell too far behind."""


def close_streams(events: EventBus) -> None:
    """End every open live stream (the server is stopping)."""
    events.close()


def _message(event: LiveEvent, retry: int | None = None) -> str:
    head = f"retry: {retry}\n" if retry is not None else ""
    return f"{head}event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"


class EventsHandler(ThemistoHandler):
    """``GET /events[?notebook=PATH][&kernel=ID][&trajectory=ID]``."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        owner = self.themisto.user
        if not self.access.may_read(owner):
            # Every event on this server's bus is about its own kernels, so its user's.
            raise web.HTTPError(HTTPStatus.FORBIDDEN, f"this server's live stream carries "
                                f"{owner!r}'s trajectories")
        filters = {key: value for key, value in (
            ("notebook_path", self.get_argument("notebook", None)),
            ("kernel_id", self.get_argument("kernel", None)),
            ("trajectory_id", self.get_argument("trajectory", None)),
        ) if value is not None}
        queue: asyncio.Queue[Any] = asyncio.Queue()
        waiting = [0, False]  # bytes queued, closed

        def listener(event: LiveEvent) -> None:
            if waiting[1] or not all(event.get(key) == value
                                     for key, value in filters.items()):
                return
            message = _message(event)
            if waiting[0] + len(message) > QUEUE_BYTES:  # a stalled reader: end its stream
                close()
                return
            waiting[0] += len(message)
            queue.put_nowait(message)

        def close() -> None:
            while not queue.empty():
                queue.get_nowait()
            waiting[:] = [0, True]
            queue.put_nowait(_CLOSE)

        unsubscribe = self.themisto.events.subscribe(listener, on_close=close)
        # A reader that goes away is noticed now, not at the next write (up to KEEPALIVE
        # later): 10,000 connects and disconnects kept 10,000 listeners, each queueing
        # every event, server memory 116 -> 314 MB and the next event 1.46 s late.
        def gone() -> None:
            unsubscribe()
            close()

        self._gone = gone
        if "kernel_id" in filters:  # a notebook opened: its predictions come sooner
            await self.themisto.warm(filters["kernel_id"])
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        try:
            hello: HelloEvent = {"type": "hello", "filters": filters}
            await self._send(_message(hello, retry=2000))
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    await self._send(": keep-alive\n\n")
                    continue
                if message is _CLOSE:
                    break
                waiting[0] -= len(message)
                await self._send(message)
        except StreamClosedError:
            pass  # the client went away
        finally:
            unsubscribe()
        if not self._finished:
            self.finish()

    _gone: Any = None

    def on_connection_close(self) -> None:
        if self._gone is not None:
            self._gone()
        super().on_connection_close()

    async def _send(self, message: str) -> None:
        self.write(message)
        await self.flush()
