from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from test_trajectory_format import make_step

from themisto_ext.ingest import JournalIngestor, interpret
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore, StoreError, TrajectoryFilter
from themisto_ext.store.sqlite import SCHEMA_VERSION


def start(tid: str, kernel: str = "k", at: str = "2026-01-01T00:00:00+00:00") -> dict:
    return {"kind": "trajectory", "trajectory_id": tid, "kernel_id": kernel,
            "notebook_path": "nb.ipynb", "started_at": at}


def apply(store: SQLiteStore, records: list[dict], source: str, cursor):
    return store.apply(interpret(records, source), cursor)


def step(tid: str, n: int) -> dict:
    return {"kind": "step", **make_step(tid, n)}


def test_apply_is_idempotent_and_ordered(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    records = [start("t1"), step("t1", 2), step("t1", 1)]
    first = apply(store, records, "kernel", ("j", 10))
    again = apply(store, records, "kernel", ("j", 5))
    assert first.new_trajectories == ["t1"] and len(first.steps) == 2
    assert again.new_trajectories == [] and again.steps == [] and again.duplicates == 2
    assert store.journal_cursors() == {"j": 10}  # a cursor never moves back
    assert [s["step"] for s in store.iter_steps("t1")] == [1, 2]
    assert store.get_trajectory("t1").steps == 2


def test_restart_ends_previous_trajectory(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    apply(store, [start("old", at="2026-01-01T00:00:00+00:00")], "kernel", None)
    apply(store, [start("new", at="2026-01-01T01:00:00+00:00")], "kernel", None)
    old, new = store.get_trajectory("old"), store.get_trajectory("new")
    assert old.end_reason == "restart" and old.ended_at == new.started_at
    assert new.restart_of == "old"
    assert store.latest_for_kernel("k").id == "new"
    assert store.events("new")[0]["kind"] == "restart"


def test_paging_filters_and_delete(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    apply(store, [start("a", "k1"), start("b", "k2", "2026-02-01T00:00:00+00:00")]
                        + [step("a", n) for n in range(1, 1201)], "kernel", None)
    assert [s["step"] for s in store.iter_steps("a", since_step=1195)] == [1196, 1197, 1198,
                                                                           1199, 1200]
    assert len(list(store.iter_steps("a", limit=700))) == 700
    assert [t.id for t in store.list_trajectories(TrajectoryFilter(kernel_id="k2"))] == ["b"]
    assert [t.id for t in store.list_trajectories(
        TrajectoryFilter(started_after="2026-01-15"))] == ["b"]
    assert [t.id for t in store.list_trajectories(limit=1, offset=1)] == ["b"]
    assert store.delete_trajectory("a") and not store.delete_trajectory("a")
    assert list(store.iter_steps("a")) == []


def test_schema_is_versioned_and_reopens(tmp_path: Path):
    path = tmp_path / "s.sqlite3"
    apply(SQLiteStore(path), [start("t"), step("t", 1)], "kernel", None)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this themisto_ext"):
        SQLiteStore(path)


def test_unopenable_store_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "not-a-db.sqlite3"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the trajectory store"):
        SQLiteStore(bad)


def test_ingestor_reads_whole_lines_and_resumes(tmp_path: Path):
    journal_dir = tmp_path / "journal"
    writer = JournalWriter(journal_dir, "k", "t")
    writer.append(start("t"))
    writer.append(step("t", 1))
    with writer.path.open("a") as fh:
        fh.write('{"kind": "step", "trajectory_id": "t", "st')  # a line still being written
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(journal_dir, store)
    assert len(ingestor.poll().steps) == 1
    with writer.path.open("a") as fh:
        fh.write('ep": 2}\nnot json\n')
    writer.append(step("t", 3))
    result = ingestor.poll()
    assert [s["step"] for s in result.steps] == [3] and ingestor.bad_lines == 2
    # a new ingestor (a restarted server) continues from the stored cursor
    writer.append(step("t", 4))
    assert [s["step"] for s in JournalIngestor(journal_dir, store).poll().steps] == [4]


def test_two_ingesters_at_once_never_duplicate(tmp_path: Path):
    journal_dir = tmp_path / "journal"
    writer = JournalWriter(journal_dir, "k", "t")
    writer.append(start("t"))
    for n in range(1, 501):
        writer.append(step("t", n))
    path = tmp_path / "s.sqlite3"
    SQLiteStore(path)
    results = []

    def ingest() -> None:
        results.append(len(JournalIngestor(journal_dir, SQLiteStore(path)).poll().steps))

    threads = [threading.Thread(target=ingest) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 500
    assert SQLiteStore(path).get_trajectory("t").steps == 500
