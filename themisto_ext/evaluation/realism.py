"""What kind of trajectories numbers come from: how development-like, how reproducible.

A notebook run top to bottom has no re-runs, edits or jumps back, unlike a person's
session; and part of what cells show depends on the machine rather than on the code
(unseeded randomness, library versions, memory addresses, clocks, missing modules or
files). ``measure`` counts both over trajectories, ``themisto stats`` prints it and
``themisto report`` carries it. The rules (docs/benchmark.md, "Realism"):

* a **re-run** executes a cell (``cell_id``) the trajectory ran before; it is **edited**
  when its code differs from that cell's previous execution;
* an execution is **out of order** when its cell comes before the previous execution's
  cell: in notebook position when cell ids are positions (JuNE logs), else in the order
  the cells first ran;
* an error is **fixed later** when the cell that raised runs again later without an error
  (the person edited it, or what it needed, until it worked);
* an error is **caused by the environment** when it is a missing module, file or input
  (``ModuleNotFoundError``, ``ImportError``, ``FileNotFoundError``, ``OSError``,
  ``StdinNotImplementedError``...), a library's API changed under the code (an unexpected
  keyword argument, a module without the attribute), or a ``NameError`` for a name only a
  cell that failed would have defined (the failure cascades);
* an output **depends on the environment** when it shows a memory address (``0x7f...``),
  a timing (``%timeit``, ``Wall time``), the clock (the cell reads ``now()``/``time()``),
  unseeded randomness (the cell draws from a module's global generator before that
  generator was seeded, or from a generator made without a seed, or reads a variable
  drawn so; a seeded generator of one's own seeds nothing else), a library version's repr
  (``np.float64(...)``, a ``FutureWarning``), or is the traceback of an error the
  environment caused.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ENV_ERROR_NAMES = frozenset({
    "ModuleNotFoundError", "ImportError", "FileNotFoundError", "OSError", "IOError",
    "PermissionError", "StdinNotImplementedError", "ConnectionError", "URLError",
    "HTTPError", "TimeoutError", "gaierror"})
_API_CHANGE = re.compile(r"unexpected keyword argument|module '[\w.]+' has no attribute|"
                         r"is not a valid package style|has been removed|deprecated",
                         re.IGNORECASE)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
_TIMING = re.compile(r"(?:^|\n)\s*%%?(?:timeit|time)\b|per loop \(mean|Wall time:|CPU times:")
_CLOCK = re.compile(r"\b(?:now|today|utcnow)\(\)|\btime\.(?:time|ctime|perf_counter)\(\)|"
                    r"datetime64\(['\"]now")
# Randomness, per generator: a global seed (``np.random.seed(0)``, ``random.seed(0)``)
# makes later draws from that module's global generator reproducible; a seeded generator
# of one's own (``RandomState(42)``, ``default_rng(1)``) makes its own draws reproducible
# and nothing else (a notebook that made one and then called ``np.random.choice`` drew
# unseeded: 02.07-Fancy-Indexing, step 15). Unseeded generators (``default_rng()``) draw
# from the OS's entropy whatever was seeded.
_GLOBAL = {"np.random": "numpy", "numpy.random": "numpy", "random": "random"}
_GLOBAL_SEED = re.compile(r"(?<![\w.])(np\.random|numpy\.random|random)\.seed\(\s*[^)\s]")
_GLOBAL_DRAW = re.compile(
    r"(?<![\w.])(np\.random|numpy\.random|random)\.(?!seed\b|RandomState\b|default_rng\b|"
    r"Generator\b|SeedSequence\b|PCG64\w*\b|MT19937\b|Philox\b|SFC64\b|BitGenerator\b|"
    r"Random\b|SystemRandom\b|get_state\b|set_state\b|getstate\b|setstate\b|bit_generator\b)"
    r"\w+\(")
_UNSEEDED_GENERATOR = re.compile(r"\b(?:default_rng|RandomState|Random|Generator)\(\s*\)|"
                                 r"\bSystemRandom\(")
_VERSION_REPR = re.compile(r"\bnp\.(?:float|int|uint|bool|complex|str)_?\d*\(|"
                           r"FutureWarning|DeprecationWarning|__version__")
ENV_OUTPUT_KINDS = ("address", "timing", "clock", "randomness", "version", "failure")


def _assigned(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(re.findall(r"^\s*(\w+)\s*=", code, re.MULTILINE))
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}


def _read(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(re.findall(r"[A-Za-z_]\w*", code))
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def raised(step: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The step's error: its ``error``, else the last error among its outputs. A traceback
    can be shown by a cell whose execution IPython counts as a success: a ``__repr__``
    that raises while the result is displayed (pandas 2's removed ``DataFrame.append``,
    03.06-Concat-And-Append step 16) is printed as an error output, and
    ``error_in_exec`` stays None."""
    error = step.get("error")
    if error:
        return error if isinstance(error, Mapping) else {"ename": str(error), "evalue": ""}
    outputs = step.get("outputs")
    if isinstance(outputs, list):
        for item in reversed(outputs):
            if isinstance(item, Mapping) and item.get("output_type") == "error":
                return {"ename": str(item.get("ename", "")), "evalue": str(item.get("evalue", ""))}
    return None


