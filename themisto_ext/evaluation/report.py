"""The numbers of a results directory, recomputed from results.jsonl: one summary, from
which the Markdown report, the figure and ``--json`` are all made (``render.py``).

Per task, every predictor x context is measured on one **common example set**: the
examples every condition of the task answered (a failed call, and an abstention
(``abstained``: the predictor chose not to answer), is counted and shown, and its example
leaves the set for everyone, never for one side only: a predictor that abstains is
compared with the others where it answered, and its abstentions are its coverage). Means
and paired differences get percentile bootstrap intervals resampling whole
**trajectories** (the unit, ``unit="trajectory"``; a trajectory's examples cross the
sample's length strata, so this bootstrap is not stratified) or examples as if independent
(``"example"``, within the length strata) (``stats.py``). Comparisons: each predictor's
contexts against each other (``full - none``, ``curated - none``, ``curated - full``;
skipped when the answers are the same under both), and each model against each reference
(``copy-previous``, ``baseline``) under the same context. Every p-value of the report
(bootstrap per metric, McNemar on exact match) is Holm-adjusted over the family
``family.py`` says: every test that can reject, or only those of the primary comparisons a
study names (``primary``); comparisons identical by construction are left out. Every
bootstrap gets its own seed, derived from the report's seed and what it describes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from themisto_ext.evaluation.family import Primary, degenerate, parse_primary
from themisto_ext.evaluation.run import METRICS, RESULTS_FILE, RUN_FILE, Record, load_results
from themisto_ext.evaluation.stats import bootstrap_ci, holm, mcnemar_exact, paired_bootstrap
from themisto_ext.prediction.metrics import line_exact_match
from themisto_ext.prediction.prompts import CONTEXTS
from themisto_ext.prediction.prompts.garbage import GARBAGE_KINDS, garbage

METRIC_NAMES = {"exact_match": "EM", "rouge_l": "ROUGE-L", "chrf": "chrF",
                "line_match": "line EM"}
LINE_MATCH = "line_match"
"""Next cells only: the share of the real cell's lines predicted exactly (``metrics.py``)."""
CONFIDENCE = 0.95
UNITS = ("trajectory", "example")
REFERENCES = ("copy-previous", "baseline")
"""Predictors that give the numbers their meaning: every model is compared with them."""
MIN_CLUSTERS = 20
"""Below this many trajectories, intervals resampling them undercover: simulated 95%
intervals held the true mean 85% of the time with 6 trajectories, 90% with 10 and 93%
with 20 or more (benchmarks/cluster_coverage.py)."""


def task_metrics(task: str) -> tuple[str, ...]:
    """The metrics a task is reported in: the records' three, and for next cells the line
    exact match, computed here from answer and reference."""
    return (*METRICS, LINE_MATCH) if task == "next-cell" else METRICS


def derived_seed(seed: int, *parts: str) -> list[int]:
    """A seed for one bootstrap: the report's seed and a stable digest of what it is for."""
    digest = hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=8).digest()
    return [seed, int.from_bytes(digest, "big")]


_CONTEXT_RANK: dict[str, int] = {c: i for i, c in enumerate(CONTEXTS)}


def _context_order(context: str) -> tuple[int, str]:
    """none, full, curated (so that differences read "richer - poorer"), others after."""
    return (_CONTEXT_RANK.get(context, len(_CONTEXT_RANK)), context)


def _predictor_order(predictor: str) -> tuple[int, str]:
    """References first, in REFERENCES order, then the models by name."""
    return (REFERENCES.index(predictor) if predictor in REFERENCES else len(REFERENCES),
            predictor)


