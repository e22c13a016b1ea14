"""``copy-previous``: the reference every model has to beat to show it learnt anything.

Output task: the previous step's output. Next-cell task: the previous cell's code.
Notebooks repeat themselves (the same call on a new slice, a cell re-run after an edit), so
this costs nothing and scores well above zero; a model's score means something only next
to it (docs/benchmark.md, "References"). It reads no runtime state, so its answers are the
same under every context.
"""

from __future__ import annotations

import time

from themisto_ext.prediction.clients.base import Completion, PredictionRequest

COPY_PREVIOUS = "copy-previous"


def copy_previous(request: PredictionRequest) -> str:
    if not request.history:
        return ""
    last = request.history[-1]
    return str(last["output"] if request.task == "output" else last["code"])


class CopyPreviousPredictor:
    name = COPY_PREVIOUS
    window = None
    max_tokens = None

    async def predict(self, request: PredictionRequest) -> Completion:
        started = time.perf_counter()
        text = copy_previous(request)
        return Completion(text=text, model=COPY_PREVIOUS,
                          latency=time.perf_counter() - started, answer=text)

    async def aclose(self) -> None:
        return None
