"""Prompts for the two Themisto tasks, built from a trajectory by pure functions (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from themisto_ext.records import Context, Task

TASKS: tuple[Task, ...] = ("output", "next-cell")
CONTEXTS: tuple[Context, ...] = ("none", "full", "curated")


@dataclass(frozen=True)
class Prompt:
    """What a model receives, laid out so consecutive prompts of a session share a prefix.

    ``system`` holds the fixed instructions, ``prefix`` the trajectory so far (oldest
    first, append-only between consecutive steps of one session), ``suffix`` what changes
    at every step (runtime state before the target, the target itself). Providers send
    ``system`` and ``prefix + suffix``; those that support prompt caching mark the end of
    ``prefix``.
    """

    task: Task
    context: Context
    system: str
    prefix: str
    suffix: str
    dropped_steps: int = 0
    """Oldest steps left out to fit the context budget (the prompt says so too)."""
    answer_open: str = ""
    answer_close: str = ""
    """How the answer is delimited in the prompt's own format (``<output>`` ... ``</output>``).
    A predictor that can begin the model's reply itself (llama.cpp) opens it with
    ``answer_open`` and stops at ``answer_close``: a small model then answers in the format
    of the many examples above instead of with prose."""

    @property
    def user(self) -> str:
        return self.prefix + self.suffix


__all__ = ["CONTEXTS", "TASKS", "Context", "Prompt", "Task"]
