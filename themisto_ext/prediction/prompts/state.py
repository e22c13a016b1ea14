"""The runtime state in a prompt: every variable (``full``) or the ones that matter (``curated``).

The state shown is the one *before* the target cell: the ``runtime_variables`` of the last
step of the history. Both renderings fit a character budget by cutting the longest reprs
first (short reprs stay whole), then, if even names and types do not fit, by listing fewer
variables and saying how many are missing.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from themisto_ext.records import Step

RECENT_STEPS = 3
"""Curated context keeps the variables that this many of the latest cells created or changed."""

Variable = Mapping[str, Any]

_MIN_REPR = 40
"""Reprs cut shorter than this say nothing; below it the repr is left out instead."""

_MAGIC_NAME = re.compile(r"^\s*[%!?]+\w*")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)")


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: head and tail around a marker."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(f"[... {len(text)} characters omitted ...]"))
    # Tails matter too: a frame's "[n rows x m columns]", a traceback's last line.
    tail = keep // 3
    head = keep - tail
    return (text[:head] + f"[... {len(text) - keep} characters omitted ...]"
            + (text[len(text) - tail:] if tail else ""))


def human_size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _size(entry: Variable) -> str:
    text = human_size(entry.get("size"))
    return text if entry.get("size_exact", True) or entry.get("size") is None else "~" + text


# --- which variables matter ---------------------------------------------------------------

def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _regex_reads(code: str) -> dict[str, list[str]]:
    reads: dict[str, list[str]] = {}
    for match in _DOTTED.finditer(code):
        root = match.group(1)
        if keyword.iskeyword(root):
            continue
        paths = reads.setdefault(root, [])
        if match.group(2) and match.group(0) not in paths:
            paths.append(match.group(0))
    return reads


def _is_magic(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(("%", "!", "?")) or stripped.endswith("?")


def _bound_unconditionally(statement: ast.stmt) -> set[str]:
    """Names a top-level statement always binds (its value is read first: ``df = df + 1``
    reads df). Bindings under ``if``, ``for``, ``try``... may not happen: not counted."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and \
            (not isinstance(statement, ast.AnnAssign) or statement.value is not None):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".", 1)[0] for alias in statement.names}
    names: set[str] = set()
    for target in targets:
        for node in ast.walk(target):  # a, (b, *c) = ...; not df["x"] = ... (a mutation)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def cell_reads(code: str) -> dict[str, list[str]]:
    """Names a cell reads, in order of appearance, each with the attribute paths used on it.

    ``df.groupby("a").size()`` reads ``{"df": ["df.groupby"]}``; a name bound before it is
    read (``df = load(); df.head()``) is not read. IPython magics and shell
    lines are not Python: their arguments are scanned for identifiers, and a cell that does
    not parse at all falls back to every identifier it mentions (more, never fewer).
    """
    lines = code.splitlines()
    # The magic's or shell command's own name is not a variable; its arguments may be.
    magic = [_MAGIC_NAME.sub("", line) for line in lines if _is_magic(line)]
    python = "\n".join("" if _is_magic(line) else line for line in lines)
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return _regex_reads(code)
    found: list[tuple[int, int, str, str | None]] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))  # only the longest chain counts: df.a.b, not df.a
    # A name the cell binds before it reads it is not read from the state: after
    # `df = pd.DataFrame(...)`, `df.head()` reads the new df, not the one the state holds
    # (03.03-Operations-in-Pandas step 17 was shown the old df as "read by this cell").
    bound: set[str] = set()
    for statement in tree.body:
        mine: list[tuple[int, int, str, str | None]] = []
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                mine.append((node.lineno, node.col_offset, node.id, None))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                mine.append((node.lineno, node.col_offset, node.target.id, None))  # x += 1
            elif isinstance(node, ast.Attribute) and id(node) not in inner:
                path = _dotted(node)
                if path is not None:
                    mine.append((node.lineno, node.col_offset, path.split(".", 1)[0], path))
        found += [f for f in mine if f[2] not in bound]
        bound |= _bound_unconditionally(statement)
    reads: dict[str, list[str]] = {}
    for _, _, root, path in sorted(found, key=lambda f: (f[0], f[1], f[3] is not None)):
        paths = reads.setdefault(root, [])
        if path is not None and path not in paths:
            paths.append(path)
    for root, paths in _regex_reads("\n".join(magic)).items():
        known = reads.setdefault(root, [])
        known.extend(p for p in paths if p not in known)
    return reads


