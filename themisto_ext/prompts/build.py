"""Build the prompt for one prediction from a trajectory: a pure function, no I/O.

Layout, for prefix caching: ``system`` depends on the task and context only; ``prefix`` is
the history, oldest cell first, each cell rendered from that step alone, so the prefix of
one step of a session starts with the prefix of the step before; ``suffix`` holds what
changes at every step (the runtime state before the target, the target cell, the
question).

Budget: the history gets a fixed share of the budget, so how much of it fits does not
depend on the suffix of the moment. When it does not fit, the oldest cells are dropped in
chunks (a power of two, at least 8 once 16 or more cells fit, about a quarter of what
fits), so the prefix changes once every chunk, not at every step. Chunk sizes are powers
of two so that a coarser cut is also a finer one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from themisto_ext.prompts import CONTEXTS, TASKS, Context, Prompt, Task
from themisto_ext.prompts.state import clip, human_size, render_curated_state, render_full_state
from themisto_ext.trajectory import Step

_SUFFIX_SHARE: dict[Context, float] = {"none": 0.10, "full": 0.40, "curated": 0.30}
"""Part of the budget kept free of history for the state, the target and the question."""
_STATE_FLOOR_SHARE: dict[Context, float] = {"none": 0.0, "full": 0.15, "curated": 0.10}
"""Part kept for the state even when a long target cell pushes history out."""
_CURATED_SHARE = 0.25
_CELL_SHARE = 0.125
"""A history cell's code, and separately its output, are cut to this part of the budget."""
_HEADER_ROOM = 80

_TASK_TEXT: dict[Task, str] = {
    "output": (
        "You predict the output of a Jupyter notebook cell before it runs.\n"
        "You are given the cells a person has run so far in one Python kernel session, "
        "oldest first, each with the output it showed{extra}, then the cell about to run.\n"
        "{state}"
        "Answer with the exact text the cell will display, as Jupyter shows it: what it "
        "prints, the repr of its last expression, or the traceback if it raises. If it "
        "displays nothing, give an empty answer.\n"
    ),
    "next-cell": (
        "You predict the next cell a person will run in a Jupyter notebook.\n"
        "You are given the cells they have run so far in one Python kernel session, "
        "oldest first, each with the output it showed{extra}.\n"
        "{state}"
        "Answer with the code of the next cell, exactly as the person would type it.\n"
    ),
}
_STATE_TEXT: dict[tuple[Task, Context], str] = {
    ("output", "full"): "You are also given the runtime state before the cell runs: every "
                        "variable in the kernel with its type, size and repr.\n",
    ("output", "curated"): "You are also given part of the runtime state before the cell "
                           "runs, as JSON: the variables the cell reads and those the latest "
                           "cells created or changed, with type, size and repr.\n",
    ("next-cell", "full"): "You are also given the runtime state now: every variable in the "
                           "kernel with its type, size and repr.\n",
    ("next-cell", "curated"): "You are also given part of the runtime state now, as JSON: the "
                              "variables the latest cells created or changed, with type, size "
                              "and repr.\n",
}
_ANSWER_FORMAT = "Reply with the answer only: no code fences, no explanations, no prose."
_QUESTION: dict[Task, str] = {
    "output": "What will this cell display? Answer with its output only.",
    "next-cell": "What is the code of the next cell the person will run? "
                 "Answer with the code only.",
}
_HEADER = "Cells run so far in this kernel session, oldest first:\n\n"
_NO_CELLS = "(No cells have run yet.)\n\n"


def system_text(task: Task, context: Context) -> str:
    """The fixed instructions: the same for every trajectory and step."""
    extra = " (and how long it ran and the kernel's memory use after it)" \
        if context == "full" else ""
    state = _STATE_TEXT.get((task, context), "")
    return _TASK_TEXT[task].format(extra=extra, state=state) + _ANSWER_FORMAT


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def render_cell(step: Step, context: Context, budget_chars: int) -> str:
    """One history cell; depends on nothing but the step, so the prefix only grows."""
    limit = int(budget_chars * _CELL_SHARE)
    attrs = f'step="{step["step"]}"'
    if context == "full":
        attrs += f' time="{_duration(step["execution_time"])}"'
        if step.get("memory_bytes") is not None:
            attrs += f' memory="{human_size(step["memory_bytes"])}"'
    error = step.get("error")
    out_attrs = f' error="{error["ename"]}"' if error else ""
    output = step.get("output", "")
    shown = f"<output{out_attrs}>\n{clip(output, limit)}\n</output>" if output \
        else f"<output{out_attrs}></output>"
    return f"<cell {attrs}>\n<code>\n{clip(step['code'], limit)}\n</code>\n{shown}\n</cell>\n\n"


