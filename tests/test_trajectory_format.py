from __future__ import annotations

import json
from pathlib import Path

import pytest

from themisto_ext.trajectory import (
    TrajectoryFormatError,
    file_problems,
    read_steps,
    step_problems,
    write_steps,
)


def make_step(trajectory: str = "t1", step: int = 1, **changes) -> dict:
    base = {
        "format_version": 1, "trajectory_id": trajectory, "kernel_id": "k", "step": step,
        "cell_id": None, "notebook_path": "a.ipynb",
        "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
        "code": "x = 1", "output": "", "outputs": [], "execution_time": 0.01,
        "memory_bytes": 1000, "runtime_variables": {"x": {"type": "int", "size": 28,
                                                          "size_exact": True, "repr": "1"}},
        "hash_index": "0123456789abcdef0123456789abcdef", "error": None,
    }
    base.update(changes)
    return base


def write(path: Path, lines: list) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_valid_step_has_no_problems():
    assert step_problems(make_step()) == []


@pytest.mark.parametrize("field,value,fragment", [
    ("step", 0, "less than the minimum"),
    ("code", None, "is not of type 'string'"),
    ("hash_index", "XYZ", "does not match"),
    ("error", {"ename": "E"}, "is not valid under any of the given schemas"),
    ("execution_time", -1, "less than the minimum"),
])
def test_bad_fields_are_named(field, value, fragment):
    problems = step_problems(make_step(**{field: value}), line=7)
    assert problems and problems[0].field == field and problems[0].line == 7
    assert fragment in problems[0].message
    assert str(problems[0]).startswith(f"line 7: {field}: ")


def test_missing_field_is_reported():
    step = make_step()
    del step["runtime_variables"]
    assert "'runtime_variables' is a required property" in str(step_problems(step)[0])


def test_file_rules(tmp_path: Path):
    path = write(tmp_path / "t.jsonl", [
        make_step("a", 1), make_step("a", 2), "{not json", make_step("b", 1),
        make_step("b", 1), make_step("a", 3),
    ])
    count, problems = file_problems(path)
    assert count == 5
    messages = [str(p) for p in problems]
    assert messages[0].startswith("line 3: <step>: not valid JSON")
    assert "line 5: step: step 1 follows step 1" in messages[1]
    assert "line 6: trajectory_id: steps of trajectory 'a' are not contiguous" in messages[2]
    with pytest.raises(TrajectoryFormatError, match="line 3"):
        read_steps(path)


def test_round_trip(tmp_path: Path):
    steps = [make_step("a", 1, code="print('é')"), make_step("a", 2)]
    path = tmp_path / "r.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        assert write_steps(steps, fh) == 2
    assert read_steps(path) == steps
    assert "é" in path.read_text(encoding="utf-8")


def test_not_utf8(tmp_path: Path):
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n")
    _, problems = file_problems(path)
    assert "not UTF-8" in problems[0].message
