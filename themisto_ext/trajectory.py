"""The trajectory format: one home for its schema, validation and (de)serialization.

A trajectory is the sequence of cells one kernel process executed. It is exchanged as
JSONL: one *step* per line, steps grouped by trajectory and in execution order. The
JSON Schema in ``schemas/step.schema.json`` is the contract; ``docs/format.md`` explains
it for readers who do not want the code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

FORMAT_VERSION = 1

Step = dict[str, Any]
"""A step as a plain JSON object; the schema, not a class, defines it."""


@dataclass(frozen=True)
class FormatProblem:
    """One thing wrong with a trajectory file, located for a person to fix."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}: {self.field or '<step>'}: {self.message}"


class TrajectoryFormatError(ValueError):
    """Raised when input is not a valid trajectory; carries every problem found."""

    def __init__(self, problems: list[FormatProblem]) -> None:
        self.problems = problems
        first = str(problems[0]) if problems else "invalid trajectory"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)


@cache
def step_schema() -> dict[str, Any]:
    text = resources.files("themisto_ext").joinpath("schemas/step.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    # Imported here: the kernel hook imports this module, and jsonschema takes ~0.8 s.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(step_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def step_problems(step: Any, line: int = 0) -> list[FormatProblem]:
    """Schema problems of one step (empty when valid)."""
    problems = []
    for err in sorted(_validator().iter_errors(step), key=lambda e: list(e.path)):
        field = ".".join(str(p) for p in err.absolute_path)
        problems.append(FormatProblem(line, field, err.message))
    return problems


def validate_step(step: Any) -> None:
    problems = step_problems(step)
    if problems:
        raise TrajectoryFormatError(problems)


def dumps_step(step: Step) -> str:
    """One JSONL line (without the newline); non-ASCII kept readable."""
    return json.dumps(step, ensure_ascii=False, separators=(",", ":"))


def write_steps(steps: Iterable[Step], out: IO[str]) -> int:
    count = 0
    for step in steps:
        out.write(dumps_step(step))
        out.write("\n")
        count += 1
    return count


def iter_lines(path: Path) -> Iterator[tuple[int, Step | FormatProblem]]:
    """Yield ``(line_number, step_or_problem)`` for every non-blank line of a JSONL file."""
    with path.open("r", encoding="utf-8", errors="strict") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                yield number, FormatProblem(number, "", f"not valid JSON ({exc.msg})")
                continue
            yield number, obj


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
