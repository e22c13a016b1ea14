"""``themisto bench`` overhead beyond the model calls, against a fake model that answers at once.

Samples 200 output-task examples from synthetic trajectories (see sample_speed.py), runs
them through ``run_bench`` with the fake OpenAI-compatible server of tests/fake_llm.py
under all three contexts, one call at a time, and reports the wall time per call minus the
time spent inside the model call (``latency`` of each record): prompt building, scoring,
writing the result line, the progress bar, reading results and writing the summary. Then
the same at concurrency 8 (throughput) and a rerun with everything done (resume cost).

    PYTHONPATH=. python benchmarks/bench_overhead.py [--n 200]

Target: at most 5 ms per example.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from fake_llm import FakeLLM  # noqa: E402
from sample_speed import write_trajectories  # noqa: E402

from themisto_ext.evaluation.run import (  # noqa: E402
    RESULTS_FILE,
    BenchConfig,
    load_results,
    run_bench,
)
from themisto_ext.evaluation.sample import sample, write_examples  # noqa: E402

TARGET_MS = 5.0
CONTEXTS = ["none", "full", "curated"]


def _run(bench: Path, examples: list, out: Path, concurrency: int) -> tuple[float, int]:
    # A fresh server per run: the fake compares each prompt with every earlier one (its
    # prefix-cache simulation), so a long-lived one gets slower with every call.
    with FakeLLM(answer="42") as llm:
        config = BenchConfig(["openai:fake"], CONTEXTS, out,  # type: ignore[arg-type]
                             concurrency=concurrency, base_url=llm.openai_url)
        start = time.perf_counter()
        outcome = asyncio.run(run_bench(examples, bench, config, progress_stream=io.StringIO()))
        elapsed = time.perf_counter() - start
        calls = len(llm.requests)
    if outcome.failed:
        raise SystemExit(f"{outcome.failed} calls failed: {outcome.summary['error_types']}")
    return elapsed, calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    random.seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_trajectories(work / "traj.jsonl", trajectories=40, steps=60)
        result = sample([work / "traj.jsonl"], "output", n=args.n, seed=0)
        bench = work / "bench.jsonl"
        with bench.open("w", encoding="utf-8") as fh:
            write_examples(result.examples, fh)
        examples = [json.loads(line) for line in bench.read_text("utf-8").splitlines()]
        calls = len(examples) * len(CONTEXTS)

        wall, _ = _run(bench, examples, work / "serial", concurrency=1)
        records = list(load_results(work / "serial" / RESULTS_FILE).latest.values())
        in_model = sum(r["latency"] for r in records)
        per_call_ms = (wall - in_model) / calls * 1000
        # the stricter reading of "per example": all of its calls (one per context)
        overhead_ms = (wall - in_model) / len(examples) * 1000
        print(f"concurrency 1: {calls} calls ({len(examples)} examples x {len(CONTEXTS)} "
              f"contexts) in {wall:.2f} s, {in_model:.2f} s of it in model calls "
              f"({in_model / calls * 1000:.2f} ms each)")
        print(f"overhead beyond the model calls: {per_call_ms:.2f} ms per call, "
              f"{overhead_ms:.2f} ms per example ({len(CONTEXTS)} calls)")

        wall8, _ = _run(bench, examples, work / "parallel", concurrency=8)
        print(f"concurrency 8: {calls} calls in {wall8:.2f} s ({calls / wall8:.0f} calls/s)")
        rerun, again = _run(bench, examples, work / "parallel", concurrency=8)
        print(f"rerun with every pair done: {rerun:.2f} s, {again} model calls")
    verdict = "OK" if overhead_ms <= TARGET_MS else "TOO SLOW"
    print(f"overhead {overhead_ms:.2f} ms per example (target <= {TARGET_MS:.0f} ms): {verdict}")
    return 0 if overhead_ms <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
