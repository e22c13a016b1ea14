"""Ingestion with no cliff: unreadable records are skipped one by one, and a journal that
was truncated, replaced or emptied is read again from its start (real files, real SQLite)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from test_store import start, step

from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import WINDOW, JournalWriter, read_from
from themisto_ext.store import SQLiteStore


def stored_steps(store: SQLiteStore, tid: str = "t") -> list[int]:
    return [s["step"] for s in store.iter_steps(tid)]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "themisto_ext.ingest" and r.levelno == logging.WARNING]


def test_a_record_over_the_window_is_skipped_and_later_records_are_ingested(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    journal.append(step("t", 1))
    huge = step("t", 2)
    huge["output"] = "z" * (WINDOW + 1_000_000)  # one cell's outputs over 16 MiB
    journal.append(huge)
    journal.append(step("t", 3))
    with journal.path.open("a") as fh:
        fh.write("{not json\n[1, 2]\n")
    journal.append(step("t", 4))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    with caplog.at_level(logging.WARNING):
        ingestor.poll()
    assert stored_steps(store) == [1, 3, 4]
    assert ingestor.bad_lines == 3
    skipped = warnings_of(caplog)
    assert len(skipped) == 3, skipped  # one warning per record, not one per scan
    assert "over the 16,777,216-byte window" in skipped[0]
    # nothing is read again: neither by the next scan nor after a server restart
    caplog.clear()
    journal.append(step("t", 5))
    with caplog.at_level(logging.WARNING):
        ingestor.poll()
        JournalIngestor(tmp_path / "journal", store).poll()
    assert stored_steps(store) == [1, 3, 4, 5] and warnings_of(caplog) == []


def test_an_oversized_record_being_written_is_waited_for_then_skipped(tmp_path: Path):
    path = tmp_path / "j.jsonl"
    head = json.dumps(start("t")) + "\n"
    path.write_text(head + '{"kind": "step", "output": "' + "y" * 3000)
    offset = len(head)
    chunk = read_from(path, offset, window=1000)
    assert chunk.records == [] and chunk.end_offset == offset and chunk.scanned_to is not None
    with path.open("a") as fh:
        fh.write('"}\n' + json.dumps(step("t", 1)) + "\n")
    chunk = read_from(path, offset, window=1000, scan_from=chunk.scanned_to)
    assert chunk.bad_lines == 1 and "3,0" in chunk.skipped[0].reason
    after = read_from(path, chunk.end_offset, window=1000)
    assert [r["step"] for r in after.records] == [1]


def test_records_of_a_shape_the_store_cannot_take_are_skipped(tmp_path: Path):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    journal.append(step("t", 2**70))  # beyond SQLite's integers
    journal.append({**step("t", 1), "step": "one"})
    journal.append({"kind": "step", "trajectory_id": "t"})
    journal.append({"kind": "step", "trajectory_id": "t", "step": 2, "nested": [[[[]]]]})
    journal.append(step("t", 3))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.poll()
    assert stored_steps(store) == [3] and ingestor.bad_lines == 4


def test_a_truncated_journal_is_read_again_from_its_start(tmp_path: Path):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    for n in (1, 2, 3):
        journal.append(step("t", n))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.poll()
    os.truncate(journal.path, 0)
    journal.append(step("t", 4))  # O_APPEND: the kernel's next line starts the file
    ingestor.poll()
    assert stored_steps(store) == [1, 2, 3, 4]
    # a restarted server finds a journal shorter than its cursor: from the start again
    os.truncate(journal.path, 0)
    journal.append(start("t"))
    journal.append(step("t", 5))
    JournalIngestor(tmp_path / "journal", store).poll()
    assert stored_steps(store) == [1, 2, 3, 4, 5]


def test_a_deleted_journal_begun_again_is_read_from_its_start(tmp_path: Path):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    for n in range(1, 6):
        journal.append(step("t", n))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.poll()
    journal.path.unlink()
    ingestor.poll()  # gone: its cursor is dropped
    assert store.journal_cursors() == {}
    again = JournalWriter(tmp_path / "journal", "k", "t")  # as the kernel begins it again
    again.append(start("t"))
    again.append(step("t", 6))
    ingestor.poll()
    assert stored_steps(store) == [1, 2, 3, 4, 5, 6]


def test_a_journal_replaced_between_two_scans_is_read_again(tmp_path: Path):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    journal.append(step("t", 1))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.poll()
    replacement = tmp_path / "new.jsonl"
    replacement.write_text("".join(json.dumps(r) + "\n" for r in
                                   [start("t")] + [step("t", n) for n in range(2, 40)]))
    os.replace(replacement, journal.path)  # another file, longer than the old offset
    ingestor.poll()
    assert stored_steps(store) == list(range(1, 40))


def test_steps_of_a_deleted_trajectory_start_it_again(tmp_path: Path):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    journal.append(step("t", 1))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.poll()
    store.delete_trajectory("t")
    os.truncate(journal.path, 0)  # what DELETE does to a live kernel's journal
    ingestor.forget(journal.path.name)
    journal.append(step("t", 2))
    ingestor.poll()
    assert stored_steps(store) == [2]
    assert store.get_trajectory("t").kernel_id == "k"
