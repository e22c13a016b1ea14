"""A store that may not be usable yet: opened on first use, reopened after it failed, and
saying why it cannot be used instead of failing the server.

The server wraps its store in a ``GuardedStore`` so that it starts and stops whatever
state the store's path is in (a directory it may not write, a read-only file, a file that
is not a store, a disk that is full): every call then raises ``StoreUnavailable`` with the
reason (503 in the API), ``problem`` says the same for status reports, and the reason is
logged once when it appears and once when it goes away, never per call. Journals keep
every step meanwhile; they are ingested once the store can be written again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from themisto_ext.errors import StoreError, StoreUnavailable
from themisto_ext.records import NotebookRowInfo, Prediction, Step, StepSummary
from themisto_ext.store.base import Applied, Trajectory, TrajectoryFilter, TrajectoryStore, Write
from themisto_ext.store.roster import ClassFilter

log = logging.getLogger("themisto_ext.store")

T = TypeVar("T")

RETRY_SECONDS = 5.0
"""How often a store that could not be opened is tried again."""

_RETIRED_KEPT = 2
"""Stores replaced after a failed write that stay open for the readers still using them."""


class GuardedStore:
    def __init__(self, opener: Callable[[], TrajectoryStore], retry: float = RETRY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._opener = opener
        self._retry = retry
        self._clock = clock
        self._store: TrajectoryStore | None = None
        self._next_try = 0.0
        self._reopen_at: float | None = None
        self._retired: list[TrajectoryStore] = []
        self.problem: str | None = None
        """Why the store cannot be used (or written) now; None while it works."""
        try:
            self._open()
        except StoreError:
            pass  # said in ``problem`` and logged; tried again on use

    # ------------------------------------------------------------ health

    def _open(self) -> TrajectoryStore:
        if self._store is not None:
            return self._store
        if self.problem is not None and self._clock() < self._next_try:
            raise StoreUnavailable(self.problem)
        try:
            self._store = self._opener()
        except StoreError as exc:
            self._next_try = self._clock() + self._retry
            self._failed(str(exc))
            raise StoreUnavailable(str(exc)) from exc
        return self._store

    def _failed(self, reason: str) -> None:
        if reason != self.problem:
            log.error("themisto: %s; steps wait in the kernels' journals until it can be "
                      "written", reason)
        self.problem = reason

    def _call(self, work: Callable[[TrajectoryStore], T], write: bool = False) -> T:
        if write and self._reopen_at is not None:
            if self._clock() < self._reopen_at and self.problem is not None:
                raise StoreUnavailable(self.problem)
            # A store that refused a write is opened again before the next try: SQLite
            # keeps a file it opened read-only read-only, whatever happens to the file.
            self._reopen_at = None
            self._retire()
        store = self._open()
        try:
            result = work(store)
        except StoreUnavailable as exc:
            self._failed(str(exc))
            if write:
                self._reopen_at = self._clock() + self._retry
            raise
        if write and self.problem is not None:
            log.warning("themisto: the trajectory store can be written again")
            self.problem = None
        return result

    # ------------------------------------------------------------ TrajectoryStore

    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        return self._call(lambda s: s.apply(writes, cursor), write=True)

    def journal_cursors(self, prefix: str = "") -> dict[str, int]:
        return self._call(lambda s: s.journal_cursors(prefix))

    def forget_journal(self, journal: str) -> None:
        self._call(lambda s: s.forget_journal(journal), write=True)

    def list_trajectories(self, where: TrajectoryFilter | None = None, limit: int = 100,
                          offset: int = 0) -> list[Trajectory]:
        return self._call(lambda s: s.list_trajectories(where, limit, offset))

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        return self._call(lambda s: s.get_trajectory(trajectory_id))

    def latest_for_kernel(self, kernel_id: str, user: str | None = None) -> Trajectory | None:
        return self._call(lambda s: s.latest_for_kernel(kernel_id, user))

    def count_trajectories(self, where: TrajectoryFilter | None = None) -> int:
        return self._call(lambda s: s.count_trajectories(where))

    def events(self, trajectory_id: str) -> list[dict[str, str]]:
        return self._call(lambda s: s.events(trajectory_id))

    def _paged(self, items: Iterator[T]) -> Iterator[T]:
        """A lazy read, guarded to its end: a failure after its first page is reported
        (``problem``, the log) like any other call's, not only raised to the reader. It
        goes on reading the store it began on, even one put aside since."""
        try:
            yield from items
        except StoreUnavailable as exc:
            self._failed(str(exc))
            raise

    def iter_steps(self, trajectory_id: str, since_step: int = 0,
                   limit: int | None = None) -> Iterator[Step]:
        return self._paged(self._call(lambda s: s.iter_steps(trajectory_id, since_step, limit)))

    def iter_step_lines(self, trajectory_id: str, since_step: int = 0,
                        limit: int | None = None) -> Iterator[tuple[int, str]]:
        return self._paged(self._call(
            lambda s: s.iter_step_lines(trajectory_id, since_step, limit)))

    def delete_trajectory(self, trajectory_id: str) -> bool:
        return self._call(lambda s: s.delete_trajectory(trajectory_id), write=True)

    def notebook_rows(self, where: ClassFilter) -> list[NotebookRowInfo]:
        return self._call(lambda s: s.notebook_rows(where))

    def consents(self, users: tuple[str, ...] | None = None) -> dict[str, bool]:
        return self._call(lambda s: s.consents(users))

    def set_consent(self, user: str, consent: bool, at: str) -> None:
        self._call(lambda s: s.set_consent(user, consent, at), write=True)

    def save_prediction(self, prediction: Prediction) -> bool:
        return self._call(lambda s: s.save_prediction(prediction), write=True)

    def predictions(self, trajectory_id: str, since_step: int = 0,
                    target_step: int | None = None, unscored: bool = False,
                    until_step: int | None = None, slim: bool = False) -> list[Prediction]:
        return self._call(lambda s: s.predictions(trajectory_id, since_step, target_step,
                                                  unscored, until_step, slim))

    def step_summaries(self, trajectory_id: str, since_step: int = 0,
                       limit: int = 500) -> list[StepSummary]:
        return self._call(lambda s: s.step_summaries(trajectory_id, since_step, limit))

    def get_prediction(self, prediction_id: str) -> Prediction | None:
        return self._call(lambda s: s.get_prediction(prediction_id))

    def adopt_unowned(self, user: str) -> int:
        return self._call(lambda s: s.adopt_unowned(user), write=True)

    def import_trajectory(self, trajectory: Trajectory, events: list[dict[str, str]]) -> bool:
        return self._call(lambda s: s.import_trajectory(trajectory, events), write=True)

    def import_step_lines(self, trajectory_id: str, lines: list[tuple[int, str]]) -> int:
        return self._call(lambda s: s.import_step_lines(trajectory_id, lines), write=True)

    def _retire(self) -> None:
        """Put the store aside for a new one without closing it: a request on another
        thread may still be reading from it (``iter_steps`` is lazy), and closing it under
        that reader made its next page fail ("Cannot operate on a closed database", a 500).
        The oldest of those put aside is closed once there are more than a few."""
        if self._store is not None:
            self._retired.append(self._store)
            self._store = None
        while len(self._retired) > _RETIRED_KEPT:
            self._retired.pop(0).close()

    def close(self) -> None:
        for store in self._retired:
            store.close()
        self._retired.clear()
        if self._store is not None:
            self._store.close()
            self._store = None
