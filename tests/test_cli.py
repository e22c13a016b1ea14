"""``themisto`` on real notebooks, as a shell user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, own_notebook, real_notebooks

from themisto_ext.replay import record_notebook
from themisto_ext.store import SQLiteStore
from themisto_ext.trajectory.text import flatten, plain_text, strip_ansi


def themisto(*args: str, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "themisto_ext.cli"]
    if store is not None:
        cmd += ["--store", str(store)]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=600)


def jupyter_view(outputs: list[dict]) -> str:
    """What Jupyter shows for a cell's saved outputs, flattened the way steps are."""
    items = []
    for o in outputs:
        if o["output_type"] == "stream":
            items.append({"output_type": "stream", "name": o["name"],
                          "text": strip_ansi(o["text"])})
        elif o["output_type"] == "error":
            items.append({"output_type": "error", "text": strip_ansi("\n".join(o["traceback"]))})
        else:
            items.append({"output_type": o["output_type"], "text": plain_text(o["data"])})
    merged: list[dict] = []
    for item in items:  # Jupyter shows consecutive chunks of one stream as one block
        if merged and item["output_type"] == "stream" == merged[-1]["output_type"] \
                and item["name"] == merged[-1]["name"]:
            merged[-1]["text"] += item["text"]
        else:
            merged.append(dict(item))
    return flatten(merged)


@pytest.mark.parametrize("notebook", real_notebooks(), ids=lambda p: p.stem)
def test_record_real_notebook_matches_jupyter(notebook: Path, tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    result = record_notebook(notebook, store, tmp_path / "journal", timeout=120)
    steps = list(store.iter_steps(result.trajectory_ids[0]))
    code_cells = [c for c in result.notebook.cells if c.cell_type == "code" and c.source.strip()]
    assert len(steps) == len(code_cells) == result.steps
    for step, cell in zip(steps, code_cells, strict=True):
        assert step["code"] == cell.source
        assert step["output"] == jupyter_view(cell.outputs), f"cell {step['step']}"
        raised = any(o["output_type"] == "error" for o in cell.outputs)
        assert (step["error"] is not None) == raised
        if raised:
            error = [o for o in cell.outputs if o["output_type"] == "error"][-1]
            assert step["error"]["ename"] == error["ename"]
        assert step["execution_time"] > 0
        assert step["memory_bytes"] > 0
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))


def test_recorded_types_and_sizes(tmp_path: Path):
    notebook = own_notebook("pandas-objects")
    store = SQLiteStore(tmp_path / "s.sqlite3")
    result = record_notebook(notebook, store, tmp_path / "journal", timeout=120)
    last = list(store.iter_steps(result.trajectory_ids[0]))[-1]["runtime_variables"]
    types = {name: v["type"] for name, v in last.items()}
    assert "DataFrame" in types.values() and "Index" in types.values()
    for v in last.values():
        assert v["size"] is None or v["size"] > 0


def test_cli_record_list_export_validate(tmp_path: Path):
    store = tmp_path / "store.sqlite3"
    notebook = own_notebook("errors")
    out = tmp_path / "t.jsonl"
    r = themisto("record", str(notebook), "--out", str(out), store=store)
    assert r.returncode == 0, r.stderr
    assert "recorded 9 steps from 9 code cells" in r.stdout and "(6 raised)" in r.stdout
    r = themisto("validate", str(out))
    assert r.returncode == 0 and "9 steps, valid" in r.stdout
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(1 for s in steps if s["error"]) == 6

    r = themisto("list", store=store)
    assert r.returncode == 0 and notebook.name in r.stdout and " 9 " in r.stdout
    tid = steps[0]["trajectory_id"]
    r = themisto("export", tid[:8], "--out", "-", store=store)
    assert r.returncode == 0 and r.stdout.count("\n") == 9
    r = themisto("export", "--all", "--out", str(tmp_path / "all.jsonl"), store=store)
    assert r.returncode == 0 and "wrote 9 steps of 1 trajectories" in r.stdout
    r = themisto("list", "--json", store=store)
    assert json.loads(r.stdout.splitlines()[0])["steps"] == 9


