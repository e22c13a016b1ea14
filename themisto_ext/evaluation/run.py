"""Run predictors over benchmark examples: every predictor x context x example, resumable.

Results go to ``RESULTS/results.jsonl``, one record per (example, predictor, context),
appended and flushed as each call finishes, so an interrupted run loses at most the calls
in flight. A rerun reads the file first and skips the pairs whose latest record has no
error: finished calls are never paid for twice, failed ones are retried. The latest record
of a pair is the one that counts (in the summary and the report).

Concurrency: one asyncio task per pending pair, at most ``concurrency`` calls in flight per
predictor. With ``in_order``, one task per trajectory, predictor and context runs its
examples in step order, so that a predictor's prefix cache sees a growing prompt, and at
most ``concurrency`` such chains run at once per predictor (a chain keeps its slot to the
end: interleaved chains would evict each other's cache). Every prompt is built from its
own example alone, so results do not depend on order.

**The same history in every context**: a predictor's prompts of one example, whatever the
context, show the same history cells, clipped alike: the budget and the cut that the
context needing most room needs to fit the predictor's window (``common_history``). A
difference between contexts is then one of runtime state, not of history too. Each record
keeps that plan (``history_plan``) and the cells its prompt left out (``dropped_steps``).

``RESULTS/run.json`` ties the directory to its benchmark file and keeps what the report
needs of it: how the examples were sampled and what the trajectories they come from are
like (``realism.py``), measured on the examples' own histories and targets.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from themisto_ext.errors import PredictionSuperseded
from themisto_ext.evaluation.realism import measure, step_facts
from themisto_ext.evaluation.sample import Example
from themisto_ext.prediction.clients import Predictor, make_predictor
from themisto_ext.prediction.prompts import ANSWER_TOKENS, CONTEXTS, PredictionContext, Prompt
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.window import HistoryPlan, Window, common_history
from themisto_ext.prediction.run import Superseded, predict, prediction_error
from themisto_ext.prediction.scoring import scored
from themisto_ext.records import Scope
from themisto_ext.trajectory.jsonl import file_sha256, iter_jsonl

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"
METRICS = ("exact_match", "rouge_l", "chrf")
Record = dict[str, Any]
Key = tuple[str, str, str]
"""(example id, predictor, context)."""


def key_of(record: Record) -> Key:
    return record["example_id"], record["predictor"], record["context"]


@dataclass
class LoadedResults:
    latest: dict[Key, Record]
    """The latest record of every pair, in the order pairs first appear in the file."""
    lines: int
    unreadable: int
    """Lines that are not a complete record (a write cut off by an interrupted run)."""


def load_results(path: Path) -> LoadedResults:
    latest: dict[Key, Record] = {}
    lines = unreadable = 0
    if not path.exists():
        return LoadedResults(latest, 0, 0)
    for entry in iter_jsonl(path):
        lines += 1
        try:
            key = key_of(entry.value)
        except (KeyError, TypeError):
            unreadable += 1
            continue
        latest[key] = entry.value
    return LoadedResults(latest, lines, unreadable)


def parse_contexts(text: str) -> list[PredictionContext]:
    wanted = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CONTEXTS]
    if unknown or not wanted:
        raise ValueError(f"unknown context {', '.join(unknown) or '(none given)'}: use a comma "
                         f"list of {', '.join(CONTEXTS)}")
    return list(dict.fromkeys(wanted))  # type: ignore[arg-type]


def _target_code(example: Example) -> str | None:
    return str(example["target"]["code"]) if example["task"] == "output" else None


def _trajectory(example: Example) -> str:
    return str(example.get("provenance", {}).get("trajectory_id")
               or example["target"]["trajectory_id"])


# ------------------------------------------------------------------- progress


class Progress:
    """A one-line text progress bar on stderr (a line per 10% when not a terminal)."""

    def __init__(self, total: int, stream: IO[str] | None = None, label: str = "bench") -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self._shown_at = 0.0
        self._shown_tenth = 0

    def step(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if self.tty and now - self._shown_at >= 0.1:
            self._shown_at = now
            self._show("\r")
        elif not self.tty and self.total and self.done * 10 // self.total > self._shown_tenth:
            self._shown_tenth = self.done * 10 // self.total
            self._show("")

    def line(self) -> str:
        width = 24
        filled = width * self.done // self.total if self.total else width
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate else math.inf
        eta = f"{left:.0f}s" if math.isfinite(left) else "?"
        percent = 100 * self.done // self.total if self.total else 100
        return (f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                f" {percent}%  {self.failed} failed  {rate:.1f}/s  ETA {eta}")

    def _show(self, lead: str) -> None:
        end = "" if self.tty else "\n"
        self.stream.write(f"{lead}{self.line()}{end}")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write(f"\r{self.line()}\n")
            self.stream.flush()


# ------------------------------------------------------------------- running


@dataclass
class BenchConfig:
    predictors: list[str]
    contexts: list[PredictionContext]
    out: Path
    concurrency: int = 8
    base_url: str | None = None
    local_model: str | None = None
    """The model of local and hybrid predictors that name none (``--model``)."""
    in_order: bool = False
    timeout: float = 120
    budget_chars: int = 24_000
    window_tokens: int | None = None
    """Remote models' context window (tokens); the local model knows its own."""
    tokenizer: Path | None = None
    """A GGUF whose tokenizer counts remote models' tokens (else an estimate)."""


