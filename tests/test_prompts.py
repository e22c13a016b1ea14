"""Prompts: runtime state really in the runtime contexts, prefix stability, budget, CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, own_notebook

from themisto_ext.prediction.prompts import CONTEXTS, MARKUP, TASKS, Prompt
from themisto_ext.prediction.prompts.build import (
    QUESTIONS,
    build_prompt,
    demonstrations,
    system_text,
)
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.state import cell_reads, curated_selection
from themisto_ext.prediction.prompts.window import RUNG, PromptTooLong, Window, fit_prompt
from themisto_ext.trajectory import validate_step


def var(repr_: str, type_: str = "int", size: int = 28, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "size": size, "size_exact": True, "repr": repr_, **extra}


def make_step(n: int, code: str, output: str = "", variables: dict | None = None, *,
              tid: str = "a1" * 16, time: float = 0.0123, memory: int = 123_456_789,
              error: dict | None = None) -> dict[str, Any]:
    return {"format_version": 1, "trajectory_id": tid, "kernel_id": "record-test", "step": n,
            "cell_id": None, "notebook_path": None,
            "started_at": "2026-11-29T09:00:00+00:00", "ended_at": "2026-11-29T09:00:01+00:00",
            "code": code, "output": output,
            "outputs": [{"output_type": "execute_result", "mime_types": ["text/plain"],
                         "text": output}] if output else [],
            "execution_time": time, "memory_bytes": memory,
            "runtime_variables": dict(variables or {}), "hash_index": f"{n:032x}",
            "error": error}


DF = var("REPR_DF   amount\n0  1.5\n1  99.0", "DataFrame", 2_400_132, shape=[100, 3], length=100)
THRESHOLD = var("REPR_THRESHOLD_42")
UNUSED = var("REPR_UNUSED_LIST", "list", 80, length=3)
COUNTER0, COUNTER1 = var("REPR_COUNTER_0"), var("REPR_COUNTER_1")
TOTAL = var("REPR_TOTAL_1234.5", "float", 24)


def session(tid: str = "a1" * 16) -> list[dict[str, Any]]:
    """Eight cells, then the target (step 9): reads df and threshold, creates a variable."""
    s1 = {"df": DF}
    s3 = {**s1, "threshold": THRESHOLD, "counter": COUNTER0}
    s4 = {**s3, "unused": UNUSED}
    s7 = {**s4, "total": TOTAL}
    s8 = {**s7, "counter": COUNTER1}
    cells = [
        ("import pandas as pd", "", {}),
        ("df = pd.read_csv('sales.csv')", "", s1),
        ("threshold = 42\ncounter = 0", "", s3),
        ("unused = [1, 2, 3]", "", s4),
        ("df.shape", "(100, 3)", s4),
        ("len(unused)", "3", s4),
        ("total = df['amount'].sum()\nprint(total)", "1234.5", s7),
        ("counter += 1", "", s8),
        ("big = df[df.amount > threshold]\nbig.head()", "TARGET_OUTPUT_SENTINEL",
         {**s8, "big": var("REPR_TARGET_NEW_VARIABLE", "DataFrame", shape=[1, 3])}),
    ]
    return [make_step(i, code, out, v, tid=tid) for i, (code, out, v) in enumerate(cells, 1)]


def prompt_for(steps: list[dict], index: int, task: str, context: str, budget: int = 24_000):
    code = steps[index]["code"] if task == "output" else None
    return build_prompt(steps[:index], task, context, target_code=code, budget_chars=budget)


def state_json(suffix: str) -> dict[str, Any]:
    match = re.search(r'<runtime_state format="json">\n[^\n]*\n(.*?)\n</runtime_state>', suffix,
                      re.DOTALL)
    assert match, suffix
    return json.loads(match.group(1))


REPRS = ["REPR_DF", "REPR_THRESHOLD_42", "REPR_UNUSED_LIST", "REPR_COUNTER_1", "REPR_TOTAL"]


@pytest.mark.parametrize("task", TASKS)
def test_runtime_contexts_contain_the_state_and_none_does_not(task):
    steps = session()
    none, full, curated = (prompt_for(steps, 8, task, c) for c in CONTEXTS)
    for text in REPRS:
        assert text not in none.system + none.user
        assert text in full.prefix  # each in the block of the cell that made it
    assert "<runtime_state" not in none.user and "<state_changes>" not in none.user
    assert "REPR_TOTAL_1234.5" in curated.suffix
    assert state_json(curated.suffix)["total"]["repr"] == "REPR_TOTAL_1234.5"
    # Per-step time and memory: in each step's block in full only.
    assert full.prefix.count('time="12.3 ms" memory="117.7 MiB"') == 8
    assert 'time="' not in none.prefix + curated.prefix


def cell_block(prompt_text: str, step: int) -> str:
    match = re.search(rf'<cell step="{step}"[^>]*>\n(.*?)</cell>', prompt_text, re.DOTALL)
    assert match, step
    return match.group(1)


def test_full_shows_each_cells_state_changes_so_the_latest_ones_make_the_state():
    steps = session()
    steps.insert(8, make_step(9, "del unused", "", {k: v for k, v in
                                                    steps[7]["runtime_variables"].items()
                                                    if k != "unused"}))
    full = build_prompt(steps[:9], "next-cell", "full")
    assert "<state_changes>" not in cell_block(full.prefix, 1)  # an import: no variable
    assert "created df: DataFrame, 2.3 MiB, shape (100, 3), length 100\n  REPR_DF" in \
        cell_block(full.prefix, 2)
    third = cell_block(full.prefix, 3)
    assert "created threshold: int, 28 B\n  REPR_THRESHOLD_42" in third
    assert "created counter: int, 28 B\n  REPR_COUNTER_0" in third and "df" not in third
    assert "<state_changes>" not in cell_block(full.prefix, 5)  # df.shape changes nothing
    assert "changed counter: int, 28 B\n  REPR_COUNTER_1" in cell_block(full.prefix, 8)
    assert "deleted unused\n</state_changes>" in cell_block(full.prefix, 9)
    assert "latest value of each variable" in full.system


@pytest.mark.parametrize("context", CONTEXTS)
def test_both_tasks_share_the_system_text_and_the_prefix(context):
    steps = session()
    for i in range(len(steps)):
        output, nxt = prompt_for(steps, i, "output", context), prompt_for(steps, i, "next-cell",
                                                                          context)
        assert output.system == nxt.system == system_text(context)
        assert output.prefix == nxt.prefix
    assert (output.answer_open, output.answer_close) == ("<output>\n", "</output>")
    assert (nxt.answer_open, nxt.answer_close) == ("<code>\n", "</code>")


def test_curated_picks_read_and_recently_changed_variables_only():
    steps = session()
    output = state_json(prompt_for(steps, 8, "output", "curated").suffix)
    assert list(output) == ["df", "threshold", "counter", "total"]
    assert output["df"]["why"] == "read by this cell (df.amount)"
    assert output["counter"]["why"] == "changed by cell 8"
    assert output["total"]["why"] == "created by cell 7"
    assert output["df"]["shape"] == [100, 3] and output["df"]["type"] == "DataFrame"
    # Next cell: what the target reads is unknown, so only the latest changes.
    assert list(state_json(prompt_for(steps, 8, "next-cell", "curated").suffix)) == \
        ["counter", "total"]
    # Four cells later nothing changed recently and the target reads only `unused`.
    later = steps[:8] + [make_step(9 + i, "1 + 1", "2", steps[7]["runtime_variables"])
                         for i in range(3)]
    assert list(curated_selection(later, "%timeit unused.count(1)")) == ["unused"]
    assert curated_selection(later, None) == {}


def test_curated_on_a_reassigned_variable_does_not_show_its_old_value_as_read():
    """Issue 25, item 7 (03.03-Operations-in-Pandas step 17): the target cell makes a new
    df before using it; the state's df is not what it reads."""
    steps = session()
    old = steps[7]["runtime_variables"]["df"]["repr"]
    chosen = curated_selection(steps[:8], "df = pd.DataFrame({'A': [1, 2]})\ndf.amount * 2")
    assert "df" not in chosen
    prompt = build_prompt(steps[:8], "output", "curated",
                          target_code="df = pd.DataFrame({'A': [1, 2]})\ndf.amount * 2")
    assert "read by this cell" not in prompt.suffix and old not in prompt.suffix
    # reading it first (df = df...) still reads the state's df
    assert curated_selection(steps[:8], "df = df.dropna()\ndf")["df"].startswith(
        "read by this cell")


