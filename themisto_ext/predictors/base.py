"""The predictor interface: one call from a prediction request to a completion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from themisto_ext.prompts import Prompt, Task
from themisto_ext.providers.base import Completion
from themisto_ext.trajectory import Step


@dataclass
class PredictionRequest:
    task: Task
    history: list[Step]
    """Steps before the target, in execution order (the only context allowed)."""
    target_code: str | None
    """Output task: the code of the cell being run. Next-cell task: None."""
    prompt: Prompt
    session: str | None = None
    """A live session key (kernel or notebook): lets predictors reuse a warm prefix."""


class Predictor(Protocol):
    name: str
    """As configured: ``baseline``, ``local``, ``openai:MODEL``, ``anthropic:MODEL``."""

    async def predict(self, request: PredictionRequest) -> Completion: ...

    async def aclose(self) -> None: ...