class _Task:
    """The latest records of one task, by condition and example."""

    def __init__(self, task: str, records: list[Record]) -> None:
        self.task = task
        self.by: dict[tuple[str, str], dict[str, Record]] = defaultdict(dict)
        for record in records:
            self.by[(record["predictor"], record["context"])][record["example_id"]] = record
        self.conditions = sorted(self.by, key=lambda c: (_predictor_order(c[0]),
                                                         _context_order(c[1])))
        answered = [{e for e, r in self.by[c].items() if _scored(r)} for c in self.conditions]
        self.common = sorted(set.intersection(*answered)) if answered else []
        self.examples = sorted({e for c in self.conditions for e in self.by[c]})

    def scores(self, condition: tuple[str, str], metric: str,
               examples: Sequence[str] | None = None) -> list[float]:
        records = [self.by[condition][e] for e in (self.common if examples is None else examples)]
        if metric == LINE_MATCH:
            return [line_exact_match(str(r.get("answer") or ""), str(r.get("reference") or ""))
                    for r in records]
        return [float(r["scores"][metric]) for r in records]

    def environment_dependent(self) -> list[str] | None:
        """The common examples whose reference depends on the environment (None: the
        results do not say, written by an older bench)."""
        first = self.by[self.conditions[0]]
        flags = [first[e].get("environment_dependent") for e in self.common]
        if not all(isinstance(f, bool) for f in flags):
            return None
        return [e for e, f in zip(self.common, flags, strict=True) if f]

    def answers(self, condition: tuple[str, str]) -> list[str]:
        return [str(self.by[condition][e].get("answer")) for e in self.common]

    def labels(self, unit: str, examples: Sequence[str] | None = None
               ) -> tuple[list[str] | None, list[str] | None]:
        """Each common example's (or each of ``examples``') cluster (None: examples are the
        unit) and stratum.

        The length strata are strata of examples: a trajectory's examples fall in several
        of them, so resampling trajectories within them would split trajectories (an
        interval for a unit smaller than the trajectory it names). Trajectories are
        therefore resampled whole and unstratified; examples within the strata."""
        first = self.by[self.conditions[0]]
        chosen = self.common if examples is None else examples
        if unit == "trajectory":
            # a record without its trajectory (written by an old bench) is a cluster of its own
            return [str(first[e].get("trajectory_id") or f"example:{e}")
                    for e in chosen], None
        strata = [first[e].get("stratum") for e in chosen]
        if not all(isinstance(s, str) for s in strata):
            return None, None
        return None, [str(s) for s in strata]


def _histories(task: _Task) -> dict[str, dict[str, int]]:
    """Per predictor read under several contexts: on how many common examples every
    context's prompt showed the same history (one plan, the same cells left out). The
    references read the history itself, not a prompt: they are left out."""
    found: dict[str, dict[str, int]] = {}
    for predictor in sorted({p for p, _ in task.conditions}, key=_predictor_order):
        contexts = [c for p, c in task.conditions if p == predictor]
        if len(contexts) < 2 or predictor in REFERENCES:
            continue
        equal = 0
        for example in task.common:
            seen = {json.dumps([task.by[(predictor, c)][example].get("history_plan"),
                                task.by[(predictor, c)][example].get("dropped_steps")])
                    for c in contexts}
            equal += len(seen) == 1 and task.by[(predictor, contexts[0])][example].get(
                "history_plan") is not None
        found[predictor] = {"equal": equal, "examples": len(task.common)}
    return found


def _scored(record: Record) -> bool:
    return not record.get("error") and isinstance(record.get("scores"), dict)


def _abstained(record: Record) -> bool:
    """The predictor chose not to answer (a failed call is a failure, whatever it says)."""
    return bool(record.get("abstained")) and not record.get("error")


def _condition_rows(task: _Task) -> list[dict[str, Any]]:
    rows = []
    for predictor, context in task.conditions:
        records = task.by[(predictor, context)]
        abstained = sum(1 for r in records.values() if _abstained(r))
        failed = Counter(str((r.get("error") or {}).get("type", "error"))
                         for r in records.values() if not _scored(r) and not _abstained(r))
        rows.append({"task": task.task, "predictor": predictor, "context": context,
                     "answered": len(records) - sum(failed.values()) - abstained,
                     "abstained": abstained,
                     "failed": sum(failed.values()), "errors": dict(sorted(failed.items())),
                     "missing": len(task.examples) - len(records)})
    return rows


