"""What one caller of the hub's Themisto service may do with the store.

The service (``service.py``) holds the database's only login; every call comes from a
user's server (or anyone holding one of that user's JupyterHub tokens) and touches that
user's data only, decided here, on the service's side, whatever the call claims:

* writes: every new trajectory, notebook move and consent is the caller's; a step, end,
  switch or prediction of another user's trajectory is refused and reported
  (``Applied.refused``), never stored and never silently dropped; journal cursors live in
  a namespace of the caller's own;
* reads: the caller's own trajectories, or everyone's for a caller whose token carries
  the read-all scope; another user's trajectory reads as unknown (an id is no proof of
  existence), a list asking for another user's is refused;
* deleting stays the owner's, read-all or not; copying stores in (``themisto migrate``)
  and adopting unowned rows are the database owner's, not a caller's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace

from themisto_ext.errors import StoreForbidden
from themisto_ext.records import NotebookRow, Prediction, Step, StepSummary
from themisto_ext.store.base import (
    Applied,
    NewStep,
    NewTrajectory,
    NotebookMoved,
    Trajectory,
    TrajectoryFilter,
    TrajectoryStore,
    Write,
    trajectory_of,
)
from themisto_ext.store.roster import ClassFilter

PAGE = 2000
"""At most this many steps per read: a caller pages through longer trajectories."""


@dataclass(frozen=True)
class Caller:
    user: str
    read_all: bool = False


class Owners:
    """Trajectory id -> owner, remembered: an owner never changes, so most writes need
    no query to be checked (bounded; a deleted trajectory is forgotten)."""

    def __init__(self, store: TrajectoryStore, size: int = 100_000) -> None:
        self._store = store
        self._size = size
        self._known: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, trajectory_id: str) -> str | None:
        with self._lock:
            owner = self._known.get(trajectory_id)
        if owner is not None:
            return owner
        trajectory = self._store.get_trajectory(trajectory_id)
        if trajectory is None:
            return None
        self.remember(trajectory_id, trajectory.user)
        return trajectory.user

    def remember(self, trajectory_id: str, owner: str) -> None:
        with self._lock:
            self._known[trajectory_id] = owner
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    def forget(self, trajectory_id: str) -> None:
        with self._lock:
            self._known.pop(trajectory_id, None)


class CallerStore:
    """The store's methods for one caller (``wire.METHODS``), each limited as the
    module's docstring says."""

    def __init__(self, store: TrajectoryStore, owners: Owners, caller: Caller) -> None:
        self._store = store
        self._owners = owners
        self.caller = caller
        self._namespace = f"{len(caller.user)}:{caller.user}:"
        """Prefixes the caller's journal cursor keys (length first: no user's names can
        run into another's)."""

    # ------------------------------------------------------------ checks

    def _forbidden(self, what: str) -> StoreForbidden:
        return StoreForbidden(f"{self.caller.user!r} may not {what}")

    def _readable(self, trajectory_id: str) -> bool:
        owner = self._owners.of(trajectory_id)
        return owner is not None and (self.caller.read_all or owner == self.caller.user)

    def _owned(self, trajectory_id: str) -> bool:
        return self._owners.of(trajectory_id) == self.caller.user

    def _own_users(self, requested: str | tuple[str, ...] | None,
                   ) -> str | tuple[str, ...] | None:
        """The owners a read may cover: what it asked, for a read-all caller; else the
        caller's own (asking for anyone else's is refused)."""
        if self.caller.read_all:
            return requested
        users = (requested,) if isinstance(requested, str) else requested
        if users is not None and set(users) - {self.caller.user}:
            raise self._forbidden("read other users' trajectories")
        return users if users is not None else (self.caller.user,)

    # ------------------------------------------------------------ writes

    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        kept: list[Write] = []
        refused: dict[str, str] = {}
        starting: set[str] = set()
        for write in writes:
            if isinstance(write, NewTrajectory):
                write = replace(write, user=self.caller.user)
                starting.add(write.trajectory_id)
            elif isinstance(write, NotebookMoved):
                write = replace(write, user=self.caller.user)
            tid = trajectory_of(write)
            if tid is not None and tid not in starting:
                owner = self._owners.of(tid)
                if owner is not None and owner != self.caller.user:
                    # the kernel's id, where the write names it: its state says why
                    kernel = write.step.get("kernel_id") if isinstance(write, NewStep) else ""
                    refused[tid] = refused.get(tid) or str(kernel or "")
                    continue
            kept.append(write)
        if cursor is not None:
            cursor = (self._namespace + cursor[0], cursor[1])
        applied = self._store.apply(kept, cursor)
        for tid in starting - set(applied.refused):
            self._owners.remember(tid, self.caller.user)
        applied.refused = {**refused, **applied.refused}
        return applied

    def journal_cursors(self, prefix: str = "") -> dict[str, int]:
        found = self._store.journal_cursors(self._namespace + prefix)
        return {key[len(self._namespace):]: offset for key, offset in found.items()}

    def forget_journal(self, journal: str) -> None:
        self._store.forget_journal(self._namespace + journal)

    def delete_trajectory(self, trajectory_id: str) -> bool:
        if not self._owned(trajectory_id):
            return False  # another user's, read-all or not, is not the caller's to delete
        self._owners.forget(trajectory_id)
        return self._store.delete_trajectory(trajectory_id)

    def save_prediction(self, prediction: Prediction) -> bool:
        if not self._owned(str(prediction.get("trajectory_id"))):
            raise self._forbidden("save predictions of another user's trajectory")
        return self._store.save_prediction(prediction)

    def set_consent(self, user: str, consent: bool, at: str) -> None:
        if user != self.caller.user:
            raise self._forbidden("set another user's consent")
        self._store.set_consent(user, consent, at)

    def adopt_unowned(self, user: str) -> int:
        return 0  # a shared store's unowned rows get owners from `themisto migrate`

    def import_trajectory(self, trajectory: Trajectory, events: list[dict[str, str]]) -> bool:
        raise self._forbidden("copy trajectories in: `themisto migrate` runs with the "
                              "database's own login")

    def import_step_lines(self, trajectory_id: str, lines: list[tuple[int, str]]) -> int:
        raise self._forbidden("copy steps in: `themisto migrate` runs with the database's "
                              "own login")

    # ------------------------------------------------------------ reads

    def list_trajectories(self, where: TrajectoryFilter | None = None, limit: int = 100,
                          offset: int = 0) -> list[Trajectory]:
        where = where or TrajectoryFilter()
        where = replace(where, user=self._own_users(where.user))
        return self._store.list_trajectories(where, min(limit, PAGE), offset)

    def count_trajectories(self, where: TrajectoryFilter | None = None) -> int:
        where = where or TrajectoryFilter()
        return self._store.count_trajectories(replace(where, user=self._own_users(where.user)))

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        if not self._readable(trajectory_id):
            return None
        return self._store.get_trajectory(trajectory_id)

    def latest_for_kernel(self, kernel_id: str, user: str | None = None) -> Trajectory | None:
        if not self.caller.read_all:
            user = self.caller.user
        return self._store.latest_for_kernel(kernel_id, user)

    def events(self, trajectory_id: str) -> list[dict[str, str]]:
        return self._store.events(trajectory_id) if self._readable(trajectory_id) else []

    def iter_steps(self, trajectory_id: str, since_step: int = 0,
                   limit: int | None = None) -> Iterator[Step]:
        if not self._readable(trajectory_id):
            return iter(())
        return self._store.iter_steps(trajectory_id, since_step, min(limit or PAGE, PAGE))

    def iter_step_lines(self, trajectory_id: str, since_step: int = 0,
                        limit: int | None = None) -> Iterator[tuple[int, str]]:
        if not self._readable(trajectory_id):
            return iter(())
        return self._store.iter_step_lines(trajectory_id, since_step,
                                           min(limit or PAGE, PAGE))

    def predictions(self, trajectory_id: str, since_step: int = 0,
                    target_step: int | None = None, unscored: bool = False,
                    until_step: int | None = None, slim: bool = False) -> list[Prediction]:
        if not self._readable(trajectory_id):
            return []
        return self._store.predictions(trajectory_id, since_step, target_step, unscored,
                                       until_step, slim)

    def step_summaries(self, trajectory_id: str, since_step: int = 0,
                       limit: int = 500) -> list[StepSummary]:
        if not self._readable(trajectory_id):
            return []
        return self._store.step_summaries(trajectory_id, since_step, min(limit, PAGE))

    def get_prediction(self, prediction_id: str) -> Prediction | None:
        prediction = self._store.get_prediction(prediction_id)
        if prediction is None or not self._readable(str(prediction.get("trajectory_id"))):
            return None
        return prediction

    def notebook_rows(self, where: ClassFilter) -> list[NotebookRow]:
        users = self._own_users(where.users)
        return self._store.notebook_rows(
            replace(where, users=(users,) if isinstance(users, str) else users))

    def consents(self, users: tuple[str, ...] | None = None) -> dict[str, bool]:
        if not self.caller.read_all:
            users = (self.caller.user,) if users is None else users
            if set(users) - {self.caller.user}:
                raise self._forbidden("read other users' consent")
        return self._store.consents(users)
