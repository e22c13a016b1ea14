"""No step is lost, in real kernels: an interrupt while the hook measures, runs nested in a
cell (``%%capture``, ``run_cell``, ``%rerun``), ``%reload_ext``, a user's patched
``json.dumps``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import RecordingKernel, read_journal

from themisto_ext.contract import CaptureSettings


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RecordingKernel]:
    # Budgets long enough that the interrupt surely arrives while the hook measures.
    k = RecordingKernel(tmp_path / "journal", "steps-kernel",
                        CaptureSettings(cell_budget=3.0, value_budget=2.0))
    yield k
    k.km.shutdown_kernel(now=True)
    k.kc.stop_channels()


def run_all(k: RecordingKernel, cells: list[str]) -> list[tuple[dict, list]]:
    results = []
    for code in cells:
        reply, shown = k.run(code)
        results.append((reply, shown))
    return results


def errors(shown: list[dict]) -> list[str]:
    return [m["content"]["ename"] for m in shown if m["msg_type"] == "error"]


def test_an_interrupt_while_the_hook_measures_keeps_the_step(kernel: RecordingKernel):
    cells = []
    for n in range(3):
        cells.append(f"""
import os, signal, threading, time
class Slow{n}:
    def __repr__(self):
        time.sleep(1.5)
        return "slow"
slow{n} = Slow{n}()
# pressed as the cell ends: it arrives while the hook waits for slow{n}'s repr
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
""")
    cells.append("print('after')")
    results = run_all(kernel, cells)
    for reply, shown in results:
        assert reply["content"]["status"] == "ok" and errors(shown) == [], shown
    assert [s["code"] for s in kernel.steps()] == cells
    assert [s["step"] for s in kernel.steps()] == [1, 2, 3, 4]
    assert kernel.steps()[-1]["output"] == "after\n"
    # the interrupted snapshot left slow0 to a later cell, which measured it
    assert kernel.steps()[-1]["runtime_variables"]["slow0"]["repr"] != ""


def test_runs_nested_in_a_cell_keep_the_outer_cell(kernel: RecordingKernel):
    cells = [
        "%%capture captured\nprint('hidden')\nx = 1",
        "get_ipython().run_cell('y = 2')\nz = 3",
        "get_ipython().run_cell('w = 4', store_history=True)\nv = 5",
        "a = 6",
        "%rerun",
        "print(x, y, z, w, v, a, captured.stdout.strip())",
    ]
    results = run_all(kernel, cells)
    assert all(reply["content"]["status"] == "ok" for reply, _ in results)
    steps = kernel.steps()
    assert [s["code"] for s in steps] == cells
    assert [s["step"] for s in steps] == list(range(1, len(cells) + 1))
    assert steps[-1]["output"] == "1 2 3 4 5 6 hidden\n"
    assert {"y", "z"} <= set(steps[1]["runtime_variables"])


def test_reload_ext_keeps_one_trajectory_and_its_own_cell(kernel: RecordingKernel):
    cells = ["a = 1", "%reload_ext themisto_ext", "b = 2", "%unload_ext themisto_ext",
             "c = 3", "%load_ext themisto_ext", "d = 4"]
    run_all(kernel, cells)
    steps = kernel.steps()
    # From %unload_ext to %load_ext nothing is recorded (the user asked for that; the
    # %load_ext cell started before the hook was there).
    assert [s["code"] for s in steps] == ["a = 1", "%reload_ext themisto_ext", "b = 2",
                                          "d = 4"]
    assert len({s["trajectory_id"] for s in steps}) == 1
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    records = read_journal(kernel.journal_dir)
    assert [r["kind"] for r in records].count("trajectory") == 1
    assert "end" not in [r["kind"] for r in records]


def test_a_patched_json_dumps_breaks_no_journal_line(kernel: RecordingKernel):
    cells = ["import json, functools\njson.dumps = functools.partial(json.dumps, indent=1)",
             "d = {'a': [1, 2], 'text': 'x\\ny'}",
             "print(json.dumps(d))",
             "e = 3"]
    results = run_all(kernel, cells)
    printed = "".join(m["content"].get("text", "") for m in results[2][1]
                      if m["msg_type"] == "stream")
    assert '\n "a": [\n' in printed, results[2][1]  # the user's json.dumps, patched
    for path in kernel.journal_dir.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            json.loads(line)  # every line whole
    assert [s["code"] for s in kernel.steps()] == cells


def test_a_cell_that_enters_the_post_mortem_debugger_is_kept(kernel: RecordingKernel):
    # with %pdb on, the result IPython passes to post_run_cell carries a copy of the
    # cell's ExecutionInfo (found while measuring issue 23's fidelity on the shared notebooks)
    kernel.run("def func2(x):\n    return 1 / (x - 1)")
    kernel.kc.execute_interactive("%xmode Plain\n%pdb on\nfunc2(1)", allow_stdin=False,
                                  timeout=60, output_hook=lambda msg: None)
    kernel.run("%pdb off\na = 1")
    assert [s["code"] for s in kernel.steps()] == [
        "def func2(x):\n    return 1 / (x - 1)", "%xmode Plain\n%pdb on\nfunc2(1)",
        "%pdb off\na = 1"]
    assert "ZeroDivisionError" in kernel.steps()[1]["output"]  # (then pdb found no stdin)
