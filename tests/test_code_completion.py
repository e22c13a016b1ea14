"""Inline completion by the embedded code model (Qwen2.5-Coder 0.5B, installed by the test
command): fill-in-the-middle over the notebook and its runtime state (a real
jupyter_server, kernel and llama.cpp)."""

from __future__ import annotations

import json

import pytest
from test_server import start_kernel, wait_for_steps

from themisto_ext.prediction.clients.local import models
from themisto_ext.prediction.prompts.code import build_infill, build_next_cell, notebook_script

CODE_MODEL = "qwen2.5-coder-0.5b"


def step(n: int, code: str, output: str = "", variables: dict | None = None) -> dict:
    return {"step": n, "code": code, "output": output, "runtime_variables": variables or {},
            "execution_time": 0.01}


FRAME = {"type": "DataFrame", "size": 300, "shape": [5, 2],
         "repr": "   score_0  score_1\n0     0.1      0.2"}


def test_the_notebook_is_a_script_and_the_state_comments():
    history = [step(1, "import pandas as pd"),
               step(2, "df = make()\ndf.shape", "(5, 2)", {"df": FRAME, "pd": {
                   "type": "module", "size": None, "repr": "<module 'pandas'>"}})]
    script = notebook_script(history, 10_000)
    assert script == ("# In[1]:\nimport pandas as pd\n\n"
                      "# In[2]:\ndf = make()\ndf.shape\n# Out: (5, 2)\n\n")
    full = build_infill(history, "df['sc", "']", "full")
    assert full.before.startswith(script)  # the notebook, then the state, then the cell
    assert "# df: DataFrame, shape (5, 2)\n#        score_0  score_1" in full.before
    assert "<module 'pandas'>" in full.before
    assert full.before.endswith("\n# In[3]:\ndf['sc") and full.after == "']"
    curated = build_infill(history, "df['sc", "", "curated").before
    assert "# df: DataFrame" in curated  # the name the typed cell reads
    assert build_infill(history, "df['sc", "", "none").before == script + "# In[3]:\ndf['sc"
    # a completion and the next cell share everything before the typed text: one cache
    nxt = build_next_cell(history, "", "full")
    assert full.before.startswith(nxt.before) and nxt.stop and not nxt.line
    # the oldest cells go first when the budget cuts; the newest stays whole
    assert notebook_script(history, 40) == "# In[2]:\ndf = make()\ndf.shape\n# Out: (5, 2)\n\n"


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    assert models.installed_path(CODE_MODEL), "scripts/test.sh installs the code model"
    return themisto_config(predictors=["hybrid"], contexts=["full"], model=CODE_MODEL)


async def complete(jp_fetch, kernel_id: str, beginning: str, after: str = "") -> dict:
    # (a busy machine may take a while: the tests wait for the answer, not a fixed time)
    r = await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(
        {"kernel_id": kernel_id, "beginning": beginning, "after": after}),
        request_timeout=300)
    return json.loads(r.body)


