"""The store suite: every test that is not about one engine's files runs on SQLite AND on a
real PostgreSQL (``store_url`` is parametrized in conftest.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from test_trajectory_format import make_step

from themisto_ext.contract import JournalRecord, decode_record
from themisto_ext.ingest import JournalIngestor, interpret
from themisto_ext.journal import JournalWriter
from themisto_ext.records import code_hash
from themisto_ext.store import (
    NotebookMoved,
    SQLiteStore,
    StoreError,
    Trajectory,
    TrajectoryFilter,
    TrajectoryStore,
    Write,
    open_store,
)
from themisto_ext.store.schema import SCHEMA_VERSION


def start(tid: str, kernel: str = "k", at: str = "2026-01-01T00:00:00+00:00") -> dict:
    return {"kind": "trajectory", "trajectory_id": tid, "kernel_id": kernel,
            "notebook_path": "nb.ipynb", "started_at": at}


def decoded(records: Iterable[dict]) -> list[JournalRecord]:
    """Journal lines as ingestion reads them: each must decode."""
    out = []
    for raw in records:
        record = decode_record(raw)
        assert not isinstance(record, str), record
        out.append(record)
    return out


def interpret_lines(records: Iterable[dict], *args, **kwargs) -> list[Write]:
    """``interpret`` of journal lines written as dicts."""
    return interpret(decoded(records), *args, **kwargs)


def apply(store: TrajectoryStore, records: list[dict], source: str, cursor, user: str = ""):
    return store.apply(interpret_lines(records, source, user=user), cursor)


def step(tid: str, n: int) -> dict:
    return {"kind": "step", **make_step(tid, n)}


@pytest.fixture
def opened(store_url: str) -> Iterator[Callable[[], TrajectoryStore]]:
    """Open the test's store (again): a second server, a restarted one."""
    stores: list[TrajectoryStore] = []

    def open_() -> TrajectoryStore:
        stores.append(open_store(store_url))
        return stores[-1]

    yield open_
    for store in stores:
        store.close()


@pytest.fixture
def store(opened) -> TrajectoryStore:
    return opened()


def test_apply_is_idempotent_and_ordered(store):
    records = [start("t1"), step("t1", 2), step("t1", 1)]
    first = apply(store, records, "kernel", ("j", 10))
    again = apply(store, records, "kernel", ("j", 5))
    assert first.new_trajectories == ["t1"] and len(first.steps) == 2
    assert again.new_trajectories == [] and again.steps == [] and again.duplicates == 2
    assert store.journal_cursors() == {"j": 10}  # a cursor never moves back
    assert [s["step"] for s in store.iter_steps("t1")] == [1, 2]
    assert store.get_trajectory("t1").steps == 2


def test_a_step_twice_in_one_batch_is_stored_once(store):
    result = apply(store, [start("t"), step("t", 1), step("t", 1), step("t", 2)], "kernel", None)
    assert [s["step"] for s in result.steps] == [1, 2] and result.duplicates == 1
    assert store.get_trajectory("t").steps == 2


def test_steps_of_an_unknown_trajectory_are_dropped(store):
    result = apply(store, [step("ghost", 1), {"kind": "recording", "trajectory_id": "ghost",
                                              "at": "x", "on": False}], "kernel", ("j", 3))
    assert result.steps == [] and result.switches == []
    assert store.journal_cursors() == {"j": 3}


def test_restart_ends_previous_trajectory(store):
    apply(store, [start("old", at="2026-01-01T00:00:00+00:00")], "kernel", None)
    apply(store, [start("new", at="2026-01-01T01:00:00+00:00")], "kernel", None)
    old, new = store.get_trajectory("old"), store.get_trajectory("new")
    assert old.end_reason == "restart" and old.ended_at == new.started_at
    assert new.restart_of == "old"
    assert store.latest_for_kernel("k").id == "new"
    assert store.events("new")[0]["kind"] == "restart"


def test_restart_links_only_the_same_users_kernel(store):
    """Two users' servers share the database; their kernels may share an id."""
    apply(store, [start("alice-1", at="2026-01-01T00:00:00+00:00")], "kernel", None, "alice")
    apply(store, [start("bob-1", at="2026-01-01T01:00:00+00:00")], "kernel", None, "bob")
    alice, bob = store.get_trajectory("alice-1"), store.get_trajectory("bob-1")
    assert bob.restart_of is None and alice.ended_at is None
    assert (alice.user, bob.user) == ("alice", "bob")
    assert bob.to_json()["user"] == "bob"
    assert store.latest_for_kernel("k", user="alice").id == "alice-1"
    assert store.latest_for_kernel("k", user="carol") is None