@dataclass
class BenchOutcome:
    planned: int
    """Pairs in this benchmark (examples x predictors x contexts)."""
    skipped: int
    """Already done by an earlier run."""
    ran: int
    failed: int
    summary: dict[str, Any] = field(default_factory=dict)
    unreadable: int = 0


class _Writer:
    """Appends records to results.jsonl, one flushed line each."""

    def __init__(self, path: Path) -> None:
        self._fh = path.open("a", encoding="utf-8")
        # A run killed mid-write leaves a partial last line; start ours on a fresh line.
        if self._fh.tell() > 0:
            with path.open("rb") as fh:
                fh.seek(-1, 2)
                if fh.read(1) != b"\n":
                    self._fh.write("\n")

    def write(self, record: Record) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def describe_examples(examples: Sequence[Example]) -> dict[str, Any]:
    """What the report says of a benchmark's examples: the sampling of each task and the
    realism of the trajectories (each as far as its longest example reaches) and of the
    targets' references."""
    longest: dict[str, list[dict[str, Any]]] = {}
    sampling: dict[str, Any] = {}
    for example in examples:
        steps = [*example["history"], example["target"]]
        tid = _trajectory(example)
        if len(steps) > len(longest.get(tid, ())):
            longest[tid] = steps
        if isinstance(example.get("sampling"), dict):
            sampling.setdefault(example["task"], example["sampling"])
    targets: Counter[str] = Counter()
    dependent: Counter[str] = Counter()
    for example in examples:  # per task: a next cell's reference (code) is never one
        targets[example["task"]] += 1
        dependent[example["task"]] += environment_dependent(example, longest)
    return {"sampling": sampling, "realism": measure(longest.values()).to_json(),
            "targets": dict(sorted(targets.items())),
            "environment_targets": {task: dependent[task] for task in sorted(targets)}}


def environment_dependent(example: Example,
                          trajectories: dict[str, list[dict[str, Any]]] | None = None) -> bool:
    """The example's flag (``themisto sample`` writes it); for an example sampled before
    the flag existed, recomputed from its history and target."""
    if isinstance(example.get("environment_dependent"), bool):
        return bool(example["environment_dependent"])
    if example["task"] != "output":
        return False
    steps = (trajectories or {}).get(_trajectory(example)) or \
        [*example["history"], example["target"]]
    position = next(i for i, s in enumerate(steps) if s["step"] == example["target"]["step"])
    return bool(step_facts(steps[: position + 1])[position].kinds)


