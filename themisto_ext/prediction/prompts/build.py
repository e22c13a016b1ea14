"""Build the prompt for one prediction from a trajectory: a pure function, no I/O.

Layout, for prefix caching: ``system`` depends on the context only, so a session's output
and next-cell prompts share it; ``prefix`` is the history, oldest cell first, each cell
rendered from that step and the one before it (in ``full``, the state changes the cell
made), so the prefix of one step of a session starts with the prefix of the step before;
``suffix`` holds what the previous step could not know: the curated state (chosen by the
target cell), the target cell, the question. In ``full`` the state before the target is
the sum of the cells' state changes, so each step adds only what its cell changed.

Budget: the history gets a fixed share of the budget, so how much of it fits does not
depend on the suffix of the moment. When it does not fit, the oldest cells are dropped a
page at a time (pages of seven eighths of the room, fixed from the first cell on), so
the prefix changes once every page, not at every step, and the cells still kept after a
drop are few, so reading them anew is cheap. In ``full`` the runtime state after the
last dropped cell then opens the history, so no variable is lost with the cell that
made it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from themisto_ext.prediction.prompts import (
    ANSWER_TAGS,
    ANSWER_TOKENS,
    CONTEXTS,
    TASKS,
    Exchange,
    PredictionContext,
    PredictionTask,
    Prompt,
)
from themisto_ext.prediction.prompts.state import (
    Variable,
    clip,
    human_size,
    render_curated_state,
    render_full_state,
    render_state_changes,
)
from themisto_ext.records import RuntimeVariable, Step

_SUFFIX_SHARE: dict[PredictionContext, float] = {"none": 0.10, "full": 0.10, "curated": 0.30}
"""Part of the budget kept free of history for the curated state, the target, the question."""
_STATE_FLOOR_SHARE: dict[PredictionContext, float] = {"none": 0.0, "full": 0.0, "curated": 0.10}
"""Part kept for the curated state even when a long target cell pushes history out."""
_CARRIED_SHARE: dict[PredictionContext, float] = {"none": 0.0, "full": 0.08, "curated": 0.0}
"""Part kept for the state after the dropped cells, once cells are dropped."""
_CURATED_SHARE = 0.25
_CELL_SHARE = 0.125
"""A history cell's code, its output and its state changes are each cut to this part."""
_HEADER_ROOM = 80

_INTRO = (
    "You predict what happens next in a Jupyter notebook: the output of a cell about to "
    "run, or the code of the next cell a person will run. The question at the end says "
    "which.\n"
    "You are given the cells the person has run so far in one Python kernel session, "
    "oldest first, each with the output it showed{extra}.\n"
)
_STATE_TEXT: dict[PredictionContext, str] = {
    "full": "Each cell also lists the runtime state changes it made: every variable it "
            "created or changed, with type, size and repr, and those it deleted. The runtime "
            "state now is the latest value of each variable listed; if earlier cells were "
            "omitted, the state after them comes first.\n",
    "curated": "Before the question you are also given part of the runtime state now, as "
               "JSON: the variables the cell about to run reads and those the latest cells "
               "created or changed, with type, size and repr.\n",
}
_ANSWERS = (
    "An output is the exact text the cell will display, as Jupyter shows it: what it "
    "prints, the repr of its last expression, or the traceback if it raises; if it "
    "displays nothing, give an empty answer. A next cell is its code, exactly as the "
    "person would type it.\n"
    "Reply with the answer only, between the tags the cells use (<output> and </output> "
    "for an output, <code> and </code> for a next cell): no code fences, no explanations, "
    "no prose."
)
QUESTIONS: dict[PredictionTask, str] = {
    # Short: it is read anew for every prediction; how to answer is in the system text.
    # Naming the tag matters for a small model: without it SmolLM2 opened 7 of 20 next-cell
    # answers with <code> (the rest with <output>), with it 20 of 20.
    "output": "What will this cell display? Answer with <output>.",
    "next-cell": "What is the code of the next cell? Answer with <code>.",
}
BEGUN_QUESTION = "What is the whole code of the next cell, which begins so? Answer with <code>."
"""The next-cell question when the person has begun typing the cell (inline completion)."""
_STOP_AT_CELL_END = "</cell>"
"""A model that forgets the closing tag goes on to end the cell: stop there too."""
_HEADER = "Cells run so far in this kernel session, oldest first:\n\n"
_NO_CELLS = "(No cells have run yet.)\n\n"


