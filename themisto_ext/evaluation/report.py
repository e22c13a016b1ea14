"""Tables and a figure from a results directory, recomputed from results.jsonl alone.

For every task: each predictor x context's mean EM, ROUGE-L and chrF with a 95% percentile
bootstrap interval over examples; for every predictor, each pair of contexts compared on
the examples both scored (paired bootstrap interval and p-value of the mean difference,
McNemar's exact test on exact match). Every bootstrap gets its own seed, derived from the
report's seed and what it describes, so a number does not change when other predictors or
contexts are added to the results.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from themisto_ext.evaluation.run import METRICS, RESULTS_FILE, Record, load_results
from themisto_ext.evaluation.stats import (
    Interval,
    McNemar,
    PairedDifference,
    bootstrap_ci,
    mcnemar_exact,
    paired_bootstrap,
)
from themisto_ext.prediction.prompts import CONTEXTS

METRIC_NAMES = {"exact_match": "EM", "rouge_l": "ROUGE-L", "chrf": "ChrF"}
CONFIDENCE = 0.95


def derived_seed(seed: int, *parts: str) -> list[int]:
    """A seed for one bootstrap: the report's seed and a stable digest of what it is for."""
    digest = hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=8).digest()
    return [seed, int.from_bytes(digest, "big")]


@dataclass
class ConditionRow:
    predictor: str
    context: str
    n: int
    errors: int
    intervals: dict[str, Interval]


@dataclass
class Comparison:
    predictor: str
    treatment: str
    control: str
    n: int
    differences: dict[str, PairedDifference]
    mcnemar: McNemar

    @property
    def label(self) -> str:
        return f"{self.treatment} - {self.control}"


@dataclass
class TaskReport:
    task: str
    rows: list[ConditionRow] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)


@dataclass
class Report:
    source: Path
    records: int
    unreadable: int
    resamples: int
    seed: int
    tasks: list[TaskReport]


_CONTEXT_RANK: dict[str, int] = {c: i for i, c in enumerate(CONTEXTS)}


def _context_order(context: str) -> tuple[int, str]:
    """none, full, curated (so that differences read "richer - poorer"), others after."""
    return (_CONTEXT_RANK.get(context, len(_CONTEXT_RANK)), context)


def build_report(results: Path, *, resamples: int = 10_000, seed: int = 0) -> Report:
    path = results / RESULTS_FILE if results.is_dir() else results
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (run `themisto bench` first)")
    loaded = load_results(path)
    if not loaded.latest:
        raise ValueError(f"{path}: no results")
    by_group: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in loaded.latest.values():
        by_group[(record.get("task", "?"), record["predictor"], record["context"])].append(record)

    tasks: list[TaskReport] = []
    for task in sorted({t for t, _, _ in by_group}):
        report = TaskReport(task)
        predictors = sorted({p for t, p, _ in by_group if t == task})
        for predictor in predictors:
            contexts = sorted({c for t, p, c in by_group if t == task and p == predictor},
                              key=_context_order)
            scored: dict[str, dict[str, dict[str, float]]] = {}
            for context in contexts:
                records = by_group[(task, predictor, context)]
                ok = {r["example_id"]: r["scores"] for r in records
                      if not r.get("error") and r.get("scores")}
                scored[context] = ok
                report.rows.append(_row(task, predictor, context, ok,
                                        len(records) - len(ok), resamples, seed))
            for control, treatment in combinations(contexts, 2):
                comparison = _compare(task, predictor, treatment, control, scored, resamples,
                                      seed)
                if comparison is not None:
                    report.comparisons.append(comparison)
        tasks.append(report)
    return Report(path, len(loaded.latest), loaded.unreadable, resamples, seed, tasks)


def _row(task: str, predictor: str, context: str, scores: dict[str, dict[str, float]],
         errors: int, resamples: int, seed: int) -> ConditionRow:
    ids = sorted(scores)
    intervals = {}
    if ids:
        for metric in METRICS:
            intervals[metric] = bootstrap_ci(
                [scores[i][metric] for i in ids], resamples=resamples, confidence=CONFIDENCE,
                seed=derived_seed(seed, "mean", task, predictor, context, metric))
    return ConditionRow(predictor, context, len(ids), errors, intervals)


def _compare(task: str, predictor: str, treatment: str, control: str,
             scored: dict[str, dict[str, dict[str, float]]], resamples: int,
             seed: int) -> Comparison | None:
    ids = sorted(set(scored[treatment]) & set(scored[control]))
    if not ids:
        return None
    differences = {}
    for metric in METRICS:
        differences[metric] = paired_bootstrap(
            [scored[treatment][i][metric] for i in ids],
            [scored[control][i][metric] for i in ids], resamples=resamples,
            confidence=CONFIDENCE,
            seed=derived_seed(seed, "paired", task, predictor, treatment, control, metric))
    mcnemar = mcnemar_exact([scored[treatment][i]["exact_match"] for i in ids],
                            [scored[control][i]["exact_match"] for i in ids])
    return Comparison(predictor, treatment, control, len(ids), differences, mcnemar)