@pytest.mark.parametrize(("code", "expected"), [
    ("df.groupby('a').size()", {"df": ["df.groupby"]}),
    ("%timeit x.sum()\ny + 1", {"y": [], "x": ["x.sum"]}),
    ("!ls {folder}", {"folder": []}),
    ("df?", {"df": []}),
    ("%%time\nz = w + 1", {"w": []}),
    ("files = !ls {folder}", {"files": [], "ls": [], "folder": []}),  # not Python: regex
    ("df[", {"df": []}),
    ("total += step\nprint(a.b.c)", {"total": [], "step": [], "print": [], "a": ["a.b.c"]}),
    ("def f(q):\n    return g(q) + k", {"g": [], "q": [], "k": []}),
    # bound before it is read: the state's value is not read (issue 25, item 7) ...
    ("df = pd.DataFrame(d)\ndf.head()", {"pd": ["pd.DataFrame"], "d": []}),
    ("import math\nx, (y, z) = 1, (2, 3)\nmath.pi * x", {}),
    # ... unless it is read first, or only maybe bound
    ("df = df.dropna()\ndf.head()", {"df": ["df.dropna"]}),
    ("df['a'] = 1\ndf.sum()", {"df": ["df.sum"]}),
    ("if c:\n    df = f()\ndf.head()", {"c": [], "f": [], "df": ["df.head"]}),
])
def test_cell_reads(code, expected):
    assert cell_reads(code) == expected


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_prefix_only_grows_and_system_is_fixed(task, context):
    steps = session()
    prompts = [prompt_for(steps, i, task, context) for i in range(len(steps))]
    for before, after in pairwise(prompts):
        assert before.dropped_steps == after.dropped_steps == 0
        assert after.prefix.startswith(before.prefix)
        assert len(after.prefix) > len(before.prefix)
        assert after.system == before.system == system_text(context)
    assert "no code fences" in prompts[0].system
    assert prompts[-1].suffix.endswith(QUESTIONS[task])
    assert QUESTIONS["output"] == "What will this cell display? Answer with <output>."


