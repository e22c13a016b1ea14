"""The storage interface. SQLite implements it today; a PostgreSQL backend for multi-user
hubs implements the same methods.

The store stores: it knows trajectories, steps, their events and predictions, not the
journal's record kinds. ``ingest.py`` reads journals and hands the store typed writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from themisto_ext.errors import StoreError, StoreUnavailable
from themisto_ext.records import Prediction, Step, StepSummary, TrajectoryInfo

__all__ = ["StoreError", "StoreUnavailable"]


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

    def to_json(self) -> TrajectoryInfo:
        return {
            "id": self.id, "kernel_id": self.kernel_id, "notebook_path": self.notebook_path,
            "started_at": self.started_at, "ended_at": self.ended_at,
            "end_reason": self.end_reason, "restart_of": self.restart_of, "steps": self.steps,
            "source": self.source,
        }


@dataclass
class TrajectoryFilter:
    notebook_path: str | None = None
    kernel_id: str | None = None
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


Write = NewTrajectory | NewStep | TrajectoryEnded | RecordingSwitched
"""One change to the store; ``apply`` takes them in order, atomically."""


@dataclass
class Applied:
    """What one ``apply`` changed, for live listeners."""

    new_trajectories: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    switches: list[RecordingSwitched] = field(default_factory=list)
    duplicates: int = 0
    """Steps already stored (a journal read twice): idempotence, not an error."""


class TrajectoryStore(Protocol):
    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        """Apply the writes atomically, together with how far their journal was read.

        Idempotent: a write applied twice (two ingesters, a crash before the cursor was
        saved) changes nothing the second time. A step or switch of an unknown (deleted)
        trajectory is dropped, not an error.
        """
        ...

    def journal_cursors(self) -> dict[str, int]: ...

    def list_trajectories(
        self, where: TrajectoryFilter | None = None, limit: int = 100, offset: int = 0
    ) -> list[Trajectory]: ...

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None: ...

    def latest_for_kernel(self, kernel_id: str) -> Trajectory | None: ...

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

    def close(self) -> None: ...