def system_text(context: PredictionContext) -> str:
    """The fixed instructions: the same for both tasks and for every trajectory and step."""
    extra = " (and how long it ran and the kernel's memory use after it)" \
        if context == "full" else ""
    return _INTRO.format(extra=extra) + _STATE_TEXT.get(context, "") + _ANSWERS


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def cell_limit(budget_chars: int) -> int:
    """The most characters of one history cell's code or output a prompt of this budget shows."""
    return int(budget_chars * _CELL_SHARE)


def render_cell(step: Step, context: PredictionContext, budget_chars: int,
                before: Mapping[str, Variable] | None = None) -> str:
    """One history cell, from the step and the state before it (``before``, for ``full``):
    nothing later changes it, so the prefix only grows."""
    limit = cell_limit(budget_chars)
    attrs = f'step="{step["step"]}"'
    changes = ""
    if context == "full":
        attrs += f' time="{_duration(step["execution_time"])}"'
        if step.get("memory_bytes") is not None:
            attrs += f' memory="{human_size(step["memory_bytes"])}"'
        changes = render_state_changes(before or {}, step["runtime_variables"], limit)
    error = step.get("error")
    out_attrs = f' error="{error["ename"]}"' if error else ""
    output = step.get("output", "")
    shown = f"<output{out_attrs}>\n{clip(output, limit)}\n</output>" if output \
        else f"<output{out_attrs}></output>"
    return (f"<cell {attrs}>\n<code>\n{clip(step['code'], limit)}\n</code>\n{shown}\n"
            f"{changes}</cell>\n\n")


class _BlockCache:
    """Rendered history cells of recent prompts, so a session's next prompt renders only
    its new cells: pages are laid from the first cell on, so every prompt needs the size of
    every cell. An entry holds its step (and the state before it), which keeps the object
    alive and so its ``id`` unambiguous; steps are records and are never changed."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._blocks: OrderedDict[tuple[int, PredictionContext, int],
                                  tuple[Step, Mapping[str, Variable] | None, str]] = OrderedDict()

    def block(self, step: Step, before: Mapping[str, Variable] | None, context: PredictionContext,
              budget_chars: int) -> str:
        key = (id(step), context, budget_chars)
        with self._lock:
            hit = self._blocks.get(key)
            if hit is not None and hit[0] is step and hit[1] is before:
                self._blocks.move_to_end(key)
                return hit[2]
        block = render_cell(step, context, budget_chars, before)
        with self._lock:
            self._blocks[key] = (step, before, block)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
        return block


_BLOCKS = _BlockCache(8_000)


def _header(dropped: int) -> str:
    cells = "cell" if dropped == 1 else "cells"
    return f"({dropped} earlier {cells} omitted to fit the context budget.)\n"


@dataclass
class _History:
    """Every history cell rendered, oldest first, and how many of the oldest to leave out.

    Cells are dropped at page boundaries: the cells are laid into pages of ``page``
    characters from the first one on, and a drop always ends where a page does. Adding a
    cell never moves a boundary, so the cut moves only when the history outgrows the room
    by a whole page, and a page being seven eighths of the room, few cells remain to be
    read anew after a cut.
    """

    blocks: list[str]
    boundaries: list[int]
    dropped: int
    carried: Callable[[int], str]
    """The state after the first ``n`` (dropped) cells, as the history's opening."""
    _openings: dict[int, str] = field(default_factory=dict)

    def drop_more(self, needed: int) -> None:
        """Drop the cells of further pages until ``needed`` more characters are free."""
        freed = 0
        for boundary in self.boundaries:
            if freed >= needed:
                break
            if boundary > self.dropped:
                freed += sum(map(len, self.blocks[self.dropped:boundary]))
                self.dropped = boundary
        if freed < needed:
            self.dropped = len(self.blocks)

    def prefix(self) -> str:
        if self.dropped not in self._openings:
            self._openings[self.dropped] = \
                _header(self.dropped) + self.carried(self.dropped) if self.dropped else ""
        return self._openings[self.dropped] + _HEADER + "".join(self.blocks[self.dropped:])


