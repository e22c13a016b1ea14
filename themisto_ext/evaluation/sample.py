"""Pick benchmark examples from trajectories, the way the Themisto paper did.

A candidate target is a step with at least ``MIN_PRIOR`` steps before it in its
trajectory. Empty targets, targets longer than the 0.99 quantile (of code length, and of
output length for the output task) and targets that raised, as the ``errors`` rule says
(``drop`` all, ``keep`` all, or ``drop-environment``: drop those whose failure the
environment caused, see ``realism.py``), are dropped; so are output targets whose output
depends on the environment when ``environment="drop"`` (by default they stay, and every
example says whether it is one: ``environment_dependent``). ``n`` targets are then drawn
stratified by target length (the length of what is predicted: the output, or the code of
the next cell): 90% from the second and third quartiles, 5% each from the first and the
fourth. docs/benchmark.md has the details (rounding, short strata, every candidate taken).

The draw depends only on the candidates and the seed, not on the order of the input
files: candidates are ordered by ``(trajectory_id, position)`` before drawing.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from themisto_ext.errors import SampleInputError as SampleInputError  # re-exported: raised here
from themisto_ext.evaluation.realism import StepFacts, Tracker
from themisto_ext.prediction.prompts import TASKS, PredictionTask
from themisto_ext.records import Step
from themisto_ext.trajectory.jsonl import iter_jsonl

MIN_PRIOR = 5
LENGTH_QUANTILE = 0.99
STRATA = ("q1", "q2-q3", "q4")
ERROR_RULES = ("drop", "keep", "drop-environment")
"""What to do with targets that raised: the paper dropped them all; a traceback is an
output too, and one the environment caused (a missing module) says little of the code."""
SOURCES = {"any": None, "live": "kernel", "record": "record", "import": "import"}
"""``--source``: which trajectories to sample from, by how they were recorded (each step's
``source``, written by ``themisto export`` and ``import-june``): ``live`` keeps those a
person's kernel recorded in JupyterLab; a file without the field counts for ``any`` only."""
ENVIRONMENT_RULES = ("keep", "drop")
"""What to do with output targets whose output depends on the environment (a timing, an
unseeded draw...): re-running the same code gives another output, so even a perfect
predictor cannot match them. Kept (and flagged) by default, or dropped."""
Example = dict[str, Any]


class _Facts(NamedTuple):
    """What the filters need of a step; the step itself stays JSON text until drawn."""

    step: int
    code_length: int
    output_length: int
    blank_code: bool
    blank_output: bool
    raised: bool
    environment_error: bool


@dataclass
class Trajectory:
    trajectory_id: str
    source: Path
    lines: list[str]
    """Each step's JSON text, in execution order."""
    facts: list[_Facts]
    recorded_by: str | None = None
    """How it was recorded (its first step's ``source``), if the file says."""
    _parsed: dict[int, Step] = field(default_factory=dict, repr=False)
    _environment: list[StepFacts] = field(default_factory=list, repr=False)
    _tracker: Tracker = field(default_factory=Tracker, repr=False)

    def step(self, position: int) -> Step:
        """The step at ``position``, parsed once (examples of one trajectory share it)."""
        parsed = self._parsed.get(position)
        if parsed is None:
            parsed = self._parsed[position] = json.loads(self.lines[position])
        return parsed

    def environment(self, position: int) -> frozenset[str]:
        """How the output at ``position`` depends on the environment (``realism.py``),
        from the steps before it: each step is observed once, as far as asked."""
        while len(self._environment) <= position:
            self._environment.append(self._tracker.observe(self.step(len(self._environment))))
        return self._environment[position].kinds


@dataclass(frozen=True)
class _Candidate:
    trajectory: Trajectory
    position: int
    """Index of the target in its trajectory: also the number of steps before it."""
    length: int
    """Length of the text predicted (output or code)."""


@dataclass
class Stratum:
    name: str
    available: int
    quota: int
    taken: int = 0


@dataclass
class SampleResult:
    examples: list[Example]
    steps: int
    """Steps read."""
    dropped: dict[str, int]
    """Why steps were not candidates, or candidates were filtered out."""
    candidates: int
    """Candidates left after every filter: the population the strata divide."""
    bounds: tuple[float, float]
    """Target lengths at the first and third quartiles."""
    strata: list[Stratum]
    notes: list[str] = field(default_factory=list)


