"""How often 95% bootstrap intervals cover the true mean, by unit and number of trajectories.

Simulated benchmarks like the shared notebooks': trajectories of 25 examples whose scores
share a per-trajectory shift (a notebook is easy or hard for a model), with the spread
chosen so that resampling trajectories widens intervals about 1.7x, as it does on the
shared notebooks. For each number of trajectories, many benchmarks are drawn and the
share of intervals holding the true mean (0.5) is printed, for intervals resampling
examples and resampling trajectories. It backs ``report.MIN_CLUSTERS``::

    python benchmarks/cluster_coverage.py [--trials 400]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from themisto_ext.evaluation.stats import bootstrap_ci

SIZE = 25
SPREAD = 0.075
NOISE = 0.25


def draw(rng: np.random.Generator, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    shift = rng.normal(0, SPREAD, clusters)
    values = 0.5 + np.repeat(shift, SIZE) + rng.normal(0, NOISE, clusters * SIZE)
    return values, np.repeat(np.arange(clusters), SIZE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(2025)
    started = time.perf_counter()
    print(f"{'trajectories':>12}  {'examples':>8}  {'cover (examples)':>16}  "
          f"{'cover (trajectories)':>20}  {'width ratio':>11}")
    for clusters in (6, 10, 20, 40, 80):
        covered = {"example": 0, "trajectory": 0}
        ratios = []
        for trial in range(args.trials):
            values, labels = draw(rng, clusters)
            plain = bootstrap_ci(values, resamples=args.resamples, seed=trial)
            grouped = bootstrap_ci(values, resamples=args.resamples, seed=trial,
                                   clusters=list(labels))
            covered["example"] += plain.low <= 0.5 <= plain.high
            covered["trajectory"] += grouped.low <= 0.5 <= grouped.high
            ratios.append((grouped.high - grouped.low) / (plain.high - plain.low))
        print(f"{clusters:>12}  {clusters * SIZE:>8}  "
              f"{covered['example'] / args.trials:>16.3f}  "
              f"{covered['trajectory'] / args.trials:>20.3f}  {np.median(ratios):>11.2f}")
    print(f"({args.trials} benchmarks each, {args.resamples} resamples; "
          f"{time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
