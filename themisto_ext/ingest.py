"""Reads kernel journals and turns their records into typed writes to the store.

The journal's records (typed, encoded and decoded in ``contract.py``) are interpreted
here and nowhere else: a ``trajectory`` record starts a trajectory, ``step`` adds a step,
``recording`` is a switch, ``end`` ends the trajectory; ``started`` (a cell began) is not
stored but passed on so that the server can predict the running cell's output. A line
that does not decode (an unknown kind, a record of the wrong shape) is skipped with a
warning naming the file, the byte and why. Per journal, how far it has been read is
stored with the writes, atomically.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from themisto_ext.contract import (
    CAPTURE_LEVELS,
    EndRecord,
    JournalRecord,
    RecordingRecord,
    StartedRecord,
    StepRecord,
    TrajectoryRecord,
    captures_state,
    decode_record,
    within_level,
)
from themisto_ext.errors import ThemistoError
from themisto_ext.journal import SUFFIX, Skipped, read_from
from themisto_ext.records import Step
from themisto_ext.store import (
    Applied,
    NewStep,
    NewTrajectory,
    NotebookMoved,
    RecordingSwitched,
    TrajectoryEnded,
    TrajectoryStore,
    Write,
    trajectory_of,
)

log = logging.getLogger("themisto_ext.ingest")


@dataclass
class IngestResult:
    """What one ingestion pass added, for live listeners."""

    new_trajectories: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    started: list[StartedRecord] = field(default_factory=list)
    """Cells that began executing (``kind: started`` records): not stored, only passed on."""
    switches: list[RecordingSwitched] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    """Trajectories whose kernel shut down (their caches can go)."""
    read_bytes: int = 0
    """Journal bytes read by this pass."""
    duplicates: int = 0
    refused: dict[str, str] = field(default_factory=dict)
    """Trajectory id -> kernel id of trajectories the store refused (``Applied.refused``)."""


_LOGGED_PER_JOURNAL = 5
"""Skipped records logged one by one per journal and pass; more are counted in one line."""


def interpret(records: Iterable[JournalRecord], source: str,
              started: set[str] | None = None, user: str = "") -> list[Write]:
    """The store writes that journal records stand for, in order (``started`` records
    stand for none: they are passed on, not stored).

    ``started`` holds the trajectories this journal has started so far; a step of any
    other first starts its trajectory from the step's own fields. That is how a journal
    that lost its head (deleted through the API while the kernel runs, truncated, or
    removed and begun again by the kernel) goes on being recorded. ``user`` owns every
    trajectory started.
    """
    writes: list[Write] = []
    for record in records:
        tid = record.trajectory_id
        if isinstance(record, StepRecord):
            step = record.step
            if started is not None and tid not in started:
                started.add(tid)
                writes.append(NewTrajectory(tid, step["kernel_id"], step.get("notebook_path"),
                                            step["started_at"], source, user))
            writes.append(NewStep(step))
        elif isinstance(record, TrajectoryRecord):
            if started is not None:
                started.add(tid)
            writes.append(NewTrajectory(tid, record.kernel_id, record.notebook_path,
                                        record.started_at, source, user))
        elif isinstance(record, EndRecord):
            writes.append(TrajectoryEnded(tid, record.at, record.reason))
        elif isinstance(record, RecordingRecord):
            writes.append(RecordingSwitched(tid, record.at, record.on))
    return writes


def moved_path(path: str, old: str, new: str) -> str | None:
    """Where ``path`` is after ``old`` (a notebook or a folder) was renamed to ``new``;
    None if the rename did not move it."""
    path = path.strip("/")
    if path == old:
        return new
    if path.startswith(old + "/"):
        return new + path[len(old):]
    return None


RENAMES_KEPT = 1000
"""Renames remembered for kernels that begin recording after their notebook moved."""


def cursor_scope(journal_dir: Path, user: str) -> str:
    """Where a journal's cursor is kept: per user and journal directory, so that servers
    sharing one database never share (nor forget) each other's cursors."""
    return f"{user}@{journal_dir.resolve()}"


_MARK = 32
"""Bytes before a cursor remembered to recognise the file on the next scan."""


def _before(path: Path, offset: int, size: int = _MARK) -> bytes | None:
    """The ``size`` bytes of ``path`` that end at ``offset`` (None when unreadable)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, offset - size))
            return fh.read(min(size, offset))
    except OSError:
        return None


@dataclass
class _Journal:
    """What the ingester knows of one journal file besides its stored cursor."""

    identity: tuple[int, int] | None = None
    """(device, inode) when last read: another file under the same name is a new journal."""
    scanned_to: int | None = None
    started: set[str] = field(default_factory=set)
    mark: bytes | None = None
    """The bytes just before the cursor when it was set: other bytes there now mean the
    file was truncated and written again between two scans."""


class JournalIngestor:
    def __init__(self, journal_dir: Path, store: TrajectoryStore, source: str = "kernel",
                 user: str = "") -> None:
        self.journal_dir = journal_dir
        self.store = store
        self.source = source
        self.user = user
        """The owner of every trajectory this ingestor starts."""
        self.accepting: Callable[[], bool] = lambda: True
        """Whether what the journals hold is stored: False while the user has opted out
        (what a kernel records meanwhile is read past and dropped, never stored)."""
        self.level = CAPTURE_LEVELS[-1]
        """What a stored step may hold (``contract.within_level``): a kernel started with
        other settings, or a journal copied in, stores no more than this server records."""
        self._scope = cursor_scope(journal_dir, user) + "/"
        self._offsets: dict[str, int] | None = None
        self._journals: dict[str, _Journal] = {}
        self.bad_lines = 0
        """Records skipped so far because they could not be read."""
        self.refused: dict[str, str] = {}
        """Trajectory id -> kernel id of trajectories the store refused (another user's):
        their later records are held back too, and reported again each pass they come."""
        self.restarted = 0
        """Journals read again from their start (truncated, replaced, deleted)."""
        self.notebook_exists: Callable[[str], bool] = lambda path: True
        """Whether a notebook path names a file now (the server's contents root)."""
        self._kernel_notebooks: dict[str, str] = {}
        self._renames: deque[tuple[str, str]] = deque(maxlen=RENAMES_KEPT)
        self.windows_per_pass: int | None = None
        """At most this many reads (of up to ``journal.WINDOW`` bytes) per journal and
        ``poll``, None for all there is. The server reads one window per journal per pass,
        so what one pass holds at once stays bounded when a kernel wrote a lot."""

    def _cursors(self) -> dict[str, int]:
        if self._offsets is None:  # read lazily: the store may be unavailable at first
            self._offsets = {key[len(self._scope):]: offset for key, offset
                             in self.store.journal_cursors(self._scope).items()}
        return self._offsets

    def poll(self, only: Path | None = None) -> IngestResult:
        """Ingest whatever the journals gained since the last poll (all, or just ``only``)."""
        total = IngestResult()
        offsets = self._cursors()
        if only is not None:
            paths = [only]
        else:
            try:
                paths = sorted(self.journal_dir.glob("*" + SUFFIX))
            except OSError:
                return total  # cannot be listed now: nothing is known to be gone
            if self.journal_dir.is_dir():
                present = {path.name for path in paths}
                for gone in [key for key in offsets if key not in present]:
                    self.forget(gone)
        for path in paths:
            self._poll_one(path, total)
        return total

    def forget(self, key: str) -> None:
        """Read the journal named ``key`` from its start next time (it is gone or new)."""
        offsets = self._cursors()
        if key in offsets or key in self._journals:
            self.store.forget_journal(self._scope + key)
            self.store.forget_journal(key)  # as a store written before scopes keyed it
            offsets.pop(key, None)
            self._journals.pop(key, None)

    def _poll_one(self, path: Path, total: IngestResult) -> None:
        try:
            info = path.stat()
        except OSError:
            return
        key = path.name
        state = self._journals.setdefault(key, _Journal())
        offset = self._cursors().get(key)
        if offset is None:  # a store written before scopes keyed it by the bare name
            offset = self._cursors()[key] = self.store.journal_cursors(key).get(key, 0)
        identity = (info.st_dev, info.st_ino)
        if info.st_size < offset or state.identity not in (None, identity) or (
                0 < offset < info.st_size and not self._same_bytes(path, offset, state)):
            log.warning("themisto: journal %s was truncated or replaced; reading it from its "
                        "start", path)
            self.restarted += 1
            self.forget(key)
            state = self._journals.setdefault(key, _Journal())
            offset = 0
        state.identity = identity
        windows = 0
        while offset < info.st_size and windows != self.windows_per_pass:
            windows += 1
            chunk = read_from(path, offset, scan_from=state.scanned_to)
            state.scanned_to = chunk.scanned_to
            if chunk.end_offset == offset:
                break  # only an unfinished line so far
            records: list[JournalRecord] = []
            skipped = list(chunk.skipped)
            for raw, at in zip(chunk.records, chunk.offsets, strict=True):
                record = decode_record(raw)
                if isinstance(record, str):
                    skipped.append(Skipped(at, record))
                else:
                    records.append(record)
            self._warn(path, skipped)
            total.read_bytes += chunk.end_offset - offset
            accepting = self.accepting()
            writes = self._placed(interpret(records, self.source, state.started if accepting
                                            else set(state.started), self.user))
            if not accepting:  # dropped; a trajectory begun meanwhile starts at its next step
                writes = []
            if not captures_state(self.level):
                writes = [NewStep(within_level(w.step, self.level))  # type: ignore[arg-type]
                          if isinstance(w, NewStep) else w for w in writes]
            # a trajectory the store refused (another user's id) stays refused, and said
            held = {t for t in map(trajectory_of, writes) if t in self.refused}
            total.refused.update({t: self.refused[t] for t in held})
            writes = [w for w in writes if trajectory_of(w) not in held]
            applied = self._apply(writes, (self._scope + key, chunk.end_offset), path)
            self.refused.update(applied.refused)
            total.ended += [w.trajectory_id for w in writes if isinstance(w, TrajectoryEnded)]
            total.new_trajectories += applied.new_trajectories
            total.steps += applied.steps
            total.switches += applied.switches
            total.started += [r for r in records if isinstance(r, StartedRecord)]
            total.duplicates += applied.duplicates
            total.refused.update(applied.refused)
            offset = self._cursors()[key] = chunk.end_offset
            state.mark = _before(path, offset)

    @staticmethod
    def _same_bytes(path: Path, offset: int, state: _Journal) -> bool:
        """Whether the file still holds, before the cursor, what was read there (after a
        restart, nothing is remembered: a cursor must then at least follow a line break)."""
        if state.mark is None:
            return _before(path, offset, 1) in (b"\n", None)
        return _before(path, offset, len(state.mark)) in (state.mark, None)

    def move_notebook(self, old: str, new: str, kernels: Mapping[str, str]) -> int:
        """A notebook (or folder) was renamed from ``old`` to ``new``: its stored history
        follows it, and so do the trajectories its kernels begin later, restarts included
        (they were launched with the old path and keep saying it). ``kernels``: the id of
        each kernel working on it -> its notebook's new path. Returns the number of
        trajectories moved."""
        self._kernel_notebooks.update(kernels)
        self._renames.append((old, new))
        return self.store.apply([NotebookMoved(old, new, self.user)], None).moved

    def _placed(self, writes: list[Write]) -> list[Write]:
        """New trajectories under their notebook's path now, not at their kernel's launch."""
        if not self._renames:
            return writes
        return [replace(w, notebook_path=self._notebook_now(w.kernel_id, w.notebook_path))
                if isinstance(w, NewTrajectory) else w for w in writes]

    def _notebook_now(self, kernel_id: str, path: str | None) -> str | None:
        known = self._kernel_notebooks.get(kernel_id)
        if known is not None or path is None:
            return known or path
        # A kernel launched just before its notebook was renamed, that began recording
        # after: its old path names no file any more (a new notebook of that name has
        # a kernel of its own, and keeps the name).
        for old, new in self._renames:
            moved = moved_path(path, old, new)
            if moved is not None:
                if self.notebook_exists(path):
                    break
                path = moved
        return path

    def _apply(self, writes: list[Write], cursor: tuple[str, int], path: Path) -> Applied:
        try:
            return self.store.apply(writes, cursor)
        except ThemistoError:
            raise  # the store itself cannot be used: nothing is skipped, retried later
        except Exception as first:
            # A value the store could not take (a bug, not the journal's fault): store the
            # others one by one, so that this record alone is lost, with a warning.
            log.warning("themisto: the store refused records of %s (%s); storing them one by "
                        "one", path, first)
            applied = Applied()
            for write in writes:
                try:
                    one = self.store.apply([write], None)
                except ThemistoError:
                    raise
                except Exception as exc:
                    self._warn(path, [Skipped(cursor[1], f"refused by the store ({exc})")])
                    continue
                applied.new_trajectories += one.new_trajectories
                applied.steps += one.steps
                applied.switches += one.switches
                applied.duplicates += one.duplicates
                applied.refused.update(one.refused)
            self.store.apply([], cursor)
            return applied

    def _warn(self, path: Path, skipped: list[Skipped]) -> None:
        if not skipped:
            return
        self.bad_lines += len(skipped)
        for item in skipped[:_LOGGED_PER_JOURNAL]:
            log.warning("themisto: skipped a journal record of %s at byte %d: %s; reading "
                        "goes on after it", path, item.offset, item.reason)
        if len(skipped) > _LOGGED_PER_JOURNAL:
            log.warning("themisto: skipped %d more unreadable journal records of %s",
                        len(skipped) - _LOGGED_PER_JOURNAL, path)
