"""Inline completion: what goes at the cursor of the cell a person is typing.

A code model (``fills_code``: the embedded Qwen2.5-Coder models, also under ``hybrid``)
fills in the middle: the text before and after the cursor, after the notebook so far and,
by context, the runtime state (``prompts/code.py``); it writes the rest of the line, of
which the argument at the cursor is offered (``one_argument``).
Otherwise a model the server runs that writes cells (``writes_cells``: ``hybrid:MODEL``,
``openai:``, ``anthropic:`` and ``local`` forms) is asked the next-cell
question with the typed text shown (``build_prompt``'s ``beginning``); its cell counts only
if it begins with that text. Under a context with runtime state, a code model's attribute or
key after ``name.`` / ``name[`` is checked against the names the live kernel lists there
(``names.py``). The embedded SmolLM2 under ``hybrid`` does neither: its next cells scored
far below copying the last cell (docs/results/predictors.md), and a wrong ghost text
is worse than none. Never the cell just run. Nothing is stored or scored, as an editor's
completion is not: the next-cell task stays the benchmark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from themisto_ext.errors import PredictionSuperseded, ProviderError
from themisto_ext.prediction.clients.base import Predictor, TextSink
from themisto_ext.prediction.names import (
    NAMES_WAIT,
    Kind,
    NameSource,
    grammar,
    kind_at,
    leading,
    usable,
    verdict,
)
from themisto_ext.prediction.prompts.code import Infill, build_infill
from themisto_ext.prediction.run import Superseded, predict
from themisto_ext.records import PredictionContext, Scope, Step


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


def _inserted(before: str, raw: str) -> tuple[str, bool]:
    """A code model's text as it is inserted (the argument at the cursor, without the line
    break it stopped at), and whether that argument is complete in it."""
    line = raw.rstrip("\n")
    end = _argument_end(before, line)
    return (line, False) if end is None else (line[:end], True)


def one_argument(before: str, text: str) -> str:
    """``text`` up to the end of the argument the cursor is in (typed ``before`` it): its
    first comma outside the strings and brackets ``text`` opens. Past that comma a code
    model writes arguments nobody has typed yet, where people also break the line (on the
    shared notebooks' first lines this took accepted suggestions from 18 % to 40 %); the
    pause after the comma asks again."""
    end = _argument_end(before, text)
    return text if end is None else text[:end]


def _argument_end(before: str, text: str) -> int | None:
    """Where in ``text`` the argument at the cursor ends (after its comma); None: not in
    ``text``."""
    quotes = _cursor_line(before)
    if quotes is None:
        return None  # typed in a comment
    opened = 0  # brackets ``text`` opened and has not closed
    for at, char in enumerate(text):
        if quotes.inside(char):
            continue
        if char in "([{":
            opened += 1
        elif char in ")]}":
            opened = max(0, opened - 1)  # (or a bracket typed before the cursor closes)
        elif char == "#":
            return None  # a comment: nothing in it ends an argument
        elif char == "," and not opened:
            return at + 1
    return None


class _Quotes:
    """Which string literal a left-to-right scan of a line of Python is in."""

    def __init__(self) -> None:
        self.quote: str | None = None
        self._escaped = False

    def inside(self, char: str) -> bool:
        """Whether ``char``, the next character, belongs to a string literal."""
        if self.quote is None:
            if char in "'\"":
                self.quote = char
                return True
            return False
        if self._escaped:
            self._escaped = False
        elif char == "\\":
            self._escaped = True
        elif char == self.quote:
            self.quote = None
        return True


class _Streamed:
    """A code model's text as it streams: handed to ``on_text`` as it would be inserted
    each time that grows, and the model stopped once the argument at the cursor is
    complete (what it writes after is cut anyway). With a ``check`` of names, a text is
    handed over only once its leading name is known to be one the kernel lists."""

    def __init__(self, before: str, on_text: TextSink | None,
                 check: _NameCheck | None = None) -> None:
        self._before, self._on_text, self._check = before, on_text, check
        self.shown = ""
        self.written = ""
        self.complete = False
        self.job: asyncio.Future[Any] | None = None

    def __call__(self, raw: str) -> None:
        text, complete = _inserted(self._before, raw)
        self.written = text
        if text.strip() and text != self.shown and \
                (self._check is None or self._check.passes(text) is True):
            self.shown = text
            if self._on_text is not None:
                self._on_text(text)
        if complete and not self.complete and self.job is not None:
            self.complete = True
            self.job.cancel()  # the model stops at its next token


class _NameCheck:
    """The kernel's names at a pause of ``kind``, asked for as the model starts."""

    def __init__(self, kind: Kind, names: NameSource) -> None:
        self.kind = kind
        self._deadline = asyncio.get_running_loop().time() + NAMES_WAIT
        self._names = asyncio.ensure_future(names())
        self._usable: list[str] | None = None

    def _known(self) -> list[str] | None:
        """The usable names, once they came (None: not yet, or none in time); worked out
        once, not at every token streamed."""
        if self._usable is None and self._names.done() and not self._names.cancelled() \
                and self._names.exception() is None:
            self._usable = usable(self.kind, self._names.result())
        return self._usable

    def passes(self, text: str) -> bool | None:
        """Whether ``text`` so far may be shown: True (its name is listed, or there is
        nothing to check it with in time), False (not listed), None (not yet known)."""
        names = self._known()
        if names is None:
            late = asyncio.get_running_loop().time() > self._deadline
            return True if late or self._names.done() else None
        return verdict(self.kind, text, names, ended=False) if names else True

    async def names(self) -> list[str]:
        """The usable names, waited for until the deadline (empty: no check)."""
        left = self._deadline - asyncio.get_running_loop().time()
        if not self._names.done() and left > 0:
            await asyncio.wait({self._names}, timeout=left)
        return self._known() or []

    def cancel(self) -> None:
        self._names.cancel()


async def fill(predictor: Any, history: Sequence[Step], before: str, after: str,
               context: PredictionContext, session: str | None,
               on_text: TextSink | None = None,
               names: NameSource | None = None) -> CellCompletion:
    """The argument at the cursor, filled in by a code model; with ``on_text``, streamed
    (its text so far handed over as the model writes it); with ``names`` and a context
    with runtime state, its leading name checked against the kernel's (``names.py``)."""
    name = predictor.name
    request = build_infill(history, before, after, context, budget_chars=FILL_BUDGET)
    check = None
    if names is not None and context != "none":
        kind = kind_at(_line_in_code(before))
        check = None if kind is None else _NameCheck(kind, names)
    streamed = _Streamed(before, on_text, check)
    streamed.job = job = asyncio.ensure_future(predictor.infill(request, session, streamed))
    try:
        try:
            await asyncio.wait({job})  # (which leaves ``job`` to this function to cancel)
        except asyncio.CancelledError:  # a newer keystroke, the browser gone
            job.cancel()
            raise
        try:
            # cancelled here only once the argument was complete
            text = streamed.written if job.cancelled() \
                else _inserted(before, job.result().text)[0]
        except (PredictionSuperseded, ProviderError) as exc:
            return CellCompletion(None, name, str(exc))
        if check is not None:
            known = await check.names()
            if known and not verdict(check.kind, text, known, ended=True):
                try:
                    text = await _listed(predictor, request, check.kind, known, session)
                except (PredictionSuperseded, ProviderError) as exc:
                    return CellCompletion(None, name, str(exc))
            if on_text is not None and text.strip() and text != streamed.shown:
                on_text(text)  # (held back, or replaced by a listed name)
    finally:
        if check is not None:
            check.cancel()
    if not text.strip():
        return CellCompletion(None, name, "the model wrote nothing at the cursor")
    if history and (before + text + after).strip() == str(history[-1]["code"]).strip():
        return CellCompletion(None, name, "the model wrote the cell just run")
    return CellCompletion(text, name, None)


async def _listed(predictor: Any, request: Infill, kind: Kind, names: Sequence[str],
                  session: str | None) -> str:
    """The name among ``names`` the model puts at the cursor, held to them by a grammar."""
    done = await predictor.infill(replace(request, grammar=grammar(names), max_tokens=32),
                                  session, None)
    return leading(kind, str(done.text))


def _line_in_code(before: str) -> str:
    """The cursor's line before it; "" when the cursor is in a string or a comment."""
    quotes = _cursor_line(before)
    return "" if quotes is None or quotes.quote is not None else \
        before[before.rfind("\n") + 1:]


def _cursor_line(before: str) -> _Quotes | None:
    """The string literal the cursor's line is in at the cursor (``before`` it); None when
    the cursor is in a comment."""
    quotes = _Quotes()
    for char in before[before.rfind("\n") + 1:]:
        if not quotes.inside(char) and char == "#":
            return None
    return quotes


async def complete_cell(predictor: Predictor, history: Sequence[Step], beginning: str,
                        context: PredictionContext, *, scope: Scope, target_step: int,
                        budget_chars: int, session: str | None = None,
                        after: str = "", on_text: TextSink | None = None,
                        names: NameSource | None = None) -> CellCompletion:
    """What goes after ``beginning`` (and before ``after``); ``on_text`` takes a code
    model's text so far as it writes it (another model's cell is known only whole: it
    counts only if it begins with the typed text); ``names``: the kernel's names at the
    cursor, which check a code model's (``names.py``)."""
    if getattr(predictor, "fills_code", False):
        return await fill(predictor, history, beginning, after, context, session, on_text,
                          names)
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