def _facts(step: Any, source: Path, line: int, tracker: Tracker) -> _Facts:
    # The full schema check (themisto validate) costs ~0.1 ms a step; these are the
    # fields sampling relies on, checked so that bad input fails with its location.
    if not isinstance(step, dict):
        raise SampleInputError(f"{source}:{line}: not a step object")
    for name, kind in (("trajectory_id", str), ("step", int), ("code", str), ("output", str)):
        if not isinstance(step.get(name), kind):
            raise SampleInputError(f"{source}:{line}: {name}: missing or not a "
                                   f"{kind.__name__} (check the file with `themisto validate`)")
    if "error" not in step:
        raise SampleInputError(f"{source}:{line}: error: missing")
    code, output = step["code"], step["output"]
    if step["error"] is not None and not isinstance(step["error"], dict):
        raise SampleInputError(f"{source}:{line}: error: not an object or null")
    cause = tracker.observe(step, outputs=False).cause  # an error output counts too
    return _Facts(step["step"], len(code), len(output), not code.strip(), not output.strip(),
                  cause is not None, cause == "environment")


def read_trajectories(paths: Sequence[Path]) -> list[Trajectory]:
    """Every trajectory of the files, its steps in file order (the execution order).

    Only the facts the filters need are kept parsed: holding 100k parsed steps costs
    gigabytes and most of the time, for the few thousand that end up in examples.
    """
    trajectories: list[Trajectory] = []
    seen: dict[str, Path] = {}
    if len({p.resolve() for p in paths}) < len(paths):
        raise SampleInputError("a trajectory file is given twice")
    for path in paths:
        if not path.is_file():
            raise SampleInputError(f"{path}: no such file")
        current: Trajectory | None = None
        tracker = Tracker()
        for entry in iter_jsonl(path):
            line = entry.number
            if entry.problem is not None:
                raise SampleInputError(f"{path}:{line}: {entry.problem}")
            step = entry.value
            if not (current is not None and isinstance(step, dict)
                    and step.get("trajectory_id") == current.trajectory_id):
                tracker = Tracker()  # a new trajectory
            facts = _facts(step, path, line, tracker)
            tid = step["trajectory_id"]
            if current is not None and current.trajectory_id == tid:
                if facts.step <= current.facts[-1].step:
                    raise SampleInputError(f"{path}:{line}: step {facts.step} follows step "
                                           f"{current.facts[-1].step} of trajectory {tid}")
            elif tid in seen:
                where = "earlier in this file" if seen[tid] == path else f"in {seen[tid]}"
                raise SampleInputError(f"{path}:{line}: trajectory {tid} appeared {where} "
                                       "already (steps of a trajectory must be contiguous "
                                       "and in one file)")
            else:
                seen[tid] = path
                current = Trajectory(tid, path, [], [], recorded_by=step.get("source")
                                     if isinstance(step.get("source"), str) else None)
                trajectories.append(current)
            current.lines.append(entry.text)
            current.facts.append(facts)
    return trajectories


def split_counts(n: int) -> tuple[int, int, int]:
    """Quotas of the first quartile, the middle half and the fourth quartile for ``n``.

    Each tail gets 5% of ``n`` rounded half up; the middle gets the rest.
    """
    tail = (n * 5 + 50) // 100  # in integers: 0.05 * n is not exact in floating point
    return tail, n - 2 * tail, tail


def _fill(quotas: list[int], available: list[int], notes: list[str],
          bounds: tuple[float, float]) -> list[int]:
    """Quotas capped by what each stratum has; a shortfall moves to the nearest neighbours."""
    taken = [min(q, a) for q, a in zip(quotas, available, strict=True)]
    for s in range(len(quotas)):
        short = quotas[s] - taken[s]
        if short <= 0:
            continue
        moved: dict[int, int] = {}
        for distance in range(1, len(quotas)):
            # both neighbours at this distance, alternately, lower stratum first
            around = [j for j in (s - distance, s + distance) if 0 <= j < len(quotas)]
            while short and any(taken[j] < available[j] for j in around):
                for j in around:
                    if short and taken[j] < available[j]:
                        taken[j] += 1
                        moved[j] = moved.get(j, 0) + 1
                        short -= 1
            if not short:
                break
        got = ", ".join(f"{k} from {STRATA[j]}" for j, k in sorted(moved.items()))
        notes.append(
            f"stratum {STRATA[s]} ({_describe(s, bounds)}) has {available[s]} candidates for "
            f"a quota of {quotas[s]}" + (f"; took {got} instead" if got else "")
            + (f"; {short} short overall" if short else ""))
    return taken


def _describe(stratum: int, bounds: tuple[float, float]) -> str:
    low, high = bounds
    return (f"length < {low:g}", f"{low:g} <= length <= {high:g}", f"length > {high:g}")[stratum]


