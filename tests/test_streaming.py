"""Streamed answers: the OpenAI and Anthropic providers read the real streaming wire
formats (Server-Sent Events) from the fake LLM server and hand over the text as it grows;
the completion is the same as the whole answer's."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator

import pytest
from fake_llm import FakeLLM, error, ok, raw, tokens
from test_providers import KEY, KINDS, PROMPT, SYSTEM, make

from themisto_ext.prediction.clients import ProviderAuthError, ProviderResponseError
from themisto_ext.prediction.clients.base import PredictionRequest
from themisto_ext.prediction.clients.local import LocalPredictor
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.postprocess import partial_answer, postprocess

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("anyio_backend")]

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(answer="[1, 2, 3] and more text") as server:
        yield server


@pytest.mark.parametrize("kind", KINDS)
async def test_a_streamed_answer_arrives_piece_by_piece_and_whole(llm: FakeLLM,
                                                                   kind: str) -> None:
    async with make(kind, llm.url) as provider:
        whole = await provider.complete(PROMPT)
        seen: list[str] = []
        streamed = await provider.complete(PROMPT, seen.append)
    assert streamed.text == whole.text and streamed.text.startswith("[1, 2, 3]")
    assert seen[-1] == streamed.text
    assert len(seen) == len(range(0, len(streamed.text), 4)) > 3  # about one per token
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(seen))
    assert streamed.prompt_tokens == whole.prompt_tokens == tokens(SYSTEM + PROMPT.user)
    assert streamed.completion_tokens == whole.completion_tokens == tokens(streamed.text)
    assert streamed.cached_tokens is not None and streamed.cached_tokens > 0  # the 2nd call
    body = llm.requests[1].body
    assert body["stream"] is True
    if kind == "openai":
        assert body["stream_options"] == {"include_usage": True}
        assert llm.requests[0].body["stream"] is False


@pytest.mark.parametrize("kind", KINDS)
async def test_the_first_words_arrive_before_the_whole_answer(llm: FakeLLM, kind: str) -> None:
    llm.script(ok(piece_delay=0.1))  # a model that writes 10 pieces a second
    seen: list[float] = []
    async with make(kind, llm.url) as provider:
        began = time.monotonic()
        completion = await provider.complete(PROMPT, lambda _: seen.append(time.monotonic()))
        ended = time.monotonic()
    assert completion.text == "[1, 2, 3] and more text"
    assert len(seen) >= 6
    assert seen[0] - began < 0.25 + 0.3  # the first piece, not the whole answer
    assert ended - began >= 0.1 * (len(seen) - 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_stream_is_a_typed_error(llm: FakeLLM, kind: str) -> None:
    llm.script(error(401, "bad key"))
    seen: list[str] = []
    async with make(kind, llm.url) as provider:
        with pytest.raises(ProviderAuthError) as caught:
            await provider.complete(PROMPT, seen.append)
    assert seen == [] and "bad key" in str(caught.value) and KEY not in str(caught.value)


async def test_an_error_event_in_a_stream_is_a_typed_error(llm: FakeLLM) -> None:
    events = ('event: message_start\ndata: {"type": "message_start", "message": '
              '{"usage": {"input_tokens": 5}}}\n\n'
              'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
              '"message": "Overloaded"}}\n\n')
    llm.script(raw(events, content_type="text/event-stream"))
    async with make("anthropic", llm.url, max_retries=0) as provider:
        with pytest.raises(ProviderResponseError) as caught:
            await provider.complete(PROMPT, lambda _: None)
    assert "Overloaded" in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_does_not_stream_still_answers(llm: FakeLLM, kind: str) -> None:
    async with make(kind, llm.url) as provider:
        whole = await provider.complete(PROMPT)
        # a compatible server that ignores "stream" and sends the whole answer as JSON
        llm.script(raw(json.dumps(whole.raw)))
        seen: list[str] = []
        again = await provider.complete(PROMPT, seen.append)
    assert again.text == whole.text and seen == []


async def test_the_local_model_streams_its_answer_token_by_token() -> None:
    steps = [{"step": n, "code": f"x{n} = {n} * 3\nx{n}", "output": str(n * 3),
              "execution_time": 0.001, "memory_bytes": None, "error": None,
              "runtime_variables": {f"x{n}": {"type": "int", "size": 28, "repr": str(n * 3)}}}
             for n in range(1, 6)]
    prompt = build_prompt(steps, "output", "full", target_code="list(range(12))",  # type: ignore[arg-type]
                          max_tokens=32)
    local = LocalPredictor()
    try:
        whole = await local.predict(PredictionRequest(
            task="output", history=[], target_code="list(range(12))", prompt=prompt))
        seen: list[str] = []
        streamed = await local.predict(PredictionRequest(
            task="output", history=[], target_code="list(range(12))", prompt=prompt,
            on_text=seen.append))
    finally:
        await local.aclose()
    assert streamed.text == whole.text  # greedy: the same answer, streamed or not
    # one per generated token, but for the closing tag's, which llama.cpp holds back while
    # they may be the stop string (and then drops)
    closing = len("</output>")
    assert len(seen) >= streamed.completion_tokens - closing and len(seen) >= 3
    assert all(b.startswith(a) for a, b in itertools.pairwise(seen))
    assert partial_answer(seen[-1], "output") == postprocess(streamed.text, "output")


def test_an_answer_being_written_never_shows_half_a_tag() -> None:
    growing = "<output>\n42\n</output>"
    shown = [partial_answer(growing[:n], "output") for n in range(len(growing) + 1)]
    assert not any("<" in s or ">" in s for s in shown)
    assert shown[-1] == postprocess(growing, "output") == "42"
    assert partial_answer("<output>\n<class 'int'>", "output") == "<class 'int'>"
