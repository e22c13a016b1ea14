"""The live stream's events: one builder per event type, and the in-process bus they travel on.

Every event is built here, in the shape of ``schemas/live-event.schema.json``: the scope
(trajectory, kernel, notebook) that streams filter on, plus only what live consumers read.
Publishers (ingestion in the server, the live prediction scheduler) never assemble event
dicts themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from themisto_ext.records import (
    Context,
    LiveEvent,
    LiveStep,
    PredictingEvent,
    Prediction,
    PredictionEvent,
    RecordingEvent,
    Scope,
    ScoredEvent,
    Step,
    StepEvent,
    Task,
    TrajectoryEvent,
    TrajectoryInfo,
    WritingEvent,
)

log = logging.getLogger("themisto_ext.events")

Listener = Callable[[LiveEvent], None]

LIVE_STEP_FIELDS = tuple(LiveStep.__annotations__)
"""The step fields the stream carries (``LiveStep`` in the schema)."""


def trajectory_event(trajectory: TrajectoryInfo) -> TrajectoryEvent:
    return {"type": "trajectory", "trajectory_id": trajectory["id"],
            "kernel_id": trajectory["kernel_id"], "notebook_path": trajectory["notebook_path"],
            "trajectory": trajectory}


def step_event(step: Step) -> StepEvent:
    live: dict[str, Any] = {name: step.get(name) for name in LIVE_STEP_FIELDS}
    return {"type": "step", "trajectory_id": step["trajectory_id"],
            "kernel_id": step["kernel_id"], "notebook_path": step.get("notebook_path"),
            "step": live}  # type: ignore[typeddict-item]  # the LiveStep fields, just read


def recording_event(kernel_id: str, recording: bool, scope: Scope | None,
                    reason: str | None = None) -> RecordingEvent:
    return {"type": "recording", "kernel_id": kernel_id, "recording": recording,
            "reason": reason, "trajectory_id": scope.trajectory_id if scope else None,
            "notebook_path": scope.notebook_path if scope else None}


def predicting_event(scope: Scope, task: Task, context: Context, predictor: str,
                     target_step: int, cell_id: str | None) -> PredictingEvent:
    return {"type": "predicting", "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "task": task, "context": context, "predictor": predictor,
            "target_step": target_step, "cell_id": cell_id}


def writing_event(scope: Scope, task: Task, context: Context, predictor: str,
                  target_step: int, cell_id: str | None, text: str) -> WritingEvent:
    """A prediction's answer so far, as the model writes it (``text`` read as the whole
    answer will be: ``prompts.postprocess.partial_answer``)."""
    return {"type": "writing", "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "task": task, "context": context, "predictor": predictor,
            "target_step": target_step, "cell_id": cell_id, "text": text}


def prediction_event(scope: Scope, prediction: Prediction) -> PredictionEvent:
    slim: dict[str, Any] = {k: v for k, v in prediction.items() if k not in ("prompt", "raw")}
    return {"type": "prediction", "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "prediction": slim}  # type: ignore[typeddict-item]  # Prediction minus two keys


def scored_event(scope: Scope, prediction: Prediction) -> ScoredEvent:
    return {"type": "scored", "trajectory_id": scope.trajectory_id,
            "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
            "prediction_id": prediction["id"], "task": prediction["task"],
            "target_step": prediction["target_step"],
            "reference": prediction["reference"] or "", "scores": prediction["scores"]}


class EventBus:
    """In-process publish/subscribe: the server's stream handlers subscribe."""

    def __init__(self) -> None:
        self._listeners: dict[Listener, Callable[[], None] | None] = {}

    def subscribe(self, listener: Listener,
                  on_close: Callable[[], None] | None = None) -> Callable[[], None]:
        """Call ``listener`` with every event until the returned function is called;
        ``on_close`` runs when the bus closes (the server stops)."""
        self._listeners[listener] = on_close
        return lambda: self._listeners.pop(listener, None) and None

    def publish(self, event: LiveEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # one broken subscriber must not starve the others
                log.exception("themisto: event listener failed")

    def close(self) -> None:
        for on_close in list(self._listeners.values()):
            if on_close is not None:
                on_close()
        self._listeners.clear()

    @property
    def subscribers(self) -> int:
        return len(self._listeners)
