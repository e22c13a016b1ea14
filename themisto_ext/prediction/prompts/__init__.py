"""Prompts for the two Themisto tasks, built from a trajectory by pure functions (no I/O).

What a model is asked, and how its answer is read back, is one protocol whatever the
transport (in-process llama.cpp, an OpenAI-compatible server, Anthropic): the same
messages (system text, a fixed demonstration exchange, the question), the same answer
delimiters and stop sequences, the same cap on the answer's length, the same
post-processing (``postprocess.py``). docs/benchmark.md says why each part is there.
"""

from __future__ import annotations

from dataclasses import dataclass

from themisto_ext.records import PredictionContext, PredictionTask

TASKS: tuple[PredictionTask, ...] = ("output", "next-cell")
CONTEXTS: tuple[PredictionContext, ...] = ("none", "full", "curated")

ANSWER_TAGS: dict[PredictionTask, tuple[str, str]] = {
    "output": ("<output>\n", "</output>"),
    "next-cell": ("<code>\n", "</code>"),
}
"""The tags that delimit the answer, the same as around a history cell's output and code."""

ANSWER_TOKENS = 256
"""The protocol's cap on an answer, in tokens, for every transport (a live predictor may
set a lower one for latency). 99% of the shared notebooks' outputs and cells fit."""

MARKUP = ("<cell", "</cell>", "<code>", "</code>", "<output", "</output>", "<target_cell>",
          "</target_cell>", "<next_cell_begins>", "</next_cell_begins>", "<state_changes>",
          "</state_changes>", "<runtime_state", "</runtime_state>")
"""Every tag the prompts use: none of them may survive in an answer."""


@dataclass(frozen=True)
class Exchange:
    """A demonstration: a question in the prompts' own format and its answer."""

    user: str
    assistant: str


@dataclass(frozen=True)
class Prompt:
    """What a model receives, laid out so consecutive prompts of a session share a prefix.

    ``system`` holds the fixed instructions, ``demonstrations`` a fixed exchange showing
    the answer format (both depend on the context only), ``prefix`` the trajectory so far
    (oldest first, append-only between consecutive steps of one session), ``suffix`` what
    changes at every step (runtime state before the target, the target itself, the
    question). Transports send ``messages()``; those that support prompt caching mark the
    end of ``prefix``.
    """

    task: PredictionTask
    context: PredictionContext
    system: str
    prefix: str
    suffix: str
    dropped_steps: int = 0
    """Oldest steps left out to fit the context budget (the prompt says so too)."""
    demonstrations: tuple[Exchange, ...] = ()
    answer_open: str = ""
    answer_close: str = ""
    """How the answer is delimited in the prompt's own format (``<output>`` ... ``</output>``).
    The demonstrations answer so, and the model answers in kind: a transport that can
    begin the reply itself (Anthropic's prefill) begins it with ``answer_open``."""
    stop: tuple[str, ...] = ()
    """Stop sequences: the closing tag, and the end of a cell for a model that forgets it."""
    max_tokens: int = ANSWER_TOKENS

    @property
    def user(self) -> str:
        return self.prefix + self.suffix

    def messages(self) -> list[dict[str, str]]:
        """The chat messages every transport sends: system, demonstrations, question."""
        messages = [{"role": "system", "content": self.system}] if self.system else []
        for exchange in self.demonstrations:
            messages += [{"role": "user", "content": exchange.user},
                         {"role": "assistant", "content": exchange.assistant}]
        return [*messages, {"role": "user", "content": self.user}]


__all__ = [
    "ANSWER_TAGS",
    "ANSWER_TOKENS",
    "CONTEXTS",
    "MARKUP",
    "TASKS",
    "Exchange",
    "PredictionContext",
    "PredictionTask",
    "Prompt",
]
