"""Fit a prompt to a model's context window, counted in the model's own tokens.

``build_prompt`` cuts the history to a budget in characters; a model's limit is in tokens,
and the ratio varies (about 3 characters a token for SmolLM2 on reprs and tracebacks, 4
on prose). ``fit_prompt`` builds the prompt, counts it with the predictor's counter (the
local model's tokenizer, or an estimate for an API model) and, while it is over the
window, builds it again with the next budget of a fixed ladder (each rung 15% below the
one before), so every predictor gets nearly as much history as its own window holds and
no call fails for being too long. The ladder, rather than a budget fitted to each prompt,
keeps consecutive prompts of a trajectory on the same budget, hence on the same pages of
history (``build.py``), so their prefixes stay shared and cached.

``common_history`` does the same for several contexts of one example at once: the budget
and the cut of the history that the context needing most room needs, so that every
context shows the same history cells (a benchmark's "state helps" contrast must not mix
the state with less history: fitted one by one to SmolLM2's 4,096 tokens, ``full`` kept
8.4 earlier cells on average and ``none`` 13.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from themisto_ext.errors import PromptTooLong as PromptTooLong  # re-exported: raised here
from themisto_ext.prediction.prompts import PredictionContext, Prompt

RUNG = 0.85
MAX_RUNGS = 24
"""24 rungs reach 2% of the budget: any prompt whose fixed part fits does."""


@dataclass(frozen=True)
class Window:
    """A model's context window: ``tokens`` in all, read by ``count`` (prompt tokens as
    the model reads them, chat template and demonstrations included); the answer's cap
    is kept free."""

    tokens: int
    count: Callable[[Prompt], int]

    def room(self, prompt: Prompt) -> int:
        return self.tokens - prompt.max_tokens


def estimate_tokens(text: str, chars_per_token: float = 3.0) -> int:
    """A conservative token count for a model whose tokenizer is not at hand: about 3
    characters a token (SmolLM2 and GPT-4o tokenizers give 3.1-4.2 on the shared
    notebooks' prompts; fewer characters a token would only cut more history)."""
    return math.ceil(len(text) / chars_per_token)


def estimated_window(tokens: int, chars_per_token: float = 3.0,
                     per_message: int = 8) -> Window:
    """A window counted by ``estimate_tokens`` over every message, plus a few tokens of
    chat markup per message."""

    def count(prompt: Prompt) -> int:
        messages = prompt.messages()
        return sum(estimate_tokens(m["content"], chars_per_token) + per_message
                   for m in messages)

    return Window(tokens, count)


def fit_prompt(build: Callable[[int], Prompt], budget_chars: int,
               window: Window | None) -> Prompt:
    """``build(budget_chars)``, or, if it is over ``window``, ``build`` of the first budget
    down the ladder ``budget_chars * RUNG ** k`` that fits."""
    prompt = build(budget_chars)
    if window is None:
        return prompt
    tokens = window.count(prompt)
    for rung in range(1, MAX_RUNGS + 1):
        if tokens <= window.room(prompt):
            return prompt
        budget = int(budget_chars * RUNG ** rung)
        if budget <= len(prompt.system):
            break
        prompt = build(budget)
        tokens = window.count(prompt)
    if tokens <= window.room(prompt):
        return prompt
    raise PromptTooLong(f"the prompt needs {tokens} tokens, more than the {window.tokens}-token "
                        f"window leaves after a {prompt.max_tokens}-token answer")


@dataclass(frozen=True)
class HistoryPlan:
    """How every context's prompt of one example is built: at ``budget_chars``, with at
    least the ``dropped`` oldest cells left out."""

    budget_chars: int
    dropped: int


def common_history(build: Callable[[PredictionContext, int, int], Prompt],
                   contexts: Sequence[PredictionContext], budget_chars: int,
                   window: Window | None) -> HistoryPlan:
    """The first budget down the ladder at which every context's prompt, cut to the history
    of the context that keeps fewest cells, fits ``window`` (``build(context, budget,
    min_dropped)``). One budget also means one length to which each cell is clipped."""
    prompts: list[Prompt] = []
    for rung in range(MAX_RUNGS + 1):
        budget = int(budget_chars * RUNG ** rung)
        prompts = [build(context, budget, 0) for context in contexts]
        if rung and any(budget <= len(p.system) for p in prompts):
            break
        dropped = max(p.dropped_steps for p in prompts)
        prompts = [p if p.dropped_steps == dropped else build(p.context, budget, dropped)
                   for p in prompts]
        if window is None or all(window.count(p) <= window.room(p) for p in prompts):
            return HistoryPlan(budget, dropped)
    worst = max(prompts, key=lambda p: window.count(p) if window else 0)
    tokens = window.count(worst) if window else 0
    raise PromptTooLong(f"the {worst.context} prompt needs {tokens} tokens, more than the "
                        f"{window.tokens if window else 0}-token window leaves after a "
                        f"{worst.max_tokens}-token answer")
