"""A prediction scored against the step it predicted (exact match, ROUGE-L, chrF)."""

from __future__ import annotations

from themisto_ext.prediction.metrics import score
from themisto_ext.records import Prediction, Scores, Step

PERFECT: Scores = {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}


def reference_for(task: str, step: Step) -> str:
    """What a prediction for ``step`` is compared with."""
    return str(step["output"] if task == "output" else step["code"])


def scored(prediction: Prediction, step: Step) -> Prediction:
    """The prediction with the real result and, unless the call failed or the predictor
    abstained, its scores.

    rouge-score and sacrebleu score two empty texts 0 (no tokens, no n-grams); the metric
    functions keep that for comparability, but a cell predicted to show nothing that shows
    nothing is exactly right, and the panel and benchmarks score it so.
    """
    reference = reference_for(prediction["task"], step)
    scores: Scores | None
    if prediction.get("error") or prediction.get("abstained"):
        scores = None  # no answer to score: the report counts these apart
    elif not prediction["answer"].strip() and not reference.strip():
        scores = PERFECT.copy()
    else:
        scores = score(prediction["answer"], reference)
    return {**prediction, "reference": reference, "scores": scores}
