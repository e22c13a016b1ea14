"""OpenAI-compatible Chat Completions: OpenAI itself, vLLM, Ollama, llama.cpp's server."""

from __future__ import annotations

from typing import Any

from themisto_ext.prediction.clients.base import ProviderResponseError
from themisto_ext.prediction.clients.http import HTTPProvider, Parsed, optional_int
from themisto_ext.prediction.prompts import Prompt

DEFAULT_BASE_URL = "https://api.openai.com/v1"


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
        messages = [{"role": "user", "content": prompt.user}]
        if prompt.system:  # some local chat templates choke on an empty system turn
            messages.insert(0, {"role": "system", "content": prompt.system})
        # max_tokens rather than max_completion_tokens: every compatible server knows it
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": False,
        }

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
        if cached is None and isinstance(timings, dict):  # llama.cpp reports its KV reuse here
            cached = optional_int(timings.get("cache_n"))
        return Parsed(
            text=text,
            prompt_tokens=optional_int(usage.get("prompt_tokens")),
            completion_tokens=optional_int(usage.get("completion_tokens")),
            cached_tokens=cached,
        )
