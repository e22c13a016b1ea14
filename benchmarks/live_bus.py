"""How many streamed-token (``writing``) events jupyter_server's event bus carries per second.

A model streaming its answer makes one ``writing`` event per piece, each with the answer so
far: the embedded model writes 65-100 tokens/s on 2 cores (``local_max_tokens``), a
remote model ~50-150 per stream, and every predictor x context streams at once (3 contexts
x 2 remote predictors: ~600 events/s at most). This publishes such events through
``LiveEvents`` into a real ``jupyter_events.EventLogger`` whose listeners do what
jupyter_server's ``/api/events/subscribe`` WebSocket does with each (``json.dumps`` of the
capsule, then a write, here counted), for 1 and for 5 open pages, and prints events/s and
the server CPU per event (schema validation, copy, one listener task per page).

    python benchmarks/live_bus.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from jupyter_events import EventLogger

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, LiveEvents, Scope, writing_event

ANSWER = "df.groupby('city')['price'].mean().sort_values(ascending=False).head(10)\n" * 14


async def rate(pages: int, seconds: float, answer_chars: int) -> tuple[float, float]:
    """(events/s published and delivered to every page, CPU ms per event)."""
    events = LiveEvents(EventLogger())
    written = [0]

    async def page(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        message = json.dumps(dict(schema_id=schema_id, **data))  # what the WebSocket sends
        written[0] += len(message) > 0

    for _ in range(pages):
        async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
            await page(logger, schema_id, data)
        events.logger.add_listener(schema_id=LIVE_EVENT_SCHEMA_ID, listener=listener)
    scope = Scope("t" * 32, "k" * 36, "analysis/notebook.ipynb")
    sent = 0
    cpu, start = time.process_time(), time.perf_counter()
    while time.perf_counter() - start < seconds:
        text = ANSWER[: 1 + sent * 7 % answer_chars]  # the answer so far, growing
        events.publish(writing_event(scope, "output", "full", "local", 12, "cell-12", text))
        sent += 1
        if sent % 50 == 0:
            await asyncio.sleep(0)  # let the listeners run, as the server's loop would
    await events.logger.gather_listeners()
    elapsed, spent = time.perf_counter() - start, time.process_time() - cpu
    assert written[0] == sent * pages, (written[0], sent, pages)
    return sent / elapsed, spent / sent * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    for pages in (1, 5):
        for chars in (200, 1000):
            per_s, ms = await rate(pages, args.seconds, chars)
            print(f"bus: {pages} page(s), answers up to {chars} chars: {per_s:,.0f} writing "
                  f"events/s, {ms:.2f} ms CPU each (the panel needs <= ~600/s)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