def test_paging_filters_and_delete(store):
    apply(store, [start("a", "k1"), start("b", "k2", "2026-02-01T00:00:00+00:00")]
          + [step("a", n) for n in range(1, 1201)], "kernel", None, "alice")
    apply(store, [start("c", "k3", "2026-03-01T00:00:00+00:00")], "kernel", None, "bob")
    assert [s["step"] for s in store.iter_steps("a", since_step=1195)] == [1196, 1197, 1198,
                                                                           1199, 1200]
    assert len(list(store.iter_steps("a", limit=700))) == 700
    assert [n for n, _ in store.iter_step_lines("a", since_step=1999)] == []
    assert [t.id for t in store.list_trajectories(TrajectoryFilter(kernel_id="k2"))] == ["b"]
    assert [t.id for t in store.list_trajectories(
        TrajectoryFilter(started_after="2026-01-15"))] == ["b", "c"]
    assert [t.id for t in store.list_trajectories(limit=1, offset=1)] == ["b"]
    assert [t.id for t in store.list_trajectories(TrajectoryFilter(user="bob"))] == ["c"]
    assert store.count_trajectories(TrajectoryFilter(user="alice")) == 2
    assert store.count_trajectories(TrajectoryFilter(user=("bob", "carol"))) == 1
    assert store.delete_trajectory("a") and not store.delete_trajectory("a")
    assert list(store.iter_steps("a")) == []


def test_switches_and_end_are_events(store):
    apply(store, [start("t"), {"kind": "recording", "trajectory_id": "t", "at": "a1",
                               "on": False},
                  {"kind": "end", "trajectory_id": "t", "at": "a2", "reason": "shutdown"}],
          "kernel", None)
    assert store.events("t") == [{"at": "a1", "kind": "recording", "detail": "off"}]
    assert store.get_trajectory("t").end_reason == "shutdown"


def test_predictions_are_saved_replaced_and_listed(store):
    apply(store, [start("t"), step("t", 1)], "kernel", None)
    base = {"trajectory_id": "t", "task": "output", "reference": None, "scores": None}
    assert store.save_prediction({**base, "id": "p2", "target_step": 2})
    assert store.save_prediction({**base, "id": "p1", "target_step": 1})
    assert store.save_prediction({**base, "id": "p3", "target_step": 2})
    assert not store.save_prediction({**base, "id": "px", "trajectory_id": "gone",
                                      "target_step": 1})
    assert [p["id"] for p in store.predictions("t")] == ["p1", "p2", "p3"]
    assert store.save_prediction({**base, "id": "p2", "target_step": 2, "reference": "1",
                                  "scores": {"em": 1}})
    assert [p["id"] for p in store.predictions("t", unscored=True)] == ["p1", "p3"]
    # a replaced record goes last among its step's (SQLite's REPLACE; PostgreSQL the same)
    assert [p["id"] for p in store.predictions("t", since_step=1, target_step=2)] == ["p3",
                                                                                       "p2"]
    assert store.get_prediction("p2")["reference"] == "1"
    assert store.get_prediction("nope") is None
    store.delete_trajectory("t")
    assert store.get_prediction("p1") is None


