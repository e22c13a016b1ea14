"""Types shared by every provider: the completion and the typed errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Completion:
    """A model's answer with what the API reported about it."""

    text: str
    model: str
    latency: float
    """Seconds from sending the request to the complete answer."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    """Prompt tokens served from a prefix cache (OpenAI ``cached_tokens``, Anthropic
    ``cache_read_input_tokens``, llama.cpp's reused KV cache)."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class ProviderError(Exception):
    """A model call failed; the message is safe to show (never contains an API key)."""

    retryable = False


class ProviderConnectionError(ProviderError):
    """The endpoint could not be reached (refused, DNS, TLS)."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """No complete answer within the timeout."""

    retryable = True


class ProviderAuthError(ProviderError):
    """401/403: the key is missing, wrong or not allowed to use the model."""


class ProviderRateLimitError(ProviderError):
    """429 after the retries ran out."""

    retryable = True


class ProviderServerError(ProviderError):
    """5xx after the retries ran out."""

    retryable = True


class ProviderRequestError(ProviderError):
    """Another 4xx: the request itself was refused (unknown model, bad parameters)."""


class ProviderResponseError(ProviderError):
    """The answer could not be understood (malformed JSON, missing fields)."""
