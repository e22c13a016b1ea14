"""``themisto import-june``: JuNE execution logs to trajectories, bad rows, --replay."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from themisto_ext.cli.main import main
from themisto_ext.evaluation.june import COLUMNS, EMPTY_STATE_HASH, read_june, trajectory_id
from themisto_ext.trajectory import file_problems, read_steps

T0 = "2024-03-01 10:00:"


def row(second: float, kernel: str, event: str, cell: str = "", source: str = "",
        output: str = "", cell_type: str = "code", notebook: str = "nb.ipynb") -> list[str]:
    values = {"action_id": "0", "time": f"{T0}{second:06.3f}", "session_id": f"s-{kernel}",
              "kernel_id": kernel, "notebook_name": notebook, "event": event,
              "cell_index": cell, "cell_num": "0", "cell_type": cell_type,
              "cell_source": source, "cell_output": output, "user_id": "u1"}
    return [values[c] for c in COLUMNS]


def write_csv(path: Path, rows: list[list[str]], header: tuple[str, ...] = COLUMNS) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_interleaved_kernels_restarts_and_pairing(tmp_path):
    log = write_csv(tmp_path / "log.csv", [
        row(0.0, "A", "execute", "c1", "import math"),
        row(0.5, "B", "execute", "d1", "print('b')"),
        row(1.0, "A", "finished_execute", "c1", "import math", ""),
        row(1.2, "A", "execute", "c2", "math.pi"),
        row(1.5, "B", "finished_execute", "d1", "print('b')", "b\n"),
        row(2.0, "A", "finished_execute", "c2", "math.pi", "3.141592653589793"),
        row(2.5, "A", "save_notebook"),
        row(3.0, "A", "kernel_restarting"),
        row(4.0, "A", "execute", "c2", "math.pi"),
        row(4.25, "A", "finished_execute", "c2", "math.pi", "NameError: name 'math' ..."),
        row(4.5, "A", "error", "c2", "math.pi", "NameError: name 'math' is not defined"),
        row(5.0, "B", "execute", "d2", "# notes", cell_type="markdown"),
    ])
    result = read_june(log)
    assert not result.bad
    assert result.rows == 12
    assert [(t[0]["kernel_id"], len(t)) for t in result.trajectories] == \
        [("A", 2), ("B", 1), ("A", 1)]
    first, b, second = result.trajectories
    assert [s["code"] for s in first] == ["import math", "math.pi"]
    assert first[1]["output"] == "3.141592653589793"
    assert first[1]["execution_time"] == pytest.approx(0.8)
    assert first[1]["started_at"] == "2024-03-01T10:00:01.200000+00:00"
    assert [s["step"] for s in first] == [1, 2]
    assert b[0]["output"] == "b\n" and b[0]["kernel_id"] == "B"
    # the restart started a new trajectory of the same kernel
    assert first[0]["trajectory_id"] == trajectory_id("A", 0)
    assert second[0]["trajectory_id"] == trajectory_id("A", 1) != first[0]["trajectory_id"]
    assert second[0]["step"] == 1
    assert second[0]["error"]["ename"] == "NameError"
    for s in first + b + second:
        assert s["runtime_variables"] == {} and s["hash_index"] == EMPTY_STATE_HASH
        assert s["memory_bytes"] is None
    assert result.ignored == {"save_notebook": 1, "non-code cell executions": 1}


def test_cli_output_is_a_valid_trajectory_file(tmp_path, capsys):
    log = write_csv(tmp_path / "log.csv", [
        row(0, "A", "execute", "c1", "x = 1"), row(1, "A", "finished_execute", "c1"),
        row(2, "B", "execute", "c1", "y = 2"), row(3, "A", "execute", "c2", "x"),
        row(4, "A", "finished_execute", "c2", "x", "1"), row(5, "B", "finished_execute", "c1"),
    ])
    out = tmp_path / "traj.jsonl"
    assert main(["import-june", str(log), "--out", str(out)]) == 0
    count, problems = file_problems(out)
    assert (count, problems) == (3, [])
    steps = read_steps(out)
    assert [(s["kernel_id"], s["step"], s["code"]) for s in steps] == \
        [("A", 1, "x = 1"), ("A", 2, "x"), ("B", 1, "y = 2")]
    assert "6 rows: 3 steps in 2 trajectories; 0 bad rows skipped" in capsys.readouterr().out


def test_bad_rows_are_reported_with_line_numbers_and_skipped(tmp_path, capsys):
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)                                              # line 1
    writer.writerow(row(0, "A", "execute", "c1", "for i in range(2):\n    print(i)"))  # 2-3
    writer.writerow(row(1, "A", "finished_execute", "c1", "", "0\n1\n"))  # 4-6
    writer.writerow(row(2, "A", "teleport", "c1"))                        # 7: unknown event
    bad_time = row(3, "A", "execute", "c2", "x")
    bad_time[COLUMNS.index("time")] = "yesterday"
    writer.writerow(bad_time)                                             # 8: bad time
    writer.writerow(row(4, "A", "execute", "c3", "y")[:5])                # 9: too short
    writer.writerow(row(5, "A", "finished_execute", "c9", "", "?"))       # 10: no execute
    no_kernel = row(6, "A", "execute", "c4", "z")
    no_kernel[COLUMNS.index("kernel_id")] = ""
    writer.writerow(no_kernel)                                            # 11: empty kernel
    writer.writerow([*row(7, "A", "execute", "c5", "w"), "surplus"])      # 12: extra field
    writer.writerow(row(8, "A", "execute", "c6", "print('last')"))        # 13: never ends
    log = tmp_path / "log.csv"
    log.write_text(buffer.getvalue(), encoding="utf-8")

    result = read_june(log)
    assert [(b.line, b.message.split(" ")[0]) for b in result.bad] == [
        (7, "unknown"), (8, "unparseable"), (9, "missing"), (10, "finished_execute"),
        (11, "empty"), (12, "1")]
    assert result.bad[2].message.startswith("missing columns event, cell_index, ")
    assert [s["code"] for t in result.trajectories for s in t] == \
        ["for i in range(2):\n    print(i)", "print('last')"]
    assert result.trajectories[0][0]["output"] == "0\n1\n"
    assert any(n.startswith("line 13: ") and "never finished" in n for n in result.notes)

    assert main(["import-june", str(log), "--out", str(tmp_path / "t.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "skipped line 7: unknown event 'teleport'" in captured.err
    assert "skipped line 8: unparseable time 'yesterday'" in captured.err
    assert "9 rows: 2 steps in 1 trajectory; 6 bad rows skipped" in captured.out


def test_error_rows_before_or_after_the_finish_and_nbformat_outputs(tmp_path):
    outputs = json.dumps([
        {"output_type": "stream", "name": "stdout", "text": ["about to fail\n"]},
        {"output_type": "error", "ename": "KeyError", "evalue": "'k'",
         "traceback": ["\x1b[0;31mKeyError\x1b[0m: 'k'"]},
    ])
    log = write_csv(tmp_path / "log.csv", [
        row(0, "A", "execute", "c1", "d['k']"),
        row(1, "A", "error", "c1", "d['k']", "KeyError: 'k'"),            # before the finish
        row(2, "A", "finished_execute", "c1", "d['k']", ""),
        row(3, "A", "execute", "c2", "1/0"),
        row(4, "A", "finished_execute", "c2", "1/0", "ZeroDivisionError: division by zero"),
        row(5, "A", "error", "c2", "1/0", ""),                             # after the finish
        row(6, "A", "execute", "c3", "g()"),
        row(7, "A", "finished_execute", "c3", "g()", outputs),             # typed outputs
        row(8, "A", "execute", "c4", "h()"),
        row(9, "A", "error", "c4", "h()", "RuntimeError: never finished"),  # error only
    ])
    result = read_june(log)
    assert not result.bad and not result.notes
    s1, s2, s3, s4 = result.trajectories[0]
    assert s1["error"]["ename"] == "KeyError" and s1["output"] == "KeyError: 'k'"
    assert s2["error"] == {"ename": "ZeroDivisionError", "evalue": "division by zero",
                           "traceback": "ZeroDivisionError: division by zero"}
    assert s3["error"]["ename"] == "KeyError"
    assert s3["output"] == "about to fail\nKeyError: 'k'"  # ANSI codes gone
    assert [o["output_type"] for o in s3["outputs"]] == ["stream", "error"]
    assert s4["error"]["ename"] == "RuntimeError" and s4["execution_time"] == 1.0


def test_rows_are_taken_in_time_order(tmp_path):
    log = write_csv(tmp_path / "log.csv", [
        row(3, "A", "execute", "c2", "second"), row(4, "A", "finished_execute", "c2", "", "2"),
        row(1, "A", "execute", "c1", "first"), row(2, "A", "finished_execute", "c1", "", "1"),
    ])
    steps = read_june(log).trajectories[0]
    assert [(s["code"], s["output"]) for s in steps] == [("first", "1"), ("second", "2")]


def test_epoch_times_and_missing_header_columns(tmp_path, capsys):
    log = write_csv(tmp_path / "log.csv", [row(0, "A", "execute", "c1", "x")])
    text = log.read_text().replace(f"{T0}00.000", "1709287200000")  # milliseconds
    log.write_text(text)
    step = read_june(log).trajectories[0][0]
    assert step["started_at"] == "2024-03-01T10:00:00.000000+00:00"

    bad = write_csv(tmp_path / "bad.csv", [], header=COLUMNS[:-2])
    assert main(["import-june", str(bad), "--out", str(tmp_path / "t.jsonl")]) == 1
    err = capsys.readouterr().err.strip()
    assert "missing columns cell_output, user_id" in err and len(err.splitlines()) == 1


def test_replay_gives_real_outputs_and_state(tmp_path, capsys):
    log = write_csv(tmp_path / "log.csv", [
        row(0, "K", "execute", "c1", "x = 20"),
        row(1, "K", "finished_execute", "c1"),
        row(2, "K", "execute", "c2", "print(x + 1)"),
        row(3, "K", "finished_execute", "c2", "", "(logged output)"),
        row(4, "K", "kernel_restarting"),
        row(5, "K", "execute", "c2", "print(x + 1)"),
        row(6, "K", "finished_execute", "c2", "", "NameError"),
    ])
    out = tmp_path / "traj.jsonl"
    assert main(["import-june", str(log), "--out", str(out), "--replay",
                 "--timeout", "60"]) == 0
    assert file_problems(out) == (3, [])
    steps = read_steps(out)
    first = [s for s in steps if s["trajectory_id"] == trajectory_id("K", 0)]
    second = [s for s in steps if s["trajectory_id"] == trajectory_id("K", 1)]
    assert [s["code"] for s in first] == ["x = 20", "print(x + 1)"]
    assert first[1]["output"] == "21\n"                  # replayed, not the logged text
    assert first[1]["runtime_variables"]["x"]["repr"] == "20"
    assert first[1]["hash_index"] != EMPTY_STATE_HASH
    assert first[1]["memory_bytes"] > 0
    assert all(s["kernel_id"] == "K" and s["notebook_path"] == "nb.ipynb" for s in steps)
    assert [s["cell_id"] for s in first] == ["c1", "c2"]
    # a fresh kernel after the restart: x is gone, as it was for the user
    assert second[0]["error"]["ename"] == "NameError"
    assert second[0]["runtime_variables"] == {}
    assert "replaying: 2/2 trajectories" in capsys.readouterr().err


@pytest.mark.parametrize("end", ["\r\n", "\n", "\r"])
def test_outputs_with_newlines_quotes_and_commas_import_identically(tmp_path, capsys, end):
    texts = ['say "hi", then\nbye', 'a,b,"c"\r\nd\n\n', '""', ',\n,', "é 日本\n\"x\""]
    rows = []
    for n, text in enumerate(texts):
        rows += [row(2 * n, "A", "execute", f"c{n}", f"print({text!r})\n# \"q\", {n}"),
                 row(2 * n + 1, "A", "finished_execute", f"c{n}", "", text)]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=end)
    writer.writerow(COLUMNS)
    for values in rows:
        writer.writerow(values)
        buffer.write(end)  # a blank line after every record: skipped, as csv does
    log = tmp_path / "log.csv"
    log.write_text("\ufeff" + buffer.getvalue(), encoding="utf-8", newline="")

    result = read_june(log)
    assert not result.bad and result.rows == 2 * len(texts)
    steps = result.trajectories[0]
    assert [s["output"] for s in steps] == texts
    assert [s["code"] for s in steps] == [r[COLUMNS.index("cell_source")] for r in rows[::2]]
    out = tmp_path / "traj.jsonl"
    assert main(["import-june", str(log), "--out", str(out)]) == 0
    assert read_steps(out) == steps
    assert "10 rows: 5 steps in 1 trajectory; 0 bad rows skipped" in capsys.readouterr().out


def test_import_holds_no_output_in_memory(tmp_path):
    """A 48 MB log imports within a few MB: rows are an index, outputs read back one by one.

    Before, every row was held with its output: the peak exceeded the file's size.
    """
    output = "o" * 100_000
    log = tmp_path / "big.csv"
    with log.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        for n in range(480):
            kernel, cell = f"k{n % 4}", f"c{n % 7}"
            for values in (row(0, kernel, "execute", cell, f"print({n})"),
                           row(0, kernel, "finished_execute", cell, "", f"{n}\n{output}")):
                values[COLUMNS.index("time")] = str(1_700_000_000 + n)  # Unix seconds
                writer.writerow(values)
    assert log.stat().st_size > 48_000_000
    out = tmp_path / "traj.jsonl"
    tracemalloc.start()
    try:
        assert main(["import-june", str(log), "--out", str(out)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, f"peak {peak / 1e6:.1f} MB for a {log.stat().st_size / 1e6:.0f} MB log"
    assert file_problems(out) == (480, [])