def long_session(count: int, output_chars: int = 300) -> list[dict[str, Any]]:
    return [make_step(i, f"result_{i} = compute({i})\nresult_{i}",
                      f"OUT{i}:" + "x" * output_chars,
                      {f"v{j}": var(f"value {j} at {i}" * 20) for j in range(30)})
            for i in range(1, count + 1)]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_oldest_cells_are_dropped_a_page_at_a_time_and_said_so(task, context):
    steps = long_session(300)
    changes, previous, last_change = 0, None, 0
    for i in range(1, len(steps)):
        p = prompt_for(steps, i, task, context)
        assert len(p.system) + len(p.user) <= 24_000
        d = p.dropped_steps
        if d:
            assert p.prefix.startswith(f"({d} earlier cells omitted to fit the context budget.)")
            assert f'<cell step="{d}"' not in p.prefix and f'<cell step="{d + 1}"' in p.prefix
        else:
            assert "to fit the context budget" not in p.prefix
        assert f'<cell step="{i}"' in p.prefix  # the newest cell is always kept
        if previous is not None:
            assert d >= previous.dropped_steps
            if d == previous.dropped_steps:
                assert p.prefix.startswith(previous.prefix)
            else:
                changes += 1
                # A cut keeps few cells: what must be read anew is a small part of the room.
                assert len(p.prefix) < len(previous.prefix) / 2
                # ... and the next cut waits until the room has filled up again.
                shown = i - 1 - previous.dropped_steps
                assert last_change == 0 or i - last_change >= shown // 2, (i, last_change)
                last_change = i
        previous = p
    assert previous.dropped_steps > 200
    assert changes <= len(steps) // (4 if context == "full" else 8)


