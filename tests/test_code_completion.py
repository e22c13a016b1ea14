"""Inline completion by the embedded code model (Qwen2.5-Coder 0.5B, installed by the test
command): fill-in-the-middle over the notebook and its runtime state (a real
jupyter_server, kernel and llama.cpp)."""

from __future__ import annotations

import json

import pytest
from test_server import start_kernel, wait_for_steps

from themisto_ext.prediction.clients.local import models
from themisto_ext.prediction.prompts.code import build_infill, notebook_script

CODE_MODEL = "qwen2.5-coder-0.5b"


def step(n: int, code: str, output: str = "", variables: dict | None = None) -> dict:
    return {"step": n, "code": code, "output": output, "runtime_variables": variables or {}}


FRAME = {"type": "DataFrame", "size": 300, "shape": [5, 2],
         "repr": "   score_0  score_1\n0     0.1      0.2"}


def test_the_notebook_is_a_script_and_the_state_comments():
    history = [step(1, "import pandas as pd"),
               step(2, "df = make()\ndf.shape", "(5, 2)", {"df": FRAME, "pd": {
                   "type": "module", "size": None, "repr": "<module 'pandas'>"}})]
    script = notebook_script(history, 10_000)
    assert script == "# %%\nimport pandas as pd\n# %%\ndf = make()\ndf.shape\n# Out: (5, 2)\n"
    full = dict(build_infill(history, "df['sc", "", "full").files)
    assert "# df: DataFrame, shape (5, 2)\n#        score_0  score_1" in full["state.py"]
    assert "<module 'pandas'>" in full["state.py"]
    curated = dict(build_infill(history, "df['sc", "", "curated").files)
    assert "# df: DataFrame" in curated["state.py"]  # the name the typed cell reads
    assert "state.py" not in dict(build_infill(history, "df['sc", "", "none").files)
    # the oldest cells go first when the budget cuts; the newest stays whole
    assert notebook_script(history, 40) == "# %%\ndf = make()\ndf.shape\n# Out: (5, 2)\n"


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    assert models.installed_path(CODE_MODEL), "scripts/test.sh installs the code model"
    return themisto_config(predictors=["hybrid"], contexts=["full"], model=CODE_MODEL)


async def complete(jp_fetch, kernel_id: str, beginning: str, after: str = "") -> dict:
    r = await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(
        {"kernel_id": kernel_id, "beginning": beginning, "after": after}))
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
