"""How many cells the output rules answer completely, and how many of those exactly (as
the scores count it: ``metrics.exact_match``), on real notebooks recorded now: with the
values the kernel captures as data (``kernel/values.py``) against the same steps with that
data removed (the reprs alone, as every step was recorded before).

    python benchmarks/rules_coverage.py [--notebooks ../shared/data/notebooks] [--keep DIR]

Each notebook is recorded with ``themisto record`` (a real kernel), then every step after
the first is answered by ``baseline.determined`` from the steps before it. Prints, per
notebook, the cells, the complete answers and the exact ones before and after, then the
share of cells answered completely and exactly over all notebooks, with 95 % bootstrap
intervals resampling notebooks (the unit: cells of one notebook are not independent), and
one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from themisto_ext.evaluation.stats import bootstrap_ci, paired_bootstrap  # noqa: E402
from themisto_ext.prediction.clients.baseline import determined  # noqa: E402
from themisto_ext.prediction.metrics import exact_match  # noqa: E402


def record(notebook: Path, work: Path) -> list[dict[str, Any]]:
    out = work / f"{notebook.stem}.jsonl"
    subprocess.run([sys.executable, "-m", "themisto_ext.cli", "--store",
                    str(work / "store.sqlite3"), "record", str(notebook), "--out", str(out),
                    "--timeout", "120"], check=True, cwd=ROOT, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})  # (the kernel's too)
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def without_data(step: dict[str, Any]) -> dict[str, Any]:
    variables = {name: {k: v for k, v in entry.items() if k != "data"}
                 for name, entry in step["runtime_variables"].items()}
    return dict(step, runtime_variables=variables)


def answers(steps: list[dict[str, Any]]) -> list[tuple[bool, bool]]:
    """``(complete, exact)`` for each step after the first."""
    found = []
    for i in range(1, len(steps)):
        answer = determined(steps[i]["code"], steps[:i])
        complete = answer is not None and answer.complete
        found.append((complete, complete and answer is not None
                      and exact_match(answer.text, steps[i]["output"]) == 1.0))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", type=Path,
                        default=ROOT.parent / "shared" / "data" / "notebooks")
    parser.add_argument("--keep", type=Path, help="record into this folder (else a temporary)")
    args = parser.parse_args()
    notebooks = sorted(args.notebooks.glob("*.ipynb"))
    if not notebooks:
        sys.exit(f"no notebooks in {args.notebooks}")
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        rows, clusters = [], []
        before_complete: list[float] = []
        after_complete: list[float] = []
        before_exact: list[float] = []
        after_exact: list[float] = []
        print(f"{'notebook':42} {'cells':>5} {'complete before':>15} {'after':>6} "
              f"{'exact before':>12} {'after':>6}")
        for notebook in notebooks:
            steps = record(notebook, work)
            old = answers([without_data(step) for step in steps])
            new = answers(steps)
            for (oc, oe), (nc, ne) in zip(old, new, strict=True):
                clusters.append(notebook.stem)
                before_complete.append(float(oc))
                after_complete.append(float(nc))
                before_exact.append(float(oe))
                after_exact.append(float(ne))
            row = {"notebook": notebook.stem, "cells": len(new),
                   "complete_before": sum(c for c, _ in old),
                   "complete_after": sum(c for c, _ in new),
                   "exact_before": sum(e for _, e in old), "exact_after": sum(e for _, e in new)}
            rows.append(row)
            print(f"{notebook.stem[:42]:42} {row['cells']:>5} {row['complete_before']:>15} "
                  f"{row['complete_after']:>6} {row['exact_before']:>12} {row['exact_after']:>6}")
    summary: dict[str, Any] = {"notebooks": rows}
    for name, before, after in (("complete", before_complete, after_complete),
                                ("exact", before_exact, after_exact)):
        old_ci = bootstrap_ci(before, clusters=clusters)
        new_ci = bootstrap_ci(after, clusters=clusters)
        gain = paired_bootstrap(after, before, clusters=clusters)
        print(f"share {name}: before {old_ci.mean:.3f} [{old_ci.low:.3f}, {old_ci.high:.3f}]"
              f", after {new_ci.mean:.3f} [{new_ci.low:.3f}, {new_ci.high:.3f}], after-before "
              f"{gain.mean:+.3f} [{gain.low:+.3f}, {gain.high:+.3f}] ({len(after)} cells, "
              f"{len(rows)} notebooks resampled)")
        summary[name] = {"before": [old_ci.mean, old_ci.low, old_ci.high],
                         "after": [new_ci.mean, new_ci.low, new_ci.high],
                         "gain": [gain.mean, gain.low, gain.high]}
    exact_of_complete = sum(after_exact) / max(1, sum(after_complete))
    print(f"complete answers that were exact, after: {exact_of_complete:.3f} "
          f"({int(sum(after_exact))} of {int(sum(after_complete))})")
    summary["exact_of_complete"] = exact_of_complete
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
