"""What every HTTP provider shares: one client, deadline, retries, concurrency, typed errors.

Subclasses only say where to send a prompt, how to encode it and how to read the answer,
whole or streamed: a streamed answer (``stream: true``, Server-Sent Events) is folded, event
by event, into the shape of the whole one and read by the same ``parse``, and the text so
far is handed to the caller as each piece arrives.
API keys are kept out of every message, repr and log record this module produces: errors
are built from our own text (scrubbed of the key) and never chained to httpx exceptions,
whose requests carry the key in their headers.
"""

from __future__ import annotations

import abc
import asyncio
import email.utils
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import httpx

from themisto_ext.prediction.clients.base import (
    Completion,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
    TextSink,
)
from themisto_ext.prediction.prompts import Prompt

log = logging.getLogger("themisto_ext.providers")

MAX_SERVER_MESSAGE = 300
MAX_BACKOFF = 30.0
REDACTED = "***"

_P = TypeVar("_P", bound="HTTPProvider")


@dataclass
class Parsed:
    """The fields of an answer the providers agree on."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    model_seconds: float | None = None
    """The server's own measure of the model's work, when it reports one (llama.cpp)."""


@dataclass
class _Failure:
    error: ProviderError
    retry_after: float | None = None
    retry: bool = False


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; parsedate leaves "-0000" naive
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_message(response: httpx.Response) -> str:
    """The error message a server put in its body, else the body itself, truncated."""
    text = response.text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(data.get("message"), str):
            text = data["message"]
    text = " ".join(text.split())
    if len(text) > MAX_SERVER_MESSAGE:
        text = text[:MAX_SERVER_MESSAGE] + "…"
    return text or response.reason_phrase


def optional_int(value: Any) -> int | None:
    # bool is an int subclass; a JSON true is not a token count
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _display_url(url: str) -> str:
    # userinfo in a base URL is a credential too
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


class HTTPProvider(abc.ABC):
    """An async LLM client over one ``httpx.AsyncClient``; see ``complete``."""

    kind: str = ""
    """Prefix of ``name``: ``openai`` or ``anthropic``."""
    default_base_url: str = ""
    base_url_env: str = ""
    api_key_env: str = ""
    """Where the base URL and key come from when not given: the vendors' usual variables."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        max_concurrency: int = 8,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        retry_backoff: float = 0.5,
    ) -> None:
        base_url = self.normalise_base_url(
            base_url or os.environ.get(self.base_url_env) or self.default_base_url)
        api_key = api_key or os.environ.get(self.api_key_env)
        if timeout <= 0 or max_retries < 0 or max_concurrency < 1 or retry_backoff < 0:
            raise ValueError("timeout > 0, max_retries >= 0, max_concurrency >= 1 required")
        if httpx.URL(base_url).scheme not in ("http", "https"):
            raise ValueError(f"base_url must be http(s): {_display_url(base_url)!r}")
        self.model = model
        self.name = f"{self.kind}:{model}"
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retry_backoff = retry_backoff
        self._api_key = api_key or None
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=max_concurrency),
        )

    # -- what a wire format defines ------------------------------------------------------

    def normalise_base_url(self, url: str) -> str:
        return url.rstrip("/")

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The endpoint prompts are POSTed to."""

    @abc.abstractmethod
    def headers(self) -> dict[str, str]:
        """Request headers, including the key; never logged or put in messages."""

    @abc.abstractmethod
    def body(self, prompt: Prompt) -> dict[str, Any]:
        """The JSON request body for ``prompt``."""

    def cap(self, prompt: Prompt) -> int:
        """The answer's cap: the protocol's, or this provider's if it set a lower one."""
        return prompt.max_tokens if self.max_tokens is None \
            else min(prompt.max_tokens, self.max_tokens)

    @abc.abstractmethod
    def parse(self, data: Any) -> Parsed:
        """Read a 2xx JSON body; raise ``ProviderResponseError`` when it is not an answer."""

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request body asking for the answer streamed."""
        return {**body, "stream": True}

    @abc.abstractmethod
    def fold(self, answer: dict[str, Any], event: Any) -> str:
        """Fold one streamed event into ``answer``, which ends in the shape ``parse`` reads;
        returns the text the event adds. Raise ``ProviderResponseError`` for an event that
        reports an error or cannot be read."""

    # -- lifecycle ----------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self: _P) -> _P:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"{type(self).__name__}(model={self.model!r}, "
            f"base_url={_display_url(self.base_url)!r}, api_key=<{key}>)"
        )

    # -- the call -----------------------------------------------------------------------

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        """Send ``prompt`` and return the answer, or raise a ``ProviderError``; with
        ``on_text``, the answer is streamed and its text so far handed over as it grows.

        ``timeout`` bounds the whole call once it holds one of the ``max_concurrency``
        slots, retries and waits included; time queued for a slot is not counted, so a
        large batch can be gathered at once without its tail timing out. It is the
        completion's ``queue_seconds``; its ``latency`` is the server's own timing of the
        model when it reports one, else the call's time once it held a slot.
        """
        body = self.body(prompt) if on_text is None else self.stream_body(self.body(prompt))
        queued = time.monotonic()
        async with self._semaphore:
            start = time.monotonic()
            deadline = start + self.timeout
            try:
                parsed, data = await asyncio.wait_for(self._attempts(body, deadline, on_text),
                                                      self.timeout)
            except asyncio.TimeoutError:
                error: ProviderError = ProviderTimeoutError(
                    f"{self.name}: no complete answer within {self.timeout:g} s"
                )
            else:
                elapsed = time.monotonic() - start
                return Completion(
                    text=parsed.text,
                    model=self.model,
                    latency=elapsed if parsed.model_seconds is None else parsed.model_seconds,
                    prompt_tokens=parsed.prompt_tokens,
                    completion_tokens=parsed.completion_tokens,
                    cached_tokens=parsed.cached_tokens,
                    raw=data,
                    queue_seconds=start - queued,
                )
        raise error  # outside the except block, so no httpx exception is chained to it

    async def _attempts(self, body: dict[str, Any], deadline: float,
                        on_text: TextSink | None) -> tuple[Parsed, Any]:
        attempt = 0
        while True:
            attempt += 1
            result = await self._attempt(body, deadline, on_text)
            if not isinstance(result, _Failure):
                return result
            remaining = deadline - time.monotonic()
            if not result.retry or attempt > self.max_retries:
                raise self._final(result, attempt)
            if result.retry_after is not None:
                wait = result.retry_after
            else:
                wait = min(MAX_BACKOFF, self.retry_backoff * 2 ** (attempt - 1))
                wait *= random.uniform(0.5, 1.0)  # spread clients that failed together
            if wait >= remaining:
                if isinstance(result.error, ProviderTimeoutError):
                    raise self._final(result, attempt)  # httpx's timeout is the deadline's
                # sleeping past the deadline only to time out would hide the real cause
                raise self._final(result, attempt, f"; next retry in {wait:.2f} s is past the "
                                                   f"{self.timeout:g} s deadline")
            log.info("%s (attempt %d); retrying in %.2f s", result.error, attempt, wait)
            await asyncio.sleep(wait)

    def _final(self, failure: _Failure, attempts: int, note: str = "") -> ProviderError:
        if attempts == 1 and not note:
            return failure.error
        plural = "" if attempts == 1 else "s"
        return type(failure.error)(f"{failure.error} (after {attempts} attempt{plural}{note})")

    async def _attempt(
        self, body: dict[str, Any], deadline: float, on_text: TextSink | None = None
    ) -> tuple[Parsed, Any] | _Failure:
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            if on_text is not None:
                async with self._client.stream(
                        "POST", self.url, json=body, headers=self.headers(),
                        timeout=httpx.Timeout(remaining)) as streamed:
                    return await self._read_stream(streamed, on_text)
            response = await self._client.post(
                self.url, json=body, headers=self.headers(), timeout=httpx.Timeout(remaining))
        except httpx.TimeoutException as exc:
            what = f"no complete answer within {self.timeout:g} s ({type(exc).__name__})"
            return _Failure(ProviderTimeoutError(self._say(what)), retry=True)
        except httpx.TransportError as exc:
            what = f"connection to {_display_url(self.url)} failed: {type(exc).__name__}: {exc}"
            return _Failure(ProviderConnectionError(self._say(what)), retry=True)
        return self._read(response)

    def _read(self, response: httpx.Response) -> tuple[Parsed, Any] | _Failure:
        status = response.status_code
        if 200 <= status < 300:
            try:
                data = response.json()
            except ValueError:
                kind = response.headers.get("content-type", "no content type")
                snippet = " ".join(response.text.split())[:MAX_SERVER_MESSAGE]
                return _Failure(ProviderResponseError(
                    self._say(f"HTTP {status} answer is not JSON ({kind}): {snippet!r}")))
            try:
                return self.parse(data), data
            except ProviderResponseError as exc:
                return _Failure(ProviderResponseError(self._say(str(exc))))
        message = f"HTTP {status}: {server_message(response)}"
        retry_after = self._retry_after(response)
        if status in (401, 403):
            return _Failure(ProviderAuthError(self._say(message)))
        if status == 429:
            return _Failure(ProviderRateLimitError(self._say(message)), retry_after, retry=True)
        if status >= 500:
            return _Failure(ProviderServerError(self._say(message)), retry_after, retry=True)
        return _Failure(ProviderRequestError(self._say(message)))

    async def _read_stream(self, response: httpx.Response,
                           on_text: TextSink) -> tuple[Parsed, Any] | _Failure:
        """A streamed answer, folded into the whole answer's shape; an error status, or a
        server that answered with one JSON body after all, is read as ``_read`` reads it."""
        kind = response.headers.get("content-type", "")
        if not 200 <= response.status_code < 300 or not kind.startswith("text/event-stream"):
            await response.aread()
            return self._read(response)
        answer: dict[str, Any] = {}
        text = ""
        try:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue  # event names, comments, keep-alives, blank separators
                payload = line[len("data:"):].strip()
                if payload == "[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    snippet = payload[:MAX_SERVER_MESSAGE]
                    raise ProviderResponseError(f"a streamed event is not JSON: {snippet!r}") \
                        from None
                piece = self.fold(answer, event)
                if piece:
                    text += piece
                    on_text(text)
            return self.parse(answer), answer
        except ProviderResponseError as exc:
            return _Failure(ProviderResponseError(self._say(str(exc))))

    @staticmethod
    def _retry_after(response: httpx.Response) -> float | None:
        millis = response.headers.get("retry-after-ms")  # OpenAI's finer-grained variant
        if millis is not None:
            try:
                return max(0.0, float(millis) / 1000)
            except ValueError:
                pass
        return parse_retry_after(response.headers.get("retry-after"))

    def _say(self, message: str) -> str:
        """``message`` prefixed with the provider name, with the key scrubbed out."""
        message = f"{self.name}: {message}"
        if self._api_key:
            message = message.replace(self._api_key, REDACTED)
        return message
