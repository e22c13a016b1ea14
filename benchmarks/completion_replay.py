"""Typing replay: inline completion as a person typing the notebooks' cells would get it,
through a real server's API (``POST /themisto/api/completions``).

    python benchmarks/completion_replay.py [NOTEBOOK ...] [--model qwen2.5-coder-0.5b]
        [--predictor hybrid] [--contexts none,full] [--cells 40] [--think 0]

Default notebooks: ``../shared/data/notebooks/*.ipynb``. For each context a fresh
``jupyter server`` (this Python, the extension, ``--model``) runs each notebook in a kernel
cell by cell. Before a code cell runs, its first line is typed: at each pause after a
``.``, ``[`` or ``(`` the completer is asked for the rest of the line (the text before the
cursor; nothing after it). A suggestion is *accepted* when it is a non-empty beginning of
what is then typed (Tab takes it and nothing must be deleted): the typing then jumps past
it. Then the cell runs, so the next cell's completions see its state.

Reported per context: pauses asked, accepted share, exact share (the whole rest of the
line), characters saved (accepted characters / characters typed after the first pause),
p50/p95 seconds from the pause to the first words shown (the reply is streamed, as the
front end asks; of the final suggestion, not of a text it replaced) and to the whole
answer, the model process's CPU seconds; then
``full - none`` on accepted, paired on the same pauses, with a 95 % bootstrap interval that
resamples whole notebooks. The last line is JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from check_package import execute, free_port, wait

from themisto_ext.evaluation.stats import bootstrap_ci, paired_bootstrap

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "notebooks"
PAUSE = re.compile(r"[.\[(]")


def first_lines(notebook: Path, limit: int) -> list[tuple[str, str]]:
    """(first line, whole source) of the notebook's code cells, magics and blanks left out
    of the typing (they still run)."""
    cells = json.loads(notebook.read_text())["cells"]
    out = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        out.append((source.lstrip().split("\n", 1)[0], source))
        if len(out) >= limit:
            break
    return out


def typeable(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith(("%", "!", "#"))


def replay(context: str, notebooks: list[Path], args: argparse.Namespace,
           work: Path) -> list[dict[str, Any]]:
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / f"config-{context}"),
           "JUPYTER_RUNTIME_DIR": str(work / f"runtime-{context}")}
    log = (work / f"server-{context}.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", f"--IdentityProvider.token={token}", "--allow-root",
         f"--ServerApp.root_dir={work}", f"--ThemistoExtension.predictors={args.predictor}",
         f"--ThemistoExtension.contexts={context}", f"--ThemistoExtension.model={args.model}",
         f"--ThemistoExtension.store_path={work / f'store-{context}.sqlite3'}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, headers={"Authorization": f"token {token}"},
                          timeout=300)
    rows: list[dict[str, Any]] = []
    try:
        def up() -> bool:
            try:
                return client.get("/themisto/api/predictors").status_code == 200
            except httpx.TransportError:
                return False
        wait(up, 120, "the server did not start")
        for notebook in notebooks:
            kernel = client.post("/api/kernels", json={"name": "python3"}).json()["id"]
            cwd_code = f"import os; os.chdir({str(notebook.parent)!r})"
            execute(base, token, kernel, cwd_code)
            for index, (line, source) in enumerate(first_lines(notebook, args.cells)):
                if typeable(line):
                    time.sleep(args.think)  # reading the last output before typing
                    rows += type_line(client, kernel, line, notebook.name, index)
                execute(base, token, kernel, source)
            client.delete(f"/api/kernels/{kernel}")
        status = client.get("/themisto/api/predictors").json()
        pid = next((m["pid"] for m in status["local_models"] if m["pid"]), None)
        cpu = None
        if pid is not None:
            times = psutil.Process(pid).cpu_times()
            cpu = times.user + times.system
        for row in rows:
            row["model_cpu_seconds_total"] = cpu
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=30)
        log.close()
    return rows


def type_line(client: httpx.Client, kernel: str, line: str, notebook: str,
              cell: int) -> list[dict[str, Any]]:
    rows = []
    pauses = [m.end() for m in PAUSE.finditer(line)]
    cursor = 0
    for at in pauses:
        if at <= cursor or at >= len(line):
            continue  # passed by an accepted suggestion, or nothing left to type
        began = time.perf_counter()
        shown: list[tuple[float, str]] = []
        answer: dict[str, Any] = {}
        with client.stream("POST", "/themisto/api/completions", json={
                "kernel_id": kernel, "beginning": line[:at], "stream": True}) as reply:
            for text in reply.iter_lines():
                if text.strip():
                    answer = json.loads(text)
                    shown.append((time.perf_counter() - began, answer.get("completion") or ""))
        seconds = time.perf_counter() - began
        suggestion = answer.get("completion") or ""
        # the first words of the suggestion in the end (not of a text it replaced)
        first = next((t for t, words in shown if words and suggestion.startswith(words)), None)
        rest = line[at:]
        accepted = bool(suggestion.strip()) and rest.startswith(suggestion)
        rows.append({"notebook": notebook, "cell": cell, "at": at, "seconds": seconds,
                     "first_seconds": first if first is not None else seconds,
                     "accepted": accepted, "exact": accepted and suggestion == rest,
                     "saved": len(suggestion) if accepted else 0,
                     "typed_after_first_pause": len(line) - pauses[0],
                     "suggestion": suggestion, "rest": rest, "reason": answer.get("reason")})
        if accepted:
            cursor = at + len(suggestion)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"pauses": 0}
    lines = {(r["notebook"], r["cell"]): r["typed_after_first_pause"] for r in rows}
    seconds = sorted(r["seconds"] for r in rows)
    first = sorted(r["first_seconds"] for r in rows)
    accepted = bootstrap_ci([float(r["accepted"]) for r in rows],
                            clusters=[r["notebook"] for r in rows])
    return {"pauses": len(rows), "accepted": accepted.mean,
            "accepted_ci": [accepted.low, accepted.high],
            "exact": statistics.fmean(float(r["exact"]) for r in rows),
            "chars_saved": sum(r["saved"] for r in rows) / max(1, sum(lines.values())),
            "p50_s": seconds[len(seconds) // 2],
            "p95_s": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))],
            "first_p50_s": first[len(first) // 2],
            "first_p95_s": first[min(len(first) - 1, int(0.95 * len(first)))],
            "slowest": [{k: r[k] for k in ("notebook", "cell", "at", "first_seconds")}
                        for r in sorted(rows, key=lambda r: -r["first_seconds"])[:3]],
            "model_cpu_seconds": rows[0]["model_cpu_seconds_total"],
            "clusters": accepted.clusters}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--predictor", default="hybrid")
    parser.add_argument("--contexts", default="none,full")
    parser.add_argument("--cells", type=int, default=40, help="code cells per notebook")
    parser.add_argument("--think", type=float, default=0.0,
                        help="seconds between a cell's end and typing the next (reading "
                             "its output; default 0: typing at once)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/themisto-replay"))
    args = parser.parse_args()
    notebooks = args.notebooks or sorted(SHARED.glob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"no notebooks given and none in {SHARED}")
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {"model": args.model, "predictor": args.predictor,
                              "notebooks": [n.name for n in notebooks], "cells": args.cells}
    for context in args.contexts.split(","):
        results[context] = replay(context, notebooks, args, args.work)
        report[context] = figures = summary(results[context])
        print(f"{context:>8}: {figures['pauses']} pauses, accepted {figures['accepted']:.1%} "
              f"[{figures['accepted_ci'][0]:.1%}, {figures['accepted_ci'][1]:.1%}], exact "
              f"{figures['exact']:.1%}, characters saved {figures['chars_saved']:.1%}, "
              f"first words p50 {figures['first_p50_s']:.2f} s, p95 "
              f"{figures['first_p95_s']:.2f} s, whole p50 {figures['p50_s']:.2f} s, p95 "
              f"{figures['p95_s']:.2f} s, model CPU "
              f"{figures['model_cpu_seconds']} s", flush=True)
    if "none" in results and "full" in results:
        key = [(r["notebook"], r["cell"], r["at"]) for r in results["none"]]
        full = {(r["notebook"], r["cell"], r["at"]): r for r in results["full"]}
        pairs = [(full[k], r) for k, r in zip(key, results["none"], strict=True) if k in full]
        if pairs:
            diff = paired_bootstrap([float(a["accepted"]) for a, _ in pairs],
                                    [float(b["accepted"]) for _, b in pairs],
                                    clusters=[a["notebook"] for a, _ in pairs])
            report["full_minus_none_accepted"] = {
                "mean": diff.mean, "ci": [diff.low, diff.high], "pairs": len(pairs),
                "clusters": diff.clusters}
            print(f"full - none, accepted: {diff.mean:+.3f} [{diff.low:+.3f}, "
                  f"{diff.high:+.3f}] over {len(pairs)} paired pauses, {diff.clusters} "
                  "notebooks (resampled whole)")
    (args.work / "rows.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
