"""Anthropic's Messages API, with the stable prompt prefix marked for prompt caching.

The protocol's messages go as they are (system, the demonstration exchange, the question),
and the reply is begun with the answer's opening tag (an assistant prefill, which the API
allows; without its trailing newline, which it refuses), stopped at the closing tag.

Streamed, the answer comes as ``message_start`` (the input usage), ``content_block_delta``
events whose ``text_delta`` pieces make the text, ``message_delta`` (the output usage) and
``message_stop``; an ``error`` event ends it.
"""

from __future__ import annotations

from collections import deque
from functools import cached_property
from typing import Any

from themisto_ext.prediction.clients.base import ProviderResponseError
from themisto_ext.prediction.clients.http import HTTPProvider, Parsed, optional_int
from themisto_ext.prediction.prompts import Prompt

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
REMEMBERED_PREFIXES = 32
MIN_CACHEABLE_CHARS = 4096
"""Anthropic caches nothing shorter than ~1,024 tokens; a breakpoint there only costs."""


class AnthropicProvider(HTTPProvider):
    """``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``."""

    kind = "anthropic"
    default_base_url = DEFAULT_BASE_URL
    base_url_env = "ANTHROPIC_BASE_URL"
    api_key_env = "ANTHROPIC_API_KEY"

    @cached_property
    def _prefixes(self) -> deque[str]:
        """Prefixes sent recently: what Anthropic may hold in its cache for us."""
        return deque(maxlen=REMEMBERED_PREFIXES)

    def normalise_base_url(self, url: str) -> str:
        # the SDK's base URL has no /v1; accept one given by habit from OpenAI-style configs
        return url.rstrip("/").removesuffix("/v1")

    def _cached_part(self, prefix: str) -> str | None:
        """The longest earlier prefix this one extends: that text is in Anthropic's cache."""
        best = max((p for p in self._prefixes if prefix.startswith(p)), key=len, default=None)
        if prefix not in self._prefixes:
            self._prefixes.append(prefix)
        return best

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def body(self, prompt: Prompt) -> dict[str, Any]:
        # The API rejects empty text blocks, so empty parts are left out.
        content: list[dict[str, Any]] = []
        cache = {"cache_control": {"type": "ephemeral"}}
        if prompt.prefix:
            # Anthropic finds cached text only at block boundaries. A live session's prefix
            # grows by a cell per step, so the part an earlier request cached gets a block
            # (and breakpoint) of its own: it is read from the cache, and the whole prefix
            # is written for the next step.
            earlier = self._cached_part(prompt.prefix)
            if earlier and len(earlier) >= MIN_CACHEABLE_CHARS and earlier != prompt.prefix:
                content.append({"type": "text", "text": earlier, **cache})
                content.append({"type": "text", "text": prompt.prefix[len(earlier):], **cache})
            else:
                content.append({"type": "text", "text": prompt.prefix, **cache})
        if prompt.suffix or not content:
            content.append({"type": "text", "text": prompt.suffix})
        messages: list[dict[str, Any]] = []
        for exchange in prompt.demonstrations:
            messages += [{"role": "user", "content": exchange.user},
                         {"role": "assistant", "content": exchange.assistant}]
        messages.append({"role": "user", "content": content})
        if prompt.answer_open.strip():
            messages.append({"role": "assistant", "content": prompt.answer_open.rstrip()})
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.cap(prompt),
            "temperature": self.temperature,
            "messages": messages,
        }
        if prompt.stop:
            body["stop_sequences"] = list(prompt.stop)
        if prompt.system:
            body["system"] = [{"type": "text", "text": prompt.system}]
        return body

    def fold(self, answer: dict[str, Any], event: Any) -> str:
        if not isinstance(event, dict):
            raise ProviderResponseError("a streamed event is not an object")
        kind = event.get("type")
        blocks = answer.setdefault("content", [{"type": "text", "text": ""}])
        usage = answer.setdefault("usage", {})
        if kind == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            raise ProviderResponseError(f"the stream reported an error: {message!r}")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            started = event["message"].get("usage")
            usage.update(started if isinstance(started, dict) else {})
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            usage.update(event["usage"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            delta = event["delta"]
            piece = delta.get("text")
            if delta.get("type") == "text_delta" and isinstance(piece, str):
                blocks[0]["text"] += piece
                return piece
        return ""

    def parse(self, data: Any) -> Parsed:
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise ProviderResponseError("no content list in answer")
        texts: list[str] = []
        for block in blocks:  # thinking and tool_use blocks are not part of the answer
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise ProviderResponseError("a text block of the answer has no text")
                texts.append(text)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        fresh = optional_int(usage.get("input_tokens"))
        read = optional_int(usage.get("cache_read_input_tokens"))
        written = optional_int(usage.get("cache_creation_input_tokens"))
        # input_tokens counts only what follows the last cache breakpoint; the total keeps
        # prompt_tokens comparable with OpenAI's, where cached tokens are part of it.
        prompt_tokens = None if fresh is None else fresh + (read or 0) + (written or 0)
        return Parsed(
            text="".join(texts),
            prompt_tokens=prompt_tokens,
            completion_tokens=optional_int(usage.get("output_tokens")),
            cached_tokens=read,
        )
