"""A step's ``trace`` (``kernel/tracer.py`` records it): the checks the schema cannot
express, and the trace export (``themisto export --format trace``, docs/format.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from themisto_ext.records import Step, StepTrace

SHOWN = 120
"""Characters of a value's repr in the text rendering (the record keeps up to 200)."""


def trace_problems(trace: StepTrace) -> list[tuple[str, str]]:
    """``(field, message)`` for what is inconsistent in a schema-valid trace: a line
    recorded more often than it ran, or recorded without being counted."""
    problems = []
    hits = trace["hits"]
    omitted = trace.get("omitted", {})
    recorded = Counter(str(event["line"]) for event in trace["events"])
    for line, n in sorted(recorded.items()):
        if line not in hits:
            problems.append(("trace.events", f"line {line} is recorded but not in hits"))
        elif n + omitted.get(line, 0) > hits[line]:
            problems.append(("trace.hits", f"line {line}: {n} recorded and "
                             f"{omitted.get(line, 0)} omitted, but it ran {hits[line]} times"))
    for line in omitted:
        if line not in hits:
            problems.append(("trace.omitted", f"line {line} is omitted but not in hits"))
    return problems


def _flat(text: str) -> str:
    text = " ".join(text.split())  # an array's repr spans lines; one event is one line
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


def render_trace(code: str, trace: StepTrace) -> str:
    """The trace as E.T.-style text: each recorded line with its source and, after
    ``#``, what it changed; then what was counted but not shown, and why it stopped."""
    source = code.split("\n")
    rows = []
    for event in trace["events"]:
        line = event["line"]
        text = source[line - 1].strip() if 0 < line <= len(source) else ""
        where = f"{event['function']}: " if "function" in event else ""
        changes = [f"{name} = {_flat(value)}" for name, value in event["changed"].items()]
        if event.get("more"):
            changes.append(f"(+{event['more']} more)")
        note = f"  # {'; '.join(changes)}" if changes else ""
        rows.append(f"{line:>4} | {where}{text}{note}")
    for key, n in trace.get("omitted", {}).items():
        rows.append(f"   ... line {key} ran {trace['hits'].get(key, n)} times, {n} not shown")
    if "truncated" in trace:
        rows.append(f"   [trace stopped: {trace['truncated']}]")
    return "\n".join(rows)


def trace_records(steps: Iterable[Step]) -> Iterator[dict[str, Any]]:
    """One record a traced step (untraced steps have nothing to give)."""
    for step in steps:
        trace = step.get("trace")
        if trace is None:
            continue
        yield {"trajectory_id": step["trajectory_id"], "step": step["step"],
               "notebook_path": step.get("notebook_path"), "code": step["code"],
               "output": step["output"], "error": step["error"], "trace": trace,
               "text": render_trace(step["code"], trace)}