def _candidates(trajectories: list[Trajectory], task: PredictionTask, errors: str, environment: str,
                dropped: dict[str, int], source: str = "any") -> list[_Candidate]:
    found: list[_Candidate] = []
    output_task = task == "output"
    wanted = SOURCES[source]
    for trajectory in trajectories:
        facts = trajectory.facts
        if wanted is not None and trajectory.recorded_by != wanted:
            dropped[f"not --source {source}"] += len(facts)
            continue
        dropped["fewer than 5 prior steps"] += min(MIN_PRIOR, len(facts))
        for position in range(MIN_PRIOR, len(facts)):
            fact = facts[position]
            if fact.blank_code or (output_task and fact.blank_output):
                dropped["empty target"] += 1
            elif fact.raised and (errors == "drop" or (errors == "drop-environment"
                                                      and fact.environment_error)):
                dropped["raised an exception"] += 1
            elif output_task and environment == "drop" and trajectory.environment(position):
                dropped["depends on the environment"] += 1
            else:
                length = fact.output_length if output_task else fact.code_length
                found.append(_Candidate(trajectory, position, length))
    return found


def _drop_long(found: list[_Candidate], task: PredictionTask,
               dropped: dict[str, int]) -> list[_Candidate]:
    if not found:
        return found
    code = np.fromiter((c.trajectory.facts[c.position].code_length for c in found), np.int64,
                       count=len(found))
    keep = code <= np.quantile(code, LENGTH_QUANTILE)
    if task == "output":
        output = np.fromiter((c.length for c in found), np.int64, count=len(found))
        keep &= output <= np.quantile(output, LENGTH_QUANTILE)
    dropped["longer than the 0.99 quantile"] += int(len(found) - keep.sum())
    return [c for c, k in zip(found, keep.tolist(), strict=True) if k]