def _fingerprint(entry: Variable) -> tuple[Any, ...]:
    # Size is left out: estimated sizes of unchanged objects may differ between snapshots.
    return (entry.get("type"), entry.get("repr"), entry.get("shape"), entry.get("length"))


def recent_changes(history: Sequence[Step], last: int = RECENT_STEPS) -> dict[str, str]:
    """Variables of the current state that one of the ``last`` latest steps created or
    changed, newest change first, each with a note saying which step did it."""
    if not history:
        return {}
    current = history[-1]["runtime_variables"]
    changes: dict[str, str] = {}
    for i in range(len(history) - 1, max(-1, len(history) - 1 - last), -1):
        before = history[i - 1]["runtime_variables"] if i > 0 else {}
        changed, _ = state_changes(before, history[i]["runtime_variables"])
        for kind, name in changed:
            if name not in changes and name in current:
                changes[name] = f"{kind} by cell {history[i]['step']}"
    return changes


def curated_selection(history: Sequence[Step], target_code: str | None) -> dict[str, str]:
    """The curated variables, most relevant first, each with why it was chosen: those the
    target cell reads (output task), then those the latest cells created or changed."""
    if not history:
        return {}
    current = history[-1]["runtime_variables"]
    chosen: dict[str, str] = {}
    if target_code is not None:
        for name, paths in cell_reads(target_code).items():
            if name in current:
                chosen[name] = "read by this cell" + (f" ({', '.join(paths)})" if paths else "")
    for name, why in recent_changes(history).items():
        chosen[name] = f"{chosen[name]}; {why}" if name in chosen else why
    return chosen


# --- rendering within a budget ------------------------------------------------------------

def _fit(render: Callable[[int, int], str], count: int, longest: int, budget: int) -> str:
    """The fullest ``render(repr_limit, variables_shown)`` that fits, or ``""``."""
    text = render(longest, count)
    if len(text) <= budget:
        return text
    if len(render(0, count)) <= budget:
        low, high = 0, longest  # render(low) fits, render(high) does not
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if len(render(mid, count)) <= budget else (low, mid)
        return render(low, count)
    low, high = 0, count
    if len(render(0, 0)) > budget:
        return ""
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if len(render(0, mid)) <= budget else (low, mid)
    return render(0, low)


def _details(entry: Variable) -> str:
    parts = [str(entry.get("type", "?")), _size(entry)]
    if entry.get("shape") is not None:
        parts.append(f"shape {tuple(entry['shape'])}")
    if entry.get("length") is not None:
        parts.append(f"length {entry['length']}")
    return ", ".join(parts)


def _where(history: Sequence[Step]) -> str:
    return f"after cell {history[-1]['step']}" if history else "before any cell ran"


def _indent(text: str) -> str:
    return "".join("\n  " + line for line in text.splitlines())


def _fit_listing(heads: Sequence[str], reprs: Sequence[str], budget: int,
                 frame: Callable[[str, int], str]) -> str:
    """Variables one per line with their repr indented below, fitted to ``budget``:
    ``frame(listing, left_out)`` wraps the listing and says how many were left out."""
    # Rendered once: the fitting search re-renders only the reprs it cuts.
    whole = [_indent(text) for text in reprs]

    def render(limit: int, shown: int) -> str:
        parts = []
        for i in range(shown):
            parts.append(heads[i])
            if len(reprs[i]) <= limit:
                parts.append(whole[i])
            elif limit >= _MIN_REPR:
                parts.append(_indent(clip(reprs[i], limit)))
        return frame("".join(parts), len(heads) - shown)

    return _fit(render, len(heads), max(map(len, reprs), default=0), budget)


