"""The live stream's events: one builder per event type, and their publisher.

Every event is built here, in the shape of ``schemas/live-event.schema.json``: the scope
(trajectory, kernel, notebook) that streams filter on, plus only what live consumers read.
Publishers (ingestion in the server, the live prediction scheduler) never assemble event
dicts themselves.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from jupyter_events import EventLogger
from jupyter_events.schema import EventSchema

from themisto_ext import json_codec
from themisto_ext.records import (
    LiveBusMessage,
    LiveEvent,
    LiveStep,
    PredictingEvent,
    Prediction,
    PredictionContext,
    PredictionEvent,
    PredictionTask,
    RecordingEvent,
    Scope,
    ScoredEvent,
    SpeculatedEvent,
    Step,
    StepEvent,
    Trajectory,
    TrajectoryEvent,
    WritingEvent,
    code_hash,
    schema,
    validator,
)

log = logging.getLogger("themisto_ext.events")

LIVE_EVENT_SCHEMA_ID: str = schema("live-bus")["$id"]
"""The schema id live events are emitted under on the server's event bus (``live-bus``:
each event rides as its JSON text, see ``live_event``)."""

LIVE_STEP_FIELDS = tuple(LiveStep.__annotations__)
"""The step fields the stream carries (``LiveStep`` in the schema)."""
UNNUMBERED = 0
"""An event's ``seq`` until ``LiveEvents.publish`` numbers it."""


def trajectory_event(trajectory: Trajectory) -> TrajectoryEvent:
    return {"type": "trajectory", "seq": UNNUMBERED, "trajectory_id": trajectory["id"],
            "kernel_id": trajectory["kernel_id"], "notebook_path": trajectory["notebook_path"],
            "trajectory": trajectory}


def step_event(step: Step) -> StepEvent:
    live: dict[str, Any] = {name: step.get(name) for name in LIVE_STEP_FIELDS}
    # values captured as data (up to 1,000 each) are for the rules, not the page: the
    # panel's runtime table shows type, size and repr (a variable without data is passed
    # as it is: the event is serialised at once, and copying each took most of its time)
    live["runtime_variables"] = {
        name: {k: v for k, v in info.items() if k != "data"} if "data" in info else info
        for name, info in (step.get("runtime_variables") or {}).items()}
    return {"type": "step", "seq": UNNUMBERED, "trajectory_id": step["trajectory_id"],
            "kernel_id": step["kernel_id"], "notebook_path": step.get("notebook_path"),
            "step": live}  # type: ignore[typeddict-item]  # the LiveStep fields, just read


def recording_event(kernel_id: str, recording: bool, scope: Scope | None,
                    reason: str | None = None) -> RecordingEvent:
    return {"type": "recording", "seq": UNNUMBERED, "kernel_id": kernel_id, "recording": recording,
            "reason": reason, "trajectory_id": scope.trajectory_id if scope else None,
            "notebook_path": scope.notebook_path if scope else None}


def predicting_event(scope: Scope, task: PredictionTask, context: PredictionContext, predictor: str,
                     target_step: int, cell_id: str | None) -> PredictingEvent:
    return {"type": "predicting", "seq": UNNUMBERED, "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "task": task, "context": context, "predictor": predictor,
            "target_step": target_step, "cell_id": cell_id}


def writing_event(scope: Scope, task: PredictionTask, context: PredictionContext, predictor: str,
                  target_step: int, cell_id: str | None, text: str) -> WritingEvent:
    """A prediction's answer so far, as the model writes it (``text`` read as the whole
    answer will be: ``prompts.postprocess.partial_answer``)."""
    return {"type": "writing", "seq": UNNUMBERED, "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "task": task, "context": context, "predictor": predictor,
            "target_step": target_step, "cell_id": cell_id, "text": text}


def _slim(prediction: Prediction) -> Prediction:
    """A prediction as the live stream carries it: without its prompt and raw answer."""
    slim: dict[str, Any] = {k: v for k, v in prediction.items() if k not in ("prompt", "raw")}
    return slim  # type: ignore[return-value]  # Prediction minus two optional keys


