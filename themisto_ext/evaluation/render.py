"""The Markdown report and the figure, made from a report summary (``report.py``) alone:
the numbers a reader sees are the numbers of the ``--json`` file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from themisto_ext.evaluation.realism import describe
from themisto_ext.evaluation.report import METRIC_NAMES, comparison_label, task_metrics
from themisto_ext.evaluation.run import METRICS

Summary = dict[str, Any]


def fmt_interval(mean: float, low: float, high: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{mean:{sign}.3f} [{low:{sign}.3f}, {high:{sign}.3f}]"


def fmt_p(p: float | None) -> str:
    """A p-value; None (a test outside the Holm family) as a dash."""
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _means(summary: Summary, task: str) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    table: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for m in summary["means"]:
        if m["task"] == task:
            table.setdefault((m["predictor"], m["context"]), {})[m["metric"]] = m
    return table


def _intro(summary: Summary) -> list[str]:
    level = round(summary["confidence"] * 100)
    unit = summary["unit"]
    lines = [
        "# Benchmark report", "",
        f"From `{summary['source']}`: {summary['records']} results (the latest per example, "
        "predictor and context)"
        + (f", {summary['unreadable']} unreadable lines ignored" if summary["unreadable"]
           else "") + ".", "",
        f"**Unit of resampling: {unit}.** Means and paired differences have {level}% "
        f"percentile bootstrap intervals ({summary['resamples']} resamples, seed "
        f"{summary['seed']}) that resample "
        + ("whole trajectories with all their examples, unstratified (a trajectory's "
           "examples fall in several length strata: stratifying would split it)"
           if unit == "trajectory"
           else "examples as if they were independent, within the sample's length strata "
           "when the results carry them")
        + ". Every condition "
        "of a task is measured on the same examples: those every condition answered. Paired "
        "differences read first-named minus second-named; p is the bootstrap test of a zero "
        "difference; McNemar's exact test on exact match (b/c: examples right only under the "
        "first / only under the second) takes examples as independent. " + _family(summary),
    ]
    for warning in summary["warnings"]:
        lines += ["", f"> **Warning:** {warning}"]
    realism = summary.get("realism")
    if realism:
        lines += ["", "## What the trajectories are like", "", describe(realism)]
        targets, dependent = summary.get("targets"), summary.get("environment_targets")
        if isinstance(targets, dict) and isinstance(dependent, dict):
            lines.append("Targets whose reference depends on the environment (see "
                         "docs/benchmark.md, \"Realism\"): " + "; ".join(
                             f"{task}: {dependent.get(task, 0)} of {n}"
                             for task, n in targets.items()) + ".")
        elif targets:  # a run.json of an older bench: one count for both tasks
            lines.append(f"Of the {targets} targets, {dependent} have a reference that depends "
                         "on the environment (see docs/benchmark.md, \"Realism\").")
    for task, sampling in sorted((summary.get("sampling") or {}).items()):
        lines += ["", f"Sampling ({task}): --n {sampling['n']}, --seed {sampling['seed']}, "
                  f"--errors {sampling['errors']}; {sampling['candidates']} candidates"
                  + (", every one taken." if sampling.get("census") else ".")]
    return lines


def _history_line(info: dict[str, Any]) -> str:
    histories = info.get("histories") or {}
    if not histories:
        return ""
    return (" The same history in every context: each predictor's prompts of an example "
            "show the same history cells under every context (the cut the context needing "
            "most room needs), on " + ", ".join(
                f"{h['equal']} of {h['examples']} examples for {p}"
                for p, h in histories.items()) + ".")


def _garbage_table(summary: Summary, task: str) -> list[str]:
    rows = [g for g in summary.get("garbage", []) if g["task"] == task]
    if not rows:
        return []
    kinds = list(rows[0]["kinds"])
    lines = ["", "Garbage answers (no prediction at all: the demonstration's answer echoed, "
             "prompt markup, empty where the reference is not, cut off at the answer cap; "
             "an answer counts once in the rate):", "",
             "| predictor | context | rate | " + " | ".join(kinds) + " |",
             "|---|---|---|" + "--:|" * len(kinds)]
    for g in rows:
        lines.append(f"| {g['predictor']} | {g['context']} | "
                     f"{fmt_interval(g['rate'], g['ci_low'], g['ci_high'])} | "
                     + " | ".join(str(g["kinds"][k]) for k in kinds) + " |")
    return lines


def _sources_table(summary: Summary, task: str) -> list[str]:
    rows = [r for r in summary.get("sources", []) if r["task"] == task]
    if not rows:
        return []
    unit = "whole trajectories" if summary["unit"] == "trajectory" else "examples"
    lines = ["", "What answered (a record's model: for `hybrid`, its rule or its model), over "
             "every example a condition ran; EM and chrF of those answers, intervals "
             f"resampling {unit}:", "",
             "| predictor | context | source | outcome | examples | share | clusters | EM | "
             "chrF |", "|---|---|---|---|--:|--:|--:|---|---|"]
    for r in rows:
        cells = [fmt_interval(r[m]["mean"], r[m]["ci_low"], r[m]["ci_high"])
                 if r[m] else "n/a" for m in ("exact_match", "chrf")]
        lines.append(f"| {r['predictor']} | {r['context']} | {r['source']} | {r['outcome']} | "
                     f"{r['examples']} | {r['share']:.0%} | {r['clusters']} | "
                     + " | ".join(cells) + " |")
    return lines


def _reproducible_table(summary: Summary, info: dict[str, Any]) -> list[str]:
    task, dependent = info["task"], info.get("environment_dependent")
    rows = [m for m in summary.get("means_reproducible", []) if m["task"] == task]
    if dependent is None:
        return ["", "(These results do not say which targets depend on the environment: "
                "rerun `themisto bench` on a benchmark made by this `themisto sample`.)"]
    if not rows:
        return ["", f"No target of this task depends on the environment ({dependent})."
                if not dependent else "Every target of this task depends on the environment."]
    first, metrics = rows[0], task_metrics(task)
    lines = ["", f"Without the {dependent} targets whose reference depends on the environment "
             f"({first['n']} examples, {first['clusters']} clusters):", "",
             "| predictor | context | " + " | ".join(METRIC_NAMES[m] for m in metrics) + " |",
             "|---|---|" + "---|" * len(metrics)]
    table: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for m in rows:
        table.setdefault((m["predictor"], m["context"]), {})[m["metric"]] = m
    for (predictor, context), got in table.items():
        lines.append(f"| {predictor} | {context} | " + " | ".join(
            fmt_interval(got[m]["mean"], got[m]["ci_low"], got[m]["ci_high"])
            for m in metrics) + " |")
    return lines


def _family(summary: Summary) -> str:
    tests, left = summary.get("tests", 0), summary.get("degenerate_tests", 0)
    flat = (f" {left} tests that cannot reject (both conditions scored every example alike, "
            "or McNemar without a discordant pair) are left out of it, and comparisons "
            "whose answers are identical are not tested at all." if left else
            " Comparisons whose answers are identical are not tested.")
    if summary.get("primary"):
        return (f"p_adj is Holm-adjusted over the {tests} tests of the primary comparisons ("
                + ", ".join(f"`{p}`" for p in summary["primary"]) + "); the other "
                "comparisons are exploratory (p_adj n/a)." + flat)
    return f"p_adj is Holm-adjusted over the {tests} tests of this report." + flat


def render_markdown(summary: Summary) -> str:
    lines = _intro(summary)
    for info in summary["tasks"]:
        task = info["task"]
        lines += ["", f"## Task: {task}", "",
                  f"{info['common']} of {info['examples']} examples, answered by every "
                  f"condition, from {info['clusters']} trajectories"
                  + (" (stratified)" if info["stratified"] else "") + "."
                  + _history_line(info), "",
                  "| predictor | context | answered | abstained | failed | n | clusters | "
                  + " | ".join(METRIC_NAMES[m] for m in task_metrics(task)) + " |",
                  "|---|---|--:|--:|--:|--:|--:|" + "---|" * len(task_metrics(task))]
        means = _means(summary, task)
        for row in summary["conditions"]:
            if row["task"] != task:
                continue
            got = means.get((row["predictor"], row["context"]))
            cells = [fmt_interval(got[m]["mean"], got[m]["ci_low"], got[m]["ci_high"])
                     if got else "n/a" for m in task_metrics(task)]
            n = got[METRICS[0]]["n"] if got else 0
            clusters = got[METRICS[0]]["clusters"] if got else 0
            failed = str(row["failed"]) + (" (" + ", ".join(
                f"{k} {v}" for k, v in row["errors"].items()) + ")" if row["errors"] else "")
            lines.append(f"| {row['predictor']} | {row['context']} | {row['answered']} | "
                         f"{row.get('abstained', 0)} | {failed} | {n} | {clusters} | "
                         + " | ".join(cells) + " |")
        lines += _reproducible_table(summary, info)
        lines += _garbage_table(summary, task)
        lines += _sources_table(summary, task)
        lines += ["", f"### Paired differences ({task})", ""]
        entries = [c for c in summary["comparisons"] if c["task"] == task]
        if not entries:
            lines.append("No comparison: fewer than two conditions with different answers.")
        else:
            lines += ["| comparison | n | clusters | metric | difference | p | p_adj | "
                      "McNemar b/c | p | p_adj |", "|---|--:|--:|---|---|--:|--:|--:|--:|--:|"]
            for c in entries:
                mc = c.get("mcnemar")
                extra = (f"{mc['only_treatment']}/{mc['only_control']} | {fmt_p(mc['p'])} | "
                         f"{fmt_p(mc['p_adjusted'])}") if mc else " | | "
                lines.append(f"| {comparison_label(c)} | {c['n']} | {c['clusters']} | "
                             f"{METRIC_NAMES[c['metric']]} | "
                             f"{fmt_interval(c['diff'], c['ci_low'], c['ci_high'], True)} | "
                             f"{fmt_p(c['p'])} | {fmt_p(c['p_adjusted'])} | {extra} |")
        for s in summary["skipped"]:
            if s["task"] != task:
                continue
            if s.get("kind", "context") == "context":
                label = f"{s['predictor']}: {s['treatment']} - {s['control']}"
            else:
                label = (f"{s['predictor']}@{s['treatment']} - "
                         f"{s['control_predictor']}@{s['control']}")
            lines.append(f"\n{label} not tested ({s['reason']}).")
    return "\n".join(lines) + "\n"


def render_figure(summary: Summary, path: Path) -> None:
    """Per task: condition means (top) and paired differences (bottom), one column a metric."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the report runs in terminals and CI
    import matplotlib.pyplot as plt

    tasks = [t["task"] for t in summary["tasks"]]
    rows: list[tuple[str, list[dict[str, Any]], bool]] = []
    for task in tasks:
        rows.append((task, [m for m in summary["means"] if m["task"] == task], False))
        rows.append((task, [c for c in summary["comparisons"] if c["task"] == task], True))
    sizes = [max(sum(i["metric"] == METRICS[0] for i in items), 1) for _, items, _ in rows]
    fig, axes = plt.subplots(len(rows), len(METRICS), squeeze=False, height_ratios=sizes,
                             figsize=(4.4 * len(METRICS), 1.2 + 0.36 * sum(sizes)))
    alpha = 1 - summary["confidence"]
    for r, (task, items, paired) in enumerate(rows):
        for m, metric in enumerate(METRICS):
            mine = [i for i in items if i["metric"] == metric]
            shown = [(comparison_label(i) if paired else f"{i['predictor']} · {i['context']}",
                      i["diff"] if paired else i["mean"], i["ci_low"], i["ci_high"],
                      paired and (i.get("p_adjusted") or 1.0) < alpha) for i in mine]
            title = f"{task}: {'Δ' if paired else ''}{METRIC_NAMES[metric]}"
            _forest(axes[r][m], shown, title, zero=paired, labels=m == 0)
    level = round(summary["confidence"] * 100)
    fig.suptitle(f"Means and paired differences, {level}% bootstrap intervals resampling "
                 f"{summary['unit']}s (red: Holm-adjusted p < {alpha:.2f})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _forest(ax: object, items: Sequence[tuple[str, float, float, float, bool]], title: str,
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
    for y, (_, value, low, high, significant) in zip(ys, items, strict=True):
        colour = "tab:red" if significant else "tab:blue"
        ax.errorbar([value], [y], xerr=[[value - low], [high - value]],
                    fmt="o", color=colour, capsize=3, markersize=4)
    if zero:
        ax.axvline(0, color="grey", linewidth=0.8, linestyle="--")
    else:
        ax.set_xlim(-0.02, 1.02)  # every metric is in [0, 1]: one scale for all panels
    ax.set_yticks(ys, [item[0] for item in items] if labels else [], fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylim(-0.7, len(items) - 0.3)