def test_notebook_metadata_can_turn_recording_off(tmp_path: Path):
    nb = tmp_path / "off.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {"themisto": {"recording": False}},
                              "nbformat": 4, "nbformat_minor": 5}))
    r = themisto("record", str(nb), store=tmp_path / "s.sqlite3")
    assert r.returncode == 1 and "recording is off in the notebook's metadata" in r.stderr


@pytest.mark.parametrize("args,message", [
    (["record", "/nonexistent.ipynb"], "no such file"),
    (["record", "{bad}"], "not a valid notebook"),
    (["validate", "/nonexistent.jsonl"], "no such file"),
    (["export", "nope", "--out", "-"], "no trajectory 'nope'"),
    (["export", "--out", "-"], "give trajectory ids or --all"),
])
def test_errors_are_one_line(tmp_path: Path, args: list[str], message: str):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{ this is not json")
    args = [str(bad) if a == "{bad}" else a for a in args]
    SQLiteStore(tmp_path / "s.sqlite3").close()  # reading commands never create a store
    r = themisto(*args, store=tmp_path / "s.sqlite3")
    assert r.returncode == 1
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unreadable_store_and_bad_flag(tmp_path: Path):
    bad = tmp_path / "store.sqlite3"
    bad.write_bytes(b"garbage" * 1000)
    r = themisto("list", store=bad)
    assert r.returncode == 1 and "cannot open the trajectory store" in r.stderr
    assert "Traceback" not in r.stderr
    r = themisto("list", "--frobnicate")
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr


def test_validate_reports_line_and_field(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"step": 1}\n')
    r = themisto("validate", str(path))
    assert r.returncode == 1
    assert "line 1: <step>: 'format_version' is a required property" in r.stdout


def test_secrets_are_in_no_file_the_project_writes(tmp_path: Path):
    secret_value = "correct-horse-battery-staple"
    api_key = "sk-" + "Q" * 40
    nb = tmp_path / "secrets.ipynb"
    cells = [
        f"db_password = '{secret_value}'",
        f"client_config = {{'key': '{api_key}'}}\nprint(client_config)",
        "print('connecting with', db_password)",
    ]
    nb.write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                   "execution_count": None} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    store = tmp_path / "data" / "store.sqlite3"
    out = tmp_path / "export.jsonl"
    r = themisto("record", str(nb), "--out", str(out), store=store)
    assert r.returncode == 0, r.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != nb]
    assert any(p.suffix == ".sqlite3" for p in written) and out in written
    for path in written:
        data = path.read_bytes()
        assert secret_value.encode() not in data, path
        assert api_key.encode() not in data, path
    for stream in (r.stdout, r.stderr):
        assert secret_value not in stream and api_key not in stream
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    assert steps[2]["output"] == "connecting with <redacted>\n"


def test_store_may_follow_the_command_name(tmp_path: Path):
    """Issue 25, item 9: `themisto record … --store X` exited 2 (the option was the main
    parser's only); the commands that use a store take it after their name too."""
    import nbformat

    notebook = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]),
                   notebook)
    store, other = tmp_path / "after.sqlite3", tmp_path / "before.sqlite3"
    r = themisto("record", str(notebook), "--store", str(store))
    assert r.returncode == 0, r.stderr
    assert store.is_file() and not other.exists()
    listed = themisto("list", "--json", "--store", str(store))
    assert listed.returncode == 0 and json.loads(listed.stdout)["steps"] == 1
    exported = themisto("export", "--all", "--out", "-", "--store", str(store))
    assert exported.returncode == 0 and json.loads(exported.stdout)["code"] == "1 + 1"
    # each exported step says how it was recorded (issue 25, item 8: sample --source live)
    assert json.loads(exported.stdout)["source"] == "record"
    out = tmp_path / "t.jsonl"
    assert themisto("export", "--all", "--out", str(out), "--store", str(store)).returncode == 0
    assert themisto("validate", str(out)).returncode == 0
    # before the command name it works as before
    assert json.loads(themisto("list", "--json", store=store).stdout)["steps"] == 1
