"""``themisto sample`` on 100,000 candidate steps: reading, filtering, drawing, writing.

Writes synthetic trajectories (varied code and output lengths, some empty outputs and
errors, a small runtime state per step) to a temporary JSONL file, then times what
``themisto sample`` does with it: read every step, apply the filters, draw 200 examples
and write them with their full histories.

    python benchmarks/sample_speed.py [--candidates 100000] [--steps 105] [--n 200]

Target: at most 5 s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from themisto_ext.evaluation.sample import MIN_PRIOR, sample, write_examples

TARGET_S = 5.0
WORDS = ["df", "x", "np.mean", "print", "plt.plot", "model.fit", "data", "groupby", "sum",
         "values", "reshape", "astype", "head()", "describe()", "merge", "apply", "lambda"]


def _text(rng: random.Random, mean: float) -> str:
    length = int(rng.lognormvariate(0, 1) * mean)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def make_step(rng: random.Random, tid: str, number: int) -> dict[str, Any]:
    output = "" if rng.random() < 0.25 else _text(rng, 120)
    error = {"ename": "KeyError", "evalue": "'a'", "traceback": "KeyError: 'a'"} \
        if rng.random() < 0.05 else None
    variables = {f"v{i}": {"type": "int", "size": 28, "size_exact": True,
                           "repr": str(rng.randint(0, 10**12))} for i in range(6)}
    variables["df"] = {"type": "DataFrame", "size": 10**6, "size_exact": True,
                       "shape": [1000, 4], "length": 1000, "repr": _text(rng, 150)}
    return {
        "format_version": 1, "trajectory_id": tid, "kernel_id": f"k-{tid}", "step": number,
        "cell_id": None, "notebook_path": "synthetic.ipynb",
        "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
        "code": _text(rng, 60), "output": output,
        "outputs": [{"output_type": "stream", "name": "stdout", "mime_types": ["text/plain"],
                     "text": output}] if output else [],
        "execution_time": rng.random(), "memory_bytes": 10**8,
        "runtime_variables": variables, "hash_index": f"{rng.getrandbits(64):016x}",
        "error": error,
    }


def write_trajectories(path: Path, trajectories: int, steps: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for t in range(trajectories):
            tid = f"{t:032x}"
            for number in range(1, steps + 1):
                fh.write(json.dumps(make_step(rng, tid, number), separators=(",", ":")) + "\n")
                count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=105, help="steps per trajectory")
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    per_trajectory = args.steps - MIN_PRIOR
    trajectories = -(-args.candidates // per_trajectory)
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "trajectories.jsonl", Path(tmp) / "bench.jsonl"
        steps = write_trajectories(source, trajectories, args.steps)
        size = source.stat().st_size
        start = time.perf_counter()
        for task in ("output", "next-cell"):
            t0 = time.perf_counter()
            result = sample([source], task, n=args.n, seed=0)  # type: ignore[arg-type]
            with out.open("w", encoding="utf-8") as fh:
                write_examples(result.examples, fh)
            elapsed = time.perf_counter() - t0
            print(f"{task:9}: {steps} steps ({size / 1e6:.0f} MB), "
                  f"{trajectories * per_trajectory} candidate steps, {result.candidates} after "
                  f"filters -> {len(result.examples)} examples "
                  f"({out.stat().st_size / 1e6:.0f} MB) in {elapsed:.2f} s")
        worst = (time.perf_counter() - start) / 2
    verdict = "OK" if worst <= TARGET_S else "TOO SLOW"
    print(f"mean {worst:.2f} s per sample run (target <= {TARGET_S:.0f} s): {verdict}")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
