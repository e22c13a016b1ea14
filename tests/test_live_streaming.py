"""Streamed live predictions: the answer reaches the live stream piece by piece while the
model writes it (``writing`` events), then whole as the stored prediction; real
jupyter_server, real kernel, a real HTTP model streaming in the OpenAI wire format."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from contract import LiveStream, follow_live
from fake_llm import FakeLLM, ok
from test_live_predictions import store_of, wait_for
from test_server import start_kernel, wait_for_steps

ANSWER = "<output>\n[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]\n</output>"


@pytest.fixture
def llm():
    with FakeLLM(answer=ANSWER) as server:
        yield server


async def follow(jp_ws_fetch, jp_serverapp, api_contract) -> tuple[list, list[float],
                                                                    LiveStream]:
    """The live stream as the panel reads it: (events, when each arrived, the stream),
    every event checked against the API's schemas on arrival."""
    stream = await follow_live(jp_ws_fetch, api_contract, jp_serverapp)
    return stream.events, stream.arrived, stream


@pytest.fixture
def jp_server_config(themisto_config, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "k" * 24)
    return themisto_config(predictors=["openai:fake-model"], contexts=["full"])


async def test_an_answer_is_streamed_to_the_panel_while_the_model_writes(
        jp_fetch, jp_ws_fetch, jp_serverapp, llm, api_contract):
    events, arrived, stream = await follow(jp_ws_fetch, jp_serverapp, api_contract)
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        await wait_for(lambda: events)
        await client.execute_interactive("squares = [i * i for i in range(10)]", timeout=30)
        tid = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
        await wait_for(lambda: any(p["task"] == "next-cell" for p in store.predictions(tid)))
        # a model writing ten pieces a second, for the output prediction of step 2 and for
        # the next-cell prediction after it: on a loaded machine the cell's start and its
        # step can be ingested together, and either request may reach the model first
        llm.script(ok(piece_delay=0.1), ok(piece_delay=0.1))
        began = time.monotonic()
        await client.execute_interactive("squares", timeout=30)

        def output_of_2() -> list:
            return [(n, d) for n, d in zip(events, arrived, strict=True)
                    if n[0] == "prediction" and n[1]["prediction"]["task"] == "output"
                    and n[1]["prediction"]["target_step"] == 2]
        await wait_for(output_of_2)
    finally:
        client.stop_channels()
        stream.close()
    writing = [(data, at) for (name, data), at in zip(events, arrived, strict=True)
               if name == "writing" and data["task"] == "output" and data["target_step"] == 2]
    (((_, final), final_at),) = output_of_2()
    answer = final["prediction"]["answer"]
    assert answer == "[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]"
    texts = [data["text"] for data, _ in writing]
    assert len(texts) >= 5  # piece by piece, not one block
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    assert texts[-1] == answer  # the panel's last partial text is the answer
    assert not any("<" in t for t in texts)  # no tag, not even half-written
    assert all(d["predictor"] == "openai:fake-model" and d["context"] == "full"
               and d["kernel_id"] == kernel_id for d, _ in writing)
    # the first words long before the whole answer (the fake writes 10 pieces a second)
    assert writing[0][1] - began < final_at - began - 0.5
    assert all(at <= final_at for _, at in writing)
    # what is stored is the complete answer
    (stored,) = [p for p in store.predictions(tid, target_step=2) if p["task"] == "output"]
    assert stored["answer"] == answer and stored["raw"].startswith("<output>")
    sent = [r.body for r in llm.requests if r.body and r.body.get("stream")]
    assert sent and all(b["stream_options"] == {"include_usage": True} for b in sent)
    assert json.dumps(stored["prompt"])  # the prompt is kept as before


async def test_a_speculation_still_being_written_streams_once_its_cell_starts(
        jp_fetch, jp_ws_fetch, jp_serverapp, llm, api_contract):
    """Announced before it runs, a cell's output prediction is written unseen; the cell
    starts while the model still writes: the text so far shows at once, the rest streams,
    and the stored prediction is the speculation's."""
    events, arrived, stream = await follow(jp_ws_fetch, jp_serverapp, api_contract)
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    live = jp_serverapp.web_app.settings["themisto"].live
    try:
        await wait_for(lambda: events)
        await client.execute_interactive("squares = [i * i for i in range(10)]", timeout=30)
        tid = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
        await wait_for(lambda: any(p["task"] == "next-cell" for p in store.predictions(tid)))
        llm.script(ok(piece_delay=0.25))  # the speculation: ~5 pieces a second
        r = await jp_fetch("themisto", "api", "speculations", method="POST", body=json.dumps(
            {"kernel_id": kernel_id, "code": "squares", "cell_id": "c2"}))
        assert json.loads(r.body)["accepted"] is True
        speculation = live.speculations.get(tid)
        await wait_for(lambda: len(speculation.written.get(("openai:fake-model", "full"),
                                                           "")) > 3)
        unseen = [d for (name, d) in events if name == "writing" and d["task"] == "output"
                  and d["target_step"] == 2]
        assert unseen == []  # written, not shown: the cell may never run
        began = time.monotonic()
        await client.execute_interactive("squares", timeout=30)
        await wait_for(lambda: output_prediction_event(events) is not None)
    finally:
        client.stop_channels()
        stream.close()
    final_at = arrived[events.index(output_prediction_event(events))]
    writing = [(d, at) for (name, d), at in zip(events, arrived, strict=True)
               if name == "writing" and d["task"] == "output" and d["target_step"] == 2]
    texts = [d["text"] for d, _ in writing]
    answer = "[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]"
    assert len(texts) >= 3 and texts[-1] == answer
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    assert len(texts[0]) > 3  # the first event carries what was written before the start
    assert writing[0][1] - began < final_at - began - 0.5
    assert all(d["cell_id"] == "c2" for d, _ in writing)
    (stored,) = [p for p in store.predictions(tid, target_step=2) if p["task"] == "output"]
    assert stored["speculative"] is True and stored["answer"] == answer


def output_prediction_event(events: list) -> tuple | None:
    return next((e for e in events if e[0] == "prediction"
                 and e[1]["prediction"]["task"] == "output"
                 and e[1]["prediction"]["target_step"] == 2), None)
