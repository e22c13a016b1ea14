"""``themisto report``: clustered intervals, paired tests, Holm, JSON, Markdown and figure,
recomputed from results.jsonl (and run.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from resampling import percentile_interval, reference_trajectory_bootstrap

from themisto_ext.cli.main import main
from themisto_ext.evaluation.report import MIN_CLUSTERS, build_summary, derived_seed
from themisto_ext.evaluation.stats import bootstrap_ci, holm, mcnemar_exact, paired_bootstrap

METRICS = ("exact_match", "rouge_l", "chrf")
IDS = [f"e{i:02d}" for i in range(40)]
TRAJECTORY = {e: f"t{i % 8}" for i, e in enumerate(IDS)}  # 8 trajectories of 5 examples
STRATUM = {e: "q1" if i < 4 else "q4" if i >= 36 else "q2-q3" for i, e in enumerate(IDS)}
DEPENDENT = {e for i, e in enumerate(IDS) if i % 5 == 2}  # a timing, an unseeded draw...


def record(example: str, predictor: str, context: str, em: float, rng: np.random.Generator,
           task: str = "output", error: bool = False, answer: str | None = None) -> dict:
    scores = None if error else {"exact_match": em, "rouge_l": float(rng.random()),
                                 "chrf": float(rng.random())}
    base = example.removeprefix("n-")
    return {"example_id": example, "task": task, "predictor": predictor, "context": context,
            "trajectory_id": TRAJECTORY[base], "stratum": STRATUM[base],
            "environment_dependent": base in DEPENDENT,
            "answer": f"{predictor}/{context}/{example}" if answer is None else answer,
            "reference": "", "latency": 0.01,
            "error": {"type": "ProviderServerError", "message": "boom"} if error else None,
            "scores": scores}


def results_dir(tmp_path: Path, extra_predictor: bool = False) -> Path:
    rng = np.random.default_rng(0)
    right = {"none": set(range(10)), "full": set(range(5)) | set(range(10, 30)),
             "curated": set(range(11))}
    lines = []
    for context, hits in right.items():
        for i, example in enumerate(IDS):
            if context == "curated" and i == 39:
                continue  # written below: a failure, then a later success
            lines.append(record(example, "p", context, float(i in hits), rng))
    lines.append(record("e39", "p", "curated", 0.0, rng, error=True))
    lines.append(record("e38", "p", "none", 0.0, rng, error=True))  # the latest for e38/none
    lines.append(record("e39", "p", "curated", 1.0, rng))            # supersedes its failure
    for context in right:  # a reference that reads no context: the same answers everywhere
        lines += [record(e, "copy-previous", context, float(i % 3 == 0), rng, answer=e)
                  for i, e in enumerate(IDS)]
    for example in IDS[:8]:  # ids are unique across tasks, as `themisto sample` makes them
        lines.append(record(f"n-{example}", "p", "none", 0.0, rng, task="next-cell"))
    if extra_predictor:
        lines += [record(e, "q", c, 1.0, rng) for e in IDS for c in ("none", "full", "curated")]
    folder = tmp_path / ("more" if extra_predictor else "results")
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def latest(folder: Path) -> dict[tuple[str, str, str], dict[str, dict]]:
    """An independent reading of results.jsonl: the last line of a pair wins."""
    found: dict[tuple[str, str, str, str], dict] = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        found[(r["task"], r["predictor"], r["context"], r["example_id"])] = r
    groups: dict[tuple[str, str, str], dict[str, dict]] = {}
    for (task, predictor, context, example), r in found.items():
        groups.setdefault((task, predictor, context), {})[example] = r
    return groups


def fmt(mean: float, low: float, high: float, sign: str = "") -> str:
    return f"{mean:{sign}.3f} [{low:{sign}.3f}, {high:{sign}.3f}]"


def table_row(markdown: str, *first_cells: str, task: str = "output") -> list[str]:
    section = markdown.split(f"## Task: {task}\n", 1)[1].split("## Task:", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[: len(first_cells)] == list(first_cells):
            return cells
    raise AssertionError(f"no row {first_cells} in:\n{markdown}")


def run_report(folder: Path, *extra: str) -> tuple[str, dict]:
    out, summary = folder / "report.md", folder / "summary.json"
    assert main(["report", str(folder), "--out", str(out), "--json", str(summary),
                 "--resamples", "2000", "--seed", "3", *extra]) == 0
    return out.read_text(), json.loads(summary.read_text())


def test_every_condition_is_measured_on_the_examples_all_of_them_answered(tmp_path):
    """The issue's second point: a failure must not shrink one side of a comparison only."""
    folder = results_dir(tmp_path)
    markdown, summary = run_report(folder)
    groups = latest(folder)
    common = sorted(set(IDS) - {"e38"})  # p/none failed on e38: out for everyone
    output = next(t for t in summary["tasks"] if t["task"] == "output")
    assert (output["examples"], output["common"], output["clusters"]) == (40, 39, 8)
    assert output["stratified"] is False  # trajectories cross the length strata
    for predictor, context in (("p", "none"), ("p", "full"), ("copy-previous", "curated")):
        scores = groups[("output", predictor, context)]
        for metric in METRICS:
            values = [scores[e]["scores"][metric] for e in common]
            seed = derived_seed(3, "mean", "output", predictor, context, metric)
            ci = bootstrap_ci(values, resamples=2000, clusters=[TRAJECTORY[e] for e in common],
                              seed=seed)
            entry = next(m for m in summary["means"] if (m["task"], m["predictor"],
                         m["context"], m["metric"]) == ("output", predictor, context, metric))
            assert (entry["mean"], entry["ci_low"], entry["ci_high"]) == \
                (ci.mean, ci.low, ci.high)
            assert (entry["n"], entry["clusters"]) == (39, 8)
    row = table_row(markdown, "p", "none")
    assert row[2:7] == ["39", "0", "1 (ProviderServerError 1)", "39", "8"]
    assert row[7] == fmt(*(next(m[k] for m in summary["means"] if (m["predictor"],
                           m["context"], m["metric"], m["task"]) == ("p", "none", "exact_match",
                           "output")) for k in ("mean", "ci_low", "ci_high")))
    assert table_row(markdown, "p", "curated")[2:5] == ["40", "0", "0"]  # the retry succeeded
    assert any("1 of 40 examples are left out" in w for w in summary["warnings"])