def _claim_directory(out: Path, bench: Path, examples: Sequence[Example]) -> None:
    """Tie RESULTS/ to one benchmark file, so that a resume never mixes two benchmarks."""
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    digest = file_sha256(bench)
    if run_file.exists():
        known = json.loads(run_file.read_text("utf-8"))
        if known.get("bench_sha256") != digest:
            raise ValueError(f"{out} holds results of another benchmark ({known.get('bench')}); "
                             "use a new --out directory")
        return
    if (out / RESULTS_FILE).exists():
        raise ValueError(f"{out / RESULTS_FILE} exists but {RUN_FILE} does not: not a "
                         "directory made by `themisto bench`")
    run_file.write_text(json.dumps({"bench": str(bench), "bench_sha256": digest,
                                    **describe_examples(examples)}, indent=2)
                        + "\n", encoding="utf-8")


def history_plan(example: Example, contexts: Sequence[PredictionContext], budget_chars: int,
                 window: Window | None, max_tokens: int = ANSWER_TOKENS) -> HistoryPlan:
    """The one budget and history cut of every context's prompt for ``example``."""

    def build(context: PredictionContext, budget: int, dropped: int) -> Prompt:
        return build_prompt(example["history"], example["task"], context,
                            target_code=_target_code(example), budget_chars=budget,
                            max_tokens=max_tokens, min_dropped=dropped)

    return common_history(build, contexts, budget_chars, window)


class _Plans:
    """Each (predictor, example)'s history plan, made once for all its contexts."""

    def __init__(self, contexts: Sequence[PredictionContext], budget_chars: int) -> None:
        self.contexts, self.budget_chars = list(contexts), budget_chars
        self._made: dict[tuple[str, str], asyncio.Future[HistoryPlan | None]] = {}

    async def get(self, predictor: Predictor, example: Example) -> HistoryPlan | None:
        key = (predictor.name, example["id"])
        if key not in self._made:
            self._made[key] = asyncio.ensure_future(self._make(predictor, example))
        return await self._made[key]

    async def _make(self, predictor: Predictor, example: Example) -> HistoryPlan | None:
        try:  # counting tokens may load a model: off the event loop
            return await asyncio.to_thread(
                history_plan, example, self.contexts, self.budget_chars, predictor.window,
                predictor.max_tokens or ANSWER_TOKENS)
        except Exception:  # too long, a model that cannot load: predict() records why
            return None


async def _one(predictor: Predictor, example: Example, context: PredictionContext,
               config: BenchConfig, session: str | None, plans: _Plans | None = None) -> Record:
    target = example["target"]
    record: dict[str, Any]
    plan = await plans.get(predictor, example) if plans is not None else None
    try:
        outcome = await predict(
            predictor, example["history"], example["task"], context,
            scope=Scope(_trajectory(example)), target_step=int(target["step"]),
            target_code=_target_code(example), session=session,
            budget_chars=plan.budget_chars if plan else config.budget_chars,
            min_dropped=plan.dropped if plan else 0)
        if isinstance(outcome, Superseded):  # counted as failed: a rerun retries it
            record = {"task": example["task"], "context": context, "predictor": predictor.name,
                      "error": prediction_error(PredictionSuperseded(outcome.reason))}
        else:
            record = dict(scored(outcome, target))
    except Exception as exc:  # a bug or an odd example must not stop hundreds of calls
        record = {"task": example["task"], "context": context, "predictor": predictor.name,
                  "error": {"type": type(exc).__name__, "message": str(exc)}}
    record.pop("id", None)  # the prediction's own uuid; the pair is what identifies a result
    record.setdefault("trajectory_id", _trajectory(example))
    record["answer_cap"] = predictor.max_tokens or ANSWER_TOKENS  # a cut-off answer: quality.py
    record["history_plan"] = None if plan is None else \
        {"budget_chars": plan.budget_chars, "dropped_steps": plan.dropped}
    return {"example_id": example["id"], "stratum": example.get("stratum"),
            "environment_dependent": environment_dependent(example), **record}