def _comparison_pairs(task: _Task, primary: Sequence[Primary] = ()
                      ) -> list[tuple[str, tuple[str, str], tuple[str, str]]]:
    """(kind, treatment, control): contexts of a predictor, then models vs references, then
    any primary comparison that is neither (kind ``primary``)."""
    pairs: list[tuple[str, tuple[str, str], tuple[str, str]]] = []
    predictors = sorted({p for p, _ in task.conditions}, key=_predictor_order)
    for predictor in predictors:
        contexts = [c for p, c in task.conditions if p == predictor]
        for control, treatment in combinations(contexts, 2):
            pairs.append(("context", (predictor, treatment), (predictor, control)))
    for predictor in predictors:
        if predictor in REFERENCES:
            continue
        for reference in REFERENCES:
            for context in [c for p, c in task.conditions if p == predictor]:
                if (reference, context) in task.by:
                    pairs.append(("reference", (predictor, context), (reference, context)))
    known = {(t, c) for _, t, c in pairs}
    for spec in primary:
        for named in spec.pairs(task.conditions):
            if named not in known:
                known.add(named)
                pairs.append(("primary", *named))
    return pairs


def build_summary(results: Path, *, resamples: int = 10_000, seed: int = 0,
                  unit: str = "trajectory", primary: str | None = None) -> dict[str, Any]:
    """Everything the report shows, as JSON-able data (the ``--json`` file). ``primary``:
    the comparisons Holm's correction covers (``family.py``; default: every test)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: use {' or '.join(UNITS)}")
    folder = results if results.is_dir() else results.parent
    path = results / RESULTS_FILE if results.is_dir() else results
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (run `themisto bench` first)")
    loaded = load_results(path)
    if not loaded.latest:
        raise ValueError(f"{path}: no results")
    run = json.loads((folder / RUN_FILE).read_text("utf-8")) \
        if (folder / RUN_FILE).is_file() else {}
    by_task: dict[str, list[Record]] = defaultdict(list)
    for record in loaded.latest.values():
        by_task[str(record.get("task", "?"))].append(record)
    specs = None if primary is None else parse_primary(
        primary, {(r["predictor"], r["context"]) for r in loaded.latest.values()})

    summary: dict[str, Any] = {
        "unit": unit, "confidence": CONFIDENCE, "resamples": resamples, "seed": seed,
        "source": str(path), "records": len(loaded.latest), "unreadable": loaded.unreadable,
        "sampling": run.get("sampling"), "realism": run.get("realism"),
        "targets": run.get("targets"), "environment_targets": run.get("environment_targets"),
        "tasks": [], "conditions": [], "means": [], "means_reproducible": [], "garbage": [],
        "sources": [],
        "degenerate_tests": 0,
        "comparisons": [], "skipped": [], "warnings": [],
        "primary": None if specs is None else [str(s) for s in specs],
    }
    tests: list[tuple[dict[str, Any], str]] = []  # (entry, key of its p-value)
    for name in sorted(by_task):
        task = _Task(name, by_task[name])
        summary["conditions"] += _condition_rows(task)
        clusters, strata = task.labels(unit) if task.common else (None, None)
        distinct = len({r.get("trajectory_id") for c in task.conditions
                        for e, r in task.by[c].items() if e in task.common})
        histories = _histories(task)
        summary["tasks"].append({"task": name, "examples": len(task.examples),
                                 "common": len(task.common), "clusters": distinct,
                                 "stratified": strata is not None, "histories": histories})
        summary["warnings"] += _history_warnings(name, histories)
        if not task.common:
            summary["warnings"].append(f"{name}: no example was answered by every condition")
            continue
        summary["warnings"] += _coverage_warnings(name, task, unit, distinct)
        summary["means"] += _means(task, name, clusters, strata, resamples, seed)
        summary["tasks"][-1].update(_reproducible_means(task, summary, unit, resamples, seed))
        summary["garbage"] += _garbage_rates(task, clusters, strata, resamples, seed)
        summary["sources"] += _sources(task, unit, resamples, seed)
        _comparisons(task, name, specs, clusters, strata, resamples, seed, summary, tests)
    for (entry, key), adjusted in zip(tests, holm([e[k] for e, k in tests]), strict=True):
        entry[f"{key}_adjusted"] = adjusted
    summary["tests"] = len(tests)
    if summary["sampling"] and any(s.get("census") for s in summary["sampling"].values()):
        summary["warnings"].append(
            "every candidate target was taken (fewer candidates than --n): the intervals are "
            "about trajectories like these, not about sampling within them")
    return summary


def _history_warnings(name: str, histories: dict[str, dict[str, int]]) -> list[str]:
    return [f"{name}: {predictor}'s contexts showed different history cells on "
            f"{agreement['examples'] - agreement['equal']} of {agreement['examples']} "
            "examples (results of an older bench, or a prompt that did not fit): its "
            "context differences there mix runtime state with history"
            for predictor, agreement in histories.items()
            if agreement["equal"] < agreement["examples"]]


def _coverage_warnings(name: str, task: _Task, unit: str, distinct: int) -> list[str]:
    """What limits how far a task's numbers reach: few trajectories, examples left out."""
    warnings = []
    if unit == "trajectory" and distinct < MIN_CLUSTERS:
        warnings.append(
            f"{name}: only {distinct} trajectories; intervals resampling fewer than "
            f"{MIN_CLUSTERS} undercover (simulated 95% intervals held the true mean 85% of the "
            "time with 6 trajectories, 90% with 10): read them as rough")
    left_out = len(task.examples) - len(task.common)
    if left_out:
        warnings.append(
            f"{name}: {left_out} of {len(task.examples)} examples are left out of every "
            "condition's numbers because some condition failed on them or did not run them")
    return warnings


