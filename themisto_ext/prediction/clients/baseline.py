"""The baseline predictor: instant, deterministic answers that a model has to beat.

Output task: the cell is read with ``ast`` (IPython magics and broken code give an empty
prediction) and run symbolically, top-level statement by statement, over what the runtime
snapshot before it says (the ``runtime_variables`` of the last step of the history) *as far
as the prediction's context shows it*: nothing under ``none`` (which gives a model only
code and outputs), the curated variables under ``curated``, all under ``full``. What
can be known is predicted; the rest is assumed to print nothing, as most cells do:

* ``print(...)`` of literals, of variables whose value the snapshot holds as a literal repr,
  of ``len(x)``, ``x.shape``, ``type(x)``, f-strings of those... prints its text;
* a last expression (without ``;``) shows what IPython would show: the value as IPython's
  pretty printer renders it (``[0,\\n 1, ...]`` for a long list, ``int`` for ``type(3)``,
  nothing for ``None``), or the snapshot's own repr for a bare name (a frame's summary);
* a NumPy array the snapshot holds whole is rebuilt from its repr and computed on
  (``arrays.py``: indexing, comparisons, arithmetic, reductions, joins; bounded; a result
  computed on floats the repr may have rounded counts only if it reads the same when they
  are moved within that rounding: ``np.sin(theta)`` at pi does not), and
  ``np`` is NumPy where an earlier cell imported it so; likewise a pandas Series or
  DataFrame whose repr the snapshot holds whole and rebuilds faithfully (``frames.py``:
  columns, ``loc``/``iloc``, aggregates, ``head``, sorting, arithmetic; bounded);
* a cell that draws with matplotlib and shows nothing else shows its figures' lines
  (``<Figure size 640x480 with 1 Axes>``, ``figures.py``), whether or not the rest of it
  is known;
* ``model.fit(X, y)`` shows ``model`` as the snapshot shows it, for a model shown as
  ``Type(parameters)`` (scikit-learn's convention, which XGBoost and LightGBM follow: fit
  returns the model and leaves the parameters its repr shows);
* plain Python over known values runs as Python runs it (``interpreter.py``, ``flow.py``,
  ``operators.py``): the methods of strings, numbers, lists, dicts and sets (``s.upper()``,
  ``L.append(4)`` on the cell's copy), ``if``, ``for`` with ``break``/``continue``,
  comprehensions, lambdas with ``map``/``filter``/``sorted(key=...)``, an assignment that
  prints (``x = print(...)``); bounded in steps and size; never in an order only the
  kernel knows (a set of strings printed or looped over) or with an address;
* a variable is known from the snapshot until a statement of the cell does anything with
  it other than reading it in something these modules evaluate; ``x = <known value>``
  keeps it known (a list changed in place is known as changed, and every other list,
  dict, set or tuple the snapshot holds, which may be the same object, no longer is).

Next-cell task: the earlier cell most like the last one (rapidfuzz ``fuzz.ratio``; ties go to
the latest) was followed by some cell; that cell is the prediction.
"""

from __future__ import annotations

import ast
import asyncio
import io
import re
import time
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from rapidfuzz import fuzz

from themisto_ext.prediction.clients.base import Completion, PredictionRequest
from themisto_ext.prediction.prompts.state import curated_selection
from themisto_ext.records import PredictionContext, RuntimeVariable, Step
from themisto_ext.rules import apart, display_options, figures, frames, names
from themisto_ext.rules.flow import PURE_BUILTINS
from themisto_ext.rules.interpreter import MODULES, State


class BaselinePredictor:
    name = "baseline"
    window = None
    max_tokens = None

    async def predict(self, request: PredictionRequest) -> Completion:
        started = time.perf_counter()
        text = await asyncio.to_thread(self._text, request)  # off the server's loop
        return Completion(
            text=text,
            model="baseline",
            latency=time.perf_counter() - started,
            prompt_tokens=None,
            completion_tokens=None,
            answer=text,
        )

    @staticmethod
    def _text(request: PredictionRequest) -> str:
        if request.task == "output":
            code = request.target_code or ""
            state = visible_state(request.history, request.prompt.context, code)
            return predict_output(code, request.history, state)
        return predict_next_cell(request.history)

    async def aclose(self) -> None:
        return None


def predict_next_cell(history: Sequence[Step]) -> str:
    if len(history) < 2:
        return ""
    last = history[-1]["code"]
    best, best_score = 0, -1.0
    for i in range(len(history) - 2, -1, -1):  # latest first, so that it wins ties
        similarity = fuzz.ratio(history[i]["code"], last)
        if similarity > best_score:
            best, best_score = i, similarity
    return str(history[best + 1]["code"])


