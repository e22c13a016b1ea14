"""OpenAI-compatible Chat Completions: OpenAI itself, vLLM, Ollama, llama.cpp's server.

Chat Completions cannot begin the model's reply for it, so the protocol's answer opening
rests on the demonstration exchange and the question naming the tag (see
``prompts/build.py``); stop sequences end the answer at the closing tag. Decoding is greedy
without a repetition penalty, as in-process llama.cpp decodes: llama.cpp's servers add one
by default (``repeat_penalty`` 1.1), so servers other than api.openai.com (which refuses
unknown fields) are told ``repeat_penalty: 1.0``; others ignore the field.

Streamed, the answer comes as ``chat.completion.chunk`` events whose ``delta.content``
pieces make the message, and (asked for with ``stream_options.include_usage``) a last
chunk with the usage; llama.cpp's server puts its ``timings`` in the last chunk too.
"""

from __future__ import annotations

from typing import Any

import httpx

from themisto_ext.prediction.clients.base import ProviderResponseError
from themisto_ext.prediction.clients.http import HTTPProvider, Parsed, optional_int
from themisto_ext.prediction.prompts import Prompt

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"


class OpenAIProvider(HTTPProvider):
    """``POST {base_url}/chat/completions``; the key is optional, local servers need none."""

    kind = "openai"
    default_base_url = DEFAULT_BASE_URL
    base_url_env = "OPENAI_BASE_URL"
    api_key_env = "OPENAI_API_KEY"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def body(self, prompt: Prompt) -> dict[str, Any]:
        # (an empty system turn is left out: some local chat templates choke on one)
        # max_tokens rather than max_completion_tokens: every compatible server knows it
        body: dict[str, Any] = {
            "model": self.model,
            "messages": prompt.messages(),
            "max_tokens": self.cap(prompt),
            "temperature": self.temperature,
            "stream": False,
        }
        if prompt.stop:
            body["stop"] = list(prompt.stop)[:4]  # OpenAI takes at most four
        if httpx.URL(self.base_url).host != OPENAI_HOST:
            body["repeat_penalty"] = 1.0
        return body

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True, "stream_options": {"include_usage": True}}

    def fold(self, answer: dict[str, Any], event: Any) -> str:
        if not isinstance(event, dict):
            raise ProviderResponseError("a streamed chunk is not an object")
        if isinstance(event.get("error"), dict):
            message = event["error"].get("message")
            raise ProviderResponseError(f"the stream reported an error: {message!r}")
        message = answer.setdefault("choices", [{"message": {"content": ""}}])[0]["message"]
        for key in ("usage", "timings"):
            if isinstance(event.get(key), dict):
                answer[key] = event[key]
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""  # the usage chunk
        delta = choices[0].get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(delta, dict) and delta.get("refusal"):
            message["refusal"], message["content"] = delta["refusal"], None
        if not isinstance(piece, str) or message["content"] is None:
            return ""
        message["content"] += piece
        return piece

    def parse(self, data: Any) -> Parsed:
        try:
            message = data["choices"][0]["message"]
            text = message["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderResponseError(f"no choices[0].message.content in answer ({exc!r})") \
                from None
        if not isinstance(text, str):
            refusal = message.get("refusal") if isinstance(message, dict) else None
            why = f"refused: {refusal!r}" if refusal else f"content is {type(text).__name__}"
            raise ProviderResponseError(f"no text in answer ({why})")
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        details = usage.get("prompt_tokens_details")
        cached = optional_int(details.get("cached_tokens")) if isinstance(details, dict) else None
        timings = data.get("timings")
        model_seconds = None
        if isinstance(timings, dict):  # llama.cpp's server reports its KV reuse and timing
            if cached is None:
                cached = optional_int(timings.get("cache_n"))
            spent = [timings.get(k) for k in ("prompt_ms", "predicted_ms")]
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in spent):
                model_seconds = sum(spent) / 1000  # type: ignore[arg-type]
        return Parsed(
            text=text,
            prompt_tokens=optional_int(usage.get("prompt_tokens")),
            completion_tokens=optional_int(usage.get("completion_tokens")),
            cached_tokens=cached,
            model_seconds=model_seconds,
        )