def test_history_in_brief_slim_and_bounded_predictions(store):
    failed = {**step("t", 2), "cell_id": "c2", "execution_time": 0.5, "memory_bytes": 7,
              "error": {"ename": "KeyError", "evalue": "'x'", "traceback": []}}
    apply(store, [start("t"), step("t", 1), failed, step("t", 3)], "kernel", None)
    base = {"trajectory_id": "t", "task": "output", "predictor": "baseline", "context": "full",
            "reference": None, "scores": None, "error": None,
            "prompt": {"system": "s", "user": "u"}, "raw": "r"}
    # What answered travels in brief: a hybrid's copy is shown as a reference.
    store.save_prediction({**base, "id": "p2", "target_step": 2,
                           "model": "hybrid:copy-previous", "scores": {"exact_match": 1.0}})
    store.save_prediction({**base, "id": "m2", "target_step": 2, "task": "next-cell",
                           "error": {"type": "PredictionSuperseded", "message": "late"}})
    # an abstention travels too (a record made before the field existed reads false)
    store.save_prediction({**base, "id": "a2", "target_step": 2, "model": "hybrid:m",
                           "abstained": True})
    store.save_prediction({**base, "id": "p3", "target_step": 3})
    brief = store.step_summaries("t", since_step=1, limit=1)
    assert brief == [{"step": 2, "cell_id": "c2", "code_hash": code_hash(failed["code"]),
                      "execution_time": 0.5, "memory_bytes": 7,
                      "error": "KeyError", "predictions": [
                          {"id": "p2", "task": "output", "predictor": "baseline",
                           "model": "hybrid:copy-previous", "context": "full",
                           "scores": {"exact_match": 1.0}, "error": None, "abstained": False},
                          {"id": "m2", "task": "next-cell", "predictor": "baseline",
                           "model": None, "context": "full", "scores": None,
                           "error": {"type": "PredictionSuperseded", "message": "late"},
                           "abstained": False},
                          {"id": "a2", "task": "output", "predictor": "baseline",
                           "model": "hybrid:m", "context": "full", "scores": None,
                           "error": None, "abstained": True}]}]
    assert [s["step"] for s in store.step_summaries("t")] == [1, 2, 3]
    assert store.step_summaries("t", since_step=3) == []
    slim = store.predictions("t", until_step=2, slim=True)
    assert [p["id"] for p in slim] == ["p2", "m2", "a2"]
    assert all("prompt" not in p and "raw" not in p for p in slim)
    assert store.predictions("t", since_step=2)[0]["prompt"] == {"system": "s", "user": "u"}


def test_a_forgotten_journal_is_read_from_its_start(store):
    apply(store, [start("t"), step("t", 1)], "kernel", ("k--t.jsonl", 500))
    assert store.journal_cursors() == {"k--t.jsonl": 500}
    store.forget_journal("k--t.jsonl")
    assert store.journal_cursors() == {}
    apply(store, [step("t", 2)], "kernel", ("k--t.jsonl", 120))  # a shorter file, read again
    assert store.journal_cursors() == {"k--t.jsonl": 120}


def test_a_renamed_notebook_or_folder_takes_its_history_along(store):
    def started(tid: str, path: str, user: str = "ann") -> None:
        record = {**start(tid, kernel=tid), "notebook_path": path}
        apply(store, [record], "kernel", None, user=user)

    started("a", "Untitled.ipynb")
    started("b", "Untitled.ipynb", user="bob")  # another user's notebook of that name
    started("c", "work/x.ipynb")
    started("d", "work/sub/y.ipynb")
    started("e", "workshop/z.ipynb")  # shares a prefix, not the folder
    started("f", "100%_done/w.ipynb")  # LIKE's wildcards are ordinary characters here
    started("g", "100X_done/w.ipynb")

    def paths() -> dict[str, str | None]:
        return {t.id: t.notebook_path for t in store.list_trajectories(limit=100)}

    move = store.apply
    assert move([NotebookMoved("Untitled.ipynb", "analysis.ipynb", "ann")], None).moved == 1
    assert move([NotebookMoved("work", "done", "ann")], None).moved == 2
    assert move([NotebookMoved("100%_done/", "percent", "ann")], None).moved == 1
    assert move([NotebookMoved("missing.ipynb", "other.ipynb", "ann")], None).moved == 0
    assert paths() == {"a": "analysis.ipynb", "b": "Untitled.ipynb", "c": "done/x.ipynb",
                       "d": "done/sub/y.ipynb", "e": "workshop/z.ipynb",
                       "f": "percent/w.ipynb", "g": "100X_done/w.ipynb"}