def render_full_state(history: Sequence[Step], budget: int) -> str:
    """Every variable of the state before the target: name, type, size, shape, repr."""
    variables: Mapping[str, Variable] = history[-1]["runtime_variables"] if history else {}
    names = list(variables)
    opening = (f"<runtime_state>\nRuntime state {_where(history)}: {len(names)} variables "
               "(name: type, size, shape, length; repr indented below).")

    def frame(listing: str, left_out: int) -> str:
        missing = f"\n({left_out} more variables not shown: no room.)" if left_out else ""
        return f"{opening}{listing}{missing}\n</runtime_state>\n\n"

    return _fit_listing([f"\n{name}: {_details(variables[name])}" for name in names],
                        [str(variables[name].get("repr", "")) for name in names], budget,
                        frame)


def render_curated_state(history: Sequence[Step], target_code: str | None, budget: int) -> str:
    """The curated variables as JSON, one per line, each with the reason it was chosen."""
    variables: Mapping[str, Variable] = history[-1]["runtime_variables"] if history else {}
    chosen = curated_selection(history, target_code)
    names = list(chosen)
    rule = ("that this cell reads or that the last " if target_code is not None
            else "that the last ") + f"{RECENT_STEPS} cells created or changed"
    where = _where(history)

    # Rendered once: the fitting search re-encodes only the reprs it cuts.
    heads: list[str] = []
    reprs: list[str] = []
    whole: list[str] = []
    whys: list[str] = []
    for name in names:
        var = variables[name]
        meta: dict[str, Any] = {"type": var.get("type"), "size": _size(var)}
        meta.update({k: var[k] for k in ("shape", "length") if var.get(k) is not None})
        heads.append(f"{json.dumps(name)}: {json.dumps(meta, ensure_ascii=False)[:-1]}")
        reprs.append(str(var.get("repr", "")))
        whole.append(f', "repr": {json.dumps(reprs[-1], ensure_ascii=False)}')
        whys.append(f', "why": {json.dumps(chosen[name], ensure_ascii=False)}}}')

    def entry(i: int, limit: int) -> str:
        if len(reprs[i]) <= limit:
            shown = whole[i]
        elif limit >= _MIN_REPR:
            shown = f', "repr": {json.dumps(clip(reprs[i], limit), ensure_ascii=False)}'
        else:
            shown = ""
        return heads[i] + shown + whys[i]

    def render(limit: int, shown: int) -> str:
        body = ",\n".join(entry(i, limit) for i in range(shown))
        lines = ["<runtime_state format=\"json\">",
                 f"Runtime state {where}: the {len(names)} of {len(variables)} variables "
                 f"{rule}, as JSON:",
                 "{\n" + body + "\n}" if body else "{}"]
        if shown < len(names):
            lines.append(f"({len(names) - shown} more variables not shown: no room.)")
        return "\n".join([*lines, "</runtime_state>", "", ""])

    return _fit(render, len(names), max(map(len, reprs), default=0), budget)


def state_changes(before: Mapping[str, Variable],
                  after: Mapping[str, Variable]) -> tuple[list[tuple[str, str]], list[str]]:
    """What one cell did to the state: ``(kind, name)`` for each variable it created or
    changed, in the order of ``after``, and the names it deleted."""
    changed = [("created" if name not in before else "changed", name)
               for name, entry in after.items()
               if name not in before or _fingerprint(before[name]) != _fingerprint(entry)]
    return changed, [name for name in before if name not in after]


def render_state_changes(before: Mapping[str, Variable], after: Mapping[str, Variable],
                         budget: int) -> str:
    """A cell's state changes: what it created or changed (type, size, repr) and deleted.

    Shown inside each history cell, the changes of all cells add up to the state before
    the target (each variable at its latest change), while every cell's text depends only
    on that cell and the one before it: the prompt of the next step extends this one.
    """
    changed, deleted = state_changes(before, after)
    if not changed and not deleted:
        return ""
    gone = "".join(f"\ndeleted {name}" for name in deleted)

    def frame(listing: str, left_out: int) -> str:
        missing = f"\n({left_out} more changed variables not shown: no room.)" \
            if left_out else ""
        return f"<state_changes>{listing}{missing}{gone}\n</state_changes>\n"

    return _fit_listing([f"\n{kind} {name}: {_details(after[name])}" for kind, name in changed],
                        [str(after[name].get("repr", "")) for _, name in changed], budget,
                        frame)