@dataclass(frozen=True)
class StepFacts:
    cause: str | None
    """"environment" or "code" if the step raised, else None."""
    kinds: frozenset[str]
    """How its output depends on the environment."""


def unseeded_draw(code: str, seeded: frozenset[str] | set[str]) -> bool:
    """Whether ``code`` draws from a generator nobody seeded: a module's global generator
    not seeded before (in ``seeded``, or earlier in the cell), or a generator made
    without a seed."""
    if _UNSEEDED_GENERATOR.search(code):
        return True
    seeds = {_GLOBAL[m.group(1)]: m.start() for m in reversed(list(_GLOBAL_SEED.finditer(code)))}
    for draw in _GLOBAL_DRAW.finditer(code):
        module = _GLOBAL[draw.group(1)]
        if module not in seeded and not (module in seeds and seeds[module] < draw.start()):
            return True
    return False


@dataclass
class Tracker:
    """What one trajectory has done so far; ``observe`` its steps in execution order."""

    failed_names: set[str] = field(default_factory=set)
    random_names: set[str] = field(default_factory=set)
    """Variables made by a cell that drew unseeded (values, or unseeded generators)."""
    seeded: set[str] = field(default_factory=set)
    """Modules whose global generator was seeded (``numpy``, ``random``)."""
    last_code: dict[str, str] = field(default_factory=dict)
    first_seen: dict[str, int] = field(default_factory=dict)
    previous: tuple[int, ...] | None = None

    def error_cause(self, step: Mapping[str, Any]) -> str | None:
        """"environment" or "code" for a step that raised, None for one that did not."""
        error = raised(step)
        if not error:
            return None
        name, value = str(error.get("ename", "")), str(error.get("evalue", ""))
        if name in ENV_ERROR_NAMES or _API_CHANGE.search(value):
            return "environment"
        missing = re.match(r"name '(\w+)' is not defined", value)
        if name == "NameError" and missing and missing.group(1) in self.failed_names:
            return "environment"
        return "code"

    def output_kinds(self, step: Mapping[str, Any], cause: str | None) -> set[str]:
        code, output = str(step.get("code", "")), str(step.get("output", ""))
        kinds: set[str] = set()
        if cause == "environment":
            kinds.add("failure")
        if not output.strip():
            return kinds
        if _ADDRESS.search(output):
            kinds.add("address")
        if _TIMING.search(code) or _TIMING.search(output):
            kinds.add("timing")
        if _CLOCK.search(code):
            kinds.add("clock")
        if unseeded_draw(code, self.seeded) or (self.random_names
                                                and _read(code) & self.random_names):
            kinds.add("randomness")
        if _VERSION_REPR.search(output) or "__version__" in code:
            kinds.add("version")
        return kinds

    def position(self, cell: str, numbered: bool) -> tuple[int, ...]:
        if numbered:
            return (int(cell),)
        return (self.first_seen.setdefault(cell, len(self.first_seen)),)

    def observe(self, step: Mapping[str, Any], outputs: bool = True) -> StepFacts:
        """The step's facts, given the steps observed before it (``outputs=False``: only
        its error's cause, which is cheaper)."""
        cause = self.error_cause(step)
        kinds = frozenset(self.output_kinds(step, cause)) if outputs else frozenset()
        self.advance(step, cause, outputs)
        return StepFacts(cause, kinds)

    def advance(self, step: Mapping[str, Any], cause: str | None, outputs: bool = True) -> None:
        code = str(step.get("code", ""))
        if outputs and unseeded_draw(code, self.seeded):
            self.random_names |= _assigned(code)
        if outputs:
            self.seeded |= {_GLOBAL[m.group(1)] for m in _GLOBAL_SEED.finditer(code)}
        if cause is not None:
            self.failed_names |= _assigned(code)
        elif self.failed_names:  # parsing every cell would cost sampling 100k steps ~20 s
            self.failed_names -= _assigned(code)


