"""Traces through the CLI (issue 24): `record --trace`, `validate`, `export --format trace`."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from test_cli import themisto

CELLS = ["squares = []\nfor n in range(4):\n    squares.append(n * n)",
         "total = sum(squares)\nprint(total)"]


def write_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)
    return path


def test_record_trace_traces_every_cell_and_exports_them(tmp_path: Path):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    store, out = tmp_path / "s.sqlite3", tmp_path / "t.jsonl"
    r = themisto("record", "--trace", str(notebook), "--out", str(out), store=store)
    assert r.returncode == 0, r.stderr
    r = themisto("validate", str(out))
    assert r.returncode == 0 and "2 steps, valid" in r.stdout, r.stdout
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    first, second = (s["trace"] for s in steps)
    assert first["events"][0] == {"line": 1, "changed": {"squares": "[]"}}
    assert {"line": 3, "changed": {"squares": "[0, 1, 4, 9]"}} in first["events"]
    assert first["hits"] == {"1": 1, "2": 5, "3": 4}
    assert second["events"] == [{"line": 1, "changed": {"total": "14"}},
                                {"line": 2, "changed": {}}]

    traces = tmp_path / "traces.jsonl"
    r = themisto("export", "--all", "--format", "trace", "--out", str(traces), store=store)
    assert r.returncode == 0 and "wrote 2 traced steps" in r.stdout, r.stderr
    records = [json.loads(line) for line in traces.read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2]
    assert records[1]["trace"] == second and records[1]["output"] == "14\n"
    assert records[1]["text"] == ("   1 | total = sum(squares)  # total = 14\n"
                                  "   2 | print(total)")

    # Without --trace, nothing is traced.
    plain = tmp_path / "plain.jsonl"
    r = themisto("record", str(notebook), "--out", str(plain), store=tmp_path / "p.sqlite3")
    assert r.returncode == 0, r.stderr
    assert all("trace" not in json.loads(line) for line in plain.read_text().splitlines())


def test_validate_rejects_a_malformed_trace(tmp_path: Path):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    out = tmp_path / "t.jsonl"
    r = themisto("record", "--trace", str(notebook), "--out", str(out),
                 store=tmp_path / "s.sqlite3")
    assert r.returncode == 0, r.stderr
    good = [json.loads(line) for line in out.read_text().splitlines()]
    broken = {
        "line 0": lambda t: t["events"][0].update(line=0),
        "no hits": lambda t: t.pop("hits"),
        "a repr that is not text": lambda t: t["events"][0]["changed"].update(x=1),
        "an unknown key": lambda t: t.update(extra=True),
        "a line key that is no number": lambda t: t["hits"].update(x=1),
        "an unknown reason": lambda t: t.update(truncated="tired"),
        "more events than runs": lambda t: t["hits"].update({"1": 1}) or
        t["events"].append(dict(t["events"][0])),
    }
    for why, damage in broken.items():
        steps = json.loads(json.dumps(good))
        damage(steps[0]["trace"])
        bad = tmp_path / "bad.jsonl"
        bad.write_text("".join(json.dumps(s) + "\n" for s in steps))
        r = themisto("validate", str(bad))
        assert r.returncode == 1, why
        assert "line 1: trace" in r.stdout, (why, r.stdout)
