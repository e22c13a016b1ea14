"""Inline completion: what goes at the cursor of the cell a person is typing.

A code model (``fills_code``: the embedded Qwen2.5-Coder models, also under ``hybrid``)
fills in the middle: the text before and after the cursor, after the notebook so far and,
by context, the runtime state (``prompts/code.py``); it writes the rest of the line.
Otherwise a model the server runs that writes cells (``writes_cells``: ``hybrid:MODEL``,
``openai:``, ``anthropic:`` and ``local`` forms) is asked the next-cell
question with the typed text shown (``build_prompt``'s ``beginning``); its cell counts only
if it begins with that text. The embedded SmolLM2 under ``hybrid`` does neither: its next
cells scored far below copying the last cell (README "Predictors"), and a wrong ghost text
is worse than none. Never the cell just run. Nothing is stored or scored, as an editor's
completion is not: the next-cell task stays the benchmark.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from themisto_ext.errors import PredictionSuperseded, ProviderError
from themisto_ext.prediction.clients.base import Predictor
from themisto_ext.prediction.prompts.code import build_infill
from themisto_ext.prediction.run import Superseded, predict
from themisto_ext.records import Context, Scope, Step


@dataclass(frozen=True)
class CellCompletion:
    completion: str | None
    """The text to insert after what was typed; None: no completion."""
    predictor: str | None
    """The predictor that wrote it (or was asked)."""
    reason: str | None
    """Why there is no completion."""


NO_WRITER = ("no predictor of this server writes cells with a model (a code model under "
             "local or hybrid, hybrid:MODEL, openai:, anthropic: or local forms; the "
             "embedded SmolLM2 does not)")
FILL_BUDGET = 6_000
"""Characters of notebook and state a fill-in-the-middle request shows (~2,000 tokens)."""


def writer(predictors: Iterable[Predictor]) -> Predictor | None:
    """The first predictor whose model may complete a cell being typed."""
    return next((p for p in predictors if getattr(p, "fills_code", False)
                 or getattr(p, "writes_cells", False)), None)


def continuation(cell: str, beginning: str) -> str | None:
    """What ``cell`` adds to ``beginning`` when it begins so (the typed text's trailing
    blanks matched exactly, as the answer's post-processing may have moved them)."""
    core = beginning.rstrip()
    if not cell.startswith(core):
        return None
    rest, blanks = cell[len(core):], beginning[len(core):]
    if not rest.startswith(blanks):
        return None
    rest = rest[len(blanks):]
    return rest if rest.strip() else None


async def fill(predictor: Any, history: Sequence[Step], before: str, after: str,
               context: Context, session: str | None) -> CellCompletion:
    """The rest of the line at the cursor, filled in by a code model."""
    name = predictor.name
    request = build_infill(history, before, after, context, budget_chars=FILL_BUDGET)
    try:
        done = await predictor.infill(request, session)
    except PredictionSuperseded as exc:
        return CellCompletion(None, name, str(exc))
    except ProviderError as exc:
        return CellCompletion(None, name, str(exc))
    text = done.text.rstrip("\n")
    if not text.strip():
        return CellCompletion(None, name, "the model wrote nothing at the cursor")
    if history and (before + text + after).strip() == str(history[-1]["code"]).strip():
        return CellCompletion(None, name, "the model wrote the cell just run")
    return CellCompletion(text, name, None)


async def complete_cell(predictor: Predictor, history: Sequence[Step], beginning: str,
                        context: Context, *, scope: Scope, target_step: int,
                        budget_chars: int, session: str | None = None,
                        after: str = "") -> CellCompletion:
    if getattr(predictor, "fills_code", False):
        return await fill(predictor, history, beginning, after, context, session)
    outcome = await predict(predictor, history, "next-cell", context, scope=scope,
                            target_step=target_step, budget_chars=budget_chars,
                            session=session, beginning=beginning)
    name = predictor.name
    if isinstance(outcome, Superseded):
        return CellCompletion(None, name, outcome.reason)
    if outcome["error"]:
        return CellCompletion(None, name, outcome["error"]["message"])
    answer = str(outcome["answer"] or "")
    if outcome.get("abstained") or not answer.strip():
        return CellCompletion(None, name, "the model wrote no cell")
    rest = continuation(answer, beginning)
    if rest is None:
        return CellCompletion(None, name, "the model's cell does not begin with the typed text")
    return CellCompletion(rest, name, None)
