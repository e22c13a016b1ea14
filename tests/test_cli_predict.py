"""``themisto predict`` on a real recorded trajectory, against baseline and a real HTTP model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import own_notebook
from fake_llm import FakeLLM, error
from test_cli import themisto


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("predict")
    notebook = own_notebook("pandas-objects")
    out = work / "t.jsonl"
    r = themisto("record", str(notebook), "--out", str(out), store=work / "s.sqlite3")
    assert r.returncode == 0, r.stderr
    return out


def test_baseline_prediction_with_scores(trajectory: Path):
    steps = [json.loads(line) for line in trajectory.read_text().splitlines()]
    target = next(s for s in steps if s["code"] == "cities.columns")
    r = themisto("predict", str(trajectory), "--step", str(target["step"]), "--task", "output",
                 "--context", "full", "--predictor", "baseline", "--json")
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    assert record["reference"] == target["output"] and record["target_step"] == target["step"]
    assert set(record["scores"]) == {"exact_match", "rouge_l", "chrf"}
    assert all(0 <= v <= 1 for v in record["scores"].values())
    # only the steps before the target are context
    previous, own = target["step"] - 1, target["step"]
    assert f'<cell step="{previous}"' in record["prompt"]["user"]
    assert f'<cell step="{own}"' not in record["prompt"]["user"]
    plain = themisto("predict", str(trajectory), "--step", str(target["step"]), "--task",
                     "output", "--context", "full", "--predictor", "baseline")
    assert plain.returncode == 0 and "exact_match" in plain.stderr


def test_openai_compatible_prediction(trajectory: Path):
    with FakeLLM(answer="```python\nprint('next')\n```") as llm:
        r = themisto("predict", str(trajectory), "--step", "8", "--task", "next-cell",
                     "--context", "curated", "--predictor", "openai:fake",
                     "--base-url", llm.openai_url, "--json")
        assert r.returncode == 0, r.stderr
        record = json.loads(r.stdout)
        assert record["raw"].startswith("```") and record["answer"] == "print('next')"
        assert record["predictor"] == "openai:fake" and record["latency"] > 0
        assert record["prompt_tokens"] and record["completion_tokens"]
        sent = llm.requests[0].body["messages"]
        assert sent[0]["role"] == "system" and "runtime_state" in sent[1]["content"]


def test_provider_failure_is_one_line(trajectory: Path):
    with FakeLLM() as llm:
        llm.script(*[error(500, "overloaded")] * 10)
        r = themisto("predict", str(trajectory), "--step", "8", "--task", "output", "--context",
                     "none", "--predictor", "openai:fake", "--base-url", llm.openai_url,
                     "--timeout", "5")
    assert r.returncode == 1
    assert r.stderr.startswith("themisto predict: error: openai:fake: ")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_refused_connection_and_unknown_predictor(trajectory: Path):
    r = themisto("predict", str(trajectory), "--step", "8", "--task", "output", "--context",
                 "none", "--predictor", "openai:fake", "--base-url", "http://127.0.0.1:9/v1",
                 "--timeout", "5")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = themisto("predict", str(trajectory), "--step", "8", "--task", "output", "--context",
                 "none", "--predictor", "gpt")
    assert r.returncode == 1 and "unknown predictor 'gpt'" in r.stderr


STUDENT = [  # the reproduction: a boolean column stopped the rules for good
    "import pandas as pd",
    "df = pd.DataFrame({'age': [21, 25, 30, 35, 40], 'score': [70, 80, 65, 90, 85]})",
    "df['passed'] = df['score'] >= 75",
    "df['age'].median()",
    "df.groupby('passed')['age'].mean()",
    "df['scroe']",
]


def test_a_recorded_boolean_column_leaves_the_rules_exact(tmp_path: Path):
    import nbformat

    notebook = tmp_path / "student.ipynb"
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(code) for code in STUDENT]), notebook)
    out = tmp_path / "t.jsonl"
    r = themisto("record", str(notebook), "--out", str(out), store=tmp_path / "s.sqlite3")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    assert steps[2]["runtime_variables"]["df"]["data"]["dtypes"][-1] == "|b1"
    for step in steps[3:]:
        r = themisto("predict", str(out), "--step", str(step["step"]), "--task", "output",
                     "--context", "full", "--predictor", "baseline", "--json")
        assert r.returncode == 0, r.stderr
        record = json.loads(r.stdout)
        if step["error"] is None:
            assert record["answer"] == step["output"] != "", step["code"]
        else:  # what it shows before the traceback, and the traceback's last line
            assert step["error"]["ename"] == "KeyError" and record["answer"] == ""
