"""Speculative output predictions: a cell's output predicted from its text before it runs,
used when it runs with that text; real jupyter_server, real kernels, a real HTTP model."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fake_llm import FakeLLM, last_user, ok, user_text
from test_live_predictions import store_of, wait_for
from test_server import start_kernel, wait_for_steps
from tornado.httpclient import HTTPClientError

from themisto_ext.prediction.prompts.build import QUESTIONS
from themisto_ext.prediction.speculation import Speculation, Speculations

SLOW_CELL = "import time; time.sleep(2); x + 1"


@pytest.fixture
def llm():
    with FakeLLM(answer="2") as server:
        yield server


@pytest.fixture
def speculation_on() -> bool:
    return True


@pytest.fixture
def jp_server_config(themisto_config, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch,
                     speculation_on: bool) -> dict:
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "k" * 24)
    return themisto_config(predictors=["openai:fake-model"], contexts=["full"],
                           speculation=speculation_on)


def output_requests(llm: FakeLLM) -> list[str]:
    """The last user messages of the output predictions the model was asked for (every
    prompt's demonstration asks both questions; the last message asks the real one)."""
    asked = [user_text(last_user(r.body["messages"])) for r in llm.requests
             if "chat/completions" in r.path]
    return [text for text in asked if text.rstrip().endswith(QUESTIONS["output"])]


async def speculate(jp_fetch, kernel_id: str, code: str, cell_id: str | None = "c2") -> dict:
    r = await jp_fetch("themisto", "api", "speculations", method="POST",
                       body=json.dumps({"kernel_id": kernel_id, "code": code, "cell_id": cell_id}))
    assert r.code == 202
    reply: dict = json.loads(r.body)
    return reply


async def first_step(jp_fetch, jp_serverapp, client, kernel_id: str) -> str:
    """Run ``x = 1`` and wait until its predictions are done (the model is idle)."""
    await client.execute_interactive("x = 1", timeout=30)
    tid: str = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
    store = store_of(jp_serverapp)
    await wait_for(lambda: {p["task"] for p in store.predictions(tid)} == {"output",
                                                                          "next-cell"})
    return tid


async def slow_speculation(jp_fetch, live, llm: FakeLLM, kernel_id: str, tid: str,
                           code: str) -> Speculation:
    """A speculation whose model call takes 5 s, under way."""
    llm.script(ok("stale", delay=5))
    await speculate(jp_fetch, kernel_id, code)
    pending: Speculation = live.speculations.get(tid)
    await wait_for(lambda: llm.in_flight == 1)
    return pending


def output_prediction(store, tid: str, step: int) -> dict | None:
    found = [p for p in store.predictions(tid, target_step=step) if p["task"] == "output"]
    assert len(found) <= 1
    return found[0] if found else None


async def test_speculated_prediction_is_used_when_the_same_code_runs(jp_fetch, jp_serverapp,
                                                                     llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    live, store = jp_serverapp.web_app.settings["themisto"].live, store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        asked = len(output_requests(llm))  # cell 1's own
        reply = await speculate(jp_fetch, kernel_id, SLOW_CELL)
        assert reply == {"accepted": True, "reason": None, "trajectory_id": tid,
                         "target_step": 2}
        await wait_for(lambda: live.speculations.get(tid).done)
        assert len(output_requests(llm)) == asked + 1 and "x + 1" in output_requests(llm)[-1]
        # kept, not stored or shown before the cell runs
        assert output_prediction(store, tid, 2) is None
        await asyncio.sleep(0.3)  # a person reads the cell before running it

        running = asyncio.ensure_future(client.execute_interactive(SLOW_CELL, timeout=30))
        await wait_for(lambda: output_prediction(store, tid, 2) is not None, timeout=1.5)
        assert not running.done()  # there before the real output (the cell sleeps 2 s)
        assert [s["step"] for s in store.iter_steps(tid)] == [1]
        await running
        await wait_for(lambda: (output_prediction(store, tid, 2) or {}).get("scores") is not None)
        made = output_prediction(store, tid, 2)
        assert made is not None
        assert made["speculative"] is True and made["answer"] == "2"
        assert made["ready_before_start"] is not None and made["ready_before_start"] >= 0.3
        assert made["cell_id"] is not None and made["reference"] == "2"
        assert made["scores"]["exact_match"] == 1.0
        assert len(output_requests(llm)) == asked + 1  # no second model call for the cell
        # a speculation is used once: the next cell is predicted as it runs
        assert live.speculations.get(tid) is None
    finally:
        client.stop_channels()


async def test_a_cell_run_with_other_code_is_predicted_live(jp_fetch, jp_serverapp, llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    live, store = jp_serverapp.web_app.settings["themisto"].live, store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        asked = len(output_requests(llm))
        await speculate(jp_fetch, kernel_id, "x + 1")
        await wait_for(lambda: live.speculations.get(tid).done)
        await client.execute_interactive("x + 2", timeout=30)  # edited after the pause
        await wait_for(lambda: output_prediction(store, tid, 2) is not None)
        made = output_prediction(store, tid, 2)
        assert made is not None
        assert made["speculative"] is False and made["ready_before_start"] is None
        prompts = output_requests(llm)[asked:]
        assert len(prompts) == 2 and "x + 1" in prompts[0] and "x + 2" in prompts[1]
        assert live.speculations.get(tid) is None  # thrown away
    finally:
        client.stop_channels()


async def test_an_edit_supersedes_the_pending_speculation(jp_fetch, jp_serverapp, llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    live, store = jp_serverapp.web_app.settings["themisto"].live, store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        first = await slow_speculation(jp_fetch, live, llm, kernel_id, tid, "x + 10")
        began = time.monotonic()
        await speculate(jp_fetch, kernel_id, "x + 20")  # the text changed
        second = live.speculations.get(tid)
        assert second is not first and second.code == "x + 20"
        await wait_for(lambda: first.done and second.done, timeout=3)
        assert time.monotonic() - began < 3  # not behind the superseded one's 5 s
        combo = ("openai:fake-model", "full")
        assert first.outcomes[combo].result() is None  # abandoned, never kept
        assert first.job is not None and first.job.done()
        assert second.outcomes[combo].result()["answer"] == "2"
        # the same text announced again keeps the speculation under way
        await speculate(jp_fetch, kernel_id, "x + 20")
        assert live.speculations.get(tid) is second

        await client.execute_interactive("x + 20", timeout=30)
        await wait_for(lambda: output_prediction(store, tid, 2) is not None)
        made = output_prediction(store, tid, 2)
        assert made is not None and made["speculative"] is True
        assert not any(p["answer"] == "stale" for p in store.predictions(tid))
        r = await jp_fetch("themisto", "api", "predictors")
        # an HTTP model computes elsewhere: no CPU of this machine is booked
        assert json.loads(r.body)["speculation"] == {
            "made": 2, "used": 1, "cpu_seconds_used": 0, "cpu_seconds_thrown_away": 0}
    finally:
        client.stop_channels()


async def test_a_running_cell_preempts_speculation(jp_fetch, jp_serverapp, llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    live, store = jp_serverapp.web_app.settings["themisto"].live, store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        pending = await slow_speculation(jp_fetch, live, llm, kernel_id, tid, "x + 30")
        began = time.monotonic()
        running = asyncio.ensure_future(client.execute_interactive(SLOW_CELL, timeout=30))
        await wait_for(lambda: output_prediction(store, tid, 2) is not None, timeout=2)
        assert time.monotonic() - began < 2  # not behind the speculation's 5 s
        assert pending.done and pending.job is not None and pending.job.done()
        made = output_prediction(store, tid, 2)
        assert made is not None and made["speculative"] is False and made["answer"] == "2"
        # none starts while the kernel runs a cell
        reply = await speculate(jp_fetch, kernel_id, "x + 40")
        assert reply["accepted"] is False and reply["reason"] == "the kernel is running a cell"
        assert live.speculations.get(tid) is None
        await running
        await wait_for_steps(jp_fetch, kernel_id, 2)
        assert (await speculate(jp_fetch, kernel_id, "x + 40"))["accepted"] is True
    finally:
        client.stop_channels()


@pytest.mark.parametrize("speculation_on", [False])
async def test_speculation_can_be_switched_off(jp_fetch, jp_serverapp, llm):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        asked = len(output_requests(llm))
        reply = await speculate(jp_fetch, kernel_id, "x + 1")
        assert reply["accepted"] is False
        assert reply["reason"] == "speculation is off on this server"
        await client.execute_interactive("x + 1", timeout=30)
        await wait_for(lambda: output_prediction(store, tid, 2) is not None)
        made = output_prediction(store, tid, 2)
        assert made is not None and made["speculative"] is False
        assert len(output_requests(llm)) == asked + 1  # only the live one
    finally:
        client.stop_channels()


async def test_speculation_requests_are_checked(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        bad = [({"code": "1"}, "kernel_id"), ({"kernel_id": kernel_id}, "code"),
               ({"kernel_id": kernel_id, "code": 1}, "code"),
               ({"kernel_id": kernel_id, "code": "1", "cell_id": 3}, "cell_id")]
        for body, field in bad:
            with pytest.raises(HTTPClientError) as caught:
                await jp_fetch("themisto", "api", "speculations", method="POST",
                               body=json.dumps(body))
            assert caught.value.code == 400
            assert json.loads(caught.value.response.body)["message"].startswith(field)
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch("themisto", "api", "speculations", method="POST", body="[1")
        assert caught.value.code == 400
        with pytest.raises(HTTPClientError) as caught:
            await speculate(jp_fetch, "no-such-kernel", "1")
        assert caught.value.code == 404
        reply = await speculate(jp_fetch, kernel_id, "  \n")
        assert reply["accepted"] is False and reply["reason"] == "the cell is empty"
    finally:
        client.stop_channels()


async def test_secrets_in_a_cell_sent_before_it_runs_never_reach_the_model(jp_fetch,
                                                                        jp_serverapp, llm):
    """The kernel has not seen a cell's text yet when the front end sends it: the server
    masks it as the kernel will (so the speculation still matches the cell that runs)."""
    secret = "Zq8vR2mX9tLw4Kp7"
    code = f'import time; db_password = "{secret}"; time.sleep(1); x + 1'
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    live, store = jp_serverapp.web_app.settings["themisto"].live, store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        await speculate(jp_fetch, kernel_id, code)
        await wait_for(lambda: live.speculations.get(tid).done)
        await client.execute_interactive(code, timeout=30)
        await wait_for(lambda: (output_prediction(store, tid, 2) or {}).get("scores") is not None)
        made = output_prediction(store, tid, 2)
        assert made is not None and made["speculative"] is True
        # Asked for by hand, for the cell after it.
        await jp_fetch("themisto", "api", "predictions", method="POST", body=json.dumps(
            {"kernel_id": kernel_id, "task": "output", "code": f"token = '{secret}'"}))
        await wait_for(lambda: sum("token = " in text for text in output_requests(llm)) == 1)
        sent = json.dumps([r.body for r in llm.requests])
        assert secret not in sent and "<redacted>" in sent
        assert secret not in json.dumps(list(store.predictions(tid)))
        assert secret not in json.dumps(list(store.iter_steps(tid)))
    finally:
        client.stop_channels()


def test_the_cpu_of_speculations_is_booked_by_what_became_of_them():
    """A job reports its CPU when it ends, which may be after its speculation was taken or
    thrown away: both orders land in the right account."""
    speculations = Speculations()
    edited = Speculation("t", "x + 1", 1, None)
    speculations.replace(edited)
    speculations.spend(edited, 2.0)
    final = Speculation("t", "x + 2", 1, None)
    speculations.replace(final)  # the text changed: the first is thrown away
    speculations.spend(edited, 0.5)  # its job stopped at its next token, after
    speculations.spend(final, 1.0)
    assert speculations.cpu_seconds == {"used": 0.0, "thrown_away": 2.5}
    assert speculations.claim("t", "x + 2", 2) is final
    speculations.spend(final, 0.25)
    speculations.replace(Speculation("t", "y", 2, None))
    speculations.discard("t")  # the kernel stopped
    assert speculations.cpu_seconds == {"used": 1.25, "thrown_away": 2.5}
    assert (speculations.made, speculations.used) == (3, 1)


async def test_a_speculation_is_shown_before_its_cell_runs(jp_fetch, jp_serverapp, llm):
    # "If you run this cell": the answer is on the live stream as soon as it is made,
    # under the text's code_hash, before Shift+Enter; not stored until the cell runs.
    from contract import listen

    from themisto_ext.records import code_hash

    themisto = jp_serverapp.web_app.settings["themisto"]
    seen = listen(themisto.events)  # (each event checked against its schema)
    await themisto.events.logger.gather_listeners()
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    store = store_of(jp_serverapp)
    try:
        tid = await first_step(jp_fetch, jp_serverapp, client, kernel_id)
        await speculate(jp_fetch, kernel_id, "x + 1", cell_id="c2")
        await wait_for(lambda: any(e["type"] == "speculated" for e in seen))
        event = next(e for e in seen if e["type"] == "speculated")
        assert event["code_hash"] == code_hash("x + 1") and event["trajectory_id"] == tid
        shown = event["prediction"]
        assert shown["answer"] == "2" and shown["target_step"] == 2
        assert shown["cell_id"] == "c2" and "prompt" not in shown
        assert output_prediction(store, tid, 2) is None  # not stored before the run
    finally:
        client.stop_channels()