def _means(task: _Task, name: str, clusters: Sequence[str] | None,
           strata: Sequence[str] | None, resamples: int, seed: int) -> list[dict[str, Any]]:
    """Each condition's mean of each metric, with its interval."""
    rows = []
    for predictor, context in task.conditions:
        for metric in task_metrics(task.task):
            ci = bootstrap_ci(task.scores((predictor, context), metric),
                              resamples=resamples, confidence=CONFIDENCE, clusters=clusters,
                              strata=strata, seed=derived_seed(seed, "mean", name, predictor,
                                                               context, metric))
            rows.append({
                "task": name, "predictor": predictor, "context": context, "metric": metric,
                "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "n": ci.n,
                "clusters": ci.clusters})
    return rows


def _comparisons(task: _Task, name: str, specs: Sequence[Primary] | None,
                 clusters: Sequence[str] | None, strata: Sequence[str] | None,
                 resamples: int, seed: int, summary: dict[str, Any],
                 tests: list[tuple[dict[str, Any], str]]) -> None:
    """A task's paired comparisons into ``summary``; the tests Holm's correction covers
    (the primary ones that can reject) into ``tests``."""
    for kind, treatment, control in _comparison_pairs(task, specs or ()):
        if task.answers(treatment) == task.answers(control):
            summary["skipped"].append({
                "task": name, "kind": kind, "predictor": treatment[0],
                "treatment": treatment[1], "control_predictor": control[0],
                "control": control[1], "reason": "the same answers on every example"
                + (" under both contexts" if kind == "context" else "")})
            continue
        is_primary = specs is None or any(s.matches(treatment, control) for s in specs)
        for metric in task_metrics(task.task):
            entry = _compare(task, kind, treatment, control, metric, clusters, strata,
                             resamples, seed)
            entry["primary"] = specs is not None and is_primary
            summary["comparisons"].append(entry)
            flat = degenerate(task.scores(treatment, metric), task.scores(control, metric))
            entry["degenerate"] = flat
            mc = entry.get("mcnemar")
            for test, cannot_reject in ((entry, flat), (mc, mc is not None and
                                        mc["only_treatment"] + mc["only_control"] == 0)):
                if test is None:
                    continue
                test["p_adjusted"] = None
                if is_primary and not cannot_reject:
                    tests.append((test, "p"))
                elif cannot_reject:
                    summary["degenerate_tests"] += 1


def _garbage_rates(task: _Task, clusters: Sequence[str] | None, strata: Sequence[str] | None,
                   resamples: int, seed: int) -> list[dict[str, Any]]:
    """Per condition: the share of answers that are no prediction (``quality.py``), with
    its interval, and how many of each kind."""
    rows = []
    for predictor, context in task.conditions:
        found = [garbage(task.by[(predictor, context)][e]) for e in task.common]
        ci = bootstrap_ci([float(bool(k)) for k in found], resamples=resamples,
                          confidence=CONFIDENCE, clusters=clusters, strata=strata,
                          seed=derived_seed(seed, "garbage", task.task, predictor, context))
        rows.append({"task": task.task, "predictor": predictor, "context": context,
                     "rate": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "n": ci.n,
                     "clusters": ci.clusters,
                     "kinds": {kind: sum(kind in k for k in found) for kind in GARBAGE_KINDS}})
    return rows


