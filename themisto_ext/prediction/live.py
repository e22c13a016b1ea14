"""Live predictions: each running cell's output, and after each step the next cell.

Fed by the ingester (``started`` records and new steps), it predicts with every
configured predictor and context, stores and publishes each prediction, and scores it when
the real step lands. Predictions only ever see the steps before their target.

A prediction that the next cell made pointless is missed, never silently dropped: one
superseded in the model's queue, a next-cell prediction cancelled because that cell
started, or one never made because that cell had started when its step arrived (cells run
in quick succession land in one ingestion pass). Each is stored and published as a record
whose error says so (``run.missed_record``), so the notebook tells why a cell has none.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from functools import partial

from themisto_ext.events import (
    EventBus,
    Scope,
    predicting_event,
    prediction_event,
    scored_event,
)
from themisto_ext.ingest import IngestResult
from themisto_ext.prediction.clients.base import Predictor
from themisto_ext.prediction.run import Superseded, missed_record, predict
from themisto_ext.prediction.scoring import scored
from themisto_ext.records import Context, Prediction, Step, Task
from themisto_ext.store import TrajectoryStore

log = logging.getLogger("themisto_ext.live")

NEXT_CELL_STARTED = "the next cell started first"
"""Why a missed prediction has none, as the notebook shows it after "superseded: "."""
FRESH_SECONDS = 60.0
"""Older cells are history being caught up on (a server restart), not live work."""
HISTORY_CACHE = 32


Pending = dict[asyncio.Task[None], tuple[str, Context, int]]
"""Next-cell predictions under way: (predictor, context, target step) of each."""


def _forget(waiting: Pending, job: asyncio.Task[None]) -> None:
    waiting.pop(job, None)


def _age(timestamp: str | None) -> float:
    try:
        then = datetime.fromisoformat(str(timestamp))
    except ValueError:
        return float("inf")
    return (datetime.now(timezone.utc) - then).total_seconds()


class LivePredictions:
    def __init__(self, store: TrajectoryStore, events: EventBus, predictors: list[Predictor],
                 contexts: Iterable[Context], budget_chars: int,
                 budgets: Mapping[str, int] | None = None) -> None:
        self.store = store
        self.events = events
        self.predictors = predictors
        self.contexts: list[Context] = list(contexts)
        self.budget_chars = budget_chars
        self.budgets = dict(budgets or {})
        """Prompt budgets of particular predictors, by name (others get ``budget_chars``)."""
        self._histories: OrderedDict[str, list[Step]] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_cell: dict[str, Pending] = {}
        """Next-cell predictions still under way, by trajectory."""

    # ------------------------------------------------------------ inputs

    def on_ingest(self, result: IngestResult) -> None:
        begun: set[tuple[str, int]] = set()
        for step in result.steps:
            self._remember(step)
            self._score(step)
            begun.add((step["trajectory_id"], int(step["step"])))
        for started in result.started:
            begun.add((started["trajectory_id"], int(started["step"])))
            if _age(started.get("at")) < FRESH_SECONDS:
                self.schedule(started["trajectory_id"], "output", int(started["step"]),
                              code=started["code"], cell_id=started.get("cell_id"))
        for step in result.steps:
            if _age(step.get("ended_at")) >= FRESH_SECONDS:
                continue
            trajectory_id, target = step["trajectory_id"], int(step["step"]) + 1
            if (trajectory_id, target) in begun:
                self._miss_all(trajectory_id, target)
            else:
                self.schedule(trajectory_id, "next-cell", target)

    def score_only(self, result: IngestResult) -> None:
        """Keep histories and score on-request predictions, but predict nothing by itself."""
        for step in result.steps:
            self._remember(step)
            self._score(step)

    def schedule(self, trajectory_id: str, task: Task, target_step: int, *,
                 code: str | None = None, cell_id: str | None = None) -> int:
        """Start one prediction per predictor and context; returns how many."""
        if task == "output":
            # The person has moved on: the next cell is running, so next-cell predictions
            # still waiting for a model would only delay this cell's output prediction.
            for job, (name, context, target) in self._next_cell.pop(trajectory_id, {}).items():
                if not job.done():
                    job.cancel()
                    self._miss(name, context, trajectory_id, "next-cell", target, None)
        count = 0
        for predictor in self.predictors:
            for context in self.contexts:
                job = asyncio.create_task(self._run(predictor, context, trajectory_id, task,
                                                    target_step, code, cell_id))
                self._tasks.add(job)
                job.add_done_callback(self._tasks.discard)
                if task == "next-cell":
                    waiting = self._next_cell.setdefault(trajectory_id, {})
                    waiting[job] = (predictor.name, context, target_step)
                    job.add_done_callback(partial(_forget, waiting))
                count += 1
        return count

    async def aclose(self) -> None:
        for job in list(self._tasks):
            job.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for predictor in self.predictors:
            await predictor.aclose()

    # ------------------------------------------------------------ work

    def _history(self, trajectory_id: str) -> list[Step]:
        if trajectory_id not in self._histories:
            self._histories[trajectory_id] = list(self.store.iter_steps(trajectory_id))
            while len(self._histories) > HISTORY_CACHE:
                self._histories.popitem(last=False)
        self._histories.move_to_end(trajectory_id)
        return self._histories[trajectory_id]

    def _remember(self, step: Step) -> None:
        cached = self._histories.get(step["trajectory_id"])
        if cached is not None and (not cached or cached[-1]["step"] < step["step"]):
            cached.append(step)

    def _landed(self, trajectory_id: str, target_step: int) -> Step | None:
        return next((s for s in reversed(self._history(trajectory_id))
                     if s["step"] == target_step), None)

    def _scope(self, trajectory_id: str) -> Scope:
        trajectory = self.store.get_trajectory(trajectory_id)
        return Scope.of(trajectory.to_json() if trajectory else None, trajectory_id)

    async def _run(self, predictor: Predictor, context: Context, trajectory_id: str, task: Task,
                   target_step: int, code: str | None, cell_id: str | None) -> None:
        try:
            history = [s for s in self._history(trajectory_id) if s["step"] < target_step]
            scope = self._scope(trajectory_id)
            self.events.publish(predicting_event(scope, task, context, predictor.name,
                                                 target_step, cell_id))
            outcome = await predict(
                predictor, history, task, context, trajectory_id=trajectory_id,
                target_step=target_step, target_code=code,
                session=f"{trajectory_id}:{context}",
                budget_chars=self.budgets.get(predictor.name, self.budget_chars),
                kernel_id=scope.kernel_id, notebook_path=scope.notebook_path, cell_id=cell_id)
            if isinstance(outcome, Superseded):  # a newer request of the session replaced it
                self._miss(predictor.name, context, trajectory_id, task, target_step, cell_id)
                return
            record = outcome
            landed = self._landed(trajectory_id, target_step)
            if landed is not None:  # the cell finished while the model was thinking
                record = scored(record, landed)
            self.store.save_prediction(record)
            self.events.publish(prediction_event(scope, record))
            if landed is not None:
                self.events.publish(scored_event(scope, record))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("themisto: live prediction failed")

    def _miss_all(self, trajectory_id: str, target_step: int) -> None:
        """The next-cell predictions of a cell that had started before its previous step
        arrived: not made (they would only delay that cell's own output prediction)."""
        for predictor in self.predictors:
            for context in self.contexts:
                self._miss(predictor.name, context, trajectory_id, "next-cell", target_step,
                           None)

    def _miss(self, predictor: str, context: Context, trajectory_id: str, task: Task,
              target_step: int, cell_id: str | None) -> None:
        scope = self._scope(trajectory_id)
        record = missed_record(predictor, task, context, NEXT_CELL_STARTED,
                               trajectory_id=trajectory_id, target_step=target_step,
                               kernel_id=scope.kernel_id, notebook_path=scope.notebook_path,
                               cell_id=cell_id)
        self.store.save_prediction(record)
        self.events.publish(prediction_event(scope, record))

    def _score(self, step: Step) -> None:
        pending = self.store.predictions(step["trajectory_id"], target_step=step["step"],
                                         unscored=True)
        if not pending:
            return
        scope = self._scope(step["trajectory_id"])
        for prediction in pending:
            done: Prediction = scored(prediction, step)
            self.store.save_prediction(done)
            self.events.publish(scored_event(scope, done))
