"""The OpenAI and Anthropic providers against a real fake LLM server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_llm import FakeLLM, Reply, error, hang, ok, raw, tokens

from themisto_ext.prediction.clients import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
    make_predictor,
)
from themisto_ext.prediction.clients.anthropic import AnthropicProvider
from themisto_ext.prediction.clients.http import HTTPProvider, parse_retry_after
from themisto_ext.prediction.clients.openai import OpenAIProvider
from themisto_ext.prediction.prompts import MARKUP, Prompt
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.run import predict
from themisto_ext.records import Scope

# Naming the fixture too keeps parametrize ids when pytest-jupyter (conftest) collects
# coroutine tests before anyio's plugin can add it.
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("anyio_backend")]

KEY = "sk-test-0123456789abcdefSECRET"
KINDS = ("openai", "anthropic")
SYSTEM = "You predict what a notebook cell prints."
PREFIX = "In [1]: x = 41\n" * 20
PROMPT = Prompt(task="output", context="full", system=SYSTEM, prefix=PREFIX,
                suffix="In [2]: print(x + 1)\n")
SLACK = 0.3  # scheduling tolerance on timings, generous for a loaded CI machine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def make(kind: str, base_url: str, **options: Any) -> HTTPProvider:
    options = {"api_key": KEY, "timeout": 5.0, "retry_backoff": 0.01, **options}
    if kind == "openai":
        return OpenAIProvider("gpt-test", base_url=f"{base_url}/v1", **options)
    return AnthropicProvider("claude-test", base_url=base_url, **options)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gaps(llm: FakeLLM) -> list[float]:
    return [b.at - a.at for a, b in itertools.pairwise(llm.requests)]


# -- success ------------------------------------------------------------------------------


async def test_openai_success_and_cached_prefix(llm: FakeLLM) -> None:
    async with make("openai", llm.url, max_tokens=64, temperature=0.2) as provider:
        assert provider.name == "openai:gpt-test"
        first = await provider.complete(PROMPT)
        second = await provider.complete(PROMPT)

    assert first.text == "In [2]: print(x + 1)"  # the fake echoes the last line
    assert first.model == "gpt-test"
    assert first.prompt_tokens == tokens(SYSTEM + PROMPT.user)
    assert first.completion_tokens == tokens(first.text)
    assert first.cached_tokens == 0
    assert second.cached_tokens == len(SYSTEM + PROMPT.user) // 4
    assert 0 < first.latency < 2
    assert first.raw["object"] == "chat.completion"

    request = llm.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": SYSTEM},
                     {"role": "user", "content": PREFIX + PROMPT.suffix}],
        "max_tokens": 64,
        "temperature": 0.2,
        "stream": False,
        "repeat_penalty": 1.0,  # a compatible server: llama.cpp's would penalise repeats
    }


async def test_openai_local_server_without_key_from_env(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # llama.cpp serves /chat/completions without /v1 and needs no key
    monkeypatch.setenv("OPENAI_BASE_URL", llm.url + "/")
    llm.answer = "42"
    prompt = Prompt(task="next-cell", context="none", system="", prefix="", suffix="go")
    async with OpenAIProvider("local") as provider:
        assert (await provider.complete(prompt)).text == "42"
    request = llm.requests[0]
    assert request.path == "/chat/completions"
    assert "authorization" not in request.headers
    assert request.body["messages"] == [{"role": "user", "content": "go"}]

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    async with OpenAIProvider("local") as provider:
        await provider.complete(prompt)
    assert llm.requests[1].headers["authorization"] == f"Bearer {KEY}"


async def test_anthropic_success_and_cache_control(llm: FakeLLM) -> None:
    async with make("anthropic", llm.url, max_tokens=64) as provider:
        assert provider.name == "anthropic:claude-test"
        first = await provider.complete(PROMPT)
        second = await provider.complete(PROMPT)

    assert first.text == "In [2]: print(x + 1)"
    cacheable = tokens(SYSTEM + PREFIX)
    assert first.cached_tokens == 0  # written to the cache, not read
    assert second.cached_tokens == cacheable
    # prompt_tokens counts cached tokens too, as OpenAI's does
    assert first.prompt_tokens == second.prompt_tokens == tokens(SYSTEM + PROMPT.user)
    assert second.raw["usage"]["input_tokens"] == tokens(SYSTEM + PROMPT.user) - cacheable
    assert first.completion_tokens == tokens(first.text)

    request = llm.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 64,
        "temperature": 0.0,
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": PREFIX, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": PROMPT.suffix},
        ]}],
    }


async def test_anthropic_growing_prefix_reads_the_previous_steps_cache(llm: FakeLLM) -> None:
    base = "<cell>x = 1</cell>\n" * 400  # long enough for Anthropic to cache
    step1 = Prompt(task="next-cell", context="none", system=SYSTEM, prefix=base, suffix="?")
    step2 = Prompt(task="next-cell", context="none", system=SYSTEM,
                   prefix=base + "<cell>y = 2</cell>\n", suffix="?")
    async with make("anthropic", llm.url) as provider:
        first = await provider.complete(step1)
        second = await provider.complete(step2)
    assert first.cached_tokens == 0
    assert second.cached_tokens == tokens(SYSTEM + base)
    blocks = llm.requests[1].body["messages"][0]["content"]
    assert [b["text"] for b in blocks] == [base, "<cell>y = 2</cell>\n", "?"]
    assert ["cache_control" in b for b in blocks] == [True, True, False]


async def test_anthropic_empty_prefix_env_defaults(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.url + "/v1")  # a habitual /v1 is tolerated
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    prompt = Prompt(task="next-cell", context="none", system="", prefix="", suffix="only\n")
    async with AnthropicProvider("claude-test") as provider:
        completion = await provider.complete(prompt)
    assert completion.text == "only"
    assert completion.cached_tokens == 0
    request = llm.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert "system" not in request.body
    assert request.body["messages"][0]["content"] == [{"type": "text", "text": "only\n"}]


async def test_anthropic_joins_text_blocks_only(llm: FakeLLM) -> None:
    llm.script(raw('{"content": [{"type": "thinking", "thinking": "hm"},'
                   ' {"type": "text", "text": "4"}, {"type": "text", "text": "2"}],'
                   ' "usage": {"input_tokens": 7, "output_tokens": 1}}'))
    async with make("anthropic", llm.url) as provider:
        completion = await provider.complete(PROMPT)
    assert (completion.text, completion.prompt_tokens, completion.cached_tokens) == ("42", 7, None)


# -- one protocol whatever the transport -------------------------------------------------


def real_prompt(task: str = "output") -> Prompt:
    steps = [{"step": n, "code": f"x{n} = {n} * 3\nx{n}", "output": str(n * 3),
              "execution_time": 0.001, "memory_bytes": None, "error": None,
              "runtime_variables": {f"x{n}": {"type": "int", "size": 28, "repr": str(n * 3)}}}
             for n in range(1, 6)]
    return build_prompt(steps, task, "full",  # type: ignore[arg-type]
                        target_code="x6 = 6 * 3\nx6" if task == "output" else None)


async def test_openai_gets_the_protocols_messages_stops_and_cap(llm: FakeLLM) -> None:
    prompt = real_prompt()
    async with make("openai", llm.url) as provider:
        await provider.complete(prompt)
    body = llm.requests[0].body
    assert body["messages"] == prompt.messages()
    assert [m["role"] for m in body["messages"]] == \
        ["system", "user", "assistant", "user", "assistant", "user"]
    assert body["messages"][2]["content"].startswith("<output>\n")
    assert body["stop"] == ["</output>", "</cell>"]
    assert body["max_tokens"] == prompt.max_tokens == 256
    assert body["temperature"] == 0.0 and body["repeat_penalty"] == 1.0
    # api.openai.com refuses fields it does not know: it gets the standard ones only
    official = OpenAIProvider("gpt-4o-mini", base_url="https://api.openai.com/v1")
    assert "repeat_penalty" not in official.body(prompt)
    await official.aclose()


async def test_anthropic_begins_the_reply_with_the_answer_tag(llm: FakeLLM) -> None:
    prompt = real_prompt("next-cell")
    llm.answer = "<code>\nx6 = 6 * 3\n</code>\n<output>"
    async with make("anthropic", llm.url, max_tokens=64) as provider:
        completion = await provider.complete(prompt)
    body = llm.requests[0].body
    assert [m["role"] for m in body["messages"]] == \
        ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert body["messages"][-1] == {"role": "assistant", "content": "<code>"}  # no trailing \n
    assert body["messages"][1]["content"] == prompt.demonstrations[0].assistant
    assert body["stop_sequences"] == ["</code>", "</cell>"]
    assert body["max_tokens"] == 64  # the provider's own lower cap
    assert completion.text == "\nx6 = 6 * 3\n"  # the continuation, cut at the stop
    assert postprocess(completion.text, "next-cell") == "x6 = 6 * 3"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("reply", "answer"), [
    # the issue: openai: answers opened with prose and kept a literal </output>
    ("The output of this cell is:\n<output>\n18\n</output>", "18"),
    ("Sure! Here it is: 18\n</output>\n</cell>\n\n<cell step=\"7\">", "Sure! Here it is: 18"),
    ("<output>\n18\n", "18"),
    ("```text\n18\n```", "18"),
    ("18\n<state_changes>\ncreated x6: int\n</state_changes>", "18"),
])
async def test_every_transport_reads_answers_back_the_same_way(llm: FakeLLM, kind: str,
                                                               reply: str, answer: str) -> None:
    llm.answer = reply
    predictor = make_predictor(f"{kind}:m", base_url=llm.url + ("/v1" if kind == "openai"
                                                                else ""), timeout=5)
    steps = [{"step": n, "code": f"x{n} = {n}", "output": "", "execution_time": 0.0,
              "memory_bytes": None, "error": None, "runtime_variables": {}}
             for n in range(1, 4)]
    try:
        record = await predict(predictor, steps, "output", "none",  # type: ignore[arg-type]
                               scope=Scope("t"), target_step=4, target_code="x4 = 18\nx4")
    finally:
        await predictor.aclose()
    assert record["answer"] == answer  # type: ignore[index]
    for tag in MARKUP:
        assert tag not in record["answer"]  # type: ignore[index]


async def test_latency_is_model_time_and_queueing_is_recorded_apart(llm: FakeLLM) -> None:
    """The issue: recorded latency climbed from 10 s to 71 s as calls queued."""
    llm.script(ok(delay=0.4), ok(delay=0.4))
    async with make("openai", llm.url, max_concurrency=1) as provider:
        first, second = await asyncio.gather(provider.complete(PROMPT),
                                             provider.complete(PROMPT))
    waited = sorted([first, second], key=lambda c: c.queue_seconds or 0)
    assert waited[0].queue_seconds is not None and waited[0].queue_seconds < SLACK
    assert waited[1].queue_seconds is not None and waited[1].queue_seconds >= 0.35
    assert all(0.35 <= c.latency < 0.4 + SLACK for c in (first, second))


async def test_llama_cpp_server_timings_are_the_model_time(llm: FakeLLM) -> None:
    llm.script(raw(json.dumps({
        "choices": [{"message": {"role": "assistant", "content": "42"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
        "timings": {"cache_n": 4, "prompt_ms": 120.0, "predicted_ms": 30.5}})))
    async with make("openai", llm.url) as provider:
        completion = await provider.complete(PROMPT)
    assert completion.latency == pytest.approx(0.1505)
    assert completion.cached_tokens == 4


# -- failures without retry ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("reply", "expected", "words"), [
    (error(401, "invalid x-api-key"), ProviderAuthError, "HTTP 401: invalid x-api-key"),
    (error(403, "model not allowed"), ProviderAuthError, "HTTP 403: model not allowed"),
    (error(404, "model: claude-nope"), ProviderRequestError, "HTTP 404: model: claude-nope"),
    (error(400, "max_tokens too large"), ProviderRequestError, "HTTP 400: max_tokens too"),
    (raw('{"choices": [{"message": '), ProviderResponseError, "not JSON"),
    (raw("<html><body>Bad gateway page</body></html>", "text/html"), ProviderResponseError,
     "not JSON (text/html): '<html><body>Bad gateway page"),
    (raw('{"id": "x", "usage": {}}'), ProviderResponseError, "no "),
    (raw('{"choices": [], "content": null}'), ProviderResponseError, "no "),
    (raw('[1, 2]'), ProviderResponseError, "no "),
], ids=["401", "403", "404", "400", "malformed", "html", "no-choices", "empty", "not-object"])
async def test_errors_not_retried(llm: FakeLLM, kind: str, reply: Reply,
                                  expected: type[ProviderError], words: str) -> None:
    llm.script(reply)
    async with make(kind, llm.url) as provider:
        with pytest.raises(expected) as caught:
            await provider.complete(PROMPT)
    assert type(caught.value) is expected
    assert str(caught.value).startswith(f"{kind}:")
    assert words in str(caught.value)
    assert len(llm.requests) == 1


async def test_long_server_message_is_truncated(llm: FakeLLM) -> None:
    llm.script(error(400, "bad " * 1000))
    async with make("openai", llm.url) as provider:
        with pytest.raises(ProviderRequestError) as caught:
            await provider.complete(PROMPT)
    assert len(str(caught.value)) < 400
    assert str(caught.value).endswith("…")


# -- retries -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_5xx_then_success(llm: FakeLLM, kind: str) -> None:
    llm.script(error(503, "overloaded"), error(500), error(529), ok("fine"))
    async with make(kind, llm.url) as provider:
        completion = await provider.complete(PROMPT)
    assert completion.text == "fine"
    assert len(llm.requests) == 4


@pytest.mark.parametrize(("kind", "status", "expected"), [
    ("openai", 500, ProviderServerError),
    ("anthropic", 502, ProviderServerError),
    ("openai", 429, ProviderRateLimitError),
    ("anthropic", 429, ProviderRateLimitError),
])
async def test_retries_run_out(llm: FakeLLM, kind: str, status: int,
                               expected: type[ProviderError]) -> None:
    llm.script(*[error(status, "try later")] * 3)
    async with make(kind, llm.url, max_retries=2, retry_backoff=0.05) as provider:
        with pytest.raises(expected, match=rf"HTTP {status}: try later \(after 3 attempts\)"):
            await provider.complete(PROMPT)
    assert len(llm.requests) == 3
    # exponential backoff with jitter in [0.5, 1]: 0.05 * [0.5, 1], then 0.1 * [0.5, 1]
    first, second = gaps(llm)
    assert 0.025 <= first < 0.05 + SLACK
    assert 0.05 <= second < 0.1 + SLACK


async def test_no_retries_when_disabled(llm: FakeLLM) -> None:
    llm.script(error(503))
    async with make("openai", llm.url, max_retries=0) as provider:
        with pytest.raises(ProviderServerError, match=r"HTTP 503: scripted failure$"):
            await provider.complete(PROMPT)
    assert len(llm.requests) == 1


@pytest.mark.parametrize(("kind", "header", "wait"), [
    ("openai", "0.4", 0.4),
    ("anthropic", "1", 1.0),  # integer seconds, as real APIs send
])
async def test_retry_after_seconds_honoured(llm: FakeLLM, kind: str, header: str,
                                            wait: float) -> None:
    llm.script(error(429, "slow down", retry_after=header), ok("after the wait"))
    async with make(kind, llm.url, retry_backoff=5) as provider:  # backoff would be far longer
        completion = await provider.complete(PROMPT)
    assert completion.text == "after the wait"
    assert len(llm.requests) == 2
    assert wait <= gaps(llm)[0] < wait + SLACK


async def test_retry_after_date_and_ms(llm: FakeLLM) -> None:
    past = formatdate(time.time() - 60, usegmt=True)
    llm.script(error(503, retry_after=past),
               Reply(status=429, message="ms", headers={"retry-after-ms": "300"}), ok("ok"))
    async with make("openai", llm.url, retry_backoff=5) as provider:
        assert (await provider.complete(PROMPT)).text == "ok"
    date_gap, ms_gap = gaps(llm)
    assert date_gap < SLACK
    assert 0.3 <= ms_gap < 0.3 + SLACK


def test_parse_retry_after() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after(" 1.5 ", now) == 1.5
    assert parse_retry_after("-3", now) == 0.0
    assert parse_retry_after(formatdate(now + 20, usegmt=True), now) == pytest.approx(20, abs=1)
    assert parse_retry_after(formatdate(now - 20, usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("", now) is None
    assert parse_retry_after(None, now) is None


async def test_retry_after_past_deadline_fails_fast(llm: FakeLLM) -> None:
    llm.script(error(429, "quota", retry_after="30"))
    async with make("anthropic", llm.url, timeout=2.0) as provider:
        start = time.monotonic()
        with pytest.raises(ProviderRateLimitError, match="past the 2 s deadline"):
            await provider.complete(PROMPT)
    assert time.monotonic() - start < SLACK
    assert len(llm.requests) == 1


async def test_dropped_connection_is_retried(llm: FakeLLM) -> None:
    llm.script(Reply(drop=True), ok("again"))
    async with make("openai", llm.url) as provider:
        assert (await provider.complete(PROMPT)).text == "again"
    assert len(llm.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_connection_refused(kind: str) -> None:
    async with make(kind, f"http://127.0.0.1:{closed_port()}", max_retries=2) as provider:
        with pytest.raises(ProviderConnectionError,
                           match=r"connection to .* failed: ConnectError: .*after 3 attempts"):
            await provider.complete(PROMPT)


# -- deadline ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reply", [
    ok(delay=3.0),
    hang(),
    Reply(trickle=0.05),  # a byte at a time: httpx's read timeout alone would never fire
], ids=["slow", "hang", "trickle"])
async def test_deadline_never_exceeded(llm: FakeLLM, kind: str, reply: Reply) -> None:
    llm.script(reply)
    async with make(kind, llm.url, timeout=0.3) as provider:
        start = time.monotonic()
        with pytest.raises(ProviderTimeoutError, match=f"^{kind}:.* within 0.3 s"):
            await provider.complete(PROMPT)
        elapsed = time.monotonic() - start
        assert 0.3 <= elapsed < 0.3 + SLACK
        assert len(llm.requests) == 1
        # the abandoned connection is not handed to the next call
        assert (await provider.complete(PROMPT)).text == "In [2]: print(x + 1)"


async def test_deadline_bounds_retries(llm: FakeLLM) -> None:
    llm.script(*[error(503)] * 50)
    async with make("openai", llm.url, timeout=0.6, max_retries=50, retry_backoff=0.1) as provider:
        start = time.monotonic()
        with pytest.raises((ProviderServerError, ProviderTimeoutError)):
            await provider.complete(PROMPT)
        assert time.monotonic() - start < 0.6 + SLACK
    assert 2 <= len(llm.requests) < 50


# -- concurrency ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrency_limit(llm: FakeLLM, kind: str) -> None:
    llm.script(*[ok(f"answer {i}", delay=0.15) for i in range(9)])
    async with make(kind, llm.url, max_concurrency=3) as provider:
        start = time.monotonic()
        results = await asyncio.gather(*[provider.complete(PROMPT) for _ in range(9)])
        elapsed = time.monotonic() - start
    assert sorted(r.text for r in results) == [f"answer {i}" for i in range(9)]
    assert llm.max_in_flight == 3
    assert elapsed >= 3 * 0.15
    # the wait for a slot does not count as latency
    assert all(r.latency < 0.15 + SLACK for r in results)


# -- secrets -------------------------------------------------------------------------------


def chain(exc: BaseException | None) -> Iterator[BaseException]:
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", ["auth", "server", "html", "refused", "timeout", "userinfo"])
async def test_key_never_leaks(llm: FakeLLM, kind: str, scenario: str,
                               caplog: pytest.LogCaptureFixture) -> None:
    base = llm.url
    # servers do echo keys back: OpenAI's 401 says "Incorrect API key provided: sk-..."
    if scenario == "auth":
        llm.script(error(401, f"Incorrect API key provided: {KEY}"))
    elif scenario == "server":
        llm.script(*[error(500, f"upstream got {KEY}")] * 2)
    elif scenario == "html":
        llm.script(raw(f"<html>debug: x-api-key={KEY}</html>", "text/html"))
    elif scenario == "refused":
        base = f"http://127.0.0.1:{closed_port()}"
    elif scenario == "timeout":
        llm.script(hang())
    else:  # credentials in the base URL are secrets too
        base = f"http://user:{KEY}@127.0.0.1:{closed_port()}"

    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    provider = make(kind, base, timeout=0.3, max_retries=1)
    assert KEY not in repr(provider)
    assert KEY not in str(provider)
    with pytest.raises(ProviderError) as caught:
        await provider.complete(PROMPT)
    await provider.aclose()

    for exc in chain(caught.value):
        # nothing chained from httpx: its exceptions carry requests, whose headers hold the key
        assert isinstance(exc, ProviderError)
        assert KEY not in str(exc)
        assert KEY not in repr(exc)
        assert KEY not in repr(exc.args)
    assert KEY not in "".join(traceback.format_exception(caught.value))
    assert caplog.records  # httpx and the retry logging did log
    for record in caplog.records:
        assert KEY not in record.getMessage()
        assert KEY not in logging.Formatter().format(record)


async def test_key_masked_not_sent_elsewhere(llm: FakeLLM) -> None:
    async with make("anthropic", llm.url) as provider:
        await provider.complete(PROMPT)
    assert KEY in llm.requests[0].headers["x-api-key"]  # it did reach the server
    assert "api_key=<set>" in repr(provider)
    async with OpenAIProvider("m") as keyless:
        assert "api_key=<none>" in repr(keyless)


# -- the fake server as a program ------------------------------------------------------------


def test_fake_llm_runs_standalone() -> None:
    port = closed_port()
    script = Path(__file__).with_name("fake_llm.py")
    with subprocess.Popen([sys.executable, str(script), "--port", str(port), "--answer", "hi"],
                          stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            assert f"http://127.0.0.1:{port}" in server.stdout.readline()
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            answer = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
            assert answer.json()["choices"][0]["message"]["content"] == "hi"
        finally:
            server.terminate()