def _sources(task: _Task, unit: str, resamples: int, seed: int) -> list[dict[str, Any]]:
    """Per condition, what answered (a record's ``model``: for ``hybrid`` the rule or the
    model, e.g. ``hybrid:baseline``, ``hybrid:rerun``, ``hybrid:variation``), abstentions
    and failures apart: how many of the condition's examples each took, and the exact
    match and chrF of its answers with intervals (resampling the unit). Over every example
    the condition ran, not only the common set: this says where the answers come from and
    how good each source is; the common set says how good the condition is."""
    rows = []
    for predictor, context in task.conditions:
        records = task.by[(predictor, context)]
        groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
        for record in records.values():
            kind = "abstained" if _abstained(record) else \
                "answered" if _scored(record) else "failed"
            groups[(str(record.get("model") or "?") if kind != "failed" else "?",
                    kind)].append(record)
        for (source, kind), mine in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
            trajectories = [str(r.get("trajectory_id") or f"example:{r['example_id']}")
                            for r in mine]
            row: dict[str, Any] = {
                "task": task.task, "predictor": predictor, "context": context,
                "source": source, "outcome": kind, "examples": len(mine),
                "share": len(mine) / len(records), "clusters": len(set(trajectories))}
            for metric in ("exact_match", "chrf"):
                row[metric] = None
                if kind == "answered":
                    ci = bootstrap_ci(
                        [float(r["scores"][metric]) for r in mine], resamples=resamples,
                        confidence=CONFIDENCE,
                        clusters=trajectories if unit == "trajectory" else None,
                        seed=derived_seed(seed, "source", task.task, predictor, context,
                                          source, metric))
                    row[metric] = {"mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high}
            rows.append(row)
    return rows


def _reproducible_means(task: _Task, summary: dict[str, Any], unit: str, resamples: int,
                        seed: int) -> dict[str, Any]:
    """Every condition's means again without the targets whose reference depends on the
    environment (re-running their code gives another output: nobody can match them)."""
    dependent = task.environment_dependent()
    if dependent is None:
        return {"environment_dependent": None}
    kept = [e for e in task.common if e not in set(dependent)]
    if dependent and kept:
        clusters, strata = task.labels(unit, kept)
        for predictor, context in task.conditions:
            for metric in task_metrics(task.task):
                ci = bootstrap_ci(task.scores((predictor, context), metric, kept),
                                  resamples=resamples, confidence=CONFIDENCE, clusters=clusters,
                                  strata=strata, seed=derived_seed(
                                      seed, "mean-reproducible", task.task, predictor, context,
                                      metric))
                summary["means_reproducible"].append({
                    "task": task.task, "predictor": predictor, "context": context,
                    "metric": metric, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                    "n": ci.n, "clusters": ci.clusters})
    return {"environment_dependent": len(dependent)}


def _compare(task: _Task, kind: str, treatment: tuple[str, str], control: tuple[str, str],
             metric: str, clusters: Sequence[str] | None, strata: Sequence[str] | None,
             resamples: int, seed: int) -> dict[str, Any]:
    a, b = task.scores(treatment, metric), task.scores(control, metric)
    d = paired_bootstrap(a, b, resamples=resamples, confidence=CONFIDENCE, clusters=clusters,
                         strata=strata, seed=derived_seed(seed, "paired", task.task,
                                                          *treatment, *control, metric))
    entry: dict[str, Any] = {
        "task": task.task, "metric": metric, "kind": kind,
        "treatment": {"predictor": treatment[0], "context": treatment[1]},
        "control": {"predictor": control[0], "context": control[1]},
        "diff": d.mean, "ci_low": d.low, "ci_high": d.high, "p": d.p_value,
        "n": d.n, "clusters": d.clusters}
    if metric == "exact_match":
        m = mcnemar_exact(a, b)
        entry["mcnemar"] = {"only_treatment": m.only_treatment,
                            "only_control": m.only_control, "p": m.p_value}
    return entry


def comparison_label(entry: dict[str, Any]) -> str:
    t, c = entry["treatment"], entry["control"]
    if entry["kind"] == "context":
        return f"{t['predictor']}: {t['context']} - {c['context']}"
    if t["context"] == c["context"]:
        return f"{t['predictor']} - {c['predictor']} ({t['context']})"
    return f"{t['predictor']}@{t['context']} - {c['predictor']}@{c['context']}"