def test_an_abstention_is_counted_apart_and_comparisons_keep_to_the_examples_answered(
        tmp_path):
    """A predictor that chose not to answer is neither a failure nor a wrong answer: its
    abstentions are its coverage, and it is compared where it answered."""
    folder = results_dir(tmp_path)
    rng = np.random.default_rng(1)
    abstained = {**record("e20", "p", "full", 0.0, rng), "answer": "", "scores": None,
                 "abstained": True}
    with (folder / "results.jsonl").open("a") as out:
        out.write(json.dumps(abstained) + "\n")
    markdown, summary = run_report(folder)
    output = next(t for t in summary["tasks"] if t["task"] == "output")
    assert output["common"] == 38  # e38 (a failure) and e20 (an abstention) are out
    row = next(r for r in summary["conditions"]
               if (r["task"], r["predictor"], r["context"]) == ("output", "p", "full"))
    assert (row["answered"], row["abstained"], row["failed"]) == (39, 1, 0)
    assert table_row(markdown, "p", "full")[2:5] == ["39", "1", "0"]
    none = table_row(markdown, "p", "none")
    assert none[2:5] == ["39", "0", "1 (ProviderServerError 1)"]


def test_the_report_says_what_answered_each_example_and_how_well(tmp_path):
    """hybrid answers from rules, from its model, or abstains: the report gives each
    source's share of the examples and its own exact match and chrF, with intervals."""
    folder = results_dir(tmp_path)
    rng = np.random.default_rng(2)
    lines = []
    for i, example in enumerate(IDS):
        if i < 20:  # a rule: always right
            r = {**record(example, "h", "full", 1.0, rng), "model": "hybrid:baseline"}
        elif i < 32:
            r = {**record(example, "h", "full", float(i == 20), rng), "model": "hybrid:m.gguf"}
        elif i < 38:
            r = {**record(example, "h", "full", 0.0, rng), "model": "hybrid:abstain",
                 "answer": "", "scores": None, "abstained": True}
        else:
            r = record(example, "h", "full", 0.0, rng, error=True)
        lines.append(r)
    with (folder / "results.jsonl").open("a") as out:
        out.writelines(json.dumps(r) + "\n" for r in lines)
    markdown, summary = run_report(folder)
    rows = {(r["source"], r["outcome"]): r for r in summary["sources"]
            if (r["task"], r["predictor"], r["context"]) == ("output", "h", "full")}
    assert {k: (r["examples"], r["share"]) for k, r in rows.items()} == {
        ("hybrid:baseline", "answered"): (20, 0.5), ("hybrid:m.gguf", "answered"): (12, 0.3),
        ("hybrid:abstain", "abstained"): (6, 0.15), ("?", "failed"): (2, 0.05)}
    model = rows[("hybrid:m.gguf", "answered")]
    assert model["clusters"] == len({TRAJECTORY[e] for e in IDS[20:32]}) == 8
    mine = [r for r in lines if r.get("model") == "hybrid:m.gguf"]
    expected = bootstrap_ci([r["scores"]["chrf"] for r in mine], resamples=2000,
                            clusters=[r["trajectory_id"] for r in mine],
                            seed=derived_seed(3, "source", "output", "h", "full",
                                              "hybrid:m.gguf", "chrf"))
    assert model["chrf"] == {"mean": expected.mean, "ci_low": expected.low,
                             "ci_high": expected.high}
    assert model["exact_match"]["mean"] == pytest.approx(1 / 12)
    assert rows[("hybrid:baseline", "answered")]["exact_match"] == \
        {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    assert rows[("hybrid:abstain", "abstained")]["chrf"] is None
    shown = table_row(markdown, "h", "full", "hybrid:m.gguf")
    assert shown[3:7] == ["answered", "12", "30%", "8"]
    assert shown[8] == fmt(expected.mean, expected.low, expected.high)
    assert table_row(markdown, "h", "full", "hybrid:abstain")[7:] == ["n/a", "n/a"]
    # a reference has one source: itself
    copy = [r for r in summary["sources"] if r["predictor"] == "copy-previous"
            and r["context"] == "full" and r["task"] == "output"]
    assert [(r["source"], r["examples"]) for r in copy] == [("?", 40)]


def test_comparisons_resample_trajectories_and_holm_covers_every_test(tmp_path):
    folder = results_dir(tmp_path)
    markdown, summary = run_report(folder)
    groups = latest(folder)
    common = sorted(set(IDS) - {"e38"})
    full, none = groups[("output", "p", "full")], groups[("output", "p", "none")]
    entry = next(c for c in summary["comparisons"] if c["task"] == "output"
                 and c["metric"] == "exact_match" and c["kind"] == "context"
                 and c["treatment"] == {"predictor": "p", "context": "full"}
                 and c["control"] == {"predictor": "p", "context": "none"})
    d = paired_bootstrap([full[e]["scores"]["exact_match"] for e in common],
                         [none[e]["scores"]["exact_match"] for e in common], resamples=2000,
                         clusters=[TRAJECTORY[e] for e in common],
                         seed=derived_seed(3, "paired", "output", "p", "full", "p", "none",
                                           "exact_match"))
    assert (entry["diff"], entry["ci_low"], entry["ci_high"], entry["p"]) == \
        (d.mean, d.low, d.high, d.p_value)
    assert (entry["n"], entry["clusters"]) == (39, 8)
    m = mcnemar_exact([full[e]["scores"]["exact_match"] for e in common],
                      [none[e]["scores"]["exact_match"] for e in common])
    assert entry["mcnemar"] == {"only_treatment": m.only_treatment, "only_control":
                                m.only_control, "p": m.p_value,
                                "p_adjusted": entry["mcnemar"]["p_adjusted"]}
    # Holm over every p-value of the report, bootstrap and McNemar alike
    family = [(c, "p") for c in summary["comparisons"]]
    family += [(c["mcnemar"], "p") for c in summary["comparisons"] if "mcnemar" in c]
    # p's three context pairs and p against copy-previous under three contexts: 6
    # comparisons, each with three bootstrap tests and one McNemar test
    assert summary["tests"] == len(family) == 6 * 4
    assert [e["p_adjusted"] for e, _ in family] == holm([e["p"] for e, _ in family])
    cells = table_row(markdown, "p: full - none")
    assert cells[1:4] == ["39", "8", "EM"]
    assert cells[4] == fmt(d.mean, d.low, d.high, "+")
    assert cells[7] == f"{m.only_treatment}/{m.only_control}"


def test_report_intervals_are_those_of_resampling_whole_trajectories(tmp_path):
    """Issue 25, item 1: every trajectory here has examples in two or three length strata;
    the report's intervals are those of a plain reference implementation that draws whole
    trajectories, the unit the report names."""
    folder = results_dir(tmp_path)
    _, summary = run_report(folder)
    groups = latest(folder)
    common = sorted(set(IDS) - {"e38"})
    assert any(len({STRATUM[e] for e in common if TRAJECTORY[e] == t}) > 1
               for t in set(TRAJECTORY.values()))
    full, none = groups[("output", "p", "full")], groups[("output", "p", "none")]
    labels = [TRAJECTORY[e] for e in common]
    for metric in METRICS:
        values = [full[e]["scores"][metric] for e in common]
        means = reference_trajectory_bootstrap(
            values, labels, 2000, derived_seed(3, "mean", "output", "p", "full", metric))
        entry = next(m for m in summary["means"] if (m["task"], m["predictor"], m["context"],
                     m["metric"]) == ("output", "p", "full", metric))
        assert (entry["ci_low"], entry["ci_high"]) == \
            pytest.approx(percentile_interval(means), rel=1e-12)
        diffs = reference_trajectory_bootstrap(
            [full[e]["scores"][metric] - none[e]["scores"][metric] for e in common], labels,
            2000, derived_seed(3, "paired", "output", "p", "full", "p", "none", metric))
        pair = next(c for c in summary["comparisons"] if c["metric"] == metric
                    and c["task"] == "output" and c["kind"] == "context"
                    and c["treatment"] == {"predictor": "p", "context": "full"}
                    and c["control"] == {"predictor": "p", "context": "none"})
        assert (pair["ci_low"], pair["ci_high"]) == \
            pytest.approx(percentile_interval(diffs), rel=1e-12)


def test_scores_are_also_reported_without_environment_dependent_targets(tmp_path):
    """Issue 25, item 4: re-running their code gives another output; the report gives every
    condition's means with them and without them, from the results' own flags."""
    folder = results_dir(tmp_path)
    markdown, summary = run_report(folder)
    groups = latest(folder)
    kept = sorted(set(IDS) - {"e38"} - DEPENDENT)
    output = next(t for t in summary["tasks"] if t["task"] == "output")
    assert output["environment_dependent"] == len(DEPENDENT) == 8
    scores = groups[("output", "p", "full")]
    for metric in METRICS:
        ci = bootstrap_ci([scores[e]["scores"][metric] for e in kept], resamples=2000,
                          clusters=[TRAJECTORY[e] for e in kept],
                          seed=derived_seed(3, "mean-reproducible", "output", "p", "full",
                                            metric))
        entry = next(m for m in summary["means_reproducible"] if (m["task"], m["predictor"],
                     m["context"], m["metric"]) == ("output", "p", "full", metric))
        assert (entry["mean"], entry["ci_low"], entry["ci_high"], entry["n"]) == \
            (ci.mean, ci.low, ci.high, 31)
        assert fmt(ci.mean, ci.low, ci.high) in markdown
    assert "Without the 8 targets whose reference depends on the environment (31 examples, " \
        "8 clusters)" in markdown


def test_models_are_compared_with_references_and_context_blind_ones_are_not_tested(tmp_path):
    """The issue's third point: a reference gives the numbers a meaning."""
    _, summary = run_report(results_dir(tmp_path))
    kinds = {(c["kind"], c["treatment"]["predictor"], c["treatment"]["context"],
              c["control"]["predictor"], c["control"]["context"])
             for c in summary["comparisons"] if c["task"] == "output"}
    assert ("reference", "p", "full", "copy-previous", "full") in kinds
    assert not any(k[1] == "copy-previous" for k in kinds)
    skipped = {(s["predictor"], s["treatment"], s["control"]) for s in summary["skipped"]}
    assert ("copy-previous", "full", "none") in skipped


def test_the_unit_of_resampling_is_stated_and_trajectories_widen_intervals(tmp_path):
    folder = results_dir(tmp_path)
    markdown, summary = run_report(folder)
    by_example, plain = run_report(folder, "--unit", "example")
    assert summary["unit"] == "trajectory" and plain["unit"] == "example"
    assert "**Unit of resampling: trajectory.**" in markdown
    assert "**Unit of resampling: example.**" in by_example

    def width(s: dict, predictor: str) -> float:
        m = next(x for x in s["means"] if (x["task"], x["predictor"], x["context"],
                 x["metric"]) == ("output", predictor, "full", "exact_match"))
        return m["ci_high"] - m["ci_low"]

    assert width(summary, "copy-previous") != width(plain, "copy-previous")
    assert next(m for m in plain["means"] if m["predictor"] == "p"
                and m["task"] == "output")["clusters"] == 39
    # 8 trajectories are too few for the interval to mean much: the report says so
    assert any("only 8 trajectories" in w and str(MIN_CLUSTERS) in w
               for w in summary["warnings"])
    assert "> **Warning:** output: only 8 trajectories" in markdown
    assert not any("trajectories;" in w for w in plain["warnings"])


def test_report_is_reproducible_and_stable_when_results_grow(tmp_path):
    folder = results_dir(tmp_path)
    first, _ = run_report(folder)
    assert run_report(folder)[0] == first
    bigger, _ = run_report(results_dir(tmp_path, extra_predictor=True))
    for context in ("none", "full", "curated"):
        assert table_row(bigger, "p", context) == table_row(first, "p", context)
    assert main(["report", str(folder), "--out", str(folder / "r2.md"),
                 "--resamples", "2000", "--seed", "4"]) == 0
    changed = (folder / "r2.md").read_text()
    means = re.compile(r"(\d\.\d{3}) \[")
    assert means.findall(changed) == means.findall(first)  # the means do not depend on it
    assert changed != first                                # the intervals do


def test_markdown_and_figure_are_made_from_the_json_numbers(tmp_path):
    folder = results_dir(tmp_path)
    figure = tmp_path / "fig.png"
    markdown, summary = run_report(folder, "--figure", str(figure))
    assert set(summary) >= {"unit", "means", "comparisons", "tasks", "warnings", "tests"}
    for m in summary["means"]:
        assert set(m) == {"task", "predictor", "context", "metric", "mean", "ci_low",
                          "ci_high", "n", "clusters"}
        assert fmt(m["mean"], m["ci_low"], m["ci_high"]) in markdown
    for c in summary["comparisons"]:
        assert {"diff", "ci_low", "ci_high", "p", "p_adjusted", "n", "clusters"} <= set(c)
        assert fmt(c["diff"], c["ci_low"], c["ci_high"], "+") in markdown
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(figure).shape
    assert width > 1000 and height > 400
    assert build_summary(folder, resamples=2000, seed=3) == summary


def test_report_carries_sampling_and_realism_from_the_run(tmp_path):
    folder = results_dir(tmp_path)
    realism = {"trajectories": 8, "steps": 120, "reruns": 0, "edited_reruns": 0,
               "out_of_order": 0, "errors": 9, "environment_errors": 7,
               "environment_outputs": 25, "environment_kinds": {
                   "address": 1, "timing": 2, "clock": 0, "randomness": 1, "version": 14,
                   "failure": 7}}
    (folder / "run.json").write_text(json.dumps({
        "bench": "b.jsonl", "bench_sha256": "x", "realism": realism, "targets": 48,
        "environment_targets": 6, "sampling": {"output": {"n": 200, "seed": 1, "errors": "drop",
                                                          "candidates": 40, "census": True}}}))
    markdown, summary = run_report(folder)
    assert summary["realism"] == realism
    assert "8 trajectories, 120 steps: 0 re-runs (0% of steps; 0 edited, 0%), 0 out-of-order " \
        "executions (0%), 9 errors (8%; 7 caused by the environment)" in markdown
    assert "Of the 48 targets, 6 have a reference that depends on the environment" in markdown
    assert "--errors drop; 40 candidates, every one taken." in markdown
    assert any("every candidate target was taken" in w for w in summary["warnings"])


def test_report_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 1
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "results.jsonl").write_text("")
    assert main(["report", str(tmp_path)]) == 1
    assert "no results" in capsys.readouterr().err


