"""One prediction, end to end: prompt -> predictor -> post-processed answer -> record -> score.

The record is what the store keeps, the API serves and the panel shows; its fields are
listed in docs/openapi.yaml (``Prediction``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from themisto_ext.metrics import score
from themisto_ext.predictors.base import PredictionRequest, Predictor
from themisto_ext.prompts import Context, Task
from themisto_ext.prompts.build import build_prompt
from themisto_ext.prompts.postprocess import postprocess
from themisto_ext.providers.base import ProviderError
from themisto_ext.trajectory import Step

Prediction = dict[str, Any]


def reference_for(task: str, step: Step) -> str:
    """What a prediction for ``step`` is compared with."""
    return str(step["output"] if task == "output" else step["code"])


async def predict(
    predictor: Predictor,
    history: Sequence[Step],
    task: Task,
    context: Context,
    *,
    trajectory_id: str,
    target_step: int,
    target_code: str | None = None,
    session: str | None = None,
    budget_chars: int = 24_000,
    meta: dict[str, Any] | None = None,
) -> Prediction:
    """Predict and return the record; provider failures become the record's ``error``."""
    prompt = build_prompt(history, task, context, target_code=target_code,
                          budget_chars=budget_chars)
    record: Prediction = {
        "id": uuid.uuid4().hex, "trajectory_id": trajectory_id, "task": task,
        "context": context, "predictor": predictor.name, "model": None,
        "target_step": target_step,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "latency": None, "prompt_tokens": None, "completion_tokens": None,
        "cached_tokens": None, "prefix_reused": None,
        "prompt": {"system": prompt.system, "user": prompt.user},
        "dropped_steps": prompt.dropped_steps,
        "raw": "", "answer": "", "error": None, "reference": None, "scores": None,
        **(meta or {}),
    }
    start = time.perf_counter()
    try:
        completion = await predictor.predict(PredictionRequest(
            task=task, history=list(history), target_code=target_code, prompt=prompt,
            session=session))
    except ProviderError as exc:
        record["latency"] = round(time.perf_counter() - start, 4)
        record["error"] = {"type": type(exc).__name__, "message": str(exc)}
        return record
    record.update(
        model=completion.model, latency=round(completion.latency, 4),
        prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
        cached_tokens=completion.cached_tokens,
        prefix_reused=None if completion.cached_tokens is None else completion.cached_tokens > 0,
        raw=completion.text, answer=postprocess(completion.text),
    )
    return record


PERFECT = {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}


def scored(prediction: Prediction, step: Step) -> Prediction:
    """The prediction with the real result and, unless the call failed, its scores.

    rouge-score and sacrebleu score two empty texts 0 (no tokens, no n-grams); the metric
    functions keep that for comparability, but a cell predicted to show nothing that shows
    nothing is exactly right, and the panel and benchmarks score it so.
    """
    reference = reference_for(prediction["task"], step)
    if prediction.get("error"):
        scores = None
    elif not prediction["answer"].strip() and not reference.strip():
        scores = dict(PERFECT)
    else:
        scores = score(prediction["answer"], reference)
    return {**prediction, "reference": reference, "scores": scores}
