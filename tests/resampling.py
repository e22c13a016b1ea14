"""A reference implementation of whole-trajectory resampling, written out plainly, that the
report's bootstrap is checked against (issue 25, item 1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def reference_trajectory_bootstrap(values: Sequence[float], trajectories: Sequence[str],
                                   resamples: int, seed: int | list[int]) -> np.ndarray:
    """Draw as many trajectories as there are, with replacement, pool every example of each
    drawn one, take the mean; ``resamples`` times."""
    rng = np.random.default_rng(seed)
    ids = list(dict.fromkeys(trajectories))
    members = {t: [float(v) for v, u in zip(values, trajectories, strict=True) if u == t]
               for t in ids}
    means = []
    for _ in range(resamples):
        pooled = [v for k in rng.integers(0, len(ids), size=len(ids)) for v in members[ids[k]]]
        means.append(sum(pooled) / len(pooled))
    return np.array(means)


def percentile_interval(means: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    alpha = 1 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)
