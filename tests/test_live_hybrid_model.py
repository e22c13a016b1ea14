"""``hybrid:openai:MODEL`` live: the rules over a named model, which also writes the next
cells no variation predicts and completes the cell being typed (a real jupyter_server,
kernel and HTTP model server)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_llm import FakeLLM
from test_live_predictions import store_of, wait_for, with_model_server
from test_server import start_kernel, wait_for_steps

NAME = "hybrid:openai:fake-model"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(answer="<code>\nprint(answer)\n</code>") as server:
        yield server


@pytest.fixture
def jp_server_config(themisto_config, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> dict:
    return with_model_server(themisto_config, llm, monkeypatch, predictors=[NAME],
                             contexts=["full"])


async def test_the_named_model_writes_the_next_cell_and_the_rules_the_output(
        jp_fetch, jp_serverapp, llm):
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


async def complete(jp_fetch, body: dict) -> dict:
    r = await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(body),
                       raise_error=False)
    return {"status": r.code, **json.loads(r.body)}


async def test_the_named_model_completes_the_cell_being_typed(jp_fetch, jp_serverapp, llm):
    predictors = json.loads((await jp_fetch("themisto", "api", "predictors")).body)
    assert predictors["completer"] == NAME
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("answer = 41 + 1", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        done = await complete(jp_fetch, {"kernel_id": kernel_id, "beginning": "print("})
        assert (done["status"], done["completion"], done["predictor"], done["reason"],
                done["after_step"]) == (200, "answer)", NAME, None, 1)
        # (the live next-cell prediction of step 2 asks the model too)
        (user,) = [text for r in llm.requests
                   if "<next_cell_begins>" in (text := r.body["messages"][-1]["content"])]
        assert "<next_cell_begins>\n<code>\nprint(\n</code>" in user
        assert user.endswith("which begins so? Answer with <code>.")
        assert "answer = 41 + 1" in user  # the trajectory, as for every next-cell prompt
        # the model's cell must begin with what was typed, else there is no completion
        other = await complete(jp_fetch, {"kernel_id": kernel_id, "beginning": "x = "})
        assert (other["completion"], other["reason"]) == (
            None, "the model's cell does not begin with the typed text")
        # a secret typed in the cell never reaches the model
        llm.requests.clear()
        secret = "Zq8vR2mX9tLw4Kp7"
        await complete(jp_fetch, {"kernel_id": kernel_id,
                                  "beginning": f'db_password = "{secret}"\n'})
        sent = json.dumps([r.body for r in llm.requests])
        assert secret not in sent and "<redacted>" in sent
        # only blanks typed: nothing to complete, said, and no model asked
        llm.requests.clear()
        blank = await complete(jp_fetch, {"kernel_id": kernel_id, "beginning": " \x1c\n"})
        assert (blank["status"], blank["completion"], blank["reason"]) == (
            200, None, "nothing typed before the cursor")
        assert not llm.requests
        # bad requests: a clear 4xx, never a 500
        for body, status in [({"kernel_id": kernel_id}, 400),
                             ({"kernel_id": kernel_id, "beginning": ""}, 400),
                             ({"kernel_id": kernel_id, "beginning": "x", "after": 3}, 400),
                             ({"kernel_id": kernel_id, "beginning": "x" * 20_001}, 400),
                             ({"kernel_id": "nope", "beginning": "x"}, 404)]:
            assert (await complete(jp_fetch, body))["status"] == status
    finally:
        client.stop_channels()


def test_a_completion_is_what_the_models_cell_adds_to_the_typed_text():
    from themisto_ext.prediction.completion import continuation
    from themisto_ext.prediction.prompts.build import build_prompt

    assert continuation("df.groupby('a').sum()", "df.group") == "by('a').sum()"
    # the answer's post-processing may have eaten the typed blanks: matched exactly
    assert continuation("for x in xs:\n    print(x)", "for x in xs:\n    ") == "print(x)"
    assert continuation("x = 5", "x = ") == "5"
    assert continuation("x = 5", "y = ") is None
    assert continuation("x=5", "x = ") is None
    assert continuation("x = 5", "x = 5") is None  # adds nothing
    with pytest.raises(ValueError, match="beginning"):
        build_prompt([], "output", "full", target_code="x", beginning="x")


async def test_a_model_answer_that_copies_what_was_shown_is_no_prediction(
        jp_fetch, jp_serverapp, llm):
    """The model repeats an earlier output (or the cell's code): the notebook gets an
    abstention (no answer, so no badge and no score), not a prediction."""
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await client.execute_interactive("print(42)", timeout=30)
        tid = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
        for copied, code in (("42", "mystery(1)"), ("mystery(2)", "mystery(2)")):
            llm.answer = f"<output>\n{copied}\n</output>"
            await jp_fetch("themisto", "api", "predictions", method="POST", body=json.dumps(
                {"kernel_id": kernel_id, "task": "output", "code": code}))

            def answered(code: str = code) -> list[dict]:
                return [p for p in store.predictions(tid, target_step=2)
                        if p["task"] == "output" and p["model"] == "hybrid:fake-model"
                        and p["prompt"] and code in p["prompt"]["user"]]
            await wait_for(answered)
            (made,) = answered()
            assert (made["answer"], made["abstained"], made["error"]) == ("", True, None)
    finally:
        client.stop_channels()
