"""Moves journal records into the store, remembering per journal how far it has read."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from themisto_ext.journal import journal_files, read_from
from themisto_ext.store import IngestResult, TrajectoryStore
from themisto_ext.trajectory import step_schema

log = logging.getLogger("themisto_ext.ingest")
_STEP_FIELDS = frozenset(step_schema()["required"])


def _well_formed(record: dict[str, Any]) -> bool:
    """A cheap structural check (full schema validation would cap ingestion throughput)."""
    if not isinstance(record.get("trajectory_id"), str):
        return False
    if record.get("kind") == "step":
        return record.keys() >= _STEP_FIELDS and isinstance(record["step"], int)
    if record.get("kind") == "started":
        return isinstance(record.get("step"), int) and isinstance(record.get("code"), str)
    return True


class JournalIngestor:
    def __init__(self, journal_dir: Path, store: TrajectoryStore, source: str = "kernel") -> None:
        self.journal_dir = journal_dir
        self.store = store
        self.source = source
        self._offsets = store.journal_cursors()
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
            offset = self._offsets.get(key, 0)
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
                result = self.store.apply_journal(records, self.source,
                                                  (key, chunk.end_offset))
                total.new_trajectories += result.new_trajectories
                total.steps += result.steps
                total.started += [r for r in records if r.get("kind") == "started"]
                total.duplicates += result.duplicates
                offset = self._offsets[key] = chunk.end_offset
        return total
