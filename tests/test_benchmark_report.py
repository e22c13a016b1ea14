"""``themisto report``: intervals, paired tests and figure, recomputed from results.jsonl."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from themisto_ext.cli.main import main
from themisto_ext.evaluation.report import derived_seed
from themisto_ext.evaluation.stats import bootstrap_ci, mcnemar_exact, paired_bootstrap

METRICS = ("exact_match", "rouge_l", "chrf")
IDS = [f"e{i:02d}" for i in range(40)]


def record(example: str, predictor: str, context: str, em: float, rng: np.random.Generator,
           task: str = "output", error: bool = False) -> dict:
    scores = None if error else {"exact_match": em, "rouge_l": float(rng.random()),
                                 "chrf": float(rng.random())}
    return {"example_id": example, "task": task, "predictor": predictor, "context": context,
            "answer": "", "reference": "", "latency": 0.01,
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
    for example in IDS[:8]:  # ids are unique across tasks, as `themisto sample` makes them
        lines.append(record(f"n-{example}", "p", "none", 0.0, rng, task="next-cell"))
    if extra_predictor:
        lines += [record(e, "q", c, 1.0, rng) for e in IDS for c in ("none", "full")]
    folder = tmp_path / ("more" if extra_predictor else "results")
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def latest_scores(folder: Path) -> dict[tuple[str, str, str], dict[str, dict]]:
    """An independent reading of results.jsonl: the last line of a pair wins."""
    latest: dict[tuple[str, str, str, str], dict] = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        latest[(r["task"], r["predictor"], r["context"], r["example_id"])] = r
    groups: dict[tuple[str, str, str], dict[str, dict]] = {}
    for (task, predictor, context, example), r in latest.items():
        bucket = groups.setdefault((task, predictor, context), {})
        if r["error"] is None:
            bucket[example] = r["scores"]
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


def binomial_p(k: int, n: int) -> float:
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n)


def run_report(folder: Path, *extra: str) -> str:
    out = folder / "report.md"
    assert main(["report", str(folder), "--out", str(out), "--resamples", "2000",
                 "--seed", "3", *extra]) == 0
    return out.read_text()


def test_report_numbers_are_recomputed_from_the_results_file(tmp_path):
    folder = results_dir(tmp_path)
    figure = tmp_path / "fig.png"
    markdown = run_report(folder, "--figure", str(figure))
    groups = latest_scores(folder)

    for context, n, errors in (("none", 39, 1), ("full", 40, 0), ("curated", 40, 0)):
        cells = table_row(markdown, "p", context)
        scores = groups[("output", "p", context)]
        assert cells[2:4] == [str(n), str(errors)]
        ids = sorted(scores)
        for metric, cell in zip(METRICS, cells[4:7], strict=True):
            values = [scores[i][metric] for i in ids]
            ci = bootstrap_ci(values, resamples=2000,
                              seed=derived_seed(3, "mean", "output", "p", context, metric))
            assert ci.mean == pytest.approx(np.mean(values))
            assert cell == fmt(ci.mean, ci.low, ci.high)

    none, full = groups[("output", "p", "none")], groups[("output", "p", "full")]
    ids = sorted(set(none) & set(full))
    cells = table_row(markdown, "p", "full - none")
    assert cells[2] == str(len(ids)) == "39"
    for k, metric in enumerate(METRICS):
        d = paired_bootstrap([full[i][metric] for i in ids], [none[i][metric] for i in ids],
                             resamples=2000,
                             seed=derived_seed(3, "paired", "output", "p", "full", "none", metric))
        assert cells[3 + 2 * k] == fmt(d.mean, d.low, d.high, "+")
        assert cells[4 + 2 * k] == ("<0.0001" if d.p_value < 1e-4 else f"{d.p_value:.4f}")
    # full is right on 20 examples where none is wrong, none on 5 where full is wrong
    assert cells[9] == "20/5"
    expected = binomial_p(5, 25)
    assert mcnemar_exact([full[i]["exact_match"] for i in ids],
                         [none[i]["exact_match"] for i in ids]).p_value == \
        pytest.approx(expected)
    assert cells[10] == f"{expected:.4f}"

    assert "## Task: next-cell" in markdown
    assert "No two contexts of one predictor share a scored example." in markdown
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(figure).shape
    assert width > 1000 and height > 400


def test_report_is_reproducible_and_stable_when_results_grow(tmp_path):
    folder = results_dir(tmp_path)
    first = run_report(folder)
    assert run_report(folder) == first
    bigger = run_report(results_dir(tmp_path, extra_predictor=True))
    for context in ("none", "full", "curated"):
        assert table_row(bigger, "p", context) == table_row(first, "p", context)
    assert table_row(bigger, "p", "full - none") == table_row(first, "p", "full - none")
    assert table_row(bigger, "q", "full - none")[9:] == ["0/0", "1.0000"]
    other_seed = main(["report", str(folder), "--out", str(folder / "r2.md"),
                       "--resamples", "2000", "--seed", "4"])
    assert other_seed == 0
    changed = (folder / "r2.md").read_text()
    means = re.compile(r"(\d\.\d{3}) \[")
    assert means.findall(changed) == means.findall(first)  # the means do not depend on it
    assert changed != first                                # the intervals do


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
    assert out.startswith("# Benchmark report") and "| p | curated | 40 | 0 |" in out
