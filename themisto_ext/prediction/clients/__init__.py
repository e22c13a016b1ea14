"""Model clients by name, the same in server settings and on the command line.

``baseline`` | ``local`` | ``local:PATH.gguf`` | ``openai:MODEL`` | ``anthropic:MODEL``.
A remote model is reached through a provider (``openai.py``, ``anthropic.py`` over
``http.py``); ``baseline`` and ``local`` answer in this process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from themisto_ext.prediction.clients.base import (
    Completion,
    PredictionRequest,
    PredictionSuperseded,
    Predictor,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
)
from themisto_ext.prediction.prompts import Prompt


class PredictorSpecError(ValueError):
    """A predictor name that is not one of the documented forms."""


class ChatProvider(Protocol):
    name: str

    async def complete(self, prompt: Prompt) -> Completion: ...

    async def aclose(self) -> None: ...


class ProviderPredictor:
    """A remote chat model behind a provider: the prompt is all it sees."""

    def __init__(self, provider: ChatProvider) -> None:
        self._provider = provider
        self.name = provider.name

    async def predict(self, request: PredictionRequest) -> Completion:
        return await self._provider.complete(request.prompt)

    async def aclose(self) -> None:
        await self._provider.aclose()


def local_model_available() -> bool:
    """Whether ``local`` can run here: llama-cpp-python and the default GGUF are installed."""
    try:
        import llama_cpp  # noqa: F401

        from themisto_ext.prediction.clients.local.engine import default_model_path

        return default_model_path().is_file()
    except Exception:
        return False


def make_predictor(spec: str, *, base_url: str | None = None, timeout: float = 60,
                   max_concurrency: int = 8, reuse_prefix: bool = True,
                   max_tokens: int | None = None) -> Predictor:
    kind, _, arg = spec.strip().partition(":")
    if kind == "baseline" and not arg:
        from themisto_ext.prediction.clients.baseline import BaselinePredictor

        return BaselinePredictor()
    if kind == "local":
        from themisto_ext.prediction.clients.local import LocalPredictor

        return LocalPredictor(Path(arg) if arg else None, reuse_prefix=reuse_prefix,
                              **({"max_tokens": max_tokens} if max_tokens else {}))
    if kind in ("openai", "anthropic") and arg:
        from themisto_ext.prediction.clients.anthropic import AnthropicProvider
        from themisto_ext.prediction.clients.openai import OpenAIProvider

        cls: type[OpenAIProvider] | type[AnthropicProvider] = (
            OpenAIProvider if kind == "openai" else AnthropicProvider)
        return ProviderPredictor(cls(arg, base_url=base_url, timeout=timeout,
                                     max_concurrency=max_concurrency))
    raise PredictorSpecError(
        f"unknown predictor {spec!r}: use baseline, local, local:PATH.gguf, openai:MODEL "
        "or anthropic:MODEL")


__all__ = [
    "Completion",
    "PredictionRequest",
    "PredictionSuperseded",
    "Predictor",
    "PredictorSpecError",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderPredictor",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "local_model_available",
    "make_predictor",
]