@contextmanager
def _without_gc() -> Iterator[None]:
    # Reading 100k steps keeps a tuple per step and allocates millions of short-lived
    # objects, none of them cyclic garbage; the cyclic collector would rescan the growing
    # heap again and again (a fifth of the time).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def sample(paths: Sequence[Path], task: PredictionTask, *, n: int = 200, seed: int = 0,
           errors: str = "drop", environment: str = "keep",
           source: str = "any") -> SampleResult:
    """Draw the benchmark examples for ``task`` from the trajectory files ``paths``;
    ``errors`` is the rule for targets that raised (``ERROR_RULES``), ``environment`` the
    rule for output targets that depend on the environment (``ENVIRONMENT_RULES``),
    ``source`` which trajectories count (``SOURCES``)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if errors not in ERROR_RULES:
        raise ValueError(f"unknown --errors rule {errors!r}: use {', '.join(ERROR_RULES)}")
    if environment not in ENVIRONMENT_RULES:
        raise ValueError(f"unknown --environment rule {environment!r}: use "
                         f"{', '.join(ENVIRONMENT_RULES)}")
    if source not in SOURCES:
        raise ValueError(f"unknown --source {source!r}: use {', '.join(SOURCES)}")
    if n < 1:
        raise ValueError("--n must be at least 1")
    with _without_gc():
        return _sample(read_trajectories(paths), task, n, seed, errors, environment, source)


def select_targets(trajectories: list[Trajectory], task: PredictionTask, errors: str = "drop",
                   environment: str = "keep", source: str = "any",
                   ) -> tuple[list[_Candidate], dict[str, int]]:
    """Every candidate target for ``task`` after every filter, ordered by trajectory id and
    position, and how many steps each filter left out: the population a benchmark draws
    from, and the targets a training export (``training/sft.py``) writes."""
    dropped = {f"not --source {source}": 0, "fewer than 5 prior steps": 0, "empty target": 0,
               "raised an exception": 0, "depends on the environment": 0,
               "longer than the 0.99 quantile": 0}
    if source == "any":
        del dropped["not --source any"]
    found = _drop_long(_candidates(trajectories, task, errors, environment, dropped, source),
                       task, dropped)
    found.sort(key=lambda c: (c.trajectory.trajectory_id, c.position))
    return found, dropped


def observe_trajectory(trajectory_id: str, steps: Iterable[Any], source: Path | str,
                       recorded_by: str | None = None) -> Trajectory:
    """A trajectory's filter facts and environment facts from its steps (execution order),
    without keeping the steps: what choosing targets needs, in the memory of a few numbers
    a step, for a reader that can read the steps again (a store). ``Trajectory.step``
    cannot be used on it."""
    trajectory = Trajectory(trajectory_id, Path(source), [], [], recorded_by=recorded_by)
    tracker = Tracker()
    for position, step in enumerate(steps):
        where = step.get("step", position + 1) if isinstance(step, dict) else position + 1
        trajectory.facts.append(_facts(step, Path(source), where, tracker))
        trajectory._environment.append(trajectory._tracker.observe(step))
    return trajectory


def _sample(trajectories: list[Trajectory], task: PredictionTask, n: int, seed: int,
            errors: str, environment: str = "keep", source: str = "any") -> SampleResult:
    found, dropped = select_targets(trajectories, task, errors, environment, source)
    steps = sum(len(t.lines) for t in trajectories)
    notes: list[str] = []
    if not found:
        raise SampleInputError(f"no candidate targets among {steps} steps ("
                               + ", ".join(f"{v} {k}" for k, v in dropped.items()) + ")")

    lengths = np.array([c.length for c in found], dtype=np.float64)
    q1, q3 = (float(v) for v in np.quantile(lengths, [0.25, 0.75]))
    stratum_of = np.where(lengths < q1, 0, np.where(lengths > q3, 2, 1))
    members = [np.flatnonzero(stratum_of == s) for s in range(len(STRATA))]
    quotas = list(split_counts(n))
    available = [len(m) for m in members]
    census = len(found) <= n
    if census:
        # Every candidate is taken: quotas and strata change nothing, and saying which
        # stratum was short would suggest they did.
        notes.append(f"every candidate is taken: {len(found)} candidates for --n {n}, so the "
                     "length quotas (" + "/".join(map(str, quotas)) + ") do not apply; "
                     "the examples are the whole population: "
                     + ", ".join(f"{STRATA[s]} {available[s]}" for s in range(len(STRATA))))
        taken = available
    else:
        taken = _fill(quotas, available, notes, (q1, q3))

    rng = np.random.default_rng(seed)
    chosen: list[tuple[int, int]] = []
    for s, index in enumerate(members):
        picked = index[rng.permutation(len(index))[: taken[s]]] if taken[s] else index[:0]
        chosen += [(int(i), s) for i in picked]
    chosen.sort()
    design = {"n": n, "seed": seed, "errors": errors, "environment": environment,
              "source": source,
              "candidates": len(found), "census": census}
    examples = [_example(found[i], task, STRATA[s], design) for i, s in chosen]
    strata = [Stratum(STRATA[s], available[s], quotas[s], taken[s]) for s in range(len(STRATA))]
    return SampleResult(examples, steps, dropped, len(found), (q1, q3), strata, notes)


def _example(candidate: _Candidate, task: PredictionTask, stratum: str,
             design: dict[str, Any]) -> Example:
    trajectory = candidate.trajectory
    target = trajectory.step(candidate.position)
    # A next cell is code a person typed: the machine decides none of it.
    reasons = sorted(trajectory.environment(candidate.position)) if task == "output" else []
    return {
        "id": f"{task}-{trajectory.trajectory_id}-{target['step']}",
        "task": task,
        "history": [trajectory.step(i) for i in range(candidate.position)],
        "target": target,
        "stratum": stratum,
        "environment_dependent": bool(reasons),
        "environment_reasons": reasons,
        "provenance": {"trajectory_id": trajectory.trajectory_id,
                       "step": target["step"], "file": str(trajectory.source)},
        "sampling": design,
    }


def write_examples(examples: Sequence[Example], out: IO[str]) -> None:
    for example in examples:
        out.write(json.dumps(example, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")


def read_examples(path: Path) -> list[Example]:
    """A benchmark file, each line checked for what running it needs."""
    if not path.is_file():
        raise SampleInputError(f"{path}: no such file")
    examples: list[Example] = []
    ids: set[str] = set()
    for entry in iter_jsonl(path):
        line, example = entry.number, entry.value
        if entry.problem is not None:
            raise SampleInputError(f"{path}:{line}: {entry.problem}")
        if not isinstance(example, dict) or not isinstance(example.get("id"), str) \
                or example.get("task") not in TASKS \
                or not isinstance(example.get("history"), list) \
                or not isinstance(example.get("target"), dict):
            raise SampleInputError(f"{path}:{line}: not a benchmark example (needs id, "
                                   "task, history and target; made by `themisto sample`)")
        if example["id"] in ids:
            raise SampleInputError(f"{path}:{line}: duplicate example id {example['id']}")
        ids.add(example["id"])
        examples.append(example)
    if not examples:
        raise SampleInputError(f"{path}: no examples")
    return examples
