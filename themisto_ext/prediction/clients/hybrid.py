"""``hybrid``: a rule where one determines the answer, else the embedded model, else
nothing (it abstains).

Output task, in order: the baseline's answer when its rules determine everything the cell
can show (``baseline.determined`` over the state the context shows); where they know the
cell raises (a name no cell defined, ``xs[10]`` of a known list), what it prints first and
the last line of the traceback (``NameError: name 'q' is not defined``); the previous
step's output when the cell *is* a re-run of the previous one (the same code: the same
output, unless the state changed under it); else the local model. Copying the previous
output anywhere else would repeat what the user just saw, which is no prediction.
Next-cell task: the last cell's next variation (``nextcell.py``: never the cell just run).
Where none applies, a code model (``fills_code``: the embedded Qwen2.5-Coder models) writes
the cell as it fills in code after the notebook so far (``prompts/code.py``), in the
background (not urgent: an output prediction or a completion goes first), shown only where
its next cells were measured to beat copying (``Model.next_cells_beat_copying``; the 0.5B
model's were not) and then not where it is comments alone, cut off, a copy or a variant of
a cell already run (``_is_variant``); otherwise it only reads the notebook, so that the
completion typed next begins warm, and abstains. The embedded SmolLM2 is not asked: its
next cells scored far below copying the last cell (docs/results/predictors.md). A model the
predictor names (``hybrid:openai:MODEL``, ``hybrid:local:PATH.gguf``: ``next_cells``) is
asked where no variation applies, and its answer is shown unless it is the cell just run.

Where no rule answers an output, the embedded model of bare ``hybrid`` is asked only if
its output answers were measured to beat copying (``models.Model.outputs_beat_copying``;
none so far): else ``hybrid`` abstains there, as a copy or a guess below copying is no
prediction. A model the predictor names is asked (its user chose it).

The model's answer is shown only when it is one: an answer that is no prediction (the
prompt's demonstration echoed, cut off at the cap: ``prompts.garbage``; prompt markup in
the answer itself; for the output task, a copy of any earlier output of the trajectory or
of the cell's own code, which repeats what the user has seen) is an abstention
(``abstained``, no answer, not scored), and the notebook says there is no confident
prediction.

Most predictions cost nothing; the model's prompt is the protocol's, fitted to the model's
window, and its reply is post-processed here the same way ``run.py`` post-processes a
model's.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from rapidfuzz import fuzz

from themisto_ext.prediction.clients.base import (
    Completion,
    PredictionRequest,
    Predictor,
    TextSink,
)
from themisto_ext.prediction.clients.baseline import determined, visible_state
from themisto_ext.prediction.clients.nextcell import next_cell
from themisto_ext.prediction.clients.references import copy_previous
from themisto_ext.prediction.prompts import MARKUP, Prompt
from themisto_ext.prediction.prompts.code import Infill, build_next_cell
from themisto_ext.prediction.prompts.garbage import garbage
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.window import Window
from themisto_ext.records import Step

HYBRID = "hybrid"
log = logging.getLogger(__name__)


class HybridPredictor:
    def __init__(self, model: Predictor, name: str = HYBRID, *,
                 next_cells: bool = False, outputs: bool | None = None,
                 cells: bool | None = None) -> None:
        self._model = model
        self.name = name
        self.writes_cells = next_cells
        """Whether its model writes cells: the next cells no variation predicts (else it
        abstains), and the rest of a cell the person is typing (``completion.py``)."""
        self._outputs = outputs
        """Whether its model answers the outputs no rule answers (None: if the model's
        output answers were measured to beat copying)."""
        self._cells = cells
        """Whether a code model's next cells are shown (None: if measured to beat
        copying)."""
        self._reads: set[asyncio.Task[Completion]] = set()
        """The notebook read behind a variation's answer (``_read_behind``)."""

    @property
    def model_next_cells(self) -> bool:
        """Whether a code model's next cells are shown (else it abstains where no
        variation applies): where measured to beat copying, or asked for (``cells``)."""
        if self._cells is not None:
            return self._cells
        return bool(getattr(self._model, "next_cells_beat_copying", False))

    @property
    def model_outputs(self) -> bool:
        """Whether the model is asked for the outputs the rules leave (else: abstain)."""
        if self._outputs is not None:
            return self._outputs
        return bool(getattr(self._model, "outputs_beat_copying", True))

    @property
    def fills_code(self) -> bool:
        """Whether its model fills in the middle of code: a code model completes the cell
        being typed (``completion.py``), whatever ``writes_cells`` says of next cells."""
        return bool(getattr(self._model, "fills_code", False))

    async def infill(self, request: Infill, session: str | None,
                     on_text: TextSink | None = None) -> Completion:
        infill = self._model.infill  # type: ignore[attr-defined]
        done: Completion = await infill(request, session, on_text)
        return done

    @property
    def window(self) -> Window | None:
        return self._model.window

    @property
    def max_tokens(self) -> int | None:
        return self._model.max_tokens

    def _rule(self, request: PredictionRequest) -> tuple[str, str] | None:
        """(answer, which rule) when a rule applies; ("", "abstain") for no answer."""
        if request.task == "next-cell":
            answer = next_cell(request.history)
            if answer is not None and answer.startswith(request.beginning or ""):
                return answer, "variation"
            return None if self.writes_cells or self.fills_code else ("", "abstain")
        code = request.target_code or ""
        state = visible_state(request.history, request.prompt.context, code)
        found = determined(code, request.history, state)
        if found is not None and found.complete:
            return found.text, "baseline"
        if found is not None and found.raised:  # what it prints, then the error's line
            return "\n".join(part for part in (found.text, found.raised) if part), "raises"
        if _is_last_cell(code, request):
            return copy_previous(request), "rerun"
        return None if self.model_outputs else ("", "abstain")

    async def predict(self, request: PredictionRequest) -> Completion:
        started = time.perf_counter()
        # in a worker thread: a cell's rules may take tens of milliseconds (a loop of 2,000
        # steps; pandas imported on the first frame), which the server's loop must not wait on
        rule = await asyncio.to_thread(self._rule, request)
        if rule is not None:
            if rule[1] == "variation" and self.fills_code and request.session is not None:
                self._read_behind(request)
            return Completion(text=rule[0], model=f"{HYBRID}:{rule[1]}",
                              latency=time.perf_counter() - started, answer=rule[0],
                              abstained=rule[1] == "abstain")
        if request.task == "next-cell" and not self.writes_cells:
            return await self._write_cell(request)
        completion = await self._model.predict(request)
        completion.model = f"{HYBRID}:{completion.model}"
        answer = postprocess(completion.text, request.task)
        if self._no_prediction(request, completion, answer):
            completion.answer, completion.abstained = "", True
        else:
            completion.answer = answer
        return completion

    async def _write_cell(self, request: PredictionRequest) -> Completion:
        """The next cell as a code model fills it in after the notebook so far; an
        abstention where it is empty, comments only, cut off, a copy or a variant of a cell
        already run. Where the model's next cells were not measured to beat copying, it
        only reads the notebook (one token written): the completions typed next then
        begin warm, and the answer is an abstention."""
        beginning = request.beginning or ""
        shown = self.model_next_cells
        completion = await self._next_cell(request, NEXT_CELL_TOKENS if shown else 0)
        if not shown:
            completion.model, completion.answer, completion.abstained = (
                f"{HYBRID}:abstain", "", True)
            return completion
        completion.model = f"{HYBRID}:{completion.model}"
        # a model that takes the cell for an empty one writes the next header first
        cell = (beginning + _HEADER.sub("", completion.text, count=1)).strip()
        stopped = (completion.completion_tokens or 0) >= NEXT_CELL_TOKENS  # cut mid-cell
        has_code = any(line.strip() and not line.lstrip().startswith("#")
                       for line in cell.splitlines())  # comments alone: no cell to run
        if not has_code or stopped or any(tag in cell for tag in MARKUP) \
                or _is_variant(cell, request.history):
            completion.answer, completion.abstained = "", True
        else:
            completion.answer = cell
        return completion

    def _read_behind(self, request: PredictionRequest) -> None:
        """A code model reads the notebook in the background behind a variation's answer,
        as ``_write_cell`` does where it abstains: else a run of cells the variations
        answer (``x < 3``, ``x > 3``, ...) leaves every one of them for the next
        completion to read while someone waits at the cursor (02.06's cell 10: 3.7-4.5 s
        to its first words after six such cells, against 0.2 s at the median). A next-cell
        job: an urgent one pauses it, the next step's supersedes it."""
        read = asyncio.ensure_future(self._next_cell(request, 0))
        self._reads.add(read)
        read.add_done_callback(self._read_done)

    async def _next_cell(self, request: PredictionRequest, max_tokens: int) -> Completion:
        """The code model's next cell after the notebook so far, ``max_tokens`` of it (0:
        it only reads the notebook), as a background next-cell job."""
        infill = build_next_cell(request.history, request.beginning or "",
                                 request.prompt.context, max_tokens=max_tokens)
        call = self._model.infill  # type: ignore[attr-defined]
        done: Completion = await call(infill, request.session, task="next-cell")
        return done

    def _read_done(self, read: asyncio.Task[Completion]) -> None:
        self._reads.discard(read)
        if not read.cancelled() and read.exception() is not None:
            # (a superseded read, a model off: the completion reads for itself then)
            log.debug("themisto: the notebook read behind a variation ended: %r",
                      read.exception())

    def _no_prediction(self, request: PredictionRequest, completion: Completion,
                       answer: str) -> bool:
        """Whether the model's ``answer`` is no prediction, so that hybrid abstains."""
        if any(tag in answer for tag in MARKUP):
            return True
        if request.task == "next-cell" and (not answer.strip() or _is_last_cell(answer, request)):
            return True  # the cell just run again is no next cell
        if request.task == "output" and _is_copy(answer, request):
            return True
        # (markup after the answer's closing tag was cut off by post-processing: the answer
        # before it stands; the report still counts such text as garbage)
        kinds = garbage({"answer": answer, "raw": completion.text, "task": request.task,
                         "completion_tokens": completion.completion_tokens,
                         "answer_cap": self._model.max_tokens})
        return "demonstration" in kinds or "cap" in kinds

    def status(self) -> dict[str, Any] | None:
        """The model's process, as ``local`` reports it, under this predictor's name
        (None: its model runs no process)."""
        status = getattr(self._model, "status", None)
        return None if status is None else {**status(), "predictor": self.name}

    async def warm(self, prompt: Prompt, session: str | None) -> int:
        """The model's session warmed, if the model keeps sessions (see ``local``) and is
        asked the chat prompts warmed (outputs or next cells: else it would read for
        nothing, beside a user's computing kernel)."""
        warm = getattr(self._model, "warm", None)
        if warm is None or not (self.model_outputs or self.writes_cells):
            return 0
        return int(await warm(prompt, session))

    async def aclose(self) -> None:
        for read in list(self._reads):
            read.cancel()
        await self._model.aclose()