def test_report_prints_to_stdout_by_default(tmp_path, capsys):
    folder = results_dir(tmp_path)
    assert main(["report", str(folder), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Benchmark report") and "| p | curated | 40 | 0 | 0 | 39 | 8 |" in out


def degenerate_results(tmp_path: Path) -> Path:
    """`copy-previous`, a model `m` and `hybrid`, whose answers are copy-previous's on every
    example (as its next cells are by construction); no condition gets an exact match on
    the last 30 examples, and `m` none at all."""
    rng = np.random.default_rng(1)
    lines = []
    for context in ("none", "full"):
        for i, e in enumerate(IDS):
            em = float(i % 4 == 0 and i < 10)
            lines.append(record(e, "copy-previous", context, em, rng, answer=e))
            same = dict(record(e, "hybrid", context, em, rng, answer=e))
            same["scores"] = lines[-1]["scores"]
            lines.append(same)
            lines.append(record(e, "openai:m", context, 0.0, rng))
    folder = tmp_path / "degenerate"
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def family_of(summary: dict) -> list[dict]:
    tests = [c for c in summary["comparisons"] if c["p_adjusted"] is not None]
    tests += [c["mcnemar"] for c in summary["comparisons"]
              if "mcnemar" in c and c["mcnemar"]["p_adjusted"] is not None]
    return tests


def test_comparisons_identical_by_construction_are_left_out_of_the_holm_family(tmp_path):
    """Issue 25, item 6: hybrid's next cell is copy-previous's; such comparisons, and tests
    that cannot reject (the same score everywhere, no discordant pair), must not make
    Holm multiply every other p-value by a larger number."""
    figure = tmp_path / "degenerate.png"
    markdown, summary = run_report(degenerate_results(tmp_path), "--figure", str(figure))
    assert figure.read_bytes()[:4] == b"\x89PNG"  # tests outside the family drawn too
    pairs = {(c["treatment"]["predictor"], c["control"]["predictor"])
             for c in summary["comparisons"]}
    assert ("hybrid", "copy-previous") not in pairs
    assert {(s["predictor"], s["control_predictor"], s["treatment"]) for s in
            summary["skipped"] if s["kind"] == "reference"} == \
        {("hybrid", "copy-previous", "none"), ("hybrid", "copy-previous", "full")}
    assert "hybrid@full - copy-previous@full not tested (the same answers on every " \
        "example)" in markdown
    # m vs copy-previous: EM differs (copy-previous has 3 right); m's own contexts: EM is 0
    # under both, so that EM test and its McNemar (b = c = 0) cannot reject
    flat = next(c for c in summary["comparisons"] if c["kind"] == "context"
                and c["treatment"]["predictor"] == "openai:m" and c["metric"] == "exact_match")
    assert flat["degenerate"] and flat["p"] == 1.0 and flat["p_adjusted"] is None
    assert flat["mcnemar"]["p_adjusted"] is None
    family = family_of(summary)
    # m: full - none (ROUGE-L, chrF) + m - copy-previous under 2 contexts x (3 metrics +
    # McNemar) = 2 + 8; the left out: m's context EM and its McNemar
    assert summary["tests"] == len(family) == 10
    assert summary["degenerate_tests"] == 2
    assert [t["p_adjusted"] for t in family] == holm([t["p"] for t in family])
    assert "2 tests that cannot reject" in markdown


def test_a_study_names_its_primary_comparisons_and_holm_covers_only_those(tmp_path, capsys):
    folder = degenerate_results(tmp_path)
    _, summary = run_report(folder, "--primary", "openai:m@full:copy-previous@full")
    assert summary["primary"] == ["openai:m@full:copy-previous@full"]
    primary = [c for c in summary["comparisons"] if c["primary"]]
    assert [(c["treatment"]["context"], c["metric"]) for c in primary] == \
        [("full", m) for m in METRICS]
    family = family_of(summary)
    assert summary["tests"] == len(family) == 4  # three metrics and McNemar
    assert [t["p_adjusted"] for t in family] == holm([t["p"] for t in family])
    assert all(c["p_adjusted"] is None for c in summary["comparisons"] if not c["primary"])
    # no context: under every context both have; a pair that is no standard comparison
    # (a model against hybrid) is made for the study
    _, both = run_report(folder, "--primary", "openai:m:hybrid")
    assert {(c["kind"], c["treatment"]["context"]) for c in both["comparisons"]
            if c["primary"]} == {("primary", "none"), ("primary", "full")}
    assert main(["report", str(folder), "--primary", "gpt:copy-previous"]) == 1
    assert "--primary 'gpt:copy-previous': not PREDICTOR[@CONTEXT]" in capsys.readouterr().err


def test_next_cells_are_also_scored_line_by_line(tmp_path):
    """Issue 25, item 9: the report gives next cells a line exact match, from the answers
    and references of the results, in the table and the JSON."""
    rng = np.random.default_rng(2)
    lines = []
    for i, e in enumerate(IDS):
        reference = f"x = {i}\nprint(x)\nx.sum()"
        for predictor, answer in (("copy-previous", f"x = {i - 1}\nprint(x)"),
                                  ("m", reference if i % 2 else "nothing")):
            r = record(e, predictor, "none", float(answer == reference), rng, task="next-cell",
                       answer=answer)
            r["reference"] = reference
            lines.append(r)
    folder = tmp_path / "lines"
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    markdown, summary = run_report(folder)
    got = {m["predictor"]: m["mean"] for m in summary["means"] if m["metric"] == "line_match"}
    assert got == pytest.approx({"copy-previous": 1 / 3, "m": 0.5})
    assert "line EM" in markdown.split("## Task: next-cell", 1)[1].splitlines()[4]
    assert any(c["metric"] == "line_match" and c["treatment"]["predictor"] == "m"
               for c in summary["comparisons"])