def prediction_event(scope: Scope, prediction: Prediction) -> PredictionEvent:
    return {"type": "prediction", "seq": UNNUMBERED, "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "prediction": _slim(prediction)}


def speculated_event(scope: Scope, code: str, prediction: Prediction) -> SpeculatedEvent:
    return {"type": "speculated", "seq": UNNUMBERED, "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "code_hash": code_hash(code), "prediction": _slim(prediction)}


def scored_event(scope: Scope, prediction: Prediction) -> ScoredEvent:
    return {"type": "scored", "seq": UNNUMBERED, "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "prediction_id": prediction["id"], "task": prediction["task"],
            "target_step": prediction["target_step"],
            "reference": prediction["reference"] or "", "scores": prediction["scores"]}


class LiveEvents:
    """Publishes live events on jupyter_server's event bus (``serverapp.event_logger``),
    which JupyterLab's ``EventManager`` reads over its one WebSocket.

    Each event gets the next sequence number (``seq``): the bus delivers every event to
    every subscriber in order, so a page that sees a gap (or a number lower than the last,
    a restarted server) knows it missed some and reads them from the REST API. Only this
    server emits under the schema: one posted to ``POST /api/events`` is refused (400),
    so no page can be shown a step or a prediction the server never made.

    The bus deep-copies and schema-checks whatever it is handed, on the server's loop, at
    every emit: an event is handed to it as its JSON text (``live-bus.schema.json``),
    written once, which costs it a string to copy and check. (Handed as a dict, a step's
    event cost ~3 ms; with 8 kernels running cells, a step reached the page a median 1.3 s
    after its cell ended, instead of 0.1 s.)
    """

    check = False
    """Check every event against ``live-event.schema.json`` before it is emitted, and raise
    ``jsonschema.ValidationError`` for one it refuses (the tests do; a server does not)."""

    def __init__(self, logger: EventLogger | None = None) -> None:
        self.logger = logger if logger is not None else EventLogger()
        if LIVE_EVENT_SCHEMA_ID not in self.logger.schemas:
            # An EventSchema (the registry takes one as it is): the one way to give it
            # the schema's own draft.
            self.logger.register_event_schema(live_bus_schema())  # type: ignore[arg-type]
        self.logger.add_modifier(schema_id=LIVE_EVENT_SCHEMA_ID, modifier=self._ours_only)
        self.seq = 0
        self._emitting = False

    def publish(self, event: LiveEvent) -> None:
        self.seq += 1
        data: dict[str, Any] = {**event, "seq": self.seq}  # a copy: callers keep theirs
        if self.check:
            validator("live-event").validate(data)
        message: LiveBusMessage = {"type": event["type"],
                                   "event": json_codec.dumps_text(data)}
        self._emitting = True
        try:
            self.logger.emit(schema_id=LIVE_EVENT_SCHEMA_ID, data=dict(message))
        except Exception:  # a bug: its seq is a gap pages see
            log.exception("themisto: live event %s not published", event.get("type"))
        finally:
            self._emitting = False

    def heartbeat(self, every: float) -> None:
        """Say the server is there, and when it will say so again."""
        self.publish({"type": "heartbeat", "seq": UNNUMBERED, "every": every})

    def close(self) -> None:
        self.logger.remove_modifier(schema_id=LIVE_EVENT_SCHEMA_ID, modifier=self._ours_only)

    def _ours_only(self, schema_id: str, data: dict[str, Any]) -> dict[str, Any]:
        if not self._emitting:
            raise PermissionError("themisto's live events are emitted by its server only")
        return data


def live_event(message: dict[str, Any]) -> LiveEvent:
    """The live event a message of the bus under ``LIVE_EVENT_SCHEMA_ID`` carries (what a
    page reads: JupyterLab's ``parseLiveEvent`` does the same)."""
    event: LiveEvent = json.loads(message["event"])
    return event


def live_bus_schema() -> EventSchema:
    """``live-bus.schema.json`` as jupyter_events registers it: checked with the draft it
    is written in (2020-12; jupyter_events assumes draft 7)."""
    from jsonschema import Draft202012Validator

    return EventSchema(schema("live-bus"), validator_class=Draft202012Validator,
                       format_checker=Draft202012Validator.FORMAT_CHECKER)