async def run_bench(examples: Sequence[Example], bench: Path, config: BenchConfig, *,
                    progress_stream: IO[str] | None = None) -> BenchOutcome:
    """Run the pending pairs of ``examples`` and write results and summary to ``config.out``."""
    if config.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    if not config.predictors:
        raise ValueError("give at least one --predictor")
    predictors: list[Predictor] = []
    try:  # a wrong predictor name fails before anything is written
        for spec in dict.fromkeys(config.predictors):
            predictors.append(make_predictor(spec, base_url=config.base_url,
                                             timeout=config.timeout,
                                             max_concurrency=config.concurrency,
                                             window_tokens=config.window_tokens,
                                             tokenizer=config.tokenizer,
                                             local_model=config.local_model))
        _claim_directory(config.out, bench, examples)
    except BaseException:
        for predictor in predictors:
            await predictor.aclose()
        raise
    results_path = config.out / RESULTS_FILE
    loaded = load_results(results_path)
    done = {k for k, r in loaded.latest.items() if not r.get("error")}
    planned = 0
    # Chains run sequentially inside, concurrently with each other.
    chains: dict[tuple[Any, ...], list[tuple[Predictor, Example, PredictionContext]]] = \
        defaultdict(list)
    for predictor in predictors:
        for context in config.contexts:
            for example in examples:
                planned += 1
                if (example["id"], predictor.name, context) in done:
                    continue
                chain = (predictor.name, context, _trajectory(example)) if config.in_order \
                    else (predictor.name, context, example["id"])
                chains[chain].append((predictor, example, context))
    pending = sum(len(c) for c in chains.values())
    outcome = BenchOutcome(planned, planned - pending, 0, 0, unreadable=loaded.unreadable)
    limits = {p.name: asyncio.Semaphore(config.concurrency) for p in predictors}
    progress = Progress(pending, progress_stream)
    plans = _Plans(config.contexts, config.budget_chars)
    progress.stream.write(f"{planned} pairs: {outcome.skipped} done before, {pending} to run\n")
    writer = _Writer(results_path)

    async def run_chain(chain: tuple[Any, ...],
                        items: list[tuple[Predictor, Example, PredictionContext]]) -> None:
        if config.in_order:
            items.sort(key=lambda item: int(item[1]["target"]["step"]))
        session = "bench:" + ":".join(chain) if config.in_order else None
        async with limits[items[0][0].name]:
            for predictor, example, context in items:
                record = await _one(predictor, example, context, config, session, plans)
                writer.write(record)
                failed = bool(record.get("error"))
                outcome.ran += 1
                outcome.failed += failed
                progress.step(failed)

    try:
        await asyncio.gather(*(run_chain(k, v) for k, v in chains.items()))
    finally:
        progress.close()
        writer.close()
        for predictor in predictors:
            await predictor.aclose()
        outcome.summary = write_summary(config.out, bench)
    return outcome


# ------------------------------------------------------------------- summary


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def summarize(records: Iterable[Record]) -> dict[str, Any]:
    """Means per task x predictor x context x metric over the latest records, with counts."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record.get("task", "?"), record["predictor"], record["context"])].append(record)
    rows = []
    errors: Counter[str] = Counter()
    for (task, predictor, context), items in sorted(groups.items()):
        ok = [r for r in items if not r.get("error") and r.get("scores")]
        failed = [r for r in items if r.get("error")]
        errors.update(str(r["error"].get("type", "error")) for r in failed)
        rows.append({
            "task": task, "predictor": predictor, "context": context,
            "n": len(ok), "errors": len(failed),
            "means": {m: _mean(r["scores"][m] for r in ok) for m in METRICS},
            "latency_mean": _mean(r["latency"] for r in ok if r.get("latency") is not None),
            "queue_mean": _mean(r["queue_seconds"] for r in ok
                                if r.get("queue_seconds") is not None),
            "prompt_tokens": sum(r.get("prompt_tokens") or 0 for r in ok),
            "completion_tokens": sum(r.get("completion_tokens") or 0 for r in ok),
        })
    return {"records": sum(len(v) for v in groups.values()),
            "errors": sum(errors.values()), "error_types": dict(sorted(errors.items())),
            "groups": rows}


def write_summary(out: Path, bench: Path | None = None) -> dict[str, Any]:
    loaded = load_results(out / RESULTS_FILE)
    summary = summarize(loaded.latest.values())
    if bench is not None:
        summary = {"bench": str(bench), **summary}
    summary["unreadable_lines"] = loaded.unreadable
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