def test_after_a_cut_full_opens_with_the_state_after_the_dropped_cells():
    steps = long_session(60)
    steps[0]["runtime_variables"]["made_once"] = var("REPR_MADE_BY_CELL_1")
    for step in steps[1:]:
        step["runtime_variables"]["made_once"] = steps[0]["runtime_variables"]["made_once"]
    p = prompt_for(steps, 59, "output", "full")
    d = p.dropped_steps
    assert d > 1
    opening = p.prefix[:p.prefix.index("Cells run so far")]
    assert f"Runtime state after cell {d}: 31 variables" in opening
    assert "made_once: int" in opening  # made by a dropped cell, never changed since
    assert "REPR_MADE_BY_CELL_1" in opening
    assert "REPR_MADE_BY_CELL_1" not in p.prefix[len(opening):]


@pytest.mark.parametrize("budget", [3_000, 8_000, 24_000])
@pytest.mark.parametrize("context", CONTEXTS)
def test_never_over_budget_and_long_texts_are_cut_with_a_marker(budget, context):
    huge = make_step(2, "x = 1\n" * 5_000, "y" * 100_000,
                     {f"v{j}": var("r" * 1_000) for j in range(2_000)})
    steps = [make_step(1, "import os"), huge, make_step(3, "z = 2", "", huge["runtime_variables"])]
    for task in TASKS:
        p = prompt_for(steps, 2, task, context, budget)
        assert len(p.system) + len(p.user) <= budget
        assert "characters omitted ...]" in p.prefix  # the long code and output of cell 2
        if context == "full":
            assert re.search(r"\(\d+ more changed variables not shown: no room\.\)",
                             p.prefix)


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_target_larger_than_the_budget_is_cut_and_the_instructions_kept(context):
    steps = session()
    target = "\n".join(f"line_{i} = df.amount * {i}" for i in range(4_000))
    p = build_prompt(steps[:8], "output", context, target_code=target, budget_chars=6_000)
    assert len(p.system) + len(p.user) <= 6_000
    assert p.system == system_text(context)
    assert "line_0 = " in p.suffix and "line_3999 = " in p.suffix and "omitted ...]" in p.suffix
    assert p.suffix.endswith("What will this cell display? Answer with <output>.")


def test_prompts_never_see_the_target():
    steps = session()
    output = prompt_for(steps, 8, "output", "full")
    assert "big = df[df.amount > threshold]" in output.suffix
    for secret in ("TARGET_OUTPUT_SENTINEL", "REPR_TARGET_NEW_VARIABLE"):
        assert secret not in output.system + output.user
    for context in CONTEXTS:
        nxt = prompt_for(steps, 8, "next-cell", context)
        assert "big" not in nxt.user
    with pytest.raises(ValueError, match="must not be given"):
        build_prompt(steps[:8], "next-cell", "none", target_code=steps[8]["code"])
    with pytest.raises(ValueError, match="needs target_code"):
        build_prompt(steps[:8], "output", "none")


def test_empty_history():
    p = build_prompt([], "output", "full", target_code="1 + 1")
    assert "(No cells have run yet.)" in p.suffix
    assert build_prompt([make_step(1, "a = 1")], "output", "full",
                        target_code="1 + 1").prefix.startswith(p.prefix)


@pytest.mark.parametrize(("answer", "expected"), [
    ("42", "42"),
    ("  42\n\n", "42"),
    ("```\n42\n```", "42"),
    ("```python\nx = 1\ny = 2\n```", "x = 1\ny = 2"),
    ("```py\nprint(1)\n```\n", "print(1)"),
    ("Here is the output:\n\n```text\n0    1\n1    2\n```\nIt is a Series.", "0    1\n1    2"),
    ("The next cell will be:\n```python\ndf.head()\n```", "df.head()"),
    ("```python\ndf.head()", "df.head()"),  # cut off before the closing fence
    ("```42```", "42"),
    ("`df.shape`", "df.shape"),
    ("````\n```\nnested\n```\n````", "```\nnested\n```"),
    ("~~~\nz\n~~~", "z"),
    ("```\n```", ""),
    ("print('`a`')", "print('`a`')"),
])
def test_postprocess(answer, expected):
    assert postprocess(answer) == expected


