"""Predictions the next cell made pointless are said, not hidden: each is stored and
published with the reason, so a notebook can tell why a cell has none."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

from contract import listen
from test_store import interpret_lines, start
from test_trajectory_format import make_step

from themisto_ext.contract import StartedRecord
from themisto_ext.events import LiveEvents
from themisto_ext.ingest import IngestResult
from themisto_ext.prediction.clients.baseline import BaselinePredictor
from themisto_ext.prediction.live import NEXT_CELL_STARTED, LivePredictions
from themisto_ext.records import validator
from themisto_ext.store import AsyncStore, SQLiteStore

TID = "quick"


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def fresh_step(n: int) -> dict:
    return make_step(TID, n, cell_id=f"cell-{n}", code=f"v{n} = {n}", started_at=now(),
                     ended_at=now())


def started(n: int) -> StartedRecord:
    return StartedRecord(TID, "k", None, n, f"cell-{n}", f"v{n} = {n}", now())


def live_predictions(tmp_path: Path) -> tuple[LivePredictions, list[dict], SQLiteStore]:
    store = SQLiteStore(tmp_path / "s.sqlite3")
    store.apply(interpret_lines([start(TID)], "kernel"), None)
    events = LiveEvents()
    seen = listen(events)
    live = LivePredictions(AsyncStore(store), events, [BaselinePredictor()], ["none", "full"],
                           8000)
    return live, seen, store


def ingested(store: SQLiteStore, steps: list[dict], starts: list[StartedRecord]) -> IngestResult:
    applied = store.apply(interpret_lines([{"kind": "step", **s} for s in steps], "kernel"), None)
    return IngestResult(steps=applied.steps, started=starts)


def missed(store: SQLiteStore) -> list[tuple[str, int, str]]:
    return sorted((p["task"], p["target_step"], p["context"]) for p in store.predictions(TID)
                  if p["error"] and p["error"]["type"] == "PredictionSuperseded")


async def test_cells_run_in_quick_succession_say_why_they_got_no_next_cell_prediction(
        tmp_path: Path):
    live, seen, store = live_predictions(tmp_path)
    # Three cells queued at once land in one ingestion pass: by the time step 1 is read,
    # cells 2 and 3 have started, so predicting them from step 1 would only be late.
    await live.on_ingest(ingested(store, [fresh_step(1), fresh_step(2), fresh_step(3)],
                            [started(1), started(2), started(3)]))
    await asyncio.gather(*live._tasks, return_exceptions=True)
    assert missed(store) == [("next-cell", 2, "full"), ("next-cell", 2, "none"),
                             ("next-cell", 3, "full"), ("next-cell", 3, "none")]
    record = next(p for p in store.predictions(TID, target_step=2) if p["error"])
    assert record["error"] == {"type": "PredictionSuperseded", "message": NEXT_CELL_STARTED,
                               "code": "superseded"}  # the code is what the panel matches
    assert record["scores"] is None and record["answer"] == "" and "prompt" not in record
    # every cell's output was predicted, and the cell after the last one
    made = {(p["task"], p["target_step"]) for p in store.predictions(TID) if not p["error"]}
    assert made == {("output", 1), ("output", 2), ("output", 3), ("next-cell", 4)}
    # ... and each miss went out on the live stream, as its schema says
    await live.events.logger.gather_listeners()
    published = [e for e in seen if e["type"] == "prediction"
                 and e["prediction"]["error"] is not None]
    assert len(published) == 4
    assert all(validator("live-event").is_valid(e) for e in published)


async def test_a_next_cell_prediction_cancelled_by_the_next_cell_is_recorded(tmp_path: Path):
    live, _, store = live_predictions(tmp_path)
    await live.on_ingest(ingested(store, [fresh_step(1)], [started(1)]))
    # Cell 2 starts before the next-cell predictions of step 2 ran: they are dropped.
    await live.on_ingest(IngestResult(started=[started(2)]))
    await asyncio.gather(*live._tasks, return_exceptions=True)
    assert missed(store) == [("next-cell", 2, "full"), ("next-cell", 2, "none")]
    assert [p["task"] for p in store.predictions(TID, target_step=2) if not p["error"]] == [
        "output", "output"]


async def test_a_next_cell_prediction_that_ran_is_not_missed(tmp_path: Path):
    live, _, store = live_predictions(tmp_path)
    await live.on_ingest(ingested(store, [fresh_step(1)], [started(1)]))
    await asyncio.gather(*live._tasks, return_exceptions=True)
    await live.on_ingest(IngestResult(started=[started(2)]))
    await asyncio.gather(*live._tasks, return_exceptions=True)
    assert missed(store) == []


class Unhurried(BaselinePredictor):
    """Next cells that take as long as they are let (a model reading a long notebook)."""

    async def predict(self, request):
        if request.task == "next-cell":
            await asyncio.Event().wait()
        return await super().predict(request)


async def test_a_trajectory_that_ends_stops_its_next_cell_predictions(tmp_path: Path):
    """A notebook closed (its kernel shut down or restarted) while its next cell is being
    predicted: that work stops, rather than keep the model from the notebooks still open."""
    live, _, store = live_predictions(tmp_path)
    live.predictors = [Unhurried()]
    await live.on_ingest(ingested(store, [fresh_step(1)], [started(1)]))
    jobs = list(live._next_cell[TID])
    assert len(jobs) == 2 and not any(job.done() for job in jobs)  # none, full
    live.forget(TID)
    _, pending = await asyncio.wait(jobs, timeout=30)  # cancelled: done at once
    for job in pending:
        job.cancel()
    await asyncio.gather(*live._tasks, return_exceptions=True)
    assert not pending and all(job.cancelled() for job in jobs)
    assert TID not in live._next_cell
