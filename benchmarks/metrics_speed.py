"""Speed of themisto_ext.prediction.metrics against the packages it reimplements.

Scores seeded prediction/reference pairs of code and cell-output text (each text 1-5 kB)
with ``score_many`` and with sacrebleu's ``CHRF`` plus rouge-score's ``rougeL`` (and a
strip-and-compare exact match), then prints both times, the ratio, and the largest
difference between the two sets of scores.

    pip install sacrebleu rouge-score   # the references; not dependencies of the package
    python benchmarks/metrics_speed.py [--pairs 10000] [--reference-pairs N] [--seed 0]

The references take about a minute per 1,000 pairs (rouge-score's LCS is pure Python);
``--reference-pairs N`` times them on the first N pairs only and extrapolates, which the
output says.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable

from themisto_ext.prediction.metrics import score, score_many

NAMES = ["df", "data", "model", "X_train", "y_test", "scores", "result", "ages", "counts", "arr"]
CALLS = ["fit", "predict", "groupby", "mean", "describe", "head", "merge", "apply", "plot"]
WORDS = ["the", "value", "of", "loss", "accuracy", "epoch", "train", "test", "column", "rows"]


def code_line(rng: random.Random) -> str:
    name, other, call = rng.choice(NAMES), rng.choice(NAMES), rng.choice(CALLS)
    return rng.choice(
        [
            f"{name} = {other}.{call}({rng.choice(NAMES)}, axis={rng.randint(0, 1)})",
            f"for i in range({rng.randint(2, 500)}):",
            f"    {name}[i] = {other}[i] * {rng.random():.3f}",
            f"print(f'{{{name}.shape}} {rng.choice(WORDS)}')",
            f"import {rng.choice(['numpy as np', 'pandas as pd', 'torch', 'sklearn.metrics'])}",
            f"def {call}_{name}(x, y={rng.randint(0, 9)}):",
            f"    return x.{call}() + y  # {' '.join(rng.choices(WORDS, k=3))}",
        ]
    )


def output_line(rng: random.Random) -> str:
    return rng.choice(
        [
            f"{rng.randint(0, 9999):<6}" + "  ".join(f"{rng.gauss(0, 99):10.4f}" for _ in "abcd"),
            f"Epoch {rng.randint(1, 50)}/50 - loss: {rng.random():.4f} - accuracy: "
            f"{rng.random():.4f}",
            f"array([{', '.join(f'{rng.random():.8f}' for _ in range(5))}])",
            f"{rng.choice(NAMES)}    {rng.choice(['int64', 'float64', 'object', 'bool'])}",
            f'  File "/home/user/analysis.py", line {rng.randint(1, 400)}, in '
            f"{rng.choice(CALLS)}",
            f"{rng.choice(['KeyError', 'ValueError', 'TypeError'])}: "
            f"'{rng.choice(NAMES)}' {' '.join(rng.choices(WORDS, k=4))}",
            # Progress bars and accents: the non-ASCII share of real outputs.
            f"{rng.randint(0, 100)}%|{'█' * rng.randint(0, 10)}| {rng.randint(0, 99)}/99 "
            f"[00:{rng.randint(10, 59)}<00:00, {rng.random() * 50:.2f}it/s] café",
        ]
    )


def text(rng: random.Random, size: int, line: Callable[[random.Random], str]) -> str:
    lines: list[str] = []
    length = 0
    while length < size:
        lines.append(line(rng))
        length += len(lines[-1]) + 1
    return "\n".join(lines)[:size]


def near_miss(rng: random.Random, reference: str) -> str:
    lines = reference.split("\n")
    for _ in range(rng.randint(1, max(1, len(lines) // 4))):
        i = rng.randrange(len(lines))
        change = rng.random()
        if change < 0.4:  # a different number, as a model guessing values would write
            lines[i] = "".join(str(rng.randint(0, 9)) if c.isdigit() and rng.random() < 0.3
                               else c for c in lines[i])
        elif change < 0.7 and len(lines) > 1:
            del lines[i]
        else:
            lines.insert(i, lines[rng.randrange(len(lines))])
    return "\n".join(lines)


def make_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        kind = rng.choice([code_line, output_line])
        reference = text(rng, rng.randint(1000, 5000), kind)
        roll = rng.random()
        if roll < 0.6:
            prediction = near_miss(rng, reference)
        elif roll < 0.9:
            prediction = text(rng, rng.randint(1000, 5000), rng.choice([code_line, output_line]))
        else:
            prediction = reference
        pairs.append((prediction[:5000].ljust(1000), reference))
    return pairs


def reference_scores(pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import CHRF

    chrf, rouge = CHRF(), rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return [
        {
            "exact_match": float(p.strip() == r.strip()),
            "rouge_l": rouge.score(r, p)["rougeL"].fmeasure,
            "chrf": chrf.sentence_score(p, [r]).score / 100,
        }
        for p, r in pairs
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--reference-pairs", type=int, default=None,
                        help="time the references on this many pairs and extrapolate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    pairs = make_pairs(args.pairs, args.seed)
    predictions, references = [p for p, _ in pairs], [r for _, r in pairs]
    chars = sum(len(p) + len(r) for p, r in pairs)
    print(f"{len(pairs)} pairs, {chars / 1e6:.1f} M characters")

    score("warm up", "imports and first allocations")
    # CPU time too: on a shared machine it moves less than wall time.
    wall, cpu = time.perf_counter(), time.process_time()
    ours = score_many(predictions, references)
    ours_wall, ours_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"themisto_ext.prediction.metrics.score_many: {ours_wall:8.2f} s wall "
          f"{ours_cpu:8.2f} s CPU")

    sample = pairs[: args.reference_pairs] if args.reference_pairs else pairs
    wall, cpu = time.perf_counter(), time.process_time()
    expected = reference_scores(sample)
    scale = len(pairs) / len(sample)
    ref_wall, ref_cpu = (time.perf_counter() - wall) * scale, (time.process_time() - cpu) * scale
    note = f" (timed on {len(sample)} pairs, extrapolated)" if len(sample) < len(pairs) else ""
    print(f"sacrebleu + rouge-score:         {ref_wall:8.2f} s wall {ref_cpu:8.2f} s CPU{note}")
    print(f"speed-up: {ref_wall / ours_wall:.0f}x wall, {ref_cpu / ours_cpu:.0f}x CPU")

    worst = max(abs(o[k] - e[k]) for o, e in zip(ours, expected, strict=False) for k in e)
    print(f"largest score difference on {len(sample)} pairs: {worst:.2e}")
    if worst > 1e-9:
        sys.exit("the metrics disagree with the references")


if __name__ == "__main__":
    main()
