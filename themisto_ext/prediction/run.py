"""One prediction, end to end: prompt -> model client -> post-processed answer -> record.

The prompt is fitted to the predictor's own window in its own tokens (``prompts/window.py``)
and capped at its answer length; a model's reply is read back by the one post-processing of
the protocol, whatever the transport; a rule-based predictor's answer is used as it is.
The record is what the store keeps, the API serves and the panel shows; its schema is
``schemas/prediction.schema.json``. Scoring it against the real step is ``scoring.py``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from themisto_ext.errors import LocalModelError, PromptTooLong, ThemistoError
from themisto_ext.prediction.clients.base import (
    PredictionRequest,
    PredictionSuperseded,
    Predictor,
    ProviderError,
)
from themisto_ext.prediction.prompts import ANSWER_TOKENS, Prompt
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.window import fit_prompt
from themisto_ext.records import (
    Prediction,
    PredictionContext,
    PredictionError,
    PredictionErrorCode,
    PredictionTask,
    Scope,
    Step,
)


@dataclass(frozen=True)
class Superseded:
    """The outcome of a prediction that a newer request of its session replaced before it
    ran to the end: there is nothing to store or show."""

    reason: str


def prediction_error(error: ThemistoError) -> PredictionError:
    """Why a prediction has no answer, as its record keeps it: the class (``type``, what
    records made before codes existed have) and its branch of the exception tree as a
    closed code (``code``), which is what the front end matches on."""
    code: PredictionErrorCode = (
        "superseded" if isinstance(error, PredictionSuperseded)
        else "prompt-too-long" if isinstance(error, PromptTooLong)
        else "local-model" if isinstance(error, LocalModelError)
        else "provider")
    return {"type": type(error).__name__, "message": str(error), "code": code}


def blank_record(predictor: str, task: PredictionTask, context: PredictionContext, *, scope: Scope,
                 target_step: int, cell_id: str | None = None) -> Prediction:
    """A prediction record with no answer yet."""
    return {
        "id": uuid.uuid4().hex, "trajectory_id": scope.trajectory_id,
        "kernel_id": scope.kernel_id, "notebook_path": scope.notebook_path,
        "cell_id": cell_id, "task": task,
        "context": context, "predictor": predictor, "model": None,
        "target_step": target_step,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "latency": None, "queue_seconds": None, "prompt_tokens": None,
        "completion_tokens": None, "cached_tokens": None, "prefix_reused": None, "dropped_steps": 0,
        "speculative": False, "ready_before_start": None, "abstained": False,
        "answer": "", "error": None, "reference": None, "scores": None,
    }


def missed_record(predictor: str, task: PredictionTask, context: PredictionContext, message: str, *,
                  scope: Scope, target_step: int, cell_id: str | None = None) -> Prediction:
    """The record of a prediction missed (dropped, or never made) because the next cell
    started first: stored and shown like a failed one, so a cell says why it has none."""
    record = blank_record(predictor, task, context, scope=scope, target_step=target_step,
                          cell_id=cell_id)
    record["error"] = prediction_error(PredictionSuperseded(message))
    return record


async def predict(
    predictor: Predictor,
    history: Sequence[Step],
    task: PredictionTask,
    context: PredictionContext,
    *,
    scope: Scope,
    target_step: int,
    target_code: str | None = None,
    cell_id: str | None = None,
    session: str | None = None,
    budget_chars: int = 24_000,
    on_text: Callable[[str], None] | None = None,
    on_cpu: Callable[[float], None] | None = None,
    speculative: bool = False,
    min_dropped: int = 0,
    beginning: str | None = None,
) -> Prediction | Superseded:
    """Predict the ``task`` of ``target_step`` in ``scope`` and return the record; a failed
    model call becomes the record's ``error``.
    With ``on_text``, a model that streams its answer hands over its raw text so far as it
    writes (the record holds the complete answer). ``on_cpu``: see ``PredictionRequest``.
    ``min_dropped``: at least this many of the oldest cells are left out (a benchmark gives
    every context of an example the same history, ``window.common_history``).
    ``beginning``: what the person has typed of the next cell (``build_prompt``)."""
    cap = predictor.max_tokens or ANSWER_TOKENS

    def build(budget: int) -> Prompt:
        return build_prompt(history, task, context, target_code=target_code,
                            budget_chars=budget, max_tokens=cap, min_dropped=min_dropped,
                            beginning=beginning)

    fitting: PromptTooLong | ProviderError | None = None
    if predictor.window is None:
        prompt = build(budget_chars)
    else:
        try:  # counting tokens may load a model: off the event loop
            prompt = await asyncio.to_thread(fit_prompt, build, budget_chars, predictor.window)
        except (PromptTooLong, ProviderError) as exc:  # too long; the model cannot load
            prompt, fitting = build(budget_chars), exc
    record = blank_record(predictor.name, task, context, scope=scope,
                          target_step=target_step, cell_id=cell_id)
    record["prompt"] = {"system": prompt.system, "user": prompt.user}
    record["dropped_steps"] = prompt.dropped_steps
    record["raw"] = ""
    if fitting is not None:
        record["error"] = prediction_error(fitting)
        return record
    start = time.perf_counter()
    try:
        completion = await predictor.predict(PredictionRequest(
            task=task, history=list(history), target_code=target_code, prompt=prompt,
            session=session, on_text=on_text, on_cpu=on_cpu, speculative=speculative,
            beginning=beginning))
    except PredictionSuperseded as exc:
        return Superseded(str(exc))
    except ProviderError as exc:
        record["latency"] = round(time.perf_counter() - start, 4)
        record["error"] = prediction_error(exc)
        return record
    record["model"] = completion.model
    record["latency"] = round(completion.latency, 4)
    if completion.queue_seconds is not None:
        record["queue_seconds"] = round(completion.queue_seconds, 4)
    record["prompt_tokens"] = completion.prompt_tokens
    record["completion_tokens"] = completion.completion_tokens
    record["cached_tokens"] = completion.cached_tokens
    record["prefix_reused"] = (None if completion.cached_tokens is None
                               else completion.cached_tokens > 0)
    record["raw"] = completion.text
    record["answer"] = completion.answer if completion.answer is not None \
        else postprocess(completion.text, task)
    record["abstained"] = completion.abstained
    return record


async def warm(predictor: Predictor, history: Sequence[Step], context: PredictionContext, *,
               session: str | None, budget_chars: int = 24_000) -> int | None:
    """Have a model that keeps sessions read the prompt its session's next prediction will
    begin with (the trajectory so far), so that prediction reads only its cell. Returns the
    tokens read; None for a predictor that keeps no sessions."""
    warm_up = getattr(predictor, "warm", None)
    if warm_up is None:
        return None

    def build(budget: int) -> Prompt:
        return build_prompt(history, "output", context, target_code="", budget_chars=budget,
                            max_tokens=predictor.max_tokens or ANSWER_TOKENS)

    prompt = build(budget_chars) if predictor.window is None \
        else await asyncio.to_thread(fit_prompt, build, budget_chars, predictor.window)
    return int(await warm_up(prompt, session))