def _fit_history(history: Sequence[Step], context: PredictionContext, budget_chars: int,
                 room: int) -> _History:
    carried_room = int(budget_chars * _CARRIED_SHARE[context])

    def carried(dropped: int) -> str:
        return render_full_state(history[:dropped], carried_room) if carried_room else ""

    blocks = [_BLOCKS.block(step, history[i - 1]["runtime_variables"] if i else None,
                            context, budget_chars)
              for i, step in enumerate(history)]
    sizes = [len(block) for block in blocks]
    boundaries: list[int] = []
    if sum(sizes) <= room:
        return _History(blocks, boundaries, 0, carried)
    room -= carried_room  # the state after the dropped cells opens the history
    page = max(1, 7 * room // 8)
    start = 0
    for i, size in enumerate(sizes[:-1]):  # the newest cell is always kept
        if (start + size) // page > start // page:
            boundaries.append(i + 1)
        start += size
    must_drop, kept = len(sizes), 0
    while must_drop > 0 and kept + sizes[must_drop - 1] <= room:
        must_drop -= 1
        kept += sizes[must_drop]
    dropped = next((b for b in boundaries if b >= must_drop), must_drop)
    return _History(blocks, boundaries, dropped, carried)


def _demo_step(step: int, code: str, output: str,
               variables: dict[str, RuntimeVariable]) -> Step:
    return {"format_version": 1, "trajectory_id": "demonstration", "kernel_id": "",
            "step": step, "started_at": "", "ended_at": "", "code": code, "output": output,
            "outputs": [], "execution_time": 0.0004 * step,
            "memory_bytes": 90_000_000 + step * 4096, "runtime_variables": variables,
            "hash_index": "", "error": None}


_MATH: RuntimeVariable = {"type": "module", "size": 72, "repr": "<module 'math' (built-in)>"}
_DEMO_HISTORY = (
    _demo_step(1, "import math", "", {"math": _MATH}),
    _demo_step(2, "r = 2.0\nmath.pi * r ** 2", "12.566370614359172",
               {"math": _MATH, "r": {"type": "float", "size": 24, "repr": "2.0"}}),
)
_DEMO_TARGET = "print(f'radius {r}')\nr * 2"
_DEMO_OUTPUT = "radius 2.0\n4.0"


def demonstration_answers() -> tuple[str, ...]:
    """The answers the demonstrations give (an output, a next cell): a model that returns
    one of them has echoed the example, not predicted (SmolLM2 did on 65 of 180 next
    cells of 11 notebooks); the benchmark report flags such answers."""
    return (_DEMO_OUTPUT, _DEMO_TARGET)


@cache
def demonstrations(context: PredictionContext) -> tuple[Exchange, ...]:
    """The fixed exchange before every question: one output and one next-cell question on
    a two-cell trajectory, in the context's own format, with their answers in tags.

    Shown the format, SmolLM2 opened 40 of 40 output answers with ``<output>`` (0 of 30 when
    only told to), so a chat API that cannot begin the reply for the model still gets
    tagged answers, as in-process llama.cpp would with the reply begun for it."""
    asked: tuple[tuple[PredictionTask, str | None, str], ...] = (
        ("output", _DEMO_TARGET, _DEMO_OUTPUT), ("next-cell", None, _DEMO_TARGET))
    exchanges = []
    for task, target, answer in asked:
        shown = _build(_DEMO_HISTORY, task, context, target, 4_000)
        exchanges.append(Exchange(shown.user, tagged_answer(task, answer)))
    return tuple(exchanges)


def tagged_answer(task: PredictionTask, answer: str) -> str:
    """An answer as the demonstrations give it, between the task's tags (``ANSWER_TAGS``):
    what a model is shown to answer, and what a training example teaches it to."""
    opening, closing = ANSWER_TAGS[task]
    return f"{opening}{answer}\n{closing}"


def build_prompt(history: Sequence[Step], task: PredictionTask, context: PredictionContext, *,
                 target_code: str | None = None, budget_chars: int = 24_000,
                 max_tokens: int = ANSWER_TOKENS, min_dropped: int = 0,
                 beginning: str | None = None) -> Prompt:
    """The prompt for predicting the output of ``target_code`` run after ``history``
    (``task="output"``), or the code of the cell run after ``history`` (``"next-cell"``).

    ``history`` is only the steps before the target, in execution order. The whole prompt
    (system and user) stays within ``budget_chars`` unless the fixed instructions alone do
    not fit. ``min_dropped``: leave out at least this many of the oldest cells, so that
    prompts of several contexts can show the same history (``window.common_history``).
    ``beginning`` (next-cell task): what the person has typed of the next cell, shown
    before the question, whose answer is then the whole cell (inline completion).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if context not in CONTEXTS:
        raise ValueError(f"unknown context {context!r}; expected one of {', '.join(CONTEXTS)}")
    if task == "output" and target_code is None:
        raise ValueError("the output task needs target_code: the cell whose output to predict")
    if task == "next-cell" and target_code is not None:
        raise ValueError("the next-cell task predicts the target cell: it must not be given")
    if beginning is not None and task != "next-cell":
        raise ValueError("only the next-cell task takes the beginning of its cell")
    if budget_chars <= 0:
        raise ValueError("budget_chars must be positive")
    if min_dropped < 0:
        raise ValueError("min_dropped must not be negative")
    built = _build(history, task, context, target_code, budget_chars, min_dropped, beginning)
    opening, closing = ANSWER_TAGS[task]
    return replace(built, demonstrations=demonstrations(context), answer_open=opening,
                   answer_close=closing, stop=(closing, _STOP_AT_CELL_END),
                   max_tokens=max_tokens)


def _build(history: Sequence[Step], task: PredictionTask, context: PredictionContext,
           target_code: str | None, budget_chars: int, min_dropped: int = 0,
           beginning: str | None = None) -> Prompt:
    system = system_text(context)
    question = QUESTIONS[task] if beginning is None else BEGUN_QUESTION
    shown, tag = (target_code, "target_cell") if beginning is None \
        else (beginning, "next_cell_begins")
    history_room = budget_chars - len(system) - int(budget_chars * _SUFFIX_SHARE[context]) \
        - _HEADER_ROOM
    kept = _fit_history(history, context, budget_chars, history_room)
    kept.dropped = max(kept.dropped, min(min_dropped, len(history)))
    lead = "" if history else _NO_CELLS
    fixed = len(system) + len(lead) + len(question)
    state_floor = int(budget_chars * _STATE_FLOOR_SHARE[context])

    target = ""
    if shown is not None:
        wrapper = len(f"<{tag}>\n<code>\n\n</code>\n</{tag}>\n\n")
        room = budget_chars - fixed - len(kept.prefix()) - state_floor - wrapper
        if len(shown) > room:
            kept.drop_more(len(shown) - room)
            room = budget_chars - fixed - len(kept.prefix()) - state_floor - wrapper
        target = f"<{tag}>\n<code>\n{clip(shown, max(room, 0))}\n</code>\n</{tag}>\n\n"
    prefix = kept.prefix()

    state = ""
    if context == "curated":
        state_room = budget_chars - fixed - len(prefix) - len(target)
        state = render_curated_state(history, target_code,
                                     min(state_room, int(budget_chars * _CURATED_SHARE)))
    return Prompt(task=task, context=context, system=system, prefix=prefix,
                  suffix=lead + state + target + question, dropped_steps=kept.dropped)