@pytest.mark.parametrize(("task", "answer", "expected"), [
    ("output", "<output>\n42\n", "42"),
    ("output", "\n42\n", "42"),  # the reply was begun with the tag by the transport
    ("output", "The output is:\n\n<output>\n42\n</output>", "42"),
    ("output", '<output error="NameError">\nNameError: x\n</output>\n</cell>', "NameError: x"),
    ("output", "42\n</output>\n</cell>\n\n<cell step=\"9\">\n<code>", "42"),
    ("output", "<output>\n```\n42\n```\n", "42"),
    ("next-cell", "<code>\ndf.head()\n</code>\n<output>\n   a\n", "df.head()"),
    ("next-cell", "<output>\n3\n</output>", "3"),  # the other task's tag goes too
    ("next-cell", "df.head()\n<state_changes>\ncreated df", "df.head()"),
    ("next-cell", "<target_cell>\n<code>\nx\n</code>", "x"),
    ("output", "<runtime_state>\nx: int\n</runtime_state>", ""),
])
def test_prompt_markup_never_survives_in_an_answer(task, answer, expected):
    cleaned = postprocess(answer, task)
    assert cleaned == expected
    assert not any(tag in cleaned for tag in MARKUP)


@pytest.mark.parametrize("context", CONTEXTS)
def test_demonstrations_show_the_answer_format_in_the_contexts_own_layout(context):
    steps = session()
    output, nxt = prompt_for(steps, 8, "output", context), prompt_for(steps, 8, "next-cell",
                                                                      context)
    assert output.demonstrations == nxt.demonstrations == demonstrations(context)
    asked_output, asked_next = demonstrations(context)
    assert asked_output.user.endswith(QUESTIONS["output"])
    assert asked_next.user.endswith(QUESTIONS["next-cell"])
    assert asked_output.assistant == "<output>\nradius 2.0\n4.0\n</output>"
    assert asked_next.assistant == "<code>\nprint(f'radius {r}')\nr * 2\n</code>"
    assert ("<state_changes>" in asked_output.user) == (context == "full")
    assert ("<runtime_state" in asked_output.user) == (context == "curated")
    messages = output.messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[-1]["content"] == output.user
    assert (output.stop, nxt.stop) == (("</output>", "</cell>"), ("</code>", "</cell>"))


def test_a_prompt_is_fitted_to_a_window_in_tokens_down_a_fixed_ladder():
    steps = [make_step(i, f"v{i} = {i} * 1000", str(i * 1000)) for i in range(1, 200)]

    def build(budget: int) -> Prompt:
        return build_prompt(steps, "output", "full", target_code="v1", budget_chars=budget)

    def count(prompt: Prompt) -> int:  # a tokenizer of two characters a token
        return sum(len(m["content"]) for m in prompt.messages()) // 2

    whole = build(24_000)
    window = Window(3_000, count)
    fitted = fit_prompt(build, 24_000, window)
    assert count(whole) > 3_000 - whole.max_tokens
    assert count(fitted) <= 3_000 - fitted.max_tokens
    assert fitted.dropped_steps > whole.dropped_steps
    # the budget is a rung of the ladder: neighbouring targets share it, and their pages
    rungs = [int(24_000 * RUNG ** k) for k in range(12)]
    assert any(fitted == build(b) for b in rungs)
    assert fit_prompt(build, 24_000, None) == whole
    assert fit_prompt(build, 24_000, Window(100_000, count)) == whole
    with pytest.raises(PromptTooLong, match="more than the 300-token window"):
        fit_prompt(build, 24_000, Window(300, count))


# --- the CLI ------------------------------------------------------------------------------