def _chunk(fitting: int) -> int:
    wanted = max(8, fitting // 4) if fitting >= 16 else max(1, fitting // 2)
    return 1 << (wanted.bit_length() - 1)


def _header(dropped: int) -> str:
    if not dropped:
        return _HEADER
    cells = "cell" if dropped == 1 else "cells"
    return f"({dropped} earlier {cells} omitted to fit the context budget.)\n{_HEADER}"


@dataclass
class _History:
    """The newest cells that fit, rendered newest first, and how many older ones to drop."""

    blocks: list[str]
    dropped: int
    chunk: int

    def drop_more(self, total: int, needed: int) -> None:
        """Drop further chunks of the oldest kept cells until ``needed`` characters are free."""
        freed = 0
        while freed < needed and self.dropped < total:
            step = min(self.chunk, total - self.dropped)
            for _ in range(step):
                freed += len(self.blocks.pop())
            self.dropped += step

    def prefix(self) -> str:
        return _header(self.dropped) + "".join(reversed(self.blocks))


def _fit_history(history: Sequence[Step], context: Context, budget_chars: int,
                 room: int) -> _History:
    blocks: list[str] = []
    used = 0
    for step in reversed(history):
        block = render_cell(step, context, budget_chars)
        if used + len(block) > room:
            break
        blocks.append(block)
        used += len(block)
    must_drop = len(history) - len(blocks)
    chunk = _chunk(len(blocks))
    dropped = -(-must_drop // chunk) * chunk  # round up to whole chunks
    del blocks[len(history) - dropped:]
    return _History(blocks, dropped, chunk)


def build_prompt(history: Sequence[Step], task: Task, context: Context, *,
                 target_code: str | None = None, budget_chars: int = 24_000) -> Prompt:
    """The prompt for predicting the output of ``target_code`` run after ``history``
    (``task="output"``), or the code of the cell run after ``history`` (``"next-cell"``).

    ``history`` is only the steps before the target, in execution order. The whole prompt
    (system and user) stays within ``budget_chars`` unless the fixed instructions alone do
    not fit.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if context not in CONTEXTS:
        raise ValueError(f"unknown context {context!r}; expected one of {', '.join(CONTEXTS)}")
    if task == "output" and target_code is None:
        raise ValueError("the output task needs target_code: the cell whose output to predict")
    if task == "next-cell" and target_code is not None:
        raise ValueError("the next-cell task predicts the target cell: it must not be given")
    if budget_chars <= 0:
        raise ValueError("budget_chars must be positive")

    system = system_text(task, context)
    question = _QUESTION[task]
    history_room = budget_chars - len(system) - int(budget_chars * _SUFFIX_SHARE[context]) \
        - _HEADER_ROOM
    kept = _fit_history(history, context, budget_chars, history_room)
    lead = "" if history else _NO_CELLS
    fixed = len(system) + len(lead) + len(question)
    state_floor = int(budget_chars * _STATE_FLOOR_SHARE[context])

    target = ""
    if target_code is not None:
        wrapper = len("<target_cell>\n<code>\n\n</code>\n</target_cell>\n\n")
        room = budget_chars - fixed - len(kept.prefix()) - state_floor - wrapper
        if len(target_code) > room:
            kept.drop_more(len(history), len(target_code) - room)
            room = budget_chars - fixed - len(kept.prefix()) - state_floor - wrapper
        target = f"<target_cell>\n<code>\n{clip(target_code, max(room, 0))}\n</code>\n" \
            "</target_cell>\n\n"
    prefix = kept.prefix()

    state = ""
    state_room = budget_chars - fixed - len(prefix) - len(target)
    if context == "full":
        state = render_full_state(history, state_room)
    elif context == "curated":
        state = render_curated_state(history, target_code,
                                     min(state_room, int(budget_chars * _CURATED_SHARE)))
    return Prompt(task=task, context=context, system=system, prefix=prefix,
                  suffix=lead + state + target + question, dropped_steps=kept.dropped)
