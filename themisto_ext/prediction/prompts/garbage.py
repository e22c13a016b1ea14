"""Answers that are not predictions at all: the benchmark report's garbage rate, and
where ``hybrid`` abstains rather than show its model's answer.

A score says how close an answer is; it does not say that a model returned the prompt's
own example, markup, nothing, or a loop cut off at the cap, which a small model does
often (SmolLM2 on 11 notebooks: 82 of 180 next-cell answers and 30 of 180 outputs; 65
next cells were the demonstration's answer). Each answer is checked for:

* ``demonstration``: it is one of the demonstrations' answers (``build.demonstration_answers``);
* ``markup``: the model's text holds a tag of the prompts' markup besides the answer's own
  opening and closing tags (post-processing cut the answer there: it went on writing the
  prompt's format, a new cell, a state block);
* ``empty``: nothing, where the reference is not empty;
* ``cap``: the answer used every token of the cap (``answer_cap``, else the protocol's),
  so it was cut off: a repetition loop, mostly.

An answer can be garbage in several ways; it counts once in the rate. Rule-based
predictors answer what their rules give, so only ``empty`` and ``demonstration`` apply to
them in practice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from themisto_ext.prediction.prompts import ANSWER_TAGS, ANSWER_TOKENS, MARKUP
from themisto_ext.prediction.prompts.build import demonstration_answers

GARBAGE_KINDS = ("demonstration", "markup", "empty", "cap")
_ECHOES = frozenset(answer.strip() for answer in demonstration_answers())


def _markup(raw: str, task: str) -> bool:
    tags: tuple[str, str] = ("", "")
    for known, pair in ANSWER_TAGS.items():
        if known == task:
            tags = pair
    opening, closing = (t.strip() for t in tags)
    text = raw.strip()
    if opening and text.startswith(opening):
        text = text[len(opening):]
    if closing and text.endswith(closing):
        text = text[: -len(closing)]
    return any(tag in text for tag in MARKUP)


def garbage(record: Mapping[str, Any]) -> list[str]:
    """The ways the answer of a ``record`` (a results.jsonl line, or a prediction before it
    is scored: ``empty`` needs the reference) is no prediction."""
    answer = str(record.get("answer") or "")
    raw = record.get("raw")
    reference = str(record.get("reference") or "")
    kinds = []
    if answer.strip() and answer.strip() in _ECHOES:
        kinds.append("demonstration")
    if isinstance(raw, str) and raw != answer and _markup(raw, str(record.get("task"))):
        kinds.append("markup")
    if not answer.strip() and reference.strip():
        kinds.append("empty")
    used, cap = record.get("completion_tokens"), record.get("answer_cap") or ANSWER_TOKENS
    if isinstance(used, int) and used >= cap:
        kinds.append("cap")
    return kinds
