"""``themisto`` on bad inputs: arguments refused before anything runs, stores never made or
overwritten by a command that only reads, recordings that lost cells fail loudly."""

from __future__ import annotations

import json
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
