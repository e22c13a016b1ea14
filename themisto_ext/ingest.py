"""Reads kernel journals and turns their records into typed writes to the store.

The journal's record kinds (``journal.py``) are interpreted here and nowhere else: a
``trajectory`` record starts a trajectory, ``step`` adds a step, ``recording`` is a switch,
``end`` ends the trajectory; ``started`` (a cell began) is not stored but passed on so
that the server can predict the running cell's output. Per journal, how far it has been
read is stored with the writes, atomically.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from themisto_ext.journal import journal_files, read_from
from themisto_ext.records import Step
from themisto_ext.store import (
    NewStep,
    NewTrajectory,
    RecordingSwitched,
    TrajectoryEnded,
    TrajectoryStore,
    Write,
)
from themisto_ext.trajectory import step_schema

log = logging.getLogger("themisto_ext.ingest")
_STEP_FIELDS = frozenset(step_schema()["required"])


@dataclass
class IngestResult:
    """What one ingestion pass added, for live listeners."""

    new_trajectories: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    started: list[dict[str, Any]] = field(default_factory=list)
    """Cells that began executing (``kind: started`` records): not stored, only passed on."""
    switches: list[RecordingSwitched] = field(default_factory=list)
    duplicates: int = 0


def _well_formed(record: dict[str, Any]) -> bool:
    """A cheap structural check (full schema validation would cap ingestion throughput)."""
    if not isinstance(record.get("trajectory_id"), str):
        return False
    if record.get("kind") == "step":
        return record.keys() >= _STEP_FIELDS and isinstance(record["step"], int)
    if record.get("kind") == "started":
        return isinstance(record.get("step"), int) and isinstance(record.get("code"), str)
    return True


def interpret(records: list[dict[str, Any]], source: str, user: str = "") -> list[Write]:
    """The store writes that journal records stand for, in order (unknown kinds skipped)."""
    writes: list[Write] = []
    for record in records:
        kind, tid = record.get("kind"), record["trajectory_id"]
        if kind == "step":
            step: Step = {k: v for k, v in record.items() if k != "kind"}  # type: ignore[assignment]
            writes.append(NewStep(step))
        elif kind == "trajectory":
            writes.append(NewTrajectory(tid, str(record.get("kernel_id", "unknown")),
                                        record.get("notebook_path"),
                                        str(record.get("started_at", "")), source, user))
        elif kind == "end":
            writes.append(TrajectoryEnded(tid, record.get("at"),
                                          str(record.get("reason", "shutdown"))))
        elif kind == "recording":
            writes.append(RecordingSwitched(tid, str(record.get("at", "")),
                                            bool(record.get("on"))))
    return writes


def cursor_scope(journal_dir: Path, user: str) -> str:
    """Where a journal's cursor is kept: per user and journal directory, so that servers
    sharing one database never share a cursor (their journal names are random anyway)."""
    return f"{user}@{journal_dir.resolve()}"


class JournalIngestor:
    def __init__(self, journal_dir: Path, store: TrajectoryStore, source: str = "kernel",
                 user: str = "") -> None:
        self.journal_dir = journal_dir
        self.store = store
        self.source = source
        self.user = user
        """The owner of every trajectory this ingestor starts."""
        self._scope = cursor_scope(journal_dir, user) + "/"
        self._offsets = {key[len(self._scope):]: offset for key, offset
                         in store.journal_cursors(self._scope).items()}
        self.bad_lines = 0

    def poll(self, only: Path | None = None) -> IngestResult:
        """Ingest whatever the journals gained since the last poll (all, or just ``only``)."""
        total = IngestResult()
        paths = [only] if only is not None else list(journal_files(self.journal_dir))
        for path in paths:
            try:
                size = path.stat().st_size
            except OSError:
                continue
            key = path.name
            offset = self._offsets.get(key)
            if offset is None:  # a store written before scopes keyed by the bare name
                offset = self._offsets[key] = self.store.journal_cursors(key).get(key, 0)
            if size <= offset:
                continue
            while offset < size:
                chunk = read_from(path, offset)
                if chunk.end_offset == offset:
                    break  # only an unfinished line so far
                records = [r for r in chunk.records if _well_formed(r)]
                bad = chunk.bad_lines + len(chunk.records) - len(records)
                if bad:
                    self.bad_lines += bad
                    log.warning("themisto: skipped %d malformed journal line(s) in %s", bad, path)
                applied = self.store.apply(interpret(records, self.source, self.user),
                                           (self._scope + key, chunk.end_offset))
                total.new_trajectories += applied.new_trajectories
                total.steps += applied.steps
                total.switches += applied.switches
                total.started += [r for r in records if r.get("kind") == "started"]
                total.duplicates += applied.duplicates
                offset = self._offsets[key] = chunk.end_offset
        return total
