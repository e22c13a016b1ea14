"""Opening a notebook with a long prediction history: time until every cell has its badge.

A real `jupyter server` with JupyterLab and the extension, seeded through a kernel journal
(ingested as the server does) with a trajectory of a 20-cell notebook run over and over,
2,000 steps, and its predictions (output and next cell, contexts none and full, each with
a ~4 kB prompt, scored). Debian's Chromium, driven by Playwright, opens the notebook in a
fresh browser context (nothing cached, a new kernel: the history is found by the
notebook's path) and times, from navigation start: the first cell shown, every cell's
badge, and the whole history read in brief (its oldest page arrived); then, in another
fresh context, a user opening it from the file browser of a loaded JupyterLab: from the
double click to every cell's badge. The same for a 20-step trajectory of the same
notebook, for comparison. Target: a 2,000-step notebook open with its badges in 2 s.

    python benchmarks/history_open.py [--steps 2000] [--runs 5]

Prints, per trajectory, the median over the runs (a run = one fresh browser context) and
the range. Needs `jlpm install` in ui-tests/ (Playwright) and `/usr/bin/chromium`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import nbformat
from server_api import TOKEN, Server

from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore

HERE = Path(__file__).resolve().parent
CELLS = 20
PROMPT = "x = df['a'].mean()\n" * 200  # ~4 kB, as a live prompt of the local model


def step(tid: str, kernel: str, notebook: str, n: int) -> dict:
    cell = (n - 1) % CELLS
    variables = {f"v{i}": {"type": "int", "size": 28, "size_exact": True, "repr": str(n * i)}
                 for i in range(20)}
    variables["df"] = {"type": "DataFrame", "size": 80_000_128, "size_exact": True,
                       "shape": [1_000_000, 10], "repr": "     a    b\n0  1.0  2.0\n" * 20}
    output = f"{n}.5\n" * 20
    return {"kind": "step", "format_version": 1, "trajectory_id": tid, "kernel_id": kernel,
            "step": n, "cell_id": f"cell-{cell}", "notebook_path": notebook,
            "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
            "code": f"x{cell} = df['a'].mean() + {n}\nprint(x{cell})", "output": output,
            "outputs": [{"output_type": "stream", "name": "stdout", "mime_types": ["text/plain"],
                         "text": output}],
            "execution_time": 0.01, "memory_bytes": 123_456_789, "runtime_variables": variables,
            "hash_index": f"{n:032x}", "error": None}


def prediction(tid: str, kernel: str, notebook: str, n: int, task: str, context: str) -> dict:
    answer = f"{n}.5\n" * 20 if task == "output" else f"x = {n}"
    return {"id": f"{tid}-{n}-{task}-{context}", "trajectory_id": tid, "kernel_id": kernel,
            "notebook_path": notebook, "cell_id": f"cell-{(n - 1) % CELLS}", "task": task,
            "context": context, "predictor": "baseline", "model": "baseline",
            "target_step": n, "created_at": "2026-01-01T00:00:00.000+00:00", "latency": 0.01,
            "prompt_tokens": None, "completion_tokens": None, "cached_tokens": None,
            "prefix_reused": None, "prompt": {"system": "You predict.", "user": PROMPT},
            "dropped_steps": 0, "raw": answer, "answer": answer, "error": None,
            "reference": answer, "scores": {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}}


def seed(home: Path, root: Path, name: str, steps: int) -> None:
    """A notebook of CELLS cells and a `steps`-step trajectory of it, through a journal."""
    notebook = f"{name}.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}", id=f"cell-{i}") for i in range(CELLS)]
    nbformat.write(nb, root / notebook)
    store_path = home / "data" / "themisto" / "trajectories.sqlite3"
    journal = store_path.parent / "journal"
    tid, kernel = f"bench-{name}", f"kernel-{name}"
    writer = JournalWriter(journal, kernel, tid)
    writer.append({"kind": "trajectory", "trajectory_id": tid, "kernel_id": kernel,
                   "notebook_path": notebook, "started_at": "2026-01-01T00:00:00+00:00"})
    for n in range(1, steps + 1):
        writer.append(step(tid, kernel, notebook, n))
    writer.close()
    store = SQLiteStore(store_path)
    JournalIngestor(journal, store).poll()
    for n in range(1, steps + 1):
        for task in ("output", "next-cell"):
            for context in ("none", "full"):
                store.save_prediction(prediction(tid, kernel, notebook, n, task, context))
    store.close()


def measure(server: Server, name: str, steps: int, runs: int) -> list[dict]:
    url = server.url
    out = subprocess.run(
        ["node", str(HERE / "history_open.mjs"), url, TOKEN, f"{name}.ipynb", str(CELLS),
         str(steps), str(runs)],
        capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"the browser run failed:\n{out.stdout}\n{out.stderr}")
    print(out.stderr, end="", file=sys.stderr)  # the requests' timeline with THEMISTO_DEBUG
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    # Each run opened the notebook with a new kernel: shut them down.
    for session in httpx.get(f"{url}/api/sessions", headers=server.headers).json():
        httpx.delete(f"{url}/api/sessions/{session['id']}", headers=server.headers)
    return results


def summary(label: str, values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return f"{label} never"
    return (f"{label} median {statistics.median(known):,.0f} ms "
            f"[{min(known):,.0f}-{max(known):,.0f}]"
            + (f" ({len(values) - len(known)} runs never)" if len(known) < len(values) else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="themisto-history-") as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        root.mkdir(parents=True)
        cases = [("long", args.steps), ("short", CELLS)]
        for name, steps in cases:
            seed(home, root, name, steps)
        server = Server(home, root=root, extra=["--ThemistoExtension.predictors=baseline"])
        try:
            for name, steps in cases:
                results = measure(server, name, steps, args.runs)
                print(f"{steps:,}-step trajectory, {CELLS}-cell notebook, {len(results)} fresh "
                      "browser contexts (ms from navigation start):")
                print("  " + summary("first cell shown:", [r["first_cell_ms"] for r in results]))
                print("  " + summary("every cell badged:", [r["badges_ms"] for r in results])
                      + ("  (target <= 2,000 ms)" if steps > CELLS else ""))
                print("  " + summary("badges after the first cell:",
                                     [r["badges_ms"] - r["first_cell_ms"] for r in results]))
                print("  " + summary(f"all {steps:,} steps read in brief:",
                                     [r["history_ms"] for r in results]))
                print("  " + summary("opened from the file browser of a loaded JupyterLab, "
                                     "double click to every cell badged:",
                                     [r["open_ms"] for r in results])
                      + ("  (target <= 2,000 ms)" if steps > CELLS else ""))
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
