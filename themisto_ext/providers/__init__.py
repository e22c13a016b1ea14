"""LLM providers: async clients that turn a ``Prompt`` into a ``Completion``."""

from __future__ import annotations

from themisto_ext.providers.anthropic import AnthropicProvider
from themisto_ext.providers.base import (
    Completion,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
)
from themisto_ext.providers.http import HTTPProvider
from themisto_ext.providers.openai import OpenAIProvider

__all__ = [
    "AnthropicProvider",
    "Completion",
    "HTTPProvider",
    "OpenAIProvider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderTimeoutError",
]