async def test_the_code_model_completes_from_the_runtime_state(jp_fetch, jp_serverapp):
    r = await jp_fetch("themisto", "api", "predictors")
    predictors = json.loads(r.body)
    assert predictors["completer"] == "hybrid"  # the embedded code model fills in code
    (process,) = predictors["local_models"]
    assert process["model"] == models.MODELS[CODE_MODEL].file
    assert process["model_bytes"] == models.MODELS[CODE_MODEL].size
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        # column names that only the runtime state shows (computed, never written out)
        await client.execute_interactive(
            "import pandas as pd\nnames = ['height_cm', 'weight_kg']\n"
            "people = pd.DataFrame([[170, 65], [182, 80]], columns=names)", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        done = await complete(jp_fetch, kernel_id, "people['wei")
        assert done["predictor"] == "hybrid" and done["reason"] is None, done
        assert done["completion"].startswith("ght_kg']"), done
        assert "\n" not in done["completion"]  # the rest of the line
        # text after the cursor is kept: the model fills the middle
        middle = await complete(jp_fetch, kernel_id, "bmi = people['weight_kg'] / (people['",
                                after="'] / 100) ** 2")
        assert middle["completion"] and middle["completion"].startswith("height_cm"), middle
    finally:
        client.stop_channels()


async def test_a_newer_keystroke_leaves_no_stale_work(jp_fetch, jp_serverapp):
    """Completions asked one after another each answer; the model keeps up."""
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        answers = [await complete(jp_fetch, kernel_id, typed)
                   for typed in ("sorted(va", "sorted(val", "sorted(valu")]
        assert all(a["completion"] for a in answers), answers
    finally:
        client.stop_channels()


async def test_the_code_model_writes_next_cells_but_never_a_repeat_or_a_variant():
    """Under ``hybrid`` a code model writes the next cell where no variation applies; a
    copy or a variant of a cell already run, or comments alone, is an abstention. By
    default its cells are not shown (measured below copying): it reads the notebook so
    that the completion typed next begins warm."""
    from themisto_ext.prediction.clients import make_predictor
    from themisto_ext.prediction.clients.hybrid import HybridPredictor, _is_variant
    from themisto_ext.prediction.run import predict
    from themisto_ext.records import Scope

    cells = [step(1, "import pandas as pd"),
             step(2, "df = pd.read_csv('students.csv')\ndf.head()",
                  "   name  age  score\n0  Ann   21   80\n1  Bob   22   70"),
             step(3, "df['age'].mean()", "21.5"),
             step(4, "df.describe()", "        age  score\ncount   2.0    2.0")]
    shown = HybridPredictor(make_predictor("local", local_model=CODE_MODEL), cells=True)
    try:
        got = [await predict(shown, cells[:n], "next-cell", "full", scope=Scope("t"),
                             target_step=n + 1, session="s") for n in range(1, 5)]
    finally:
        await shown.aclose()
    by_model = [r for r in got if r["model"].startswith("hybrid:qwen2.5-coder-0.5b")]
    for n, record in enumerate(got, start=1):
        assert record["error"] is None, record
        if record in by_model and not record["abstained"]:
            answer = record["answer"]
            assert answer.strip() and "# In[" not in answer and "# Out" not in answer
            assert not _is_variant(answer, cells[:n]), (n, answer)
    assert any(not r["abstained"] for r in by_model), got  # it does write cells

    default = make_predictor("hybrid", local_model=CODE_MODEL)
    try:
        assert default.model_next_cells is False  # type: ignore[attr-defined]
        quiet = await predict(default, cells[:1], "next-cell", "full", scope=Scope("t"),
                              target_step=2, session="t")
        assert (quiet["answer"], quiet["model"], quiet["abstained"]) == (
            "", "hybrid:abstain", True), quiet
        typed = await default.infill(build_infill(cells[:1], "import num", "", "full"),
                                     "t")  # type: ignore[attr-defined]
        assert typed.prompt_tokens - typed.cached_tokens <= 8, typed  # read when it abstained
    finally:
        await default.aclose()


async def test_the_next_keystroke_cancels_the_completion_under_way(jp_fetch, jp_serverapp):
    import asyncio

    live = jp_serverapp.web_app.settings["themisto"].live
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        # a long typed text the model has not read: seconds of work, under way when the
        # next keystroke's request comes
        long = "".join(f"total_{i} = sum(values) * {i}\n" for i in range(150)) + "sorted(va"
        first = asyncio.ensure_future(complete(jp_fetch, kernel_id, long))
        for _ in range(600):
            if live._completing:
                break
            await asyncio.sleep(0.05)
        assert live._completing, "the first completion never started"
        second = await complete(jp_fetch, kernel_id, "sorted(val")
        replaced = await first
        assert replaced["completion"] is None, replaced
        assert replaced["reason"] == "a newer keystroke replaced it"
        assert second["completion"], second
        assert not live._completing and not live._replaced  # nothing left behind
    finally:
        client.stop_channels()


async def test_a_request_the_browser_gives_up_stops_its_model(
        jp_fetch, jp_serverapp, http_server_client, jp_base_url, jp_auth_header):
    """The front end aborts a completion request at the next keystroke: the server cancels
    its job (the model stops at its next token) instead of writing an answer nobody reads."""
    import asyncio

    import httpx

    live = jp_serverapp.web_app.settings["themisto"].live
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        url = http_server_client.get_url(f"{jp_base_url}themisto/api/completions")
        long = "".join(f"total_{i} = sum(values) * {i}\n" for i in range(150)) + "sorted(va"
        async with httpx.AsyncClient(headers=dict(jp_auth_header), timeout=120) as http:
            asked = asyncio.ensure_future(http.post(url, json={
                "kernel_id": kernel_id, "beginning": long}))
            for _ in range(600):
                if live._completing:
                    break
                await asyncio.sleep(0.05)
            (job,) = live._completing.values()
            asked.cancel()  # the browser's abort: the connection closes
            for _ in range(600):
                if job.done():
                    break
                await asyncio.sleep(0.05)
        assert job.cancelled(), "the job ran on after its request was given up"
        assert not live._completing
        # and the model is free for the next keystroke's request
        done = await complete(jp_fetch, kernel_id, "sorted(val")
        assert done["completion"], done
    finally:
        client.stop_channels()
