"""Prompts shaped for a code model: the notebook as such models saw notebooks in training.

A code model (Qwen2.5-Coder) fills in the middle of a file: the text before the cursor and
after it (llama.cpp's ``/infill``: the model's own FIM tokens). Here the file is the
notebook as ``jupyter nbconvert --to script`` writes one, ending in the cell being typed:

- the cells run so far, each under its ``# In[n]:`` header, its output below it as
  comments (``# Out: ...``; an error as its traceback's last line), oldest first, the
  oldest cut first to fit;
- (``full`` context) under each cell's output, what it did to the runtime state as
  comments (``# State: name: type, shape or length`` and a short repr for each variable it
  created or changed, ``# Deleted: ...``), so the cells add up to the state after the
  last one (a repr the output just showed, or one holding an address, is left out); where
  the oldest cells were cut, the state they left opens the script;
- (``curated``) the names the typed cell reads, at their latest values, after the cells;
- ``# In[n]:`` and the cell's text before the cursor; the text after it is the suffix.

Every part of a ``full`` or ``none`` script depends only on its cell and the one before,
so the script of the next step *extends* this one (until a cut, which moves only every
``1 - KEEP`` of the budget): the model's prompt cache keeps it all, and after a run only
the new cell and its state changes are read. (With the state as one block after the
cells, every step rewrote the block and the model read it all again; with the notebook
and the state as other files of a repository, the state came before the cell's file.) A
completion and the next cell (typed text: none) are the same prompt but for the tail.
Everything comes from the recorded steps, which the kernel already masked (secrets never
reach a prompt); the typed text is masked by the server before it gets here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from themisto_ext.prediction.prompts.state import Variable, curated_selection, state_changes
from themisto_ext.records import PredictionContext, Step

REPR_CHARS = 160
"""Characters of a variable's repr in the state file: its first lines (a frame's columns)."""
OUTPUT_CHARS = 200
"""Characters of one cell's output in the notebook file: what a run adds is read while the
user reads its output (on one prompt thread ~23 ms a token, and Qwen reads every digit as
one), and a cell's first completion waits for the rest (400: the slowest pauses 2.9 s)."""
KEEP = 0.6
"""Share of the budget the notebook file keeps when it has to cut its oldest cells."""
CHANGES_CHARS = 300
"""Characters of one cell's state changes (the variables past them are counted)."""
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}")


@dataclass(frozen=True)
class Infill:
    """One fill-in-the-middle request: the text around the cursor."""

    before: str
    """The notebook so far, then the cell's text before the cursor."""
    after: str
    max_tokens: int = 48
    line: bool = True
    """Complete the rest of the current line only (else up to the end of the block)."""
    context: PredictionContext = "full"
    stop: tuple[str, ...] = ()
    """Where the model stops (none given: at the end of the line or block)."""
    grammar: str | None = None
    """A llama.cpp grammar (GBNF) the text is held to (``names.py``)."""


def _comment(text: str, prefix: str) -> str:
    lines = text.splitlines() or [""]
    return "".join(f"{prefix}{line}".rstrip() + "\n" for line in lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " ..."


def _output(step: Step) -> str:
    """The cell's output as its comments give it: an error as its traceback's last line,
    as a reader takes it in (the frames above it are hundreds of characters, paths of the
    server's files among them, that the model would read after every such run)."""
    output = str(step.get("output") or "").rstrip()
    error = step.get("error")
    if error:
        traceback = str(error.get("traceback") or "").rstrip()
        if traceback and traceback in output:
            output = output.replace(traceback, f"{error['ename']}: {error['evalue']}".strip())
    return output


def _displayed(entry: Variable, output: str) -> bool:
    """Whether the cell's output ends with the variable's repr (``x = ...; x``): the
    comments then say it once."""
    text = str(entry.get("repr", "")).rstrip()
    return bool(text.strip()) and (output == text or output.endswith("\n" + text))


def _changes(before: Mapping[str, Variable], after: Mapping[str, Variable],
             output: str = "") -> str:
    """What one cell did to the state, as comments under its output (a variable the
    output shows without its repr)."""
    changed, deleted = state_changes(before, after)
    out, used = [], 0
    for n, (_, name) in enumerate(changed):
        text = _describe(name, after[name], "# State: ", repr_too=not _displayed(
            after[name], output))
        if used + len(text) > CHANGES_CHARS:
            out.append(f"# State: ({len(changed) - n} more changed)\n")
            break
        out.append(text)
        used += len(text)
    if deleted:
        out.append(_clip("# Deleted: " + ", ".join(deleted), REPR_CHARS) + "\n")
    return "".join(out)


def _cells(history: Sequence[Step], with_state: bool) -> list[str]:
    cells: list[str] = []
    before: Mapping[str, Variable] = {}
    for step in history:
        code = str(step.get("code") or "").rstrip()
        whole = _output(step)
        output = _clip(whole, OUTPUT_CHARS)
        shown = _comment(output, "# Out: ") if output else ""
        after: Mapping[str, Variable] = step.get("runtime_variables") or {}
        state = _changes(before, after, whole) if with_state else ""
        before = after
        cells.append(f"# In[{step['step']}]:\n{code}\n{shown}{state}\n")
    return cells


def _kept(cells: Sequence[str], budget_chars: float) -> int:
    """How many of the oldest cells to cut. Over the budget, the oldest go, down to
    ``KEEP`` of it at once: the script then begins the same way for many cells more, so
    the model's prompt cache keeps all but its tail (cutting one cell at a time would make
    every prompt new: ~15 s for 1,500 tokens)."""
    total = sum(map(len, cells))
    if total <= budget_chars:
        return 0
    # Cut only at marks every (1 - KEEP) of the budget, counted from the first cell: an
    # appended cell never moves an earlier mark, so the cut stays put until the kept part
    # outgrows the budget, then jumps by a whole step.
    stride, done, mark = (1 - KEEP) * budget_chars, 0, 1
    for i, cell in enumerate(cells):
        done += len(cell)
        while done >= mark * stride:
            mark += 1
            if total - done <= budget_chars and i + 1 < len(cells):
                return i + 1
    return len(cells) - 1  # the newest alone is over the budget: it is what the cell follows


def notebook_script(history: Sequence[Step], budget_chars: int, *,
                    with_state: bool = False) -> str:
    """The cells run so far as ``jupyter nbconvert --to script`` writes them (``# In[n]:``
    headers, a blank line after each cell), their outputs as comments and, ``with_state``,
    what each did to the runtime state; the oldest cut to fit ``budget_chars``. Where cells
    were cut, the state after them opens the script (with_state: a third of the budget)."""
    cells = _cells(history, with_state)
    if not with_state:
        return "".join(cells[_kept(cells, budget_chars):])
    cut = _kept(cells, budget_chars * 2 / 3)
    if cut == 0:
        return "".join(cells)
    opening = _state_block(history[cut - 1].get("runtime_variables") or {}, None,
                           budget_chars // 3, f"before cell {history[cut]['step']}")
    return opening + "\n" + "".join(cells[cut:])


def _describe(name: str, entry: Variable, lead: str = "# ", *, repr_too: bool = True) -> str:
    parts = [str(entry.get("type", "?"))]
    if entry.get("shape") is not None:
        parts.append(f"shape {tuple(entry['shape'])}")
    elif entry.get("length") is not None:
        parts.append(f"length {entry['length']}")
    head = f"{lead}{name}: {', '.join(parts)}\n"
    text = str(entry.get("repr", ""))
    # an address (<function f at 0x7f...>, Generator(PCG64) at 0x7FF...) is a dozen
    # digit tokens that say nothing the type does not
    shown = _clip(text, REPR_CHARS) if repr_too and not _ADDRESS.search(text) else ""
    return head + (_comment(shown, "#     ") if shown else "")


def _state_block(variables: Mapping[str, Variable], chosen: Sequence[str] | None,
                 budget_chars: int, when: str) -> str:
    """A runtime state as comments (``chosen``: only those names)."""
    names = [n for n in variables if chosen is None or n in chosen]
    out = [f"# Runtime state {when}: {len(names)} variables\n"]
    used = len(out[0])
    for name in names:
        text = _describe(name, variables[name])
        if used + len(text) > budget_chars:
            out.append(f"# ({len(names) - len(out) + 1} more not shown)\n")
            break
        out.append(text)
        used += len(text)
    return "".join(out)


def state_comments(history: Sequence[Step], context: PredictionContext, typed: str,
                   budget_chars: int) -> str:
    """The ``curated`` state after the last cell as comments: the names the typed cell
    reads (the ``full`` state is in the script, cell by cell; ``none``: nothing)."""
    if context != "curated" or not history:
        return ""
    return _state_block(history[-1].get("runtime_variables") or {},
                        list(curated_selection(history, typed)), budget_chars,
                        f"after cell {history[-1]['step']}")


def build_infill(history: Sequence[Step], before: str, after: str, context: PredictionContext, *,
                 budget_chars: int = 6_000, max_tokens: int = 48, line: bool = True,
                 stop: tuple[str, ...] = ()) -> Infill:
    """The fill-in-the-middle request for the cell being typed after ``history``: the
    notebook, (by ``context``) the state, then the cell's text ``before`` the cursor;
    ``after`` it is the suffix."""
    state = state_comments(history, context, before + after, budget_chars // 3)
    script = notebook_script(history, budget_chars - len(state), with_state=context == "full")
    target = int(history[-1]["step"]) + 1 if history else 1
    head = f"{script}{state}{chr(10) if state else ''}# In[{target}]:\n"
    return Infill(before=head + before, after=after, max_tokens=max_tokens,
                  line=line, context=context, stop=stop)


NEXT_CELL_STOPS = ("\n# In[", "\n# Out:", "\n# State:", "\n# Deleted:", "\n# Runtime state",
                   "\n\n\n")
"""The next cell ends where the model begins an output or another cell."""


def build_next_cell(history: Sequence[Step], beginning: str, context: PredictionContext, *,
                    budget_chars: int = 6_000, max_tokens: int = 96) -> Infill:
    """The request for the cell after ``history`` (``beginning``: what is typed of it),
    written to its end. (A ``# %%`` script ending in an empty cell made the 0.5B model
    write ``# %%`` again or comments; after ``# In[n]:`` it writes code.)"""
    return build_infill(history, beginning, "", context, budget_chars=budget_chars,
                        max_tokens=max_tokens, line=False, stop=NEXT_CELL_STOPS)
