"""The trajectory format: one home for its schema, validation and (de)serialization.

A trajectory is the sequence of cells one kernel process executed. It is exchanged as
JSONL: one *step* per line, steps grouped by trajectory and in execution order. The
JSON Schema in ``schemas/step.schema.json`` is the contract (``records.Step`` its Python
type); ``docs/format.md`` explains it for readers who do not want the code. ``text.py``
holds how outputs become text, ``jsonl.py`` the one JSONL reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from themisto_ext.errors import FormatError
from themisto_ext.records import Step, schema, validator
from themisto_ext.trajectory.jsonl import iter_jsonl

FORMAT_VERSION: Final = 1


@dataclass(frozen=True)
class FormatProblem:
    """One thing wrong with a trajectory file, located for a person to fix."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}: {self.field or '<step>'}: {self.message}"


class TrajectoryFormatError(FormatError):
    """Raised when input is not a valid trajectory; carries every problem found."""

    def __init__(self, problems: list[FormatProblem]) -> None:
        self.problems = problems
        first = str(problems[0]) if problems else "invalid trajectory"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)


def step_schema() -> dict[str, Any]:
    return schema("step")


def step_problems(step: Any, line: int = 0) -> list[FormatProblem]:
    """Schema problems of one step (empty when valid)."""
    problems = []
    for err in sorted(validator("step").iter_errors(step), key=lambda e: list(e.path)):
        field = ".".join(str(p) for p in err.absolute_path)
        problems.append(FormatProblem(line, field, err.message))
    if not problems and isinstance(step, dict) and "trace" in step:
        from themisto_ext.trajectory.trace import trace_problems

        problems += [FormatProblem(line, f, m) for f, m in trace_problems(step["trace"])]
    return problems


def validate_step(step: Any) -> None:
    problems = step_problems(step)
    if problems:
        raise TrajectoryFormatError(problems)


def dumps_step(step: Step | dict[str, Any]) -> str:
    """One JSONL line (without the newline); non-ASCII kept readable."""
    return json.dumps(step, ensure_ascii=False, separators=(",", ":"))


def with_user(line: str, user: str) -> str:
    """A stored step line as exported: naming the user whose trajectory it is (none for a
    store's unnamed single user); a ``user`` the line held is replaced, never trusted."""
    if not user:
        return line
    step = json.loads(line)
    step.pop("user", None)
    return dumps_step({**step, "user": user})


def write_steps(steps: Iterable[Step] | Iterable[dict[str, Any]], out: IO[str]) -> int:
    count = 0
    for step in steps:
        out.write(dumps_step(step))
        out.write("\n")
        count += 1
    return count


def iter_lines(path: Path) -> Iterator[tuple[int, Any | FormatProblem]]:
    """Yield ``(line_number, step_or_problem)`` for every non-blank line of a JSONL file."""
    for line in iter_jsonl(path):
        yield line.number, (line.value if line.problem is None
                            else FormatProblem(line.number, "", line.problem))


def file_problems(path: Path, limit: int = 100) -> tuple[int, list[FormatProblem]]:
    """Validate a trajectory file: each step, and the grouping/order rules across lines.

    Returns the number of steps read and up to ``limit`` problems.
    """
    problems: list[FormatProblem] = []
    finished: set[str] = set()
    current: str | None = None
    last_step = 0
    count = 0
    try:
        for number, item in iter_lines(path):
            if isinstance(item, FormatProblem):
                problems.append(item)
            else:
                count += 1
                found = step_problems(item, number)
                problems.extend(found)
                if not found:
                    tid = item["trajectory_id"]
                    if tid != current:
                        if tid in finished:
                            problems.append(FormatProblem(
                                number, "trajectory_id",
                                f"steps of trajectory {tid!r} are not contiguous"))
                        if current is not None:
                            finished.add(current)
                        current, last_step = tid, 0
                    if item["step"] <= last_step:
                        problems.append(FormatProblem(
                            number, "step",
                            f"step {item['step']} follows step {last_step}: "
                            "not in execution order"))
                    last_step = item["step"]
            if len(problems) >= limit:
                break
    except UnicodeDecodeError as exc:
        problems.append(FormatProblem(0, "", f"not UTF-8 text ({exc.reason})"))
    return count, problems[:limit]


def read_steps(path: Path) -> list[Step]:
    """Read and validate a whole trajectory file, raising on the first problems found."""
    _, problems = file_problems(path)
    if problems:
        raise TrajectoryFormatError(problems)
    return [item for _, item in iter_lines(path) if not isinstance(item, FormatProblem)]
