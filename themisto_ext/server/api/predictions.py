"""Predictions: what is configured, a trajectory's predictions (whole, or slim: without
prompts, for a notebook's history), one prediction whole, predictions on request, and the
completion of a cell being typed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from themisto_ext.prediction.completion import CellCompletion, writer
from themisto_ext.prediction.names import NAMES_WAIT
from themisto_ext.prediction.prompts import TASKS
from themisto_ext.records import Prediction
from themisto_ext.server.api.base import NDJSON, ThemistoHandler, bad_request
from themisto_ext.server.kernel_names import kernel_names
from themisto_ext.store import Trajectory, TrajectoryStore


def body_kernel_id(body: dict[str, Any]) -> str:
    kernel_id = body.get("kernel_id")
    if not isinstance(kernel_id, str) or not kernel_id:
        raise bad_request("kernel_id", "must be a kernel id")
    return kernel_id


async def kernel_trajectory(handler: ThemistoHandler, kernel_id: str) -> Trajectory:
    """The kernel's current trajectory with everything its journal holds; 404 without."""
    await handler.themisto.ingest_now()
    trajectory = await handler.themisto.store.run(
        lambda s: s.latest_for_kernel(kernel_id, handler.themisto.user))
    if trajectory is None:
        raise web.HTTPError(HTTPStatus.NOT_FOUND, f"kernel {kernel_id!r} has recorded nothing")
    return trajectory


