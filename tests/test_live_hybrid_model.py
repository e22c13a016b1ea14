"""``hybrid:openai:MODEL`` live: the rules over a named model, which also writes the next
cells no variation predicts (a real jupyter_server, kernel and HTTP model server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_llm import FakeLLM
from test_live_predictions import store_of, wait_for, with_model_server
from test_server import start_kernel, wait_for_steps

NAME = "hybrid:openai:fake-model"


@pytest.fixture
def jp_server_config(themisto_config, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    with FakeLLM(answer="<code>\nprint(answer)\n</code>") as llm:
        yield with_model_server(themisto_config, llm, monkeypatch, predictors=[NAME],
                                contexts=["full"])


async def test_the_named_model_writes_the_next_cell_and_the_rules_the_output(
        jp_fetch, jp_serverapp):
    live = jp_serverapp.web_app.settings["themisto"].live
    assert NAME not in live.budgets  # a remote model's prompts are not cut to the local 2,500
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await client.execute_interactive("answer = 41 + 1", timeout=30)
        tid = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
        # a person reads the prediction before running the next cell (else it is superseded)
        await wait_for(lambda: any(p["task"] == "next-cell" and p["answer"]
                                   for p in store.predictions(tid, target_step=2)))
        await client.execute_interactive("answer", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 2)

        def scored(task: str) -> list[dict]:
            return [p for p in store.predictions(tid, target_step=2)
                    if p["task"] == task and p["scores"]]
        await wait_for(lambda: scored("next-cell") and scored("output"))
        (nxt,), (out,) = scored("next-cell"), scored("output")
        # nothing varies in an assignment: the model wrote the next cell, scored on the real one
        assert (nxt["predictor"], nxt["model"], nxt["answer"], nxt["reference"]) == (
            NAME, "hybrid:fake-model", "print(answer)", "answer")
        # the rules determine `answer` from the snapshot: no model needed for the output
        assert (out["model"], out["answer"], out["scores"]["exact_match"]) == (
            "hybrid:baseline", "42", 1.0)
    finally:
        client.stop_channels()
