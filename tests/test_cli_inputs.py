"""``themisto`` on bad inputs: arguments refused before anything runs, stores never made or
overwritten by a command that only reads, recordings that lost cells fail loudly."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from test_cli import themisto
from test_store import apply, start, step

from themisto_ext.store import SQLiteStore


@pytest.mark.parametrize("args,fragment", [
    (["record", "nb.ipynb", "--timeout", "-5"], "argument --timeout: must be more than 0"),
    (["record", "nb.ipynb", "--timeout", "nan"], "must be a finite number"),
    (["record", "nb.ipynb", "--timeout", "soon"], "must be a number"),
    (["import-june", "x.csv", "--out", "o.jsonl", "--timeout", "0"], "must be more than 0"),
    (["sample", "t.jsonl", "--task", "output", "--out", "b.jsonl", "--n", "0"], "at least 1"),
    (["bench", "b.jsonl", "--concurrency", "-1"], "at least 1"),
    (["bench", "b.jsonl", "--budget", "1e3"], "must be an integer"),
    (["report", "results", "--resamples", "0"], "at least 1"),
    (["prompt", "t.jsonl", "--step", "0", "--task", "output", "--context", "full"],
     "at least 1"),
    (["predict", "t.jsonl", "--step", "1", "--task", "output", "--context", "full",
      "--predictor", "baseline", "--timeout", "-1"], "must be more than 0"),
    (["list", "--frobnicate"], "unrecognized arguments"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str):
    r = themisto(*args, store=tmp_path / "s.sqlite3")
    assert r.returncode == 2, r.stderr
    assert fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing was made


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["export", "--all",
                                                                     "--out", "-"]])
def test_reading_commands_never_create_a_store(tmp_path: Path, command: list[str]):
    store = tmp_path / "nonexistent" / "dir" / "s.sqlite3"
    r = themisto(*command, store=store)
    assert r.returncode == 1 and "no trajectory store at" in r.stderr
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize("content", [b"", b'{"step": 1}\n', b"SQLite format 3\x00" + b"\0" * 200])
@pytest.mark.parametrize("command", [["list"], ["export", "--all", "--out", "-"]])
def test_a_file_that_is_not_a_store_is_never_overwritten(tmp_path: Path, content: bytes,
                                                         command: list[str]):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    before = path.stat()
    r = themisto(*command, store=path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "not a trajectory store" in r.stderr or "cannot open" in r.stderr, r.stderr
    assert path.read_bytes() == content and path.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl"]


def test_record_never_writes_into_a_file_that_is_not_a_store(tmp_path: Path):
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 5}))
    other = tmp_path / "other.db"  # someone else's SQLite database
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE mine (x)")
    before = other.read_bytes()
    for target in (other, tmp_path / "empty.sqlite3"):
        if target.name.startswith("empty"):
            target.write_bytes(b"")
        r = themisto("record", str(notebook), store=target)
        assert r.returncode == 1 and "not a trajectory store" in r.stderr, r.stderr
    assert other.read_bytes() == before
    assert (tmp_path / "empty.sqlite3").read_bytes() == b""


def test_reading_commands_read_an_existing_store(tmp_path: Path):
    path = tmp_path / "s.sqlite3"
    apply(SQLiteStore(path), [start("t1"), step("t1", 1)], "kernel", None)
    r = themisto("list", store=path)
    assert r.returncode == 0 and "t1" in r.stdout
    r = themisto("export", "t1", "--out", "-", store=path)
    assert r.returncode == 0 and json.loads(r.stdout)["trajectory_id"] == "t1"


def test_record_that_keeps_fewer_steps_than_cells_fails_with_the_reason(tmp_path: Path):
    cells = ["a = 1", "b = 2", "%themisto off", "c = 3", "d = 4"]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                   "execution_count": None} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    out = tmp_path / "t.jsonl"
    r = themisto("record", str(notebook), "--out", str(out), store=tmp_path / "s.sqlite3")
    assert r.returncode == 1
    assert "of the 5 cells that ran" in r.stderr and "switched off" in r.stderr, r.stderr
    assert out.exists()  # what was recorded is still written


def test_validate_reports_a_line_too_long_to_read_and_goes_on(tmp_path: Path):
    from test_trajectory_format import make_step

    from themisto_ext.trajectory import file_problems

    path = tmp_path / "t.jsonl"
    with path.open("w") as fh:
        fh.write(json.dumps(make_step("t", 1)) + "\n")
        fh.write(json.dumps(make_step("t", 2, output="x" * 3000)) + "\n")
        fh.write(json.dumps(make_step("t", 3)) + "\n")
    import themisto_ext.trajectory.jsonl as jsonl

    count, problems = file_problems(path)
    assert (count, problems) == (3, [])
    lines = list(jsonl.iter_jsonl(path, max_line=2000))
    assert [line.problem is None for line in lines] == [True, False, True]
    assert "longer than the 2,000 bytes read" in lines[1].problem


def _store_with_steps(path: Path) -> bytes:
    store = SQLiteStore(path)
    apply(store, [start("t1"), step("t1", 1), step("t1", 2)], "kernel", None)
    # closed before reading: a connection closed later (when collected) checkpoints its
    # WAL into the file, which would change the bytes under the test
    store.close()
    return path.read_bytes()


@pytest.mark.parametrize("spelling", ["same", "symlink", "hardlink", "dotted"])
def test_export_never_writes_over_its_own_store(tmp_path: Path, spelling: str):
    store = tmp_path / "s.sqlite3"
    before = _store_with_steps(store)
    out = {"same": store, "symlink": tmp_path / "link.jsonl",
           "hardlink": tmp_path / "hard.jsonl", "dotted": tmp_path / "." / "s.sqlite3"}[spelling]
    if spelling == "symlink":
        out.symlink_to(store)
    elif spelling == "hardlink":
        os.link(store, out)
    for force in ([], ["--force"]):  # --force never makes the store an output
        r = themisto("export", "t1", "--out", str(out), *force, store=store)
        assert r.returncode == 1 and "is the trajectory store of this command" in r.stderr, \
            r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert store.read_bytes() == before
    assert themisto("list", store=store).returncode == 0


def test_record_never_writes_over_its_notebook_or_its_store(tmp_path: Path):
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": "a = 1", "metadata": {}, "outputs": [],
                   "execution_count": None}], "metadata": {}, "nbformat": 4,
        "nbformat_minor": 5}))
    before = notebook.read_bytes()
    store = tmp_path / "s.sqlite3"
    for out in (notebook, store):
        r = themisto("record", str(notebook), "--out", str(out), "--force", store=store)
        assert r.returncode == 1, r.stderr
        assert "is an input of this command" in r.stderr or \
            "is the trajectory store of this command" in r.stderr, r.stderr
    assert notebook.read_bytes() == before
    assert not store.exists()  # refused before anything ran


def test_an_existing_file_of_another_kind_is_replaced_only_with_force(tmp_path: Path):
    store = tmp_path / "s.sqlite3"
    _store_with_steps(store)
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    older = tmp_path / "older.jsonl"
    older.write_text('{"step": 9}\n')
    r = themisto("export", "t1", "--out", str(notes), store=store)
    assert r.returncode == 1 and "pass --force to replace it" in r.stderr, r.stderr
    assert notes.read_text() == "# my notes\n"
    assert themisto("export", "t1", "--out", str(older), store=store).returncode == 0
    assert json.loads(older.read_text().splitlines()[0])["step"] == 1  # an older export
    r = themisto("export", "t1", "--out", str(notes), "--force", store=store)
    assert r.returncode == 0 and json.loads(notes.read_text().splitlines()[0])["step"] == 1
    trajectory = tmp_path / "t.jsonl"
    trajectory.write_text(older.read_text())
    r = themisto("sample", str(trajectory), "--task", "output", "--out", str(trajectory))
    assert r.returncode == 1 and "is an input of this command" in r.stderr, r.stderr
    r = themisto("stats", str(trajectory), "--json", str(trajectory))
    assert r.returncode == 1 and "is an input of this command" in r.stderr, r.stderr
    assert trajectory.read_text() == older.read_text()


@pytest.mark.parametrize("command", [["list"], ["export", "--all", "--out", "-"],
                                     ["record", "nb.ipynb"]])
def test_a_store_that_is_a_fifo_is_refused_at_once(tmp_path: Path, command: list[str]):
    fifo = tmp_path / "store"
    os.mkfifo(fifo)
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                   "nbformat_minor": 5}))
    command = [str(tmp_path / c) if c.endswith(".ipynb") else c for c in command]
    r = themisto(*command, store=fifo)  # the helper's timeout would fail a hang
    assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr
