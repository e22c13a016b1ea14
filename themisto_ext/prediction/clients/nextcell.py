"""The next cell as ``hybrid`` predicts it without a model: the last cell's next variation.

People explore in series: ``ser.sum()`` then ``ser.mean()``, ``states.index`` then
``states.columns``, ``x > 3`` then ``x < 3``, ``x1[4]`` then ``x1[5]``, ``df['a']`` then
``df['b']``, ``df.groupby('key')`` then ``df.groupby('key').sum()``. So the prediction is
the cell just run with its *last* varying part moved to its sibling: a method or attribute
to the next one of its family (an aggregate to the first one the notebook has not used
yet), a comparison or logical operator to its counterpart, ``axis=0`` to ``axis=1``, an
index in a subscript to the next, a column name to the frame's next column not used yet
(read from the runtime snapshot), a lazy grouping to its first aggregate. The cell just run
is never the answer.

Where no part varies (a definition, an import, a plot) or the cell just failed (its
successor is a fix, which rules cannot write), there is no answer (``None``): ``hybrid``
abstains rather than guess. An earlier design carried an earlier cell's successor over by
analogy: it answered everywhere and scored chrF 0.206 against ``copy-previous``'s 0.270 on
the shared notebooks. Copying the last cell scores well because next cells resemble it; a
variation keeps that resemblance while saying what changes. Measured (docs/results/predictors.md):
on the shared notebooks it answers 54 % and beats the copy (+0.033 chrF); on 12 notebooks
no rule was written on it answers 44 % and only ties it (-0.000 [-0.012, +0.015]).
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterator, Sequence

from themisto_ext.records import Step

_PAIRS: dict[str, str] = {}
for _a, _b in [
    ("min", "max"), ("argmin", "argmax"), ("idxmin", "idxmax"), ("nanmin", "nanmax"),
    ("head", "tail"), ("index", "columns"), ("any", "all"), ("union", "intersection"),
    ("hstack", "vstack"), ("hsplit", "vsplit"), ("isnull", "notnull"), ("isna", "notna"),
    ("dropna", "fillna"), ("loc", "iloc"), ("keys", "values"), ("sort_values", "sort_index"),
    ("cumsum", "cumprod"), ("floor", "ceil"), ("sin", "cos"), ("nlargest", "nsmallest"),
    ("first", "last"), ("upper", "lower"), ("startswith", "endswith"), ("stack", "unstack"),
    ("unique", "nunique"), ("mean", "median"), ("std", "var"), ("sum", "prod"),
    ("True", "False"), ("and", "or"), ("rows", "columns"), ("left", "right"),
    ("inner", "outer"),
]:
    _PAIRS[_a], _PAIRS[_b] = _b, _a
_WORDS = ("True", "False", "and", "or")
"""Names that vary without a dot before them."""
_AGGREGATES = ("sum", "mean", "median", "std", "var", "min", "max")
_OPERATORS = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "!=", "!=": "==",
              "&": "|", "|": "&"}
_LAZY = {"groupby", "rolling", "resample", "expanding", "ewm"}
_FRAMES = {"DataFrame"}
_USED_CELLS = 200
"""How many cells back "not used yet" looks."""

_Edit = tuple[int, int, str]
"""Characters ``[start, end)`` of the cell replaced by a text."""


def next_cell(history: Sequence[Step]) -> str | None:
    """The predicted code of the cell after ``history``'s last, or None."""
    if not history or history[-1].get("error"):
        return None
    code = str(history[-1]["code"])
    tokens = _tokens(code)
    if not tokens or any(t.string in ("def", "class") for t in tokens):
        return None  # a definition's successor uses it: no variation of it
    # what the notebook used lately (not every cell of a long one: each prediction reads it)
    used = {t.string for step in history[-_USED_CELLS:-1] for t in _tokens(str(step["code"]))}
    edits = list(_variations(code, tokens, used, history[-1]))
    if not edits:
        return None
    start, end, text = max(edits, key=lambda e: e[0])  # the last part that varies
    answer = code[:start] + text + code[end:]
    return None if answer.strip() == code.strip() else answer


def _variations(code: str, tokens: list[tokenize.TokenInfo], used: set[str],
                last: Step) -> Iterator[_Edit]:
    offsets = [0]
    for line in code.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))

    def span(t: tokenize.TokenInfo) -> tuple[int, int]:
        return offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1]

    for i, t in enumerate(tokens):
        before = tokens[i - 1].string if i else ""
        new: str | None = None
        if t.type == tokenize.NAME and before == "." and t.string in _AGGREGATES:
            new = _next_aggregate(used, t.string) or _PAIRS[t.string]
        elif t.type == tokenize.NAME and t.string in _LAZY and before == ".":
            end = _closing(tokens, i + 1)
            if end is not None and _ends_expression(tokens, end):
                after = span(tokens[end])[1]
                yield after, after, f".{_next_aggregate(used) or 'sum'}()"
        elif t.type == tokenize.NAME and (before == "." or t.string in _WORDS):
            new = _PAIRS.get(t.string)
        elif t.type == tokenize.OP and t.string in _OPERATORS:
            new = _OPERATORS[t.string]
        elif t.type == tokenize.STRING and _enclosing(tokens, i) in ("subscript", "call"):
            new = _sibling_string(t.string, used, last)  # not a literal's data
        elif t.type == tokenize.NUMBER and t.string in ("0", "1") and before == "=" \
                and i > 1 and tokens[i - 2].string == "axis":
            new = "1" if t.string == "0" else "0"
        elif t.type == tokenize.NUMBER and t.string.isdigit() \
                and _enclosing(tokens, i) == "subscript":
            new = str(int(t.string) + 1)  # after a unary minus too: x[-1] -> x[-2]
        if new is not None:
            yield (*span(t), new)


def _next_aggregate(used: set[str], current: str | None = None) -> str | None:
    """The first aggregate, other than ``current``, the notebook has not used lately."""
    return next((a for a in _AGGREGATES if a != current and a not in used), None)


def _sibling_string(literal: str, used: set[str], last: Step) -> str | None:
    """A string literal's sibling: a paired word, or a frame's next unused column."""
    quote, value = literal[-1], literal.strip("'\"")
    if literal[:1] not in "'\"" or len(literal) < 2:
        return None  # f-, b- and r-strings stay as they are
    if value in _PAIRS and value not in _WORDS:
        return f"{quote}{_PAIRS[value]}{quote}"
    for entry in (last.get("runtime_variables") or {}).values():
        if not isinstance(entry, dict) or entry.get("type") not in _FRAMES:
            continue
        # pandas' repr heads its rows with the column names (one word each, mostly)
        header = str(entry.get("repr") or "").split("\n", 1)[0].split()
        if value in header:
            others = header[header.index(value) + 1:] + header[:header.index(value)]
            fresh = [c for c in others if repr(c) not in used and f'"{c}"' not in used]
            choice = fresh or others  # none: a frame of one column
            return f"{quote}{choice[0]}{quote}" if choice else None
    return None


def _enclosing(tokens: list[tokenize.TokenInfo], i: int) -> str | None:
    """What the innermost bracket around token ``i`` makes: ``"subscript"`` (``x[4]``,
    ``df['a']``), ``"call"`` (``f(4)``), ``"literal"`` (a list, tuple, dict or set: data),
    or None outside brackets or when a line break comes first (a bracket opened on an
    earlier line is not looked for: no variation there)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        s = tokens[j].string
        if s in (")", "]", "}"):
            depth += 1
        elif s in ("(", "{", "["):
            if depth:
                depth -= 1
                continue
            # a bracket right after a name or a closing bracket subscripts or calls
            after_value = j > 0 and (tokens[j - 1].type == tokenize.NAME
                                     or tokens[j - 1].string in (")", "]"))
            if not after_value or s == "{":
                return "literal"
            return "subscript" if s == "[" else "call"
        elif tokens[j].type in (tokenize.NEWLINE, tokenize.NL):
            return None
    return None


def _closing(tokens: list[tokenize.TokenInfo], i: int) -> int | None:
    """The index of the parenthesis closing the call that opens at token ``i``."""
    if i >= len(tokens) or tokens[i].string != "(":
        return None
    depth = 0
    for j in range(i, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j].string, 0)
        if depth == 0:
            return j
    return None


def _ends_expression(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """Whether only the cell's end (or a comment) follows token ``i``."""
    return all(t.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT,
                          tokenize.ENDMARKER, tokenize.DEDENT) for t in tokens[i + 1:])


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        return []
