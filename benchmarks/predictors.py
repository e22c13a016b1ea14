"""Every predictor x context on the shared notebooks, and local vs openai: agreement.

The run behind docs/results/predictors.md's figures and the live default, as commands:

1. ``themisto record`` each notebook of ../shared/data/notebooks into a trajectory;
2. ``themisto sample`` both tasks (--n 200 --seed 1 --errors drop) into one benchmark;
3. ``themisto stats`` over the trajectories;
4. ``themisto bench`` every predictor x context (--in-order, so the local model's KV cache
   follows each trajectory) into WORK/results;
5. ``themisto report`` with --json, --figure;
6. with --agreement: llama.cpp's server (``themisto_ext...local.serve``) serving the local
   model's GGUF on
   127.0.0.1, ``themisto bench --predictor openai:smollm2`` against it with the local
   model's window and tokenizer, and the share of examples where both transports gave
   the identical answer.

Every step is resumable (existing trajectories and samples are kept; ``bench`` skips
finished pairs). On a quiet 2-core machine the local model takes about 1-4 s a prediction
(~850 predictions for three contexts). Usage::

    python benchmarks/predictors.py WORK [--predictor P ...] [--context C,...] [--agreement]
        [--agreement-context C,...]
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = (ROOT.parent / "shared" / "data" / "notebooks").resolve()
PREDICTORS = ["baseline", "copy-previous", "local", "hybrid"]
OPENAI_NAME = "openai:smollm2"


def run(*args: str, cwd: Path | None = None, check: bool = True) -> int:
    print("$", shlex.join(args), flush=True)
    return subprocess.run(args, cwd=cwd, check=check).returncode


def themisto(*args: str, cwd: Path | None = None, check: bool = True) -> int:
    return run(sys.executable, "-m", "themisto_ext.cli", *args, cwd=cwd, check=check)


def prepare(work: Path) -> Path:
    """Trajectories of every shared notebook and one benchmark of both tasks."""
    work.mkdir(parents=True, exist_ok=True)
    trajectories = []
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        out = work / "trajectories" / f"{notebook.stem}.jsonl"
        if not out.exists():
            out.parent.mkdir(exist_ok=True)
            # from the notebooks' folder, so that they find their data files
            themisto("--store", str(work / "store.sqlite3"), "record", str(notebook),
                     "--out", str(out), "--timeout", "120", cwd=NOTEBOOKS)
        trajectories.append(str(out))
    themisto("stats", *trajectories, "--json", str(work / "stats.json"))
    bench = work / "bench.jsonl"
    if not bench.exists():
        parts = []
        for task in ("output", "next-cell"):
            part = work / f"bench-{task}.jsonl"
            themisto("sample", *trajectories, "--task", task, "--n", "200", "--seed", "1",
                     "--errors", "drop", "--out", str(part))
            parts.append(part.read_text("utf-8"))
        bench.write_text("".join(parts), "utf-8")
    return bench


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agreement(work: Path, bench: Path, gguf: Path, contexts: str) -> None:
    log = (work / "llama_server.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m",
                               "themisto_ext.prediction.clients.local.serve", "--model",
                               str(gguf), "--n-ctx", "4096", "--threads", "2"],
                              stdout=subprocess.PIPE, stderr=log)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().decode().strip()  # printed once listening
        if not base.startswith("http://127.0.0.1:"):
            raise SystemExit(f"llama.cpp's server did not start; see {log.name}")
        themisto("bench", str(bench), "--predictor", OPENAI_NAME, "--base-url", f"{base}/v1",
                 "--window", "4096", "--tokenizer", str(gguf), "--in-order", "--context", contexts,
                 "--concurrency", "1", "--timeout", "600", "--out", str(work / "openai"),
                 check=False)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    local = latest(work / "results" / "results.jsonl", "local")
    served = latest(work / "openai" / "results.jsonl", OPENAI_NAME)
    both = sorted(set(local) & set(served))
    same = [k for k in both if local[k]["answer"] == served[k]["answer"]]
    prompts = [k for k in both if local[k]["prompt"] == served[k]["prompt"]]
    by_task: dict[str, list[int]] = {}
    for k in both:
        by_task.setdefault(local[k]["task"], []).append(int(k in same))
    result = {"pairs": len(both), "identical_answers": len(same),
              "rate": len(same) / len(both) if both else None,
              "identical_prompts": len(prompts),
              "by_task": {t: sum(v) / len(v) for t, v in by_task.items()}}
    (work / "agreement.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(f"local vs {OPENAI_NAME} (llama.cpp's server, same GGUF): {len(same)} of {len(both)} "
          f"answers identical ({100 * (result['rate'] or 0):.1f}%); {len(prompts)} identical "
          f"prompts; by task: {result['by_task']}")


def latest(path: Path, predictor: str) -> dict[tuple[str, str], dict]:
    records: dict[tuple[str, str], dict] = {}
    for line in path.read_text("utf-8").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("predictor") == predictor and not r.get("error"):
            records[(r["example_id"], r["context"])] = r
        elif r.get("predictor") == predictor:
            records.pop((r["example_id"], r["context"]), None)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="working directory (resumable)")
    parser.add_argument("--predictor", action="append", help=f"default: {PREDICTORS}")
    parser.add_argument("--context", default="none,full,curated",
                        help="contexts to bench (default: all three)")
    parser.add_argument("--agreement", action="store_true",
                        help="also run openai: against llama.cpp's server with the same GGUF")
    parser.add_argument("--agreement-context", default="none,full,curated",
                        help="contexts of the openai: run (default: all three)")
    args = parser.parse_args()
    bench = prepare(args.work)
    chosen = [arg for p in args.predictor or PREDICTORS for arg in ("--predictor", p)]
    code = themisto("bench", str(bench), *chosen,
                    "--context", args.context, "--in-order", "--concurrency", "1",
                    "--timeout", "600", "--out", str(args.work / "results"), check=False)
    themisto("report", str(args.work / "results"), "--out", str(args.work / "report.md"),
             "--json", str(args.work / "summary.json"), "--figure",
             str(args.work / "report.png"))
    if args.agreement:
        from themisto_ext.prediction.clients.local.engine import default_model_path

        agreement(args.work, bench, default_model_path(), args.agreement_context)
    sys.exit(code)


if __name__ == "__main__":
    main()
