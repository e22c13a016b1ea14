"""What every model client shares: the request, the completion, the client interface
and the typed errors (a branch of ``ThemistoError``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# Defined in the one exception tree; re-exported here, where the clients raise them.
from themisto_ext.errors import (
    PredictionSuperseded,
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
from themisto_ext.prediction.prompts.window import Window
from themisto_ext.records import PredictionTask, Step

__all__ = [
    "Completion",
    "PredictionRequest",
    "PredictionSuperseded",
    "Predictor",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderTimeoutError",
]


TextSink = Callable[[str], None]
"""Takes a model's answer so far each time a streamed piece arrives (from the start again
after a retry)."""


@dataclass
class Completion:
    """A model's answer with what the API reported about it."""

    text: str
    model: str
    latency: float
    """Seconds the model worked on the answer: from the request leaving for the model to
    the complete answer, time spent waiting for a free slot or worker excluded."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    """Prompt tokens served from a prefix cache (OpenAI ``cached_tokens``, Anthropic
    ``cache_read_input_tokens``, llama.cpp's reused KV cache)."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    queue_seconds: float | None = None
    """Seconds the request waited before the model took it up (a concurrency slot, the
    local model's one worker); not part of ``latency``."""
    answer: str | None = None
    """A rule-based predictor's final answer, used as it is; a model's ``text`` is
    post-processed instead."""
    abstained: bool = False
    """The predictor chose not to answer (``answer`` is then empty): see ``hybrid``."""


@dataclass
class PredictionRequest:
    task: PredictionTask
    history: list[Step]
    """Steps before the target, in execution order (the only context allowed)."""
    target_code: str | None
    """Output task: the code of the cell being run. Next-cell task: None."""
    prompt: Prompt
    session: str | None = None
    """A live session key (kernel or notebook): lets predictors reuse a warm prefix."""
    speculative: bool = False
    """Made from a cell's text before the cell runs: a newer speculation of the session
    supersedes it, but it never supersedes a prediction of a cell that ran."""
    on_text: TextSink | None = None
    """Called on the event loop with the answer's raw text so far as a model writes it
    (streamed); predictors that answer at once never call it."""
    beginning: str | None = None
    """Next-cell task: what the person has typed of the cell (inline completion); the
    prompt shows it and the answer is the whole cell."""
    on_cpu: Callable[[float], None] | None = None
    """Called on the event loop, once, with the CPU seconds this machine's model spent on
    the request, also when it was abandoned or superseded; predictors that compute
    elsewhere, or in microseconds, never call it."""


class Predictor(Protocol):
    """A model client as the rest of the package sees it: one call from a request to a
    completion."""

    name: str
    """As configured: ``baseline``, ``copy-previous``, ``local``, ``openai:MODEL``..."""

    @property
    def window(self) -> Window | None:
        """The context window prompts are fitted to, in the model's tokens (None: no model
        reads the prompt)."""

    @property
    def max_tokens(self) -> int | None:
        """A cap on answers below the protocol's (live latency), else None."""

    async def predict(self, request: PredictionRequest) -> Completion: ...

    async def aclose(self) -> None: ...