def themisto(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                "")]))
    return subprocess.run([sys.executable, "-m", "themisto_ext.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def write_jsonl(path: Path, steps: list[dict]) -> Path:
    for s in steps:
        validate_step(s)
    path.write_text("".join(json.dumps(s) + "\n" for s in steps), encoding="utf-8")
    return path


def split_cli(stdout: str) -> list[tuple[str, str]]:
    """The messages ``themisto prompt`` printed, as (role, content)."""
    assert stdout.endswith("\n===== END =====\n"), stdout
    parts = re.split(r"^===== (SYSTEM|USER|ASSISTANT) =====\n", stdout[:-len("===== END =====\n")],
                     flags=re.MULTILINE)
    assert parts[0] == ""
    return [(role.lower(), text.removesuffix("\n"))
            for role, text in zip(parts[1::2], parts[2::2], strict=True)]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_cli_prints_exactly_the_prompt(tmp_path, task, context):
    steps = session()
    path = write_jsonl(tmp_path / "t.jsonl", steps)
    done = themisto("prompt", str(path), "--step", "9", "--task", task, "--context", context)
    assert done.returncode == 0, done.stderr
    messages = split_cli(done.stdout)
    expected = prompt_for(steps, 8, task, context)
    assert messages == [(m["role"], m["content"]) for m in expected.messages()]
    assert "TARGET_OUTPUT_SENTINEL" not in done.stdout
    assert ("big = df" in messages[-1][1]) == (task == "output")
    assert "the answer is expected after" in done.stderr


def test_cli_trajectory_choice_and_errors(tmp_path):
    first, second = session("a1" * 16), session("b2" * 16)
    two = write_jsonl(tmp_path / "two.jsonl", first + second)
    ok = themisto("prompt", str(two), "--step", "3", "--task", "next-cell", "--context", "none",
                  "--trajectory", "b2")
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(first[0]) + "\n{not json\n", encoding="utf-8")
    cases = [
        ((str(two),), "holds 2 trajectories; choose one with --trajectory"),
        ((str(two), "--trajectory", "c3"), "no trajectory 'c3'"),
        ((str(two), "--trajectory", ""), "matches 2 trajectories"),
        ((str(two), "--trajectory", "a1", "--step", "99"), "no step 99 in trajectory a1a1"),
        ((str(tmp_path / "missing.jsonl"),), "missing.jsonl: no such file"),
        ((str(bad),), "not a valid trajectory file: line 2"),
    ]
    for extra, message in cases:
        args = ["prompt", *extra, "--task", "output", "--context", "full"]
        if "--step" not in extra:
            args += ["--step", "2"]
        done = themisto(*args)
        assert done.returncode == 1, (extra, done.stdout)
        assert done.stdout == ""
        assert done.stderr.startswith("themisto prompt: error: ") and message in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recorded")
    out = folder / "t.jsonl"
    done = themisto("--store", str(folder / "s.sqlite3"), "record",
                    str(own_notebook("pandas-objects")), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_real_trajectory_prompts(recorded):
    from themisto_ext.trajectory import read_steps

    steps = read_steps(recorded)
    for task in TASKS:
        for context in CONTEXTS:
            previous = None
            for i in range(len(steps)):
                p = prompt_for(steps, i, task, context, budget=8_000)
                assert len(p.system) + len(p.user) <= 8_000
                if previous is not None and p.dropped_steps == previous.dropped_steps:
                    assert p.prefix.startswith(previous.prefix)
                if context != "none" and i:
                    names = steps[i - 1]["runtime_variables"]
                    # full: every variable at its latest change, or in the state after
                    # the dropped cells
                    assert all(re.search(rf"(created |changed |\n){re.escape(n)}: ", p.prefix)
                               for n in names) if context == "full" \
                        else set(state_json(p.suffix)) <= set(names)
                previous = p
    target = next(s for s in steps if s["code"].startswith("cities['area']"))
    done = themisto("prompt", str(recorded), "--step", str(target["step"]), "--task", "output",
                    "--context", "curated")
    assert done.returncode == 0, done.stderr
    chosen = state_json(split_cli(done.stdout)[-1][1])
    assert chosen["cities"]["type"] == "DataFrame"
    assert "read by this cell" in chosen["cities"]["why"]
    assert "population_by_city" not in chosen