def test_import_copies_records_exactly_and_resumes(store):
    record = Trajectory("t", "k", "nb.ipynb", "2026-01-01", "2026-01-02", "restart", "t0",
                        steps=99, source="kernel", user="alice")
    events = [{"at": "2026-01-01", "kind": "restart", "detail": "t0"}]
    assert store.import_trajectory(record, events)
    assert not store.import_trajectory(record, events)  # resumed: unchanged
    lines = [(n, f'{{"step":{n}}}') for n in range(1, 11)]
    assert store.import_step_lines("t", lines[:6]) == 6
    assert store.import_step_lines("t", lines) == 4
    got = store.get_trajectory("t")
    assert got == Trajectory("t", "k", "nb.ipynb", "2026-01-01", "2026-01-02", "restart",
                             "t0", steps=10, source="kernel", user="alice")
    assert store.events("t") == events
    assert list(store.iter_step_lines("t", since_step=8)) == lines[8:]


def test_unowned_trajectories_are_adopted(store):
    apply(store, [start("old")], "kernel", None)
    apply(store, [start("mine", "k2")], "kernel", None, "alice")
    assert store.adopt_unowned("bob") == 1
    assert {t.id: t.user for t in store.list_trajectories()} == {"old": "bob", "mine": "alice"}


def test_a_kernel_that_records_after_its_notebook_moved_follows_it(tmp_path: Path, opened):
    """The kernel was launched for Untitled.ipynb, the notebook renamed before the kernel
    recorded anything (and before its session was known): its trajectory is stored under
    the new name, unless a new notebook took the old one meanwhile."""
    journal_dir = tmp_path / "journal"
    files = {"analysis.ipynb"}
    ingestor = JournalIngestor(journal_dir, opened(), user="ann")
    ingestor.notebook_exists = files.__contains__
    assert ingestor.move_notebook("Untitled.ipynb", "analysis.ipynb", {}) == 0

    def record(tid: str, kernel: str) -> None:
        writer = JournalWriter(journal_dir, kernel, tid)
        writer.append({**start(tid, kernel), "notebook_path": "Untitled.ipynb"})
        writer.append(step(tid, 1))
        ingestor.poll()

    record("late", "k1")
    files.add("Untitled.ipynb")  # a new notebook of the old name, with its own kernel
    record("new", "k2")
    # A kernel known to work on the moved notebook follows it whatever the files say.
    ingestor.move_notebook("analysis.ipynb", "final.ipynb", {"k1": "final.ipynb"})
    record("restarted", "k1")
    assert {t.id: t.notebook_path for t in ingestor.store.list_trajectories()} == \
        {"late": "final.ipynb", "new": "Untitled.ipynb", "restarted": "final.ipynb"}


def test_ingestor_reads_whole_lines_and_resumes(tmp_path: Path, opened):
    journal_dir = tmp_path / "journal"
    writer = JournalWriter(journal_dir, "k", "t")
    writer.append(start("t"))
    writer.append(step("t", 1))
    with writer.path.open("a") as fh:
        fh.write('{"kind": "step", "trajectory_id": "t", "st')  # a line still being written
    store = opened()
    ingestor = JournalIngestor(journal_dir, store, user="alice")
    assert len(ingestor.poll().steps) == 1
    with writer.path.open("a") as fh:
        fh.write('ep": 2}\nnot json\n')
    writer.append(step("t", 3))
    result = ingestor.poll()
    assert [s["step"] for s in result.steps] == [3] and ingestor.bad_lines == 2
    # a new ingestor (a restarted server) continues from the stored cursor
    writer.append(step("t", 4))
    assert [s["step"] for s in JournalIngestor(journal_dir, opened(), user="alice")
            .poll().steps] == [4]
    assert store.get_trajectory("t").user == "alice"


def test_cursors_are_per_server(tmp_path: Path, opened):
    """Two servers (users) whose journals have the same name keep separate cursors."""
    for user in ("alice", "bob"):
        writer = JournalWriter(tmp_path / user / "journal", "k", f"t-{user}")
        writer.append(start(f"t-{user}"))
        writer.append(step(f"t-{user}", 1))
    store = opened()
    for user in ("alice", "bob"):
        assert len(JournalIngestor(tmp_path / user / "journal", store, user=user)
                   .poll().steps) == 1
    keys = sorted(store.journal_cursors())
    assert len(keys) == 2 and keys[0].startswith("alice@") and keys[1].startswith("bob@")


