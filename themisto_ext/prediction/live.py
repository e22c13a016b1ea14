"""Live predictions: each running cell's output, and after each step the next cell.

Fed by the ingester (``started`` records and new steps), it predicts with every
configured predictor and context, stores and publishes each prediction, and scores it when
the real step lands. Predictions only ever see the steps before their target.

A prediction that the next cell made pointless is missed, never silently dropped: one
superseded in the model's queue, a next-cell prediction cancelled because that cell
started, or one never made because that cell had started when its step arrived (cells run
in quick succession land in one ingestion pass). Each is stored and published as a record
whose error says so (``run.missed_record``), so the notebook tells why a cell has none.

A cell's output may also be predicted before it runs, from its text (``speculate``; see
``speculation.py``): a cell that starts with the text of its trajectory's speculation,
right after the step that speculation was made after, gets that prediction at once
instead of a new model call. A cell starting anywhere stops speculations under way
elsewhere, and none starts while its kernel runs a cell: speculation never takes the
model from a running cell.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine, Iterable, Mapping
from datetime import datetime, timezone
from functools import partial
from typing import Any

from themisto_ext.errors import ThemistoError
from themisto_ext.events import (
    LiveEvents,
    predicting_event,
    prediction_event,
    scored_event,
    speculated_event,
    writing_event,
)
from themisto_ext.ingest import IngestResult
from themisto_ext.prediction.clients.base import Predictor, TextSink
from themisto_ext.prediction.completion import NO_WRITER, CellCompletion, complete_cell, writer
from themisto_ext.prediction.names import NameSource
from themisto_ext.prediction.prompts.build import cell_limit
from themisto_ext.prediction.prompts.postprocess import partial_answer
from themisto_ext.prediction.run import (
    Superseded,
    blank_record,
    missed_record,
    predict,
    prediction_error,
    warm,
)
from themisto_ext.prediction.scoring import scored
from themisto_ext.prediction.speculation import Speculation, Speculations
from themisto_ext.records import Prediction, PredictionContext, PredictionTask, Scope, Step
from themisto_ext.store.aio import AsyncStore
from themisto_ext.store.base import TrajectoryStore
from themisto_ext.trajectory.text import clip

log = logging.getLogger("themisto_ext.live")

NEXT_CELL_STARTED = "the next cell started first"
"""Why a missed prediction has none, as the notebook shows it after "superseded: "."""
FRESH_SECONDS = 60.0
"""Older cells are history being caught up on (a server restart), not live work."""
HISTORY_CACHE = 32
_UNREAD = ("outputs", "hash_index")
"""Step fields no prompt and no predictor reads."""


def _slim(step: Step, limit: int) -> Step:
    """A step as a prompt whose cells show at most ``limit`` characters reads it: without
    the fields nothing here reads, its output cut exactly as the prompt cuts it (``clip``
    of a text already within the limit returns it unchanged). A history then holds about
    ``limit`` characters of output per step, not the whole output: 1,000 cells of 150 KB
    held 2 x 150 KB each (output and outputs) in every cached history."""
    slim = {k: v for k, v in step.items() if k not in _UNREAD}
    slim["output"] = clip(step["output"], limit)
    return slim  # type: ignore[return-value]  # a Step without two fields nobody reads


Pending = dict[asyncio.Task[None], tuple[str, PredictionContext, int]]
"""Next-cell predictions under way: (predictor, context, target step) of each."""


def _forget(waiting: Pending, job: asyncio.Task[None]) -> None:
    waiting.pop(job, None)


def score_landed(store: TrajectoryStore, steps: list[Step]) -> list[tuple[Scope, Prediction]]:
    """Score and save the stored predictions of ``steps`` (steps that just landed), in the
    calling thread: one query per trajectory, not per step (a PostgreSQL round trip each:
    6,000 per ingested chunk held the server's event loop for seconds). On a database
    server the server runs it in its ingestion thread right after the scan (in the loop's
    shared pool it queued behind the predictions' own store calls and held up the next
    scan); on an embedded SQLite file, on the loop (``AsyncStore.quick``)."""
    landed: dict[str, dict[int, Step]] = {}
    for step in steps:
        landed.setdefault(step["trajectory_id"], {}).setdefault(step["step"], step)
    done: list[tuple[Scope, Prediction]] = []
    for trajectory_id, by_number in landed.items():
        pending = [p for p in store.predictions(
            trajectory_id, since_step=min(by_number) - 1, unscored=True)
            if p["target_step"] in by_number]
        if not pending:
            continue
        scope = scope_in(store, trajectory_id)
        for prediction in pending:
            record = scored(prediction, by_number[prediction["target_step"]])
            store.save_prediction(record)
            done.append((scope, record))
    return done


def scope_in(store: TrajectoryStore, trajectory_id: str) -> Scope:
    """A trajectory's scope as the store has it (its id alone if it is gone)."""
    trajectory = store.get_trajectory(trajectory_id)
    return Scope.of(trajectory.to_json() if trajectory else None, trajectory_id)


def landed_step(store: TrajectoryStore, trajectory_id: str, target_step: int) -> Step | None:
    """The target step whole (histories hold cut outputs), if it has landed."""
    found = list(store.iter_steps(trajectory_id, target_step - 1, 1))
    return found[0] if found and found[0]["step"] == target_step else None


def _age(timestamp: str | None) -> float:
    try:
        then = datetime.fromisoformat(str(timestamp))
    except ValueError:
        return float("inf")
    return (datetime.now(timezone.utc) - then).total_seconds()


def _epoch(timestamp: str | None) -> float:
    """A record's ISO time as ``time.time()`` counts; now when it cannot be read."""
    try:
        return datetime.fromisoformat(str(timestamp)).timestamp()
    except ValueError:
        return time.time()


class LivePredictions:
    def __init__(self, store: AsyncStore, events: LiveEvents, predictors: list[Predictor],
                 contexts: Iterable[PredictionContext], budget_chars: int,
                 budgets: Mapping[str, int] | None = None, *,
                 predict_outputs: bool = True) -> None:
        self.store = store
        self.predict_outputs = predict_outputs
        """False where outputs are not recorded (``capture_level`` ``code``): nothing to
        score an output prediction against, and no output to show a model."""
        self.events = events
        self.predictors = predictors
        self.contexts: list[PredictionContext] = list(contexts)
        self.budget_chars = budget_chars
        self.budgets = dict(budgets or {})
        """Prompt budgets of particular predictors, by name (others get ``budget_chars``)."""
        self._histories: OrderedDict[tuple[str, int], list[Step]] = OrderedDict()
        """Steps of recent trajectories as prompts read them, by (trajectory, cell limit)."""
        self._last: dict[str, int] = {}
        """The newest step that landed of each trajectory, since this server started."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_cell: dict[str, Pending] = {}
        """Next-cell predictions still under way, by trajectory."""
        self.speculations = Speculations()
        self._running: dict[str, int] = {}
        """The step each trajectory's kernel is running (started, not landed)."""
        self._warmed: OrderedDict[str | None, int] = OrderedDict()
        """Trajectories whose sessions were warmed, and at how many steps."""
        self._completing: dict[str, asyncio.Task[CellCompletion]] = {}
        """The completion under way per trajectory: the next keystroke's replaces it."""
        self._replaced: set[asyncio.Task[CellCompletion]] = set()
        """Completions cancelled because a newer one replaced them (not their caller)."""

    # ------------------------------------------------------------ inputs

    async def on_ingest(self, result: IngestResult,
                        scores: list[tuple[Scope, Prediction]] | None = None) -> None:
        """React to an ingestion pass: publish the scores of the steps that landed
        (``scores``: ``score_landed`` already run, by the ingestion thread; None: scored
        here), then predict the cells that started and the cells after those that ended."""
        self._track_running(result)
        begun: set[tuple[str, int]] = set()
        for step in result.steps:
            self._remember(step)
            begun.add((step["trajectory_id"], int(step["step"])))
        await self._score(result.steps, scores)
        for started in result.started:
            begun.add((started.trajectory_id, started.step))
            if _age(started.at) < FRESH_SECONDS:
                self.schedule(started.trajectory_id, "output", started.step,
                              code=started.code, cell_id=started.cell_id,
                              started_at=_epoch(started.at))
        for step in result.steps:
            if _age(step.get("ended_at")) >= FRESH_SECONDS:
                continue
            trajectory_id, target = step["trajectory_id"], int(step["step"]) + 1
            if (trajectory_id, target) in begun:
                self._miss_all(trajectory_id, target)
            else:
                self.schedule(trajectory_id, "next-cell", target)

    async def score_only(self, result: IngestResult,
                         scores: list[tuple[Scope, Prediction]] | None = None) -> None:
        """Keep histories and score on-request predictions, but predict nothing by itself."""
        self._track_running(result)
        for step in result.steps:
            self._remember(step)
        await self._score(result.steps, scores)

    def schedule(self, trajectory_id: str, task: PredictionTask, target_step: int, *,
                 code: str | None = None, cell_id: str | None = None,
                 started_at: float | None = None) -> int:
        """Start one prediction per predictor and context (an output prediction made
        before the cell started is taken instead); returns how many."""
        speculation: Speculation | None = None
        if task == "output" and not self.predict_outputs:
            return 0
        if task == "output":
            speculation = self.speculations.claim(trajectory_id, code, target_step)
            self.speculations.stop_others(trajectory_id)
            # The person has moved on: the next cell is running, so next-cell predictions
            # still waiting for a model would only delay this cell's output prediction.
            for job, (name, context, target) in self._next_cell.pop(trajectory_id, {}).items():
                if not job.done():
                    job.cancel()
                    self._start(self._miss(name, context, trajectory_id, "next-cell",
                                           target, None))
        count = 0
        for predictor in self.predictors:
            for context in self.contexts:
                if speculation is not None and (predictor.name, context) in speculation.outcomes:
                    job = self._start(self._adopt(speculation, predictor, context, cell_id,
                                                  started_at or time.time()))
                else:
                    job = self._start(self._run(predictor, context, trajectory_id, task,
                                                target_step, code, cell_id))
                if task == "next-cell":
                    waiting = self._next_cell.setdefault(trajectory_id, {})
                    waiting[job] = (predictor.name, context, target_step)
                    job.add_done_callback(partial(_forget, waiting))
                count += 1
        return count

    def speculate(self, trajectory_id: str, code: str, after_step: int,
                  cell_id: str | None = None) -> str | None:
        """Predict the output of a cell not run yet, as if it started right after step
        ``after_step``; kept for that cell (see ``speculation.py``). Returns why it was
        not started, or None."""
        if not self.predictors:
            return "no predictor is configured"
        if not self.predict_outputs:
            return "outputs are not recorded here (capture level: code)"
        if trajectory_id in self._running:
            return "the kernel is running a cell"
        current = self.speculations.get(trajectory_id)
        if current is not None and current.matches(code, after_step + 1):
            return None  # the same text announced again (selected again): under way
        speculation = Speculation(trajectory_id, code, after_step, cell_id)
        loop = asyncio.get_running_loop()
        for predictor in self.predictors:
            for context in self.contexts:
                speculation.outcomes[(predictor.name, context)] = loop.create_future()
        self.speculations.replace(speculation)
        speculation.job = self._start(self._speculate(speculation))
        return None

    async def complete(self, trajectory_id: str, beginning: str, after_step: int,
                       after: str = "", on_text: TextSink | None = None,
                       names: NameSource | None = None) -> CellCompletion:
        """What goes at the cursor of a cell typed after step ``after_step``: ``beginning``
        before it, ``after`` after it (``completion.py``), under ``full`` where this server
        predicts with it; ``on_text`` takes a code model's text so far as it writes it;
        ``names`` gives the kernel's names at the cursor (``names.py``). A
        newer completion of the trajectory (the next keystroke's) cancels this one: its
        model stops at its next token, and this answers none. Cancelling the call (the
        browser gave up the request) stops the model too."""
        model = writer(self.predictors)
        if model is None:
            return CellCompletion(None, None, NO_WRITER)
        older = self._completing.pop(trajectory_id, None)
        if older is not None:
            self._replaced.add(older)
            older.cancel()
        job = asyncio.ensure_future(self._complete(model, trajectory_id, beginning,
                                                   after_step, after, on_text, names))
        self._completing[trajectory_id] = job
        try:
            return await job
        except asyncio.CancelledError:
            if job not in self._replaced:
                raise  # this call was cancelled, not replaced
            return CellCompletion(None, model.name, "a newer keystroke replaced it")
        finally:
            self._replaced.discard(job)
            if self._completing.get(trajectory_id) is job:
                del self._completing[trajectory_id]

    async def _complete(self, model: Predictor, trajectory_id: str, beginning: str,
                        after_step: int, after: str, on_text: TextSink | None,
                        names: NameSource | None) -> CellCompletion:
        context: PredictionContext = "full" if "full" in self.contexts or not self.contexts \
            else self.contexts[0]
        budget = self.budgets.get(model.name, self.budget_chars)
        history = await self._history(trajectory_id, budget)
        return await complete_cell(model, [s for s in history if int(s["step"]) <= after_step],
                                   beginning, context,
                                   scope=Scope(trajectory_id), target_step=after_step + 1,
                                   budget_chars=budget, session=f"{trajectory_id}:{context}",
                                   after=after, on_text=on_text,
                                   # (a kernel running a cell would answer after it)
                                   names=None if trajectory_id in self._running else names)

    def warm(self, trajectory_id: str | None, steps: int) -> int:
        """A notebook opened: the model sessions of its trajectory read the trajectory so
        far now, in the background, so its first prediction does not (with None, a kernel
        that has recorded nothing yet: the model loads and reads what every prompt begins
        with). Once per trajectory and length; returns the warm-ups started."""
        if self._warmed.get(trajectory_id) == steps:
            return 0
        self._warmed[trajectory_id] = steps
        self._warmed.move_to_end(trajectory_id)
        while len(self._warmed) > HISTORY_CACHE:
            self._warmed.popitem(last=False)
        count = 0
        for predictor in self.predictors:
            if getattr(predictor, "warm", None) is not None:
                for context in self.contexts:
                    self._start(self._warm(predictor, context, trajectory_id))
                    count += 1
        return count

    async def _warm(self, predictor: Predictor, context: PredictionContext,
                    trajectory_id: str | None) -> None:
        budget = self.budgets.get(predictor.name, self.budget_chars)
        try:
            history = [] if trajectory_id is None else await self._history(trajectory_id,
                                                                           budget)
            await warm(predictor, history, context, budget_chars=budget,
                       session=None if trajectory_id is None else f"{trajectory_id}:{context}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a model that cannot load says so on its first prediction
            log.warning("themisto: could not warm %s for %s: %s", predictor.name,
                        trajectory_id, exc)

    def _start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        job = asyncio.create_task(work)
        self._tasks.add(job)
        job.add_done_callback(self._tasks.discard)
        return job

    def model_processes(self) -> list[dict[str, Any]]:
        """The state of each predictor's model process (those that run one)."""
        found = [status() for p in self.predictors
                 if (status := getattr(p, "status", None)) is not None]
        return [s for s in found if s is not None]

    async def aclose(self) -> None:
        self.speculations.clear()
        for job in list(self._tasks):
            job.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for predictor in self.predictors:
            await predictor.aclose()

    # ------------------------------------------------------------ work

    async def _history(self, trajectory_id: str, budget: int) -> list[Step]:
        """The trajectory's steps as prompts of this budget read them (see ``_slim``)."""
        key = (trajectory_id, cell_limit(budget))
        if key not in self._histories:
            for _ in range(3):
                read = await self.store.steps(trajectory_id)
                # a step that landed while the store was read is in the read, or it is
                # read again (a cached history must hold every step up to its last)
                if (read[-1]["step"] if read else 0) >= self._last.get(trajectory_id, 0):
                    break
            self._histories.setdefault(key, [_slim(s, key[1]) for s in read])
            while len(self._histories) > HISTORY_CACHE:
                self._histories.popitem(last=False)
        self._histories.move_to_end(key)
        return self._histories[key]

    def _remember(self, step: Step) -> None:
        tid = step["trajectory_id"]
        self._last[tid] = max(self._last.get(tid, 0), int(step["step"]))
        for (trajectory_id, limit), cached in self._histories.items():
            if trajectory_id == step["trajectory_id"] and (
                    not cached or cached[-1]["step"] < step["step"]):
                cached.append(_slim(step, limit))

    def forget(self, trajectory_id: str) -> None:
        """Drop what is cached of a trajectory that ended or was deleted, and stop its
        next-cell predictions under way: nobody will run that cell, and a model job left
        running would hold the one model slot against the notebooks still open (each
        urgent completion pausing it, each resumption reading its prompt again)."""
        for key in [k for k in self._histories if k[0] == trajectory_id]:
            del self._histories[key]
        for job in self._next_cell.pop(trajectory_id, {}):
            job.cancel()
        self._running.pop(trajectory_id, None)
        self._last.pop(trajectory_id, None)
        self.speculations.discard(trajectory_id)

    def _track_running(self, result: IngestResult) -> None:
        """Which kernels are running a cell: one that started and has not landed (a cell
        can start and land within one ingestion pass)."""
        landed: dict[str, int] = {}
        for step in result.steps:
            tid = step["trajectory_id"]
            landed[tid] = max(landed.get(tid, 0), int(step["step"]))
        for tid, last in landed.items():
            if self._running.get(tid, 0) <= last:
                self._running.pop(tid, None)
        for started in result.started:
            tid, number = started.trajectory_id, started.step
            if number > landed.get(tid, 0) and _age(started.at) < FRESH_SECONDS:
                self._running[tid] = number

    async def _scope(self, trajectory_id: str) -> Scope:
        return await self.store.quick(partial(scope_in, trajectory_id=trajectory_id))

    async def _predict(self, predictor: Predictor, context: PredictionContext, scope: Scope,
                       task: PredictionTask, target_step: int, code: str | None,
                       cell_id: str | None, speculation: Speculation | None = None,
                       ) -> Prediction | Superseded:
        """One prediction, its answer published as the model writes it; one made for a
        ``speculation`` is shown only once its cell starts (the text written so far then,
        the rest as it comes), and its CPU is booked to it."""
        budget = self.budgets.get(predictor.name, self.budget_chars)
        history = [s for s in await self._history(scope.trajectory_id, budget)
                   if s["step"] < target_step]
        combo = (predictor.name, context)
        shown = [""]

        def on_text(raw: str) -> None:
            text = partial_answer(raw, task)
            if text == shown[0]:  # a tag being written, or whitespace, shows nothing new
                return
            shown[0] = text
            shown_as = cell_id
            if speculation is not None:
                speculation.written[combo] = text
                if not speculation.running:
                    return
                shown_as = speculation.running_cell
            self.events.publish(writing_event(scope, task, context, predictor.name,
                                              target_step, shown_as, text))

        return await predict(
            predictor, history, task, context, scope=scope, target_step=target_step,
            target_code=code, cell_id=cell_id, session=f"{scope.trajectory_id}:{context}",
            budget_chars=budget, on_text=on_text, speculative=speculation is not None,
            on_cpu=None if speculation is None else partial(self.speculations.spend,
                                                            speculation))

    async def _run(self, predictor: Predictor, context: PredictionContext, trajectory_id: str,
                   task: PredictionTask, target_step: int, code: str | None,
                   cell_id: str | None) -> None:
        scope: Scope | None = None
        try:
            scope = await self._scope(trajectory_id)
            self.events.publish(predicting_event(scope, task, context, predictor.name,
                                                 target_step, cell_id))
            outcome = await self._predict(predictor, context, scope, task, target_step, code,
                                          cell_id)
            if isinstance(outcome, Superseded):  # a newer request of the session replaced it
                await self._miss(predictor.name, context, trajectory_id, task, target_step,
                                 cell_id)
                return
            await self._deliver(scope, outcome)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("themisto: live prediction failed")
            if scope is not None:  # the cell said "predicting…": it must hear the end
                record = blank_record(predictor.name, task, context, scope=scope,
                                      target_step=target_step, cell_id=cell_id)
                record["error"] = prediction_error(ThemistoError(
                    f"the prediction failed on the server ({type(exc).__name__})"))
                self.events.publish(prediction_event(scope, record))

    async def _deliver(self, scope: Scope, record: Prediction) -> None:
        """Store and publish a prediction, scored if its step landed meanwhile (the read and
        the write as one unit of store work, ``AsyncStore.quick``)."""
        target = record["target_step"]

        def deliver(store: TrajectoryStore) -> tuple[Prediction, bool]:
            landed = landed_step(store, scope.trajectory_id, target)
            done = record if landed is None else scored(record, landed)  # it finished
            store.save_prediction(done)  # while the model was thinking: scored at once
            return done, landed is not None

        done, was_scored = await self.store.quick(deliver)
        self.events.publish(prediction_event(scope, done))
        if was_scored:
            self.events.publish(scored_event(scope, done))

    async def _speculate(self, speculation: Speculation) -> None:
        """Make a speculation's predictions one after the other (one model job at a
        time per kernel), handing each over as it is ready."""
        try:
            scope = await self._scope(speculation.trajectory_id)
            for predictor in self.predictors:
                for context in self.contexts:
                    outcome = await self._predict(  # streamed only once its cell starts
                        predictor, context, scope, "output", speculation.target_step,
                        speculation.code, speculation.cell_id, speculation)
                    made = None if isinstance(outcome, Superseded) else outcome
                    speculation.settle((predictor.name, context), made)
                    if made is not None and not speculation.running:
                        # shown as what the cell will show if it runs ("If you run
                        # this cell"); its own prediction once it does
                        self.events.publish(speculated_event(scope, speculation.code, made))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("themisto: speculative prediction failed")
        finally:
            for combo in speculation.outcomes:
                speculation.settle(combo, None)

    async def _adopt(self, speculation: Speculation, predictor: Predictor,
                     context: PredictionContext, cell_id: str | None, started_at: float) -> None:
        """A starting cell takes its speculation's prediction: at once when it is ready,
        else as soon as it is (no new model call); when it was not made after all, the
        cell is predicted as usual."""
        combo = (predictor.name, context)
        outcome = speculation.outcomes[combo]
        tid, target = speculation.trajectory_id, speculation.target_step
        try:
            scope = await self._scope(tid)
            if not outcome.done():
                speculation.running = True
                shown_as = speculation.running_cell = cell_id or speculation.cell_id
                self.events.publish(predicting_event(scope, "output", context, predictor.name,
                                                     target, shown_as))
                written = speculation.written.get(combo)
                if written:  # what the model has written so far; the rest streams
                    self.events.publish(writing_event(scope, "output", context,
                                                      predictor.name, target, shown_as,
                                                      written))
            made = await outcome
            if made is None:
                await self._run(predictor, context, tid, "output", target, speculation.code,
                                cell_id)
                return
            record = made.copy()
            record["speculative"] = True
            record["ready_before_start"] = round(started_at - speculation.ready_at[combo], 3)
            record["cell_id"] = cell_id or made["cell_id"]
            await self._deliver(scope, record)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("themisto: speculative prediction failed")

    def _miss_all(self, trajectory_id: str, target_step: int) -> None:
        """The next-cell predictions of a cell that had started before its previous step
        arrived: not made (they would only delay that cell's own output prediction)."""
        for predictor in self.predictors:
            for context in self.contexts:
                self._start(self._miss(predictor.name, context, trajectory_id, "next-cell",
                                       target_step, None))

    async def _miss(self, predictor: str, context: PredictionContext, trajectory_id: str,
                    task: PredictionTask, target_step: int, cell_id: str | None) -> None:
        try:
            scope = await self._scope(trajectory_id)
            record = missed_record(predictor, task, context, NEXT_CELL_STARTED, scope=scope,
                                   target_step=target_step, cell_id=cell_id)
            await self.store.run(lambda s: s.save_prediction(record))
        except ThemistoError as exc:  # the store is down: the cell says nothing more
            log.warning("themisto: could not record a missed prediction: %s", exc)
            return
        self.events.publish(prediction_event(scope, record))

    async def _score(self, steps: list[Step],
                     scores: list[tuple[Scope, Prediction]] | None) -> None:
        if scores is None:
            scores = await self.store.quick(partial(score_landed, steps=steps)) if steps else []
        for scope, record in scores:
            self.events.publish(scored_event(scope, record))
