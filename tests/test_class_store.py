"""A class at a glance (store/roster.py), on SQLite and PostgreSQL: the running totals each
trajectory keeps as its steps and scores arrive, the roster grouped from them, consent."""

from __future__ import annotations

import pytest
from test_store import apply, start, step

from themisto_ext.store import open_store
from themisto_ext.store.roster import ClassFilter


def timed(tid: str, n: int, ended: str, seconds: float = 0.5, error: bool = False) -> dict:
    s = step(tid, n)
    s.update(ended_at=ended, execution_time=seconds)
    if error:
        s["error"] = {"ename": "NameError", "evalue": "x"}
    return s


def prediction(tid: str, target: int, predictor: str, chrf: float, pid: str,
               scored: bool = True) -> dict:
    return {"id": pid, "trajectory_id": tid, "target_step": target, "task": "output",
            "predictor": predictor, "context": "full",
            "reference": "x" if scored else None, "abstained": False, "error": None,
            "scores": {"exact_match": float(chrf == 1), "rouge_l": chrf, "chrf": chrf}
            if scored else None}


@pytest.fixture
def store(store_url):
    opened = open_store(store_url)
    yield opened
    opened.close()


def test_a_roster_row_totals_a_users_notebook(store):
    apply(store, [start("a1", kernel="ka"),
                  timed("a1", 1, "2026-01-01T10:00:00+00:00", 2.0),
                  timed("a1", 2, "2026-01-01T10:01:00+00:00", error=True)], "j", None,
          user="alice")
    # A later batch: its first step's gap is to the last step stored before it; a pause of
    # an hour counts as ACTIVE_GAP (300 s) and a step read twice counts once.
    apply(store, [timed("a1", 3, "2026-01-01T11:01:00+00:00"),
                  timed("a1", 2, "2026-01-01T10:01:00+00:00", error=True)], "j", None,
          user="alice")
    apply(store, [start("b1", kernel="kb", at="2026-01-02T08:59:00+00:00"),
                  timed("b1", 1, "2026-01-02T09:00:00+00:00")],
          "j", None, user="bob")
    rows = {r["user"]: r for r in store.notebook_rows(ClassFilter())}
    alice = rows["alice"]
    assert (alice["trajectories"], alice["cells"], alice["errors"]) == (1, 3, 1)
    assert alice["active_seconds"] == pytest.approx(2.0 + 60 + 300, abs=0.01)
    assert alice["last_at"] == "2026-01-01T11:01:00+00:00"
    assert alice["notebook_path"] == "nb.ipynb"
    assert rows["bob"]["cells"] == 1
    assert [r["user"] for r in store.notebook_rows(ClassFilter(users=("bob",)))] == ["bob"]
    assert store.notebook_rows(ClassFilter(users=())) == []
    # Activity in a time range: alice's ended on Jan 1, bob's began on Jan 2.
    assert [r["user"] for r in store.notebook_rows(
        ClassFilter(active_after="2026-01-02T00:00:00+00:00"))] == ["bob"]
    assert [r["user"] for r in store.notebook_rows(
        ClassFilter(active_before="2026-01-02T00:00:00+00:00"))] == ["alice"]


def test_scores_are_totalled_once_per_prediction_as_they_are_scored(store):
    apply(store, [start("a1"), timed("a1", 1, "2026-01-01T10:00:00+00:00"),
                  timed("a1", 2, "2026-01-01T10:00:30+00:00")], "j", None, user="alice")
    store.save_prediction(prediction("a1", 1, "hybrid", 0, "p1", scored=False))
    store.save_prediction(prediction("a1", 1, "hybrid", 1.0, "p1"))  # scored: replaces
    store.save_prediction(prediction("a1", 1, "hybrid", 1.0, "p1"))  # saved again
    store.save_prediction(prediction("a1", 2, "hybrid", 0.5, "p2"))
    store.save_prediction(prediction("a1", 2, "copy-previous", 0.25, "p3"))
    [row] = store.notebook_rows(ClassFilter())
    by = {s["predictor"]: s for s in row["scores"]}
    assert by["hybrid"] == {"predictor": "hybrid", "context": "full", "task": "output",
                            "n": 2, "exact_match": 0.5, "chrf": 0.75}
    assert by["copy-previous"]["n"] == 1
    # Deleting the trajectory takes its totals with it.
    assert store.delete_trajectory("a1")
    assert store.notebook_rows(ClassFilter()) == []


def test_consent_is_recorded_per_user(store):
    assert store.consents() == {}
    store.set_consent("alice", False, "2026-01-01T00:00:00+00:00")
    store.set_consent("bob", True, "2026-01-01T00:00:00+00:00")
    store.set_consent("alice", False, "2026-01-02T00:00:00+00:00")
    assert store.consents() == {"alice": False, "bob": True}
    assert store.consents(("alice", "carol")) == {"alice": False}
    assert store.consents(()) == {}


def test_imported_steps_count_in_the_totals(store, tmp_path):
    apply(store, [start("a1"), timed("a1", 1, "2026-01-01T10:00:00+00:00", 1.5),
                  timed("a1", 2, "2026-01-01T10:00:10+00:00", error=True)], "j", None,
          user="alice")
    copy = open_store(f"sqlite:///{tmp_path / 'copy.sqlite3'}")
    try:
        copy.import_trajectory(store.get_trajectory("a1"), [])
        lines = list(store.iter_step_lines("a1"))
        assert copy.import_step_lines("a1", lines[:1]) == 1
        assert copy.import_step_lines("a1", lines) == 1  # resumed: the first is not new
        [row] = copy.notebook_rows(ClassFilter())
        assert (row["cells"], row["errors"]) == (2, 1)
        assert row["active_seconds"] == pytest.approx(1.5 + 10, abs=0.01)  # julianday: ms
    finally:
        copy.close()