def visible_state(history: Sequence[Step], context: PredictionContext,
                  target_code: str | None) -> Mapping[str, RuntimeVariable]:
    """The runtime state a prediction in ``context`` may use: what its prompt shows."""
    if not history or context == "none":
        return {}
    variables = history[-1].get("runtime_variables") or {}
    if context == "curated":
        chosen = curated_selection(history, target_code)
        return {name: entry for name, entry in variables.items() if name in chosen}
    return variables


def predict_output(code: str, history: Sequence[Step],
                   snapshot: Mapping[str, RuntimeVariable] | None = None) -> str:
    """What ``code`` displays after ``history``, as far as ``snapshot`` (default: the whole
    state before it) determines it; what it does not determine is taken to show nothing."""
    determined = determined_output(code, history, snapshot)
    return "" if determined is None else determined[0]


def determined_output(code: str, history: Sequence[Step],
                      snapshot: Mapping[str, RuntimeVariable] | None = None,
                      ) -> tuple[str, bool] | None:
    """``(shown, complete)``: what ``code`` displays as far as the rules know, and whether
    they know all of it (no statement that could display something was undetermined;
    assignments, imports and definitions are taken to show nothing). None: not Python."""
    found = determined(code, history, snapshot)
    return None if found is None else (found.text, found.complete)


class Determined(NamedTuple):
    text: str
    """What the cell shows as far as the rules know."""
    complete: bool
    """They know all of it."""
    raised: str | None = None
    """The cell raises: the last line of its traceback, after ``text`` (what it showed
    before), where the rules know both (``complete`` is False: they do not write the
    traceback's frames)."""


def determined(code: str, history: Sequence[Step],
               snapshot: Mapping[str, RuntimeVariable] | None = None) -> Determined | None:
    """What ``determined_output`` says, and whether the cell raises."""
    try:
        cell = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # magics, shell escapes
        return None
    whole = (history[-1].get("runtime_variables") or {}) if history else {}
    if snapshot is None:
        snapshot = whole
    codes = [str(step.get("code") or "") for step in history]
    options = display_options.learnt(codes, cell, whole)
    if options is None:  # how the kernel shows values is not known
        return Determined("", False)
    if display_options.process_wide(options) and not apart.in_own_process():
        unknown: Determined | None = Determined("", False)  # that process was lost
        return apart.apart(determined, code, history, snapshot, fallback=unknown)
    # names no cell defined are judged on the whole state only (a part may lack them)
    undefined, uncertain = names.undefined(cell, history, whole) \
        if set(snapshot) == set(whole) else (set(), set())
    modules = {module: names.module_names(history, module) for module in MODULES}
    shadowed = names.bound(cell) | set(snapshot)
    if names.defines_unspelt(history):  # the builtins may be numpy's now
        shadowed |= set(PURE_BUILTINS)
    showing = names.showing_definitions(cell, history)
    state = State(snapshot, shadowed, _classes_defined(history), modules, showing=showing)
    try:
        with display_options.applied(options), frames.reading([*codes, code]):
            text = state.shown(cell, _quiet(code), undefined, uncertain)
            if state.rounded:  # computed on floats a repr rounded: only if the dropped
                for nudge in (1, -1, 2, -2):  # digits cannot change what it shows, moved
                    # up, down, or every other one up and the rest down
                    nudged = State(snapshot, state.shadowed, state.classes, modules, nudge,
                                   showing)
                    if (nudged.shown(cell, _quiet(code), undefined, uncertain),
                            nudged.raised) != (text, state.raised):
                        return Determined("", False)  # unknown, as any value not told
    except ValueError:  # options NumPy or pandas refuse
        return Determined("", False)
    if state.raises:  # a traceback the rules do not write (figures drawn before: unknown)
        drew = figures.figure_text(cell, history, _quiet(code), snapshot) != ""
        return Determined(text, False, None if drew else state.raised)
    drawn = figures.figure_text(cell, history, _quiet(code), snapshot)  # parsed once
    if drawn is None:
        return Determined(text, False)
    # a cell that draws shows its figures and nothing else (figure_text checked that)
    if drawn and (set().union(*map(names.read_now, cell.body)) & (undefined | uncertain)
                  or (not whole and names.unaccounted(cell, history))):
        return Determined(drawn, False)  # it may raise NameError before it draws
    return Determined(drawn, True) if drawn else Determined(text, not state.undetermined)


def _quiet(code: str) -> bool:
    """IPython shows no result when the cell's last token is a semicolon."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    # IPython's DisplayHook.quiet, which does not skip a DEDENT.
    ignored = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER}
    significant = [token for token in tokens if token.type not in ignored]
    return bool(significant) and significant[-1].string == ";"


def _classes_defined(history: Iterable[Step]) -> set[str]:
    return {
        match.group(1)
        for step in history
        for match in re.finditer(r"^\s*class\s+(\w+)", str(step.get("code", "")), re.M)
    }
