"""``hybrid``: a reference rule where one applies, the embedded model where none does.

Output task, in order: the baseline's answer when its rules determine everything the cell
can show (``baseline.determined_output`` over the state the context shows); else the
previous step's output, when it showed something; else the local model. Next-cell task:
the analogy of ``nextcell.py`` (never the cell just run), else the local model. The order
is the measured one: on the shared notebooks the local model scored below
``copy-previous`` on both tasks under every context, and the baseline's determined
answers are exact more often than either (docs/benchmark.md, "References").

The model is asked only where both rules abstain, so most predictions cost nothing; its
prompt is the protocol's, fitted to the model's window, and its reply is post-processed
here the same way ``run.py`` post-processes a model's.
"""

from __future__ import annotations

import time
from typing import Any

from themisto_ext.prediction.clients.base import Completion, PredictionRequest, Predictor
from themisto_ext.prediction.clients.baseline import determined_output, visible_state
from themisto_ext.prediction.clients.nextcell import next_cell
from themisto_ext.prediction.clients.references import copy_previous
from themisto_ext.prediction.prompts import Prompt
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.window import Window

HYBRID = "hybrid"


class HybridPredictor:
    name = HYBRID

    def __init__(self, model: Predictor) -> None:
        self._model = model

    @property
    def window(self) -> Window | None:
        return self._model.window

    @property
    def max_tokens(self) -> int | None:
        return self._model.max_tokens

    def _rule(self, request: PredictionRequest) -> tuple[str, str] | None:
        """(answer, which rule) when a rule applies."""
        if request.task == "next-cell":
            answer = next_cell(request.history)
            return None if answer is None else (answer, "analogy")
        code = request.target_code or ""
        state = visible_state(request.history, request.prompt.context, code)
        determined = determined_output(code, request.history, state)
        if determined is not None and determined[1]:
            return determined[0], "baseline"
        previous = copy_previous(request)
        return (previous, "copy-previous") if previous.strip() else None

    async def predict(self, request: PredictionRequest) -> Completion:
        started = time.perf_counter()
        rule = self._rule(request)
        if rule is not None:
            return Completion(text=rule[0], model=f"{HYBRID}:{rule[1]}",
                              latency=time.perf_counter() - started, answer=rule[0])
        completion = await self._model.predict(request)
        completion.model = f"{HYBRID}:{completion.model}"
        completion.answer = postprocess(completion.text, request.task)
        return completion

    def status(self) -> dict[str, Any] | None:
        """The model's process, as ``local`` reports it, under this predictor's name
        (None: its model runs no process)."""
        status = getattr(self._model, "status", None)
        return None if status is None else {**status(), "predictor": HYBRID}

    async def warm(self, prompt: Prompt, session: str | None) -> int:
        """The model's session warmed, if the model keeps sessions (see ``local``)."""
        warm = getattr(self._model, "warm", None)
        return 0 if warm is None else int(await warm(prompt, session))

    async def aclose(self) -> None:
        await self._model.aclose()