def _is_copy(answer: str, request: PredictionRequest) -> bool:
    """Whether an output ``answer`` repeats what the user has already seen: the cell's own
    code, or the output of any earlier step (a model that cannot tell shows the previous
    output, or its code, as if it were a prediction). A re-run of the previous cell, whose
    output may well repeat, is answered by the rules, never by the model."""
    text = answer.strip()
    if not text:
        return False
    if text == (request.target_code or "").strip():
        return True
    return any(text == str(step.get("output") or "").strip() for step in request.history)


VARIANT_RATIO = 90
"""A cell at least this similar (rapidfuzz ratio, blanks collapsed) to a cell already run
changes little of it: no prediction."""
NEXT_CELL_TOKENS = 96
"""Tokens a code model writes of a next cell: a cell longer than that is not shown cut."""
_TOKEN = re.compile(r"\w+|\S")
_HEADER = re.compile(r"\A(?:\s*# In\[\d*\]:[ \t]*(?:\n|\Z))+")


def _is_variant(cell: str, history: Sequence[Step]) -> bool:
    """Whether ``cell`` repeats a cell already run or is a variant of one: the same
    tokens but one (``df['age'].var()`` after ``df['age'].min()``), or nearly the same
    text."""
    text, tokens = " ".join(cell.split()), _TOKEN.findall(cell)
    for step in history:
        code = str(step.get("code") or "")
        if not code.strip():
            continue
        theirs = _TOKEN.findall(code)
        if len(theirs) == len(tokens) and \
                sum(a != b for a, b in zip(theirs, tokens, strict=True)) <= 1:
            return True
        if fuzz.ratio(text, " ".join(code.split())) >= VARIANT_RATIO:
            return True
    return False


def _is_last_cell(code: str, request: PredictionRequest) -> bool:
    """Whether ``code`` is the code of the cell just run (a re-run of the previous cell)."""
    return bool(request.history) and code.strip() == str(request.history[-1]["code"]).strip()
