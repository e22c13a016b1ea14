"""The references: ``copy-previous``, and ``baseline`` seeing only what its context shows."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_baseline import HISTORY, VARIABLES, step
from test_server import start_kernel, wait_for_steps

from themisto_ext.prediction.clients import PredictorSpecError, make_predictor
from themisto_ext.prediction.clients.baseline import visible_state
from themisto_ext.prediction.prompts.build import demonstration_answers
from themisto_ext.prediction.run import predict
from themisto_ext.prediction.scoring import scored
from themisto_ext.records import PredictionContext, PredictionTask, Scope


def run(spec: str, task: PredictionTask, context: PredictionContext, history: list[dict[str, Any]],
        target: str | None) -> dict[str, Any]:
    async def go() -> Any:
        predictor = make_predictor(spec)
        try:
            return await predict(predictor, history, task, context, scope=Scope("t"),  # type: ignore[arg-type]
                                 target_step=len(history) + 1, target_code=target)
        finally:
            await predictor.aclose()
    return asyncio.run(go())


def test_copy_previous_copies_the_previous_output_or_cell():
    history = [step(1, "x = 2"), step(2, "print(x)"), step(3, "x * 21")]
    history[1]["output"], history[2]["output"] = "2", "42"
    for context in ("none", "full", "curated"):
        output = run("copy-previous", "output", context, history, "x * 22")
        nxt = run("copy-previous", "next-cell", context, history, None)
        assert (output["answer"], nxt["answer"]) == ("42", "x * 21")
        assert output["predictor"] == output["model"] == "copy-previous"
    # its answer is used as it is: no post-processing of what a cell really showed
    history[2]["output"] = "```\nfenced\n```\n<output>"
    assert run("copy-previous", "output", "full", history, "y")["answer"] == history[2]["output"]
    assert run("copy-previous", "output", "none", [], "y")["answer"] == ""


def test_baseline_under_none_sees_no_runtime_state():
    """The issue: the baseline read the snapshot under `none`, so its contexts never differed."""
    full = run("baseline", "output", "full", HISTORY, "n")
    none = run("baseline", "output", "none", HISTORY, "n")
    assert full["answer"] == VARIABLES["n"]["repr"] == "1000"
    assert none["answer"] == ""
    # literals need no state: the same under every context
    assert run("baseline", "output", "none", HISTORY, "print('hi', 42)")["answer"] == "hi 42"


def test_baseline_under_curated_sees_only_the_curated_variables():
    # n is read by the cell; ratio is neither read nor changed by the last cells
    history = [*HISTORY, *(step(4 + i, f"pass  # {i}", VARIABLES) for i in range(4))]
    assert set(visible_state(history, "curated", "n + 1")) == {"n"}
    assert set(visible_state(history, "full", "n + 1")) == set(VARIABLES)
    assert visible_state(history, "none", "n + 1") == {}
    assert run("baseline", "output", "curated", history, "n")["answer"] == "1000"


def test_unknown_predictor_names_list_copy_previous():
    with pytest.raises(PredictorSpecError, match="copy-previous"):
        make_predictor("copy-next")
    with pytest.raises(PredictorSpecError):
        make_predictor("copy-previous:x")


def test_cli_predicts_with_copy_previous(tmp_path: Path):
    history = [step(i + 1, f"v = {i}") for i in range(3)]
    for i, s in enumerate(history):
        s["output"] = f"out {i}"
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in history))
    r = subprocess.run([sys.executable, "-m", "themisto_ext.cli", "predict", str(path),
                        "--step", "3", "--task", "output", "--context", "none", "--predictor",
                        "copy-previous", "--json"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    assert record["answer"] == "out 1" and record["reference"] == "out 2"
    assert scored(record, history[2])["scores"]["exact_match"] == 0.0


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config(predictors=["copy-previous"], contexts=["none"])


async def test_copy_previous_runs_live_as_a_server_setting(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = jp_serverapp.web_app.settings["themisto"].store.sync
    try:
        await client.execute_interactive("print('first')", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        await asyncio.sleep(0.2)
        await client.execute_interactive("print('first')", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 2)
        deadline = asyncio.get_running_loop().time() + 15
        while True:
            found = [p for p in store.predictions(status["trajectory_id"], target_step=2)
                     if p["task"] == "output" and p["scores"]]
            if found or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)
        assert found and found[0]["predictor"] == "copy-previous"
        assert found[0]["answer"] == found[0]["reference"] == "first\n"
        assert found[0]["scores"]["exact_match"] == 1.0
        r = await jp_fetch("themisto", "api", "predictors")
        assert json.loads(r.body)["predictors"] == ["copy-previous"]
    finally:
        client.stop_channels()


def test_hybrid_uses_a_rule_where_one_applies_and_the_model_where_none_does():
    from fake_llm import FakeLLM

    from themisto_ext.prediction.clients.hybrid import HybridPredictor

    history = [step(1, "import numpy as np"), step(2, "x = 6", {"x": VARIABLES["n"]}),
               step(3, "print('shown')", {"x": VARIABLES["n"]})]
    history[2]["output"] = "shown\n"

    async def go(task: PredictionTask, context: PredictionContext, code: str | None, steps: list,
                 answer: str) -> dict:
        with FakeLLM(answer=answer) as llm:
            hybrid = HybridPredictor(make_predictor("openai:m", base_url=llm.openai_url))
            try:
                record = await predict(hybrid, steps, task, context, scope=Scope("t"),
                                       target_step=len(steps) + 1, target_code=code)
            finally:
                await hybrid.aclose()
            return {**record, "asked": len(llm.requests)}  # type: ignore[dict-item]

    def hybrid(task: PredictionTask, context: PredictionContext, code: str | None,
               steps: list = history, answer: str = "The output:\n<output>\n7\n</output>") -> dict:
        return asyncio.run(go(task, context, code, steps, answer))

    # the baseline's rules determine everything this cell shows (the state has x = 1000)
    known = hybrid("output", "full", "print(x)\nx")
    assert (known["answer"], known["model"], known["asked"]) == ("1000\n1000",
                                                                  "hybrid:baseline", 0)
    assert hybrid("output", "full", "y = 3")["answer"] == ""  # an assignment shows nothing
    # an array the snapshot holds whole: computed, not the previous output copied
    x1 = {"type": "ndarray", "size": 160, "size_exact": True, "shape": [6], "length": 6,
          "repr": "array([9, 4, 0, 3, 8, 6])"}
    numeric = [step(1, "import numpy as np"), step(2, "x1 = np.array([9, 4, 0, 3, 8, 6])\nx1",
                                                 {"x1": x1})]
    numeric[1]["output"] = "array([9, 4, 0, 3, 8, 6])"
    last = hybrid("output", "full", "x1[-1]", numeric)
    assert (last["answer"], last["model"], last["asked"]) == ("np.int64(6)", "hybrid:baseline", 0)
    # a re-run of the previous cell the rules cannot tell (x is not shown under none): its
    # output again, no model asked
    ran = [*history[:2], step(3, "print(x)", {"x": VARIABLES["n"]})]
    ran[2]["output"] = "1000\n"
    rerun = hybrid("output", "none", "print(x)", ran)
    assert (rerun["answer"], rerun["model"], rerun["asked"]) == ("1000\n", "hybrid:rerun", 0)
    # under none the state is not shown, so the rules cannot tell: the model answers, read
    # back by the protocol; the previous output is not copied ("shown" is not "7")
    asked = hybrid("output", "none", "print(x)")
    assert (asked["answer"], asked["model"], asked["asked"]) == ("7", "hybrid:m", 1)
    assert asked["prompt"]["user"].endswith("Answer with <output>.")
    assert not asked["abstained"]
    # a model answer that is no prediction (the prompt's demonstration echoed) is an
    # abstention: no answer, nothing to score
    garbage = hybrid("output", "none", "print(x)",
                     answer=f"<output>\n{demonstration_answers()[0]}\n</output>")
    assert (garbage["answer"], garbage["abstained"], garbage["asked"]) == ("", True, 1)
    assert scored(garbage, {**history[2], "output": "1000\n"})["scores"] is None
    # a model answer that repeats an earlier output, or the cell's own code, is a copy of
    # what the user has seen, not a prediction: an abstention too
    for seen in ("shown", "print(x)"):
        copied = hybrid("output", "none", "print(x)", answer=f"<output>\n{seen}\n</output>")
        assert (copied["answer"], copied["abstained"], copied["asked"]) == ("", True, 1), seen
        assert scored(copied, {**history[2], "output": "1000\n"})["scores"] is None
    # the next cell: the last cell's next variation, no model asked
    varied = [*history[:2], step(3, "x > 3", {"x": VARIABLES["n"]})]
    nxt = hybrid("next-cell", "full", None, varied)
    assert (nxt["answer"], nxt["model"], nxt["asked"]) == ("x < 3", "hybrid:variation", 0)
    # a cell the rules know raises: what it prints, then the traceback's last line (the
    # model, which would guess an output, is not asked)
    failing = hybrid("output", "full", "print(x)\ny = x + undefined_total")
    assert (failing["answer"], failing["model"], failing["asked"]) == (
        "1000\nNameError: name 'undefined_total' is not defined", "hybrid:raises", 0)
    indexed = hybrid("output", "full", "[1, 2][x]")
    assert (indexed["answer"], indexed["model"]) == (
        "IndexError: list index out of range", "hybrid:raises")
    # nothing varies in the last cell: it abstains (no answer, not scored), no model asked
    # even though the model would have answered
    none = hybrid("next-cell", "full", None, answer="<code>\ny = x + 1\n</code>")
    assert (none["answer"], none["model"], none["abstained"], none["asked"]) == (
        "", "hybrid:abstain", True, 0)


def test_hybrid_shows_a_models_outputs_only_where_measured_to_beat_copying():
    """The embedded models' output answers were not measured to beat copying the previous
    output: bare ``hybrid`` abstains where no rule answers, without asking its model. A
    model the user names is asked."""
    from fake_llm import FakeLLM

    from themisto_ext.prediction.clients.hybrid import HybridPredictor
    from themisto_ext.prediction.clients.local import models

    assert not any(m.outputs_beat_copying for m in models.MODELS.values())
    bare, named = make_predictor("hybrid"), make_predictor("hybrid:openai:m")
    try:
        assert bare.model_outputs is False  # type: ignore[attr-defined]
        assert named.model_outputs is True  # type: ignore[attr-defined]
    finally:
        asyncio.run(bare.aclose())
        asyncio.run(named.aclose())
    history = [step(1, "x = 6", {"x": VARIABLES["n"]})]

    async def go(outputs: bool, code: str) -> dict:
        with FakeLLM(answer="<output>\n7\n</output>") as llm:
            hybrid = HybridPredictor(make_predictor("openai:m", base_url=llm.openai_url),
                                     outputs=outputs)
            try:
                record = await predict(hybrid, history, "output", "full", scope=Scope("t"),
                                       target_step=2, target_code=code)
            finally:
                await hybrid.aclose()
            return {**record, "asked": len(llm.requests)}  # type: ignore[dict-item]

    gated = asyncio.run(go(False, "import random\nprint(random.random())"))
    assert (gated["answer"], gated["model"], gated["abstained"], gated["asked"]) == (
        "", "hybrid:abstain", True, 0)
    ruled = asyncio.run(go(False, "print(x)"))  # the rules still answer
    assert (ruled["answer"], ruled["model"]) == ("1000", "hybrid:baseline")
    asked = asyncio.run(go(True, "import random\nprint(random.random())"))
    assert (asked["answer"], asked["asked"]) == ("7", 1)


def test_a_next_cell_that_repeats_or_varies_a_cell_already_run_is_no_prediction():
    from themisto_ext.prediction.clients.hybrid import _is_variant

    history = [step(1, "import pandas as pd"), step(2, "df['age'].min()"),
               step(3, "people['weight_kg'].mean()")]
    for cell in ("import pandas as pd", "df['age'].min()", "df['age'].var()",
                 "df[ 'age' ].max()", "people['height_cm'].mean()", "import  pandas as pd\n"):
        assert _is_variant(cell, history), cell
    for cell in ("import numpy as np", "df.groupby('city')['score'].mean()",
                 "df['age'].plot(kind='hist')", "print(df.head())"):
        assert not _is_variant(cell, history), cell


def test_hybrid_is_a_predictor_name_with_the_local_models_window():
    predictor = make_predictor("hybrid", max_tokens=32)
    try:
        assert predictor.name == "hybrid"
        assert predictor.window is not None and predictor.window.tokens == 4096
        assert predictor.max_tokens == 32
    finally:
        asyncio.run(predictor.aclose())


def test_hybrid_over_a_named_model_asks_it_for_the_next_cells_no_rule_predicts():
    from fake_llm import FakeLLM

    from themisto_ext.prediction.clients import check_predictor_name, runs_local_model

    history = [step(1, "import numpy as np"), step(2, "x = 6", {"x": VARIABLES["n"]})]

    async def go(steps: list, answer: str, task: PredictionTask = "next-cell",
                 code: str | None = None) -> dict:
        with FakeLLM(answer=answer) as llm:
            hybrid = make_predictor("hybrid:openai:m", base_url=llm.openai_url)
            try:
                assert hybrid.name == "hybrid:openai:m"
                record = await predict(hybrid, steps, task, "full", scope=Scope("t"),
                                       target_step=len(steps) + 1, target_code=code)
            finally:
                await hybrid.aclose()
            return {**record, "asked": len(llm.requests)}  # type: ignore[dict-item]

    def hybrid(steps: list, answer: str = "<code>\ny = x + 1\n</code>", **kw: Any) -> dict:
        return asyncio.run(go(steps, answer, **kw))

    # nothing varies in `x = 6`: the named model writes the next cell
    asked = hybrid(history)
    assert (asked["answer"], asked["model"], asked["abstained"], asked["asked"]) == (
        "y = x + 1", "hybrid:m", False, 1)
    assert asked["predictor"] == "hybrid:openai:m"
    # the model offering the cell just run is no prediction: it abstains
    same = hybrid(history, "<code>\nx = 6\n</code>")
    assert (same["answer"], same["abstained"], same["asked"]) == ("", True, 1)
    # a variation still comes first, and the rules still answer outputs they determine
    varied = hybrid([*history, step(3, "x > 3", {"x": VARIABLES["n"]})])
    assert (varied["answer"], varied["model"], varied["asked"]) == ("x < 3", "hybrid:variation", 0)
    known = hybrid(history, task="output", code="x")
    assert (known["answer"], known["model"], known["asked"]) == ("1000", "hybrid:baseline", 0)

    # the forms: hybrid: then one model form (its adapter as local's)
    for good in ("hybrid:openai:m", "hybrid:anthropic:claude", "hybrid:local",
                 "hybrid:local:/m.gguf", "hybrid:local:/m.gguf+/a.gguf"):
        assert check_predictor_name(good) == good
    for bad in ("hybrid:", "hybrid:baseline", "hybrid:copy-previous", "hybrid:hybrid",
                "hybrid:hybrid:openai:m", "hybrid:openai:", "hybrid:x"):
        with pytest.raises(PredictorSpecError):
            check_predictor_name(bad)
    assert [runs_local_model(s) for s in ("hybrid", "hybrid+a.gguf", "hybrid:local:/m.gguf",
                                          "local", "hybrid:openai:m", "openai:m",
                                          "copy-previous")] == [
        True, True, True, True, False, False, False]