@dataclass
class Realism:
    trajectories: int = 0
    steps: int = 0
    reruns: int = 0
    edited_reruns: int = 0
    out_of_order: int = 0
    errors: int = 0
    fixed_errors: int = 0
    """Errors whose cell ran again later without one."""
    environment_errors: int = 0
    environment_outputs: int = 0
    """Steps whose output depends on the environment (any kind)."""
    kinds: Counter[str] = field(default_factory=Counter)
    """Steps per kind of environment dependence (a step may have several)."""

    def to_json(self) -> dict[str, Any]:
        return {"trajectories": self.trajectories, "steps": self.steps,
                "reruns": self.reruns, "edited_reruns": self.edited_reruns,
                "out_of_order": self.out_of_order, "errors": self.errors,
                "fixed_errors": self.fixed_errors,
                "environment_errors": self.environment_errors,
                "environment_outputs": self.environment_outputs,
                "environment_kinds": {k: self.kinds[k] for k in ENV_OUTPUT_KINDS}}

    def add(self, other: Realism) -> None:
        for name in ("trajectories", "steps", "reruns", "edited_reruns", "out_of_order",
                     "errors", "fixed_errors", "environment_errors", "environment_outputs"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.kinds.update(other.kinds)


def step_facts(steps: Sequence[Mapping[str, Any]]) -> list[StepFacts]:
    """Per step of one trajectory (in execution order): its error's cause, its output's
    environment dependence."""
    tracker = Tracker()
    return [tracker.observe(step) for step in steps]


def measure_trajectory(steps: Sequence[Mapping[str, Any]]) -> Realism:
    realism = Realism(trajectories=1 if steps else 0, steps=len(steps))
    tracker = Tracker()
    cells = [str(s.get("cell_id")) if s.get("cell_id") is not None else f"#{i}"
             for i, s in enumerate(steps)]
    numbered = bool(cells) and all(c.isdigit() for c in cells)
    unfixed: Counter[str] = Counter()  # errors per cell not yet followed by a success
    for step, cell, facts in zip(steps, cells, step_facts(steps), strict=True):
        code = str(step.get("code", ""))
        if cell in tracker.last_code:
            realism.reruns += 1
            realism.edited_reruns += tracker.last_code[cell] != code
        tracker.last_code[cell] = code
        position = tracker.position(cell, numbered)
        if tracker.previous is not None and position < tracker.previous:
            realism.out_of_order += 1
        tracker.previous = position
        if facts.cause is not None:
            realism.errors += 1
            realism.environment_errors += facts.cause == "environment"
            unfixed[cell] += 1
        elif unfixed[cell]:
            realism.fixed_errors += unfixed.pop(cell)
        if facts.kinds:
            realism.environment_outputs += 1
            realism.kinds.update(facts.kinds)
    return realism


def measure(trajectories: Iterable[Sequence[Mapping[str, Any]]]) -> Realism:
    total = Realism()
    for steps in trajectories:
        total.add(measure_trajectory(steps))
    return total


def describe(realism: Mapping[str, Any]) -> str:
    """One paragraph for people, from ``Realism.to_json()``."""
    steps = realism["steps"] or 1
    kinds = ", ".join(f"{k} {v}" for k, v in realism["environment_kinds"].items() if v)

    def share(key: str) -> str:
        return f"{100 * realism[key] / steps:.0f}%"

    fixed = realism.get("fixed_errors")
    return (f"{realism['trajectories']} trajectories, {realism['steps']} steps: "
            f"{realism['reruns']} re-runs ({share('reruns')} of steps; "
            f"{realism['edited_reruns']} edited, {share('edited_reruns')}), "
            f"{realism['out_of_order']} out-of-order executions ({share('out_of_order')}), "
            f"{realism['errors']} errors ({share('errors')}; "
            f"{realism['environment_errors']} caused by the environment"
            + (f", {fixed} fixed later" if fixed is not None else "") + "); "
            f"{realism['environment_outputs']} outputs "
            f"({100 * realism['environment_outputs'] / steps:.0f}%) depend on the "
            f"environment" + (f" ({kinds})" if kinds else "") + ".")
