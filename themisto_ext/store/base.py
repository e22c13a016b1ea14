"""The storage interface. SQLite (``sqlite.py``, one file, one user) and PostgreSQL
(``postgres.py``, one database shared by many Jupyter servers) implement the same methods.

The store stores: it knows trajectories, steps, their events and predictions, not the
journal's record kinds. ``ingest.py`` reads journals and hands the store typed writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from themisto_ext import records
from themisto_ext.errors import StoreError, StoreUnavailable
from themisto_ext.records import (
    NotebookRow,
    Prediction,
    PredictionSummary,
    Step,
    StepSummary,
    code_hash,
)

if TYPE_CHECKING:  # roster.py builds on this module
    from themisto_ext.store.roster import ClassFilter

__all__ = ["StoreError", "StoreUnavailable"]

CHARGED_USER: ContextVar[str | None] = ContextVar("themisto_charged_user", default=None)
"""Whose quota the writes made in this context count against: the hub's Themisto service
sets it to its caller (it writes as the database's owner); engines with quotas
(PostgreSQL) read it. Unset, writes are charged to the session's own role's user."""


@dataclass
class Trajectory:
    id: str
    kernel_id: str
    notebook_path: str | None
    started_at: str
    ended_at: str | None = None
    end_reason: str | None = None
    restart_of: str | None = None
    steps: int = 0
    source: str = "kernel"
    user: str = ""
    """Who ran it: the Jupyter identity of the server that recorded it ('' before owners
    were recorded)."""

    def to_json(self) -> records.Trajectory:
        return {
            "id": self.id, "kernel_id": self.kernel_id, "notebook_path": self.notebook_path,
            "started_at": self.started_at, "ended_at": self.ended_at,
            "end_reason": self.end_reason, "restart_of": self.restart_of, "steps": self.steps,
            "source": self.source, "user": self.user,
        }


@dataclass
class TrajectoryFilter:
    notebook_path: str | None = None
    kernel_id: str | None = None
    user: str | tuple[str, ...] | None = None
    """One owner, or any of several."""
    started_after: str | None = None
    started_before: str | None = None


@dataclass(frozen=True)
class NewTrajectory:
    """A kernel process began: a trajectory of its own (a restart ends the kernel's last)."""

    trajectory_id: str
    kernel_id: str
    notebook_path: str | None
    started_at: str
    source: str
    user: str = ""
    """The owner: a restart links only trajectories of the same kernel id AND user (two
    users' servers may share a database and, by chance or by copy, a kernel id)."""


@dataclass(frozen=True)
class NewStep:
    step: Step


@dataclass(frozen=True)
class TrajectoryEnded:
    trajectory_id: str
    at: str | None
    reason: str


@dataclass(frozen=True)
class RecordingSwitched:
    trajectory_id: str
    at: str
    on: bool


@dataclass(frozen=True)
class NotebookMoved:
    """A notebook, or a folder of notebooks, was renamed: the history of ``user``'s
    trajectories recorded under the old path (or under it, for a folder) follows it."""

    old: str
    new: str
    user: str = ""


Write = NewTrajectory | NewStep | TrajectoryEnded | RecordingSwitched | NotebookMoved
"""One change to the store; ``apply`` takes them in order, atomically."""


def trajectory_of(write: Write) -> str | None:
    """The trajectory ``write`` changes (a notebook's move changes several: None)."""
    if isinstance(write, NewStep):
        return write.step["trajectory_id"]
    return None if isinstance(write, NotebookMoved) else write.trajectory_id


def refused_write(write: Write, refused: Mapping[str, str]) -> bool:
    """Whether ``write`` changes a trajectory whose id was refused (another user's)."""
    return trajectory_of(write) in refused


@dataclass
class Applied:
    """What one ``apply`` changed, for live listeners."""

    new_trajectories: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    switches: list[RecordingSwitched] = field(default_factory=list)
    duplicates: int = 0
    """Steps already stored (a journal read twice): idempotence, not an error."""
    moved: int = 0
    """Trajectories whose notebook path a ``NotebookMoved`` changed."""
    refused: dict[str, str] = field(default_factory=dict)
    """Trajectory id -> kernel id of new trajectories whose id another user's trajectory
    holds: nothing of them is stored, and the kernel's state says so."""


def step_summaries_of(
    steps: list[tuple[int, str]], predictions: list[tuple[int, str]]
) -> list[StepSummary]:
    """Step summaries from the rows both engines read for them: ``(step, JSON array of
    cell_id, execution_time, memory_bytes, error name, code)`` and ``(target step, JSON array of
    id, task, predictor, model, context, scores, error, abstained)``, the latter oldest
    first."""
    summaries: dict[int, StepSummary] = {}
    for step, fields in steps:
        cell_id, seconds, memory, error, code = json.loads(fields)
        summaries[step] = {"step": step, "cell_id": cell_id, "code_hash": code_hash(code or ""),
                           "execution_time": seconds, "memory_bytes": memory, "error": error,
                           "predictions": []}
    for target, fields in predictions:
        summary = summaries.get(target)
        if summary is not None:
            pid, task, predictor, model, context, scores, error, abstained = json.loads(fields)
            brief: PredictionSummary = {"id": pid, "task": task, "predictor": predictor,
                                        "model": model, "context": context, "scores": scores,
                                        "error": error, "abstained": bool(abstained)}
            summary["predictions"].append(brief)
    return list(summaries.values())


WRITES = frozenset({"apply", "forget_journal", "delete_trajectory", "save_prediction",
                    "set_consent", "adopt_unowned", "import_trajectory", "import_step_lines"})
"""The methods of ``TrajectoryStore`` that change the store (the others read): the guard
reopens a store that refused one (``guarded.py``)."""
LAZY = frozenset({"iter_steps", "iter_step_lines"})
"""The methods that read lazily, a page at a time as the caller iterates."""


class TrajectoryStore(Protocol):
    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        """Apply the writes atomically, together with how far their journal was read.

        Idempotent: a write applied twice (two ingesters, a crash before the cursor was
        saved) changes nothing the second time. A step or switch of an unknown (deleted)
        trajectory is dropped, not an error.
        """
        ...

    def journal_cursors(self, prefix: str = "") -> dict[str, int]:
        """How far each journal was read, for the journal keys that start with ``prefix``."""
        ...

    def forget_journal(self, journal: str) -> None:
        """Drop a journal's cursor: it is gone, or a new file now has its name."""
        ...

    def list_trajectories(
        self, where: TrajectoryFilter | None = None, limit: int = 100, offset: int = 0
    ) -> list[Trajectory]: ...

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None: ...

    def latest_for_kernel(self, kernel_id: str, user: str | None = None) -> Trajectory | None:
        """The kernel's newest trajectory (of ``user``'s, when given)."""
        ...

    def count_trajectories(self, where: TrajectoryFilter | None = None) -> int: ...

    def events(self, trajectory_id: str) -> list[dict[str, str]]:
        """Restarts and recording switches of a trajectory, oldest first."""
        ...

    def iter_steps(
        self, trajectory_id: str, since_step: int = 0, limit: int | None = None
    ) -> Iterator[Step]: ...

    def iter_step_lines(
        self, trajectory_id: str, since_step: int = 0, limit: int | None = None
    ) -> Iterator[tuple[int, str]]:
        """``(step, JSON line in the benchmark format)``, for export without re-encoding."""
        ...

    def delete_trajectory(self, trajectory_id: str) -> bool: ...

    def save_prediction(self, prediction: Prediction) -> bool:
        """Insert or replace a prediction record (JSON object with ``id``, ``trajectory_id``,
        ``target_step``, ``task`` and, once scored, ``scores``)."""
        ...

    def predictions(
        self, trajectory_id: str, since_step: int = 0, target_step: int | None = None,
        unscored: bool = False, until_step: int | None = None, slim: bool = False,
    ) -> list[Prediction]:
        """Predictions of target steps after ``since_step`` (up to ``until_step``, or only
        ``target_step``), oldest target first; ``slim`` leaves out prompt and raw answer."""
        ...

    def step_summaries(
        self, trajectory_id: str, since_step: int = 0, limit: int = 500
    ) -> list[StepSummary]:
        """Up to ``limit`` steps after ``since_step`` in brief, each with its predictions in
        brief; read without decoding whole steps or prompts (a notebook's history opens
        from these)."""
        ...

    def get_prediction(self, prediction_id: str) -> Prediction | None: ...

    def notebook_rows(self, where: ClassFilter) -> list[NotebookRow]:
        """Each user's work per notebook, from trajectories' running totals (``roster.py``)."""
        ...

    def consents(self, users: tuple[str, ...] | None = None) -> dict[str, bool]:
        """Users' recorded consent (of ``users``, or of everyone who made a choice)."""
        ...

    def set_consent(self, user: str, consent: bool, at: str) -> None: ...

    def adopt_unowned(self, user: str) -> int:
        """Give trajectories recorded before owners were recorded ('' owner) to ``user``."""
        ...

    def import_trajectory(self, trajectory: Trajectory, events: list[dict[str, str]]) -> bool:
        """Copy a trajectory record as it is (no restart linking), its step count starting at
        0; False (nothing changed) when the id is already stored. For ``themisto migrate``."""
        ...

    def import_step_lines(self, trajectory_id: str, lines: list[tuple[int, str]]) -> int:
        """Copy stored step lines (as ``iter_step_lines`` gives them); returns how many were
        new. Steps already stored are skipped, so a copy can be resumed."""
        ...

    def close(self) -> None: ...


METHODS: tuple[str, ...] = tuple(
    name for name, value in vars(TrajectoryStore).items()
    if callable(value) and not name.startswith("_") and name != "close")
"""The interface's methods (``close`` is each holder's own), read from the interface
itself: the layers over an engine (``layer``) and the hub's wire format take them from
here, so a method is written in the interface and the engines only."""

Layer = TypeVar("Layer", bound=type)


def layer(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
          ) -> Callable[[Layer], Layer]:
    """A class decorator for a layer over a store (the guard, the hub's remote store):
    each method of ``METHODS`` the class does not write itself is ``wrap`` of the
    interface's. The type checker cannot see methods made so; the layer's constructor
    (``guard``, ``open_store``) says once, in a cast, that what it returns is the
    interface, and ``tests/test_architecture.py`` checks that every method is there."""
    def fill(cls: Layer) -> Layer:
        for name in METHODS:
            if name not in vars(cls):
                setattr(cls, name, wrap(getattr(TrajectoryStore, name)))
        return cls
    return fill