# ------------------------------------------------------------------- Markdown


def fmt_interval(interval: Interval | PairedDifference, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{interval.mean:{sign}.3f} [{interval.low:{sign}.3f}, {interval.high:{sign}.3f}]"


def fmt_p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def render_markdown(report: Report) -> str:
    level = round(CONFIDENCE * 100)
    lines = [
        "# Benchmark report", "",
        f"From `{report.source}`: {report.records} results (the latest per example, "
        f"predictor and context; failed calls are counted, not scored)"
        + (f", {report.unreadable} unreadable lines ignored" if report.unreadable else "")
        + ".", "",
        f"Means with {level}% percentile bootstrap intervals over examples "
        f"({report.resamples} resamples, seed {report.seed}). Paired differences are on the "
        "examples both conditions scored: paired bootstrap interval and two-sided p-value "
        "of the mean difference (first-named context minus second); McNemar's exact test "
        "on exact match, with b/c the examples right only under the first-named context / "
        "only under the second.",
    ]
    for task in report.tasks:
        lines += ["", f"## Task: {task.task}", "",
                  "| predictor | context | n | errors | "
                  + " | ".join(METRIC_NAMES[m] for m in METRICS) + " |",
                  "|---|---|--:|--:|" + "---|" * len(METRICS)]
        for row in task.rows:
            cells = [fmt_interval(row.intervals[m]) if row.intervals else "n/a" for m in METRICS]
            lines.append(f"| {row.predictor} | {row.context} | {row.n} | {row.errors} | "
                         + " | ".join(cells) + " |")
        lines += ["", f"### Paired differences ({task.task})", ""]
        if not task.comparisons:
            lines.append("No two contexts of one predictor share a scored example.")
            continue
        lines += ["| predictor | comparison | n | "
                  + " | ".join(f"Δ{METRIC_NAMES[m]} | p" for m in METRICS)
                  + " | McNemar EM b/c | p |",
                  "|---|---|--:|" + "---|--:|" * len(METRICS) + "--:|--:|"]
        for c in task.comparisons:
            diffs = " | ".join(f"{fmt_interval(c.differences[m], signed=True)} | "
                               f"{fmt_p(c.differences[m].p_value)}" for m in METRICS)
            lines.append(f"| {c.predictor} | {c.label} | {c.n} | {diffs} | "
                         f"{c.mcnemar.only_treatment}/{c.mcnemar.only_control} | "
                         f"{fmt_p(c.mcnemar.p_value)} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- figure


def render_figure(report: Report, path: Path) -> None:
    """Per task: condition means (top) and paired differences (bottom), one column a metric."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the report runs in terminals and CI
    import matplotlib.pyplot as plt

    rows = 2 * len(report.tasks)
    height = sum(max(len(t.rows), 1) + max(len(t.comparisons), 1) for t in report.tasks)
    fig, axes = plt.subplots(rows, len(METRICS), figsize=(4.2 * len(METRICS), 1.2 + 0.38 * height),
                             squeeze=False, height_ratios=[
                                 max(len(x), 1) for t in report.tasks
                                 for x in (t.rows, t.comparisons)])
    for t, task in enumerate(report.tasks):
        for m, metric in enumerate(METRICS):
            means = [(f"{r.predictor} · {r.context}", r.intervals[metric], False)
                     for r in task.rows if r.intervals]
            _forest(axes[2 * t][m], means, f"{task.task}: {METRIC_NAMES[metric]}", zero=False,
                    labels=m == 0)
            diffs = [(f"{c.predictor} · {c.label}", c.differences[metric],
                      c.differences[metric].p_value < 1 - CONFIDENCE)
                     for c in task.comparisons]
            _forest(axes[2 * t + 1][m], diffs, f"{task.task}: Δ{METRIC_NAMES[metric]} (paired)",
                    zero=True, labels=m == 0)
    level = round(CONFIDENCE * 100)
    fig.suptitle(f"Means and paired differences with {level}% bootstrap intervals "
                 f"(red: p < {1 - CONFIDENCE:.2f})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _forest(ax: object, items: Sequence[tuple[str, Interval | PairedDifference, bool]],
            title: str,
            zero: bool, labels: bool) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    ax.set_title(title, fontsize=9)
    if not items:
        ax.text(0.5, 0.5, "no paired comparisons" if zero else "no scores",
                ha="center", va="center", transform=ax.transAxes, fontsize=8)
        ax.set_axis_off()
        return
    ys = list(range(len(items)))[::-1]
    for y, (_, value, significant) in zip(ys, items, strict=True):
        colour = "tab:red" if significant else "tab:blue"
        ax.errorbar([value.mean], [y], xerr=[[value.mean - value.low], [value.high - value.mean]],
                    fmt="o", color=colour, capsize=3, markersize=4)
    if zero:
        ax.axvline(0, color="grey", linewidth=0.8, linestyle="--")
    else:
        ax.set_xlim(-0.02, 1.02)  # every metric is in [0, 1]: one scale for all panels
    ax.set_yticks(ys, [label for label, _, _ in items] if labels else [], fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylim(-0.7, len(items) - 0.3)