class PredictorsHandler(ThemistoHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        live = self.themisto.live
        speculations = live.speculations
        self.send_json({"predictors": [p.name for p in live.predictors],
                        "contexts": live.contexts,
                        "live": self.themisto.settings.live_predictions,
                        "speculation": {
                            "made": speculations.made, "used": speculations.used,
                            "cpu_seconds_used": round(speculations.cpu_seconds["used"], 3),
                            "cpu_seconds_thrown_away": round(
                                speculations.cpu_seconds["thrown_away"], 3)},
                        "local_models": live.model_processes(),
                        "completer": getattr(writer(live.predictors), "name", None)})


class TrajectoryPredictionsHandler(ThemistoHandler):
    @web.authenticated
    @authorized
    async def get(self, trajectory_id: str) -> None:
        await self.readable_trajectory(trajectory_id)
        since = self.int_argument("since_step", 0)
        until = (self.int_argument("until_step", 0)
                 if self.get_argument("until_step", None) is not None else None)
        slim = self.bool_argument("slim")
        found = await self.themisto.store.run(
            lambda s: s.predictions(trajectory_id, since, until_step=until, slim=slim))
        self.send_json({"predictions": found})


class PredictionHandler(ThemistoHandler):
    """``GET /predictions/{id}``: one prediction whole, its prompt and raw answer included
    (the live stream leaves them out)."""

    @web.authenticated
    @authorized
    async def get(self, prediction_id: str) -> None:
        def read(store: TrajectoryStore) -> tuple[Prediction | None, Trajectory | None]:
            found = store.get_prediction(prediction_id)
            return found, store.get_trajectory(found["trajectory_id"]) if found else None

        found, owner = await self.themisto.store.run(read)
        if not found or not owner or not self.access.may_read(owner.user):
            raise web.HTTPError(HTTPStatus.NOT_FOUND, f"no prediction {prediction_id!r}")
        self.send_json(found)


class PredictionsHandler(ThemistoHandler):
    """``POST /predictions {kernel_id, task, code?}``: predict now; results come on the stream."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        kernel_id, task, code = body_kernel_id(body), body.get("task"), body.get("code")
        if task not in TASKS:
            raise bad_request("task", f"must be one of {', '.join(TASKS)}")
        if task == "output" and not isinstance(code, str):
            raise bad_request("code", "the output task needs the cell's code")
        trajectory = await kernel_trajectory(self, kernel_id)
        started = self.themisto.live.schedule(
            trajectory.id, task, trajectory.steps + 1,
            code=self.themisto.mask_cell(code) if isinstance(code, str) and task == "output"
            else None)
        self.send_json({"accepted": started > 0, "trajectory_id": trajectory.id,
                        "target_step": trajectory.steps + 1, "predictions": started},
                       status=HTTPStatus.ACCEPTED)


class SpeculationsHandler(ThemistoHandler):
    """``POST /speculations {kernel_id, code, cell_id?}``: predict a cell's output from its
    text before it runs (``prediction/speculation.py``); kept for that cell, never
    streamed until the cell starts with the same text."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        kernel_id, code, cell_id = body_kernel_id(body), body.get("code"), body.get("cell_id")
        if not isinstance(code, str):
            raise bad_request("code", "must be the cell's text")
        if cell_id is not None and not isinstance(cell_id, str):
            raise bad_request("cell_id", "must be a cell id or null")
        trajectory = await kernel_trajectory(self, kernel_id)
        reason = "speculation is off on this server" if not self.themisto.settings.speculation \
            else "the cell is empty" if not code.strip() \
            else self.themisto.live.speculate(trajectory.id, self.themisto.mask_cell(code),
                                              trajectory.steps, cell_id)
        self.send_json({"accepted": reason is None, "reason": reason,
                        "trajectory_id": trajectory.id, "target_step": trajectory.steps + 1},
                       status=HTTPStatus.ACCEPTED)


MAX_BEGINNING = 20_000
"""Characters of a typed cell a completion request may carry."""


class CompletionsHandler(ThemistoHandler):
    """``POST /completions {kernel_id, beginning, after?, stream?}``: what goes at the
    cursor of a cell being typed (``beginning`` before it, ``after`` after it), by the
    server's completer (``completer`` in ``GET /predictors``; ``prediction/completion.py``).
    Answers ``{completion, predictor, reason, trajectory_id, after_step}``: ``completion``
    null with the ``reason`` when there is none. With ``stream: true``, NDJSON: a line
    ``{completion, done: false}`` each time a code model's text so far grows, then that
    answer with ``done: true`` (which alone decides: it may withdraw what was streamed).
    Nothing is stored."""

    _job: asyncio.Future[CellCompletion] | None = None

    def on_connection_close(self) -> None:
        # The browser aborts the request at the next keystroke: the model stops too.
        if self._job is not None:
            self._job.cancel()

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.json_body()
        kernel_id, beginning = body_kernel_id(body), body.get("beginning")
        if not isinstance(beginning, str) or not beginning:
            raise bad_request("beginning", "must be the text typed so far")
        if len(beginning) > MAX_BEGINNING:
            raise bad_request("beginning", f"longer than {MAX_BEGINNING} characters")
        after = body.get("after", "")
        if not isinstance(after, str):
            raise bad_request("after", "must be the cell's text after the cursor")
        if len(after) > MAX_BEGINNING:
            raise bad_request("after", f"longer than {MAX_BEGINNING} characters")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request("stream", "must be true or false")
        trajectory = await kernel_trajectory(self, kernel_id)
        if stream:
            self.set_header("Content-Type", NDJSON)
            self.set_header("Cache-Control", "no-store")
        reply = {"trajectory_id": trajectory.id, "after_step": trajectory.steps}
        if not beginning.strip():  # nothing typed yet but blanks: nothing to complete
            self._answer(stream, {"completion": None, "predictor": None,
                                  "reason": "nothing typed before the cursor", **reply})
            return
        written = _Written() if stream else None

        def names() -> Awaitable[list[str] | None]:  # (the user's own text, to their kernel)
            return kernel_names(self.kernel_manager, kernel_id, beginning, NAMES_WAIT)
        self._job = asyncio.ensure_future(self.themisto.live.complete(
            trajectory.id, self.themisto.mask_cell(beginning), trajectory.steps,
            self.themisto.mask_cell(after), None if written is None else written.put,
            names))
        if written is not None and not await self._stream(self._job, written):
            return
        try:
            done = await self._job
        except asyncio.CancelledError:
            if self._job.cancelled():  # the browser gave up (the next keystroke): no reply
                return
            raise
        self._answer(stream, {"completion": done.completion, "predictor": done.predictor,
                              "reason": done.reason, **reply})

    def _answer(self, stream: bool, answer: dict[str, Any]) -> None:
        if not stream:
            self.send_json(answer)
            return
        self.finish(json.dumps({**answer, "done": True}, ensure_ascii=False) + "\n",
                    set_content_type=NDJSON)  # (APIHandler's finish would say JSON)

    async def _stream(self, job: asyncio.Future[CellCompletion], written: _Written) -> bool:
        """Sends each text so far while ``job`` runs; False once the browser has gone."""
        sent = ""
        while not job.done():
            grew = asyncio.ensure_future(written.grew.wait())
            either: set[asyncio.Future[Any]] = {job, grew}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            grew.cancel()
            written.grew.clear()
            if written.text == sent or job.done():
                continue  # the final line carries the last text
            sent = written.text
            self.write(json.dumps({"completion": sent, "done": False}, ensure_ascii=False)
                       + "\n")
            try:
                await self.flush()
            except StreamClosedError:
                job.cancel()
                return False
        return True


class _Written:
    """A streamed completion's latest text; ``grew`` is set each time it changes (the
    stream sends the latest, not every token: a slow reader skips what it missed)."""

    def __init__(self) -> None:
        self.text = ""
        self.grew = asyncio.Event()

    def put(self, text: str) -> None:
        self.text = text
        self.grew.set()
