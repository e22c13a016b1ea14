"""What a LoRA adapter costs the local model: the same prompts through ``local`` and
``local+ADAPTER.gguf``, each in its own model process as the server runs it.

Prints, per predictor: prompt evaluation (tokens/s, every prompt cold: no prefix reuse, so
the adapter's cost on the prompt is all in it), generation (tokens/s: completion tokens
over the time after the prompt), the answer length in tokens, and seconds per prediction
(median, p95). Time per prediction is generation rate times answer length: an adapter that
answers longer is slower live even when it computes no slower; both are shown.

    python benchmarks/adapter_speed.py BENCH.jsonl [--adapter PATH.gguf] [--n 24]
                                        [--context full] [--budget 2500] [--max-tokens 64]

``BENCH.jsonl`` is a ``themisto sample`` file (output task); ``--max-tokens`` is the live
cap (``local_max_tokens``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

from themisto_ext.prediction.clients import make_predictor
from themisto_ext.prediction.run import predict
from themisto_ext.records import Scope

COMMITTED = Path(__file__).resolve().parents[1] / "themisto_ext" / "adapters" / \
    "themisto-smollm2-135m-lora.gguf"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(spec: str, examples: list[dict], context: str, budget: int,
              max_tokens: int) -> list[dict]:
    """Every example's prediction record through ``spec`` (its own process, cold prompts)."""
    predictor = make_predictor(spec, reuse_prefix=False, max_tokens=max_tokens)
    records = []
    try:
        await predictor.load()  # type: ignore[attr-defined]  # the model's load: not timed
        for number, example in enumerate(examples):
            target = example["target"]
            records.append(await predict(
                predictor, example["history"], "output", context,  # type: ignore[arg-type]
                scope=Scope(target["trajectory_id"]), target_step=target["step"],
                target_code=target["code"], budget_chars=budget,
                session=f"{spec}-{max_tokens}-{number}"))
    finally:
        await predictor.aclose()
    return records


def measure(specs: list[str], examples: list[dict], context: str, budget: int,
            max_tokens: int) -> dict[str, dict[str, list[float]]]:
    """A pass with a 1-token cap times the prompts; a pass with ``max_tokens`` the answers:
    generation is what the second adds, per token it adds."""
    found: dict[str, dict[str, list[float]]] = {
        s: {"prompt_tps": [], "gen_tps": [], "tokens": [], "seconds": []} for s in specs}
    for spec in specs:
        short = asyncio.run(run(spec, examples, context, budget, 1))
        full = asyncio.run(run(spec, examples, context, budget, max_tokens))
        row = found[spec]
        for one, whole in zip(short, full, strict=True):
            if one["error"] or whole["error"]:
                continue
            row["prompt_tps"].append(one["prompt_tokens"] / max(one["latency"], 1e-6))
            extra = (whole["completion_tokens"] or 0) - (one["completion_tokens"] or 0)
            if extra > 0 and whole["latency"] > one["latency"]:
                row["gen_tps"].append(extra / (whole["latency"] - one["latency"]))
            row["tokens"].append(whole["completion_tokens"] or 0)
            row["seconds"].append(whole["latency"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path)
    parser.add_argument("--adapter", type=Path, default=COMMITTED)
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--context", default="full")
    parser.add_argument("--budget", type=int, default=2500)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    examples = [json.loads(line) for line in args.bench.read_text().splitlines()][:args.n]
    specs = ["local", f"local+{args.adapter}"]
    found = measure(specs, examples, args.context, args.budget, args.max_tokens)
    summary = {}
    for spec, row in found.items():
        summary[spec] = {
            "prompt_tokens_per_s": round(statistics.median(row["prompt_tps"]), 1)
            if row["prompt_tps"] else None,
            "generation_tokens_per_s": round(statistics.median(row["gen_tps"]), 1)
            if row["gen_tps"] else None,
            "answer_tokens_mean": round(statistics.mean(row["tokens"]), 1),
            "seconds_p50": round(statistics.median(row["seconds"]), 3),
            "seconds_p95": round(percentile(row["seconds"], 0.95), 3)}
        s = summary[spec]
        print(f"{spec}: prompt {s['prompt_tokens_per_s']} tok/s, generation "
              f"{s['generation_tokens_per_s']} tok/s, answers {s['answer_tokens_mean']} "
              f"tokens, {s['seconds_p50']} s p50 / {s['seconds_p95']} s p95 a prediction")
    print(json.dumps({"examples": len(examples), "context": args.context,
                      "budget": args.budget, "max_tokens": args.max_tokens,
                      "predictors": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
