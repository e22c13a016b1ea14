"""The storage interface. SQLite implements it today; a PostgreSQL backend for multi-user
hubs implements the same methods."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from themisto_ext.trajectory import Step


class StoreError(RuntimeError):
    """The store cannot be opened or used (a message a person can act on)."""


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

    def to_json(self) -> dict[str, Any]:
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


@dataclass
class IngestResult:
    """What one ``apply_journal`` call added, for live listeners."""

    new_trajectories: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    started: list[dict[str, Any]] = field(default_factory=list)
    """Cells that began executing (``kind: started`` records): not stored, only passed on."""
    duplicates: int = 0


class TrajectoryStore(Protocol):
    def apply_journal(
        self, records: list[dict[str, Any]], source: str, cursor: tuple[str, int] | None
    ) -> IngestResult:
        """Apply journal records atomically, together with how far the journal was read.

        Idempotent: a record applied twice (two ingesters, a crash before the cursor
        was saved) changes nothing the second time.
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

    def save_prediction(self, prediction: dict[str, Any]) -> bool:
        """Insert or replace a prediction record (JSON object with ``id``, ``trajectory_id``,
        ``target_step``, ``task`` and, once scored, ``scores``)."""
        ...

    def predictions(
        self, trajectory_id: str, since_step: int = 0, target_step: int | None = None,
        unscored: bool = False,
    ) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...