def test_legacy_bare_cursor_is_honoured(tmp_path: Path, opened):
    """A store written before cursors were scoped keys them by the journal's file name."""
    writer = JournalWriter(tmp_path / "journal", "k", "t")
    writer.append(start("t"))
    writer.append(step("t", 1))
    store = opened()
    apply(store, [start("t"), step("t", 1)], "kernel", (writer.path.name,
                                                       writer.path.stat().st_size))
    writer.append(step("t", 2))
    result = JournalIngestor(tmp_path / "journal", store).poll()
    assert [s["step"] for s in result.steps] == [2] and result.duplicates == 0


# ---------------------------------------------------------------- engine-specific files


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


def test_sqlite_store_from_before_owners_migrates(tmp_path: Path):
    """A version-2 file (no owners) opens: its trajectories get the '' owner."""
    from themisto_ext.store.schema import MIGRATIONS

    path = tmp_path / "v2.sqlite3"
    db = sqlite3.connect(path)
    for migration in MIGRATIONS[:2]:
        for statement in migration.statements("sqlite"):
            db.execute(statement)
    db.execute("INSERT INTO trajectories (id, kernel_id, started_at) VALUES ('t', 'k', 'x')")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    assert store.get_trajectory("t").user == ""
    assert store.adopt_unowned("me") == 1 and store.get_trajectory("t").user == "me"


def test_postgres_schema_is_versioned_and_reopens(pg_cluster):
    import psycopg

    url = pg_cluster.create_database()
    store = open_store(url)
    apply(store, [start("t"), step("t", 1)], "kernel", None)
    assert store.schema_version == SCHEMA_VERSION
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        compression = conn.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = "
                                   "'steps'::regclass AND attname = 'data'").fetchone()[0]
        assert compression == "l"  # lz4 (Debian's PostgreSQL 15 is built with it)
        conn.execute("UPDATE themisto_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer than this themisto_ext"):
        open_store(url)


def test_unopenable_store_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "not-a-db.sqlite3"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the trajectory store"):
        SQLiteStore(bad)


def test_unreachable_postgres_is_a_clear_error_without_password(pg_cluster):
    from pg import free_port

    url = f"postgresql://someone:hunter2@127.0.0.1:{free_port()}/db"
    with pytest.raises(StoreError, match="cannot open the trajectory store") as raised:
        open_store(url)
    assert "hunter2" not in str(raised.value) and "someone@127.0.0.1" in str(raised.value)


def test_wrong_postgres_password_is_a_clear_error(pg_cluster, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "wrong-password")
    with pytest.raises(StoreError, match="password authentication failed") as raised:
        open_store(pg_cluster.url())
    assert "wrong-password" not in str(raised.value)


def test_nul_characters_are_stored_and_read_on_both_engines(store):
    """A cell may print a NUL and a kernel's record may carry one: PostgreSQL's text and
    jsonb hold none, and one such record used to fail its journal's every transaction.
    There it is stored as U+FFFD; the text ``\\u0000`` a user wrote stays as written."""
    from themisto_ext.store.postgres import NUL_STAND_IN

    record = step("t1", 1)
    record["output"], record["code"] = "a\x00b \\u0000 \\\x00", "print('\\x00')\x00"
    head = start("t1")
    head["notebook_path"] = "n\x00b.ipynb"
    applied = apply(store, [head, record, step("t1", 2)], "kernel", ("j", 10))
    assert len(applied.steps) == 2
    nul = "\x00" if isinstance(store, SQLiteStore) else NUL_STAND_IN
    stored = next(iter(store.iter_steps("t1")))
    assert (stored["output"], stored["code"]) == \
        (f"a{nul}b \\u0000 \\{nul}", f"print('\\x00'){nul}")
    assert store.get_trajectory("t1").notebook_path == f"n{nul}b.ipynb"  # type: ignore[union-attr]
    assert [s["step"] for s in store.step_summaries("t1")] == [1, 2]
    assert store.list_trajectories(TrajectoryFilter())[0].steps == 2


def test_store_errors_name_no_connection_string(pg_cluster):
    """A store error reaches API error bodies and the log the user reads: no URL in it."""
    store_url = pg_cluster.create_database()
    from psycopg import errors as pg_errors

    from themisto_ext.store.postgres import _store_error
    from themisto_ext.store.url import parse_store_url

    error = _store_error(parse_store_url(store_url), pg_errors.DataError("bad input"))
    assert "bad input" in str(error) and "postgresql://" not in str(error)
    assert store_url.rsplit("/", 1)[-1] not in str(error)
