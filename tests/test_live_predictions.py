"""Live predictions in a real jupyter_server with real kernels and a real HTTP model server."""

from __future__ import annotations

import asyncio
import json

import pytest
from contract import follow_live
from fake_llm import FakeLLM, error
from test_server import kernel_status, start_kernel, wait_for_steps


@pytest.fixture
def llm():
    with FakeLLM(answer="42") as server:
        yield server


def with_model_server(themisto_config, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch,
                      **config: list[str]) -> dict:
    """The server's config, its OpenAI-compatible predictors pointed at ``llm``."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "k" * 24)
    return themisto_config(**config)


@pytest.fixture
def jp_server_config(themisto_config, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> dict:
    return with_model_server(themisto_config, llm, monkeypatch,
                             predictors=["baseline", "openai:fake-model"],
                             contexts=["none", "full"])


def store_of(jp_serverapp):
    return jp_serverapp.web_app.settings["themisto"].store.sync


async def wait_for(condition, timeout: float = 15):
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_each_cell_gets_scored_output_and_next_cell_predictions(jp_fetch, jp_serverapp,
                                                                       llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await client.execute_interactive("answer = 41 + 1", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)  # a person pauses between cells
        await asyncio.sleep(0.2)
        await client.execute_interactive("answer", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 2)
        tid = status["trajectory_id"]

        def all_scored() -> bool:
            outputs = store.predictions(tid, target_step=2)
            return len([p for p in outputs if p["task"] == "output" and p["scores"]]) == 4
        await wait_for(all_scored)
        outputs = [p for p in store.predictions(tid, target_step=2) if p["task"] == "output"]
        by = {(p["predictor"], p["context"]): p for p in outputs}
        assert set(by) == {("baseline", "none"), ("baseline", "full"),
                           ("openai:fake-model", "none"), ("openai:fake-model", "full")}
        for p in outputs:
            assert p["reference"] == "42" and p["kernel_id"] == kernel_id and p["error"] is None
            # under none the baseline sees no runtime state, so it cannot know `answer`
            blind = p["predictor"] == "baseline" and p["context"] == "none"
            assert p["answer"] == ("" if blind else "42")
            assert p["scores"]["exact_match"] == (0.0 if blind else 1.0)
        # the prompt carries runtime state only in the full condition, and never the answer
        assert "answer" in by[("openai:fake-model", "full")]["prompt"]["user"]
        assert "int" in by[("openai:fake-model", "full")]["prompt"]["user"]
        full, none = (by[("openai:fake-model", c)]["prompt"]["user"] for c in ("full", "none"))
        assert "28 B" in full or "28" in full
        assert len(full) > len(none)
        # next-cell predictions follow every step and are scored against the real next cell
        nxt = [p for p in store.predictions(tid, target_step=2) if p["task"] == "next-cell"]
        assert nxt and all(p["reference"] == "answer" for p in nxt)
        api_key = "sk-test-" + "k" * 24
        sent = [r for r in llm.requests if "chat/completions" in r.path]
        assert sent and all(r.headers.get("authorization") == f"Bearer {api_key}" for r in sent)
        r = await jp_fetch("themisto", "api", "trajectories", tid, "predictions")
        listed = json.loads(r.body)["predictions"]
        assert len(listed) >= 8 and api_key not in r.body.decode()
    finally:
        client.stop_channels()


async def test_provider_failures_become_prediction_errors(jp_fetch, jp_serverapp, llm):
    llm.script(*[error(401, "bad key")] * 10)
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await client.execute_interactive("x = 1", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 1)
        tid = status["trajectory_id"]

        def failed() -> list:
            return [p for p in store.predictions(tid)
                    if p["predictor"] == "openai:fake-model" and p["error"]]
        await wait_for(lambda: len(failed()) >= 2)
        assert failed()[0]["error"]["type"] == "ProviderAuthError"
        assert "sk-test" not in json.dumps(failed())
        # baseline predictions are unaffected and the server keeps working
        assert any(p["predictor"] == "baseline" and not p["error"]
                   for p in store.predictions(tid))
        await client.execute_interactive("y = 2", timeout=30)
        assert (await wait_for_steps(jp_fetch, kernel_id, 2))["steps"] == 2
    finally:
        client.stop_channels()


async def test_predict_on_request(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await client.execute_interactive("v = [1, 2, 3]", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 1)
        r = await jp_fetch("themisto", "api", "predictions", method="POST",
                           body=json.dumps({"kernel_id": kernel_id, "task": "output",
                                            "code": "len(v)"}))
        assert r.code == 202 and json.loads(r.body)["target_step"] == 2
        def requested() -> list:
            return [p for p in store.predictions(status["trajectory_id"], target_step=2)
                    if p["task"] == "output" and p["predictor"] == "baseline"]
        await wait_for(lambda: len(requested()) == 2)
        by_context = {p["context"]: p["answer"] for p in requested()}
        assert by_context == {"full": "3", "none": ""}  # len(v) needs the runtime state
        r = await jp_fetch("themisto", "api", "predictors")
        assert json.loads(r.body) == {
            "predictors": ["baseline", "openai:fake-model"], "contexts": ["none", "full"],
            "live": True, "speculation": {"made": 0, "used": 0, "cpu_seconds_used": 0,
                                          "cpu_seconds_thrown_away": 0},
            "local_models": [],  # neither runs the embedded model
            "completer": "openai:fake-model"}  # a model that writes cells
        assert (await kernel_status(jp_fetch, kernel_id))["steps"] == 1
    finally:
        client.stop_channels()


async def test_each_predictor_gets_its_own_prompt_budget(jp_fetch, jp_serverapp):
    live = jp_serverapp.web_app.settings["themisto"].live
    live.budgets = {"baseline": 1_500}  # as the server sets it for the local model
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        for i in range(4):
            await client.execute_interactive(f"v{i} = 'x' * 600\nprint(v{i})", timeout=30)
            await wait_for_steps(jp_fetch, kernel_id, i + 1)
        status = await wait_for_steps(jp_fetch, kernel_id, 4)

        def full_prompts() -> dict[str, int]:
            return {p["predictor"]: len(p["prompt"]["system"] + p["prompt"]["user"])
                    for p in store.predictions(status["trajectory_id"], target_step=4)
                    if p["task"] == "output" and p["context"] == "full"}
        await wait_for(lambda: len(full_prompts()) == 2)
        sizes = full_prompts()
        assert sizes["baseline"] <= 1_500 < sizes["openai:fake-model"]
    finally:
        client.stop_channels()


async def test_live_stream_events_are_slim_and_match_their_schemas(jp_fetch, jp_ws_fetch,
                                                                   jp_serverapp, api_contract):
    stream = await follow_live(jp_ws_fetch, api_contract, jp_serverapp)  # each event checked
    events = stream.events
    try:
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        try:
            for on in (False, True):
                await jp_fetch("themisto", "api", "kernels", kernel_id, method="PUT",
                               body=json.dumps({"recording": on}))
            await client.execute_interactive("answer = 41 + 1", timeout=30)
            await wait_for_steps(jp_fetch, kernel_id, 1)
            await asyncio.sleep(0.2)
            await client.execute_interactive("answer", timeout=30)
            await wait_for(lambda: sum(name == "scored" for name, _ in events) >= 4)
        finally:
            client.stop_channels()
    finally:
        stream.close()
    names = [name for name, _ in events]
    assert {"heartbeat", "trajectory", "step", "recording", "predicting", "prediction",
            "scored"} <= set(names)
    switches = [data["recording"] for name, data in events if name == "recording"]
    assert switches[:2] == [False, True]
    predictions = [data["prediction"] for name, data in events if name == "prediction"]
    assert predictions and all("prompt" not in p and "raw" not in p for p in predictions)
    steps = [data["step"] for name, data in events if name == "step"]
    assert steps and all("outputs" not in s and "hash_index" not in s for s in steps)
    # the prompt is there on demand
    r = await jp_fetch("themisto", "api", "predictions", predictions[0]["id"])
    whole = json.loads(r.body)
    assert whole["prompt"]["user"] and whole["id"] == predictions[0]["id"]


async def test_a_prediction_the_server_fails_to_deliver_still_ends(jp_fetch, jp_serverapp,
                                                                   monkeypatch):
    # The store refuses every write of a prediction (a full disk): each cell that was told
    # "predicting" hears the end, a failed record on the stream, not silence forever.
    from contract import listen

    themisto = jp_serverapp.web_app.settings["themisto"]
    seen = listen(themisto.events)
    await themisto.events.logger.gather_listeners()

    def refuse(record):
        raise OSError("No space left on device")

    monkeypatch.setattr(store_of(jp_serverapp), "save_prediction", refuse)
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("answer = 41 + 1", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)

        def ended() -> bool:
            started = {(e["predictor"], e["context"], e["task"], e["target_step"])
                       for e in seen if e["type"] == "predicting"}
            done = {(p["predictor"], p["context"], p["task"], p["target_step"])
                    for e in seen if e["type"] == "prediction" for p in [e["prediction"]]}
            return bool(started) and started <= done
        await wait_for(ended, timeout=60)
        failed = [e["prediction"] for e in seen if e["type"] == "prediction"]
        assert failed and all(p["error"]["message"].startswith("the prediction failed")
                              for p in failed)
    finally:
        client.stop_channels()
