"""Confidence intervals and paired tests over per-example scores: pure functions, numpy only.

* ``bootstrap_ci``: the percentile bootstrap interval of a mean (resampling examples).
* ``paired_bootstrap``: the mean difference of two conditions on the same examples, its
  percentile interval from resampling examples (pairs stay together), and a two-sided
  p-value from the bootstrap distribution shifted to the null (mean difference 0).
* ``mcnemar_exact``: McNemar's exact test on two binary outcomes of the same examples
  (the binomial test on the discordant pairs).

Seeds are anything ``numpy.random.default_rng`` accepts (an int or a sequence of ints),
so that a caller can derive an independent, stable seed for every comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

Seed = int | Sequence[int]
_CHUNK_CELLS = 1 << 22  # resample rows per chunk x examples: bounds memory at ~32 MB


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class PairedDifference:
    """``mean`` of ``treatment - control`` over ``n`` paired examples."""

    mean: float
    low: float
    high: float
    p_value: float
    n: int


@dataclass(frozen=True)
class McNemar:
    """``only_control``: examples right under control only; ``only_treatment``: the reverse."""

    only_control: int
    only_treatment: int
    p_value: float


def _as_array(values: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError("expected a one-dimensional sequence of scores")
    if not np.all(np.isfinite(array)):
        raise ValueError("scores must be finite numbers")
    return array


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")


def bootstrap_means(values: npt.NDArray[np.float64], resamples: int,
                    seed: Seed) -> npt.NDArray[np.float64]:
    """Means of ``resamples`` samples of ``len(values)`` drawn with replacement."""
    n = len(values)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    rows = max(1, _CHUNK_CELLS // max(n, 1))
    for lo in range(0, resamples, rows):
        hi = min(resamples, lo + rows)
        index = rng.integers(0, n, size=(hi - lo, n))
        means[lo:hi] = values[index].mean(axis=1)
    return means


def _percentiles(means: npt.NDArray[np.float64], confidence: float) -> tuple[float, float]:
    alpha = 1 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_ci(values: Sequence[float] | npt.ArrayLike, *, resamples: int = 10_000,
                 confidence: float = 0.95, seed: Seed = 0) -> Interval:
    """The mean of ``values`` with its percentile bootstrap interval."""
    _check(resamples, confidence)
    array = _as_array(values)
    if len(array) == 0:
        raise ValueError("no values to bootstrap")
    low, high = _percentiles(bootstrap_means(array, resamples, seed), confidence)
    return Interval(float(array.mean()), low, high, len(array))


def paired_bootstrap(treatment: Sequence[float] | npt.ArrayLike,
                     control: Sequence[float] | npt.ArrayLike, *, resamples: int = 10_000,
                     confidence: float = 0.95, seed: Seed = 0) -> PairedDifference:
    """Mean of ``treatment - control`` (element i of both is the same example).

    The p-value is that of the bootstrap test of a zero mean difference: the bootstrap
    means, centred on zero, are at least as far from zero as the observed mean in
    ``(1 + count) / (1 + resamples)`` of the cases (never 0, which no resampling proves).
    """
    _check(resamples, confidence)
    a, b = _as_array(treatment), _as_array(control)
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} and {len(b)})")
    if len(a) == 0:
        raise ValueError("no pairs to bootstrap")
    diff = a - b
    observed = float(diff.mean())
    means = bootstrap_means(diff, resamples, seed)
    low, high = _percentiles(means, confidence)
    # A tolerance, so that resamples of a constant difference (equal up to rounding in the
    # last bit) count as "as extreme" as the observation when it is zero.
    tolerance = 1e-12 * max(1.0, abs(observed))
    extreme = np.count_nonzero(np.abs(means - observed) >= abs(observed) - tolerance)
    p_value = (1 + int(extreme)) / (1 + resamples)
    return PairedDifference(observed, low, high, min(1.0, p_value), len(a))


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided p-value of ``k`` successes in ``n`` fair coin flips."""
    if n == 0:
        return 1.0
    tail = min(k, n - k)
    # Integer arithmetic: float sums of binomial terms lose the tail for large n.
    count = sum(math.comb(n, i) for i in range(tail + 1))
    return float(min(Fraction(1), Fraction(2 * count, 2**n)))


def mcnemar_exact(treatment: Sequence[float] | npt.ArrayLike,
                  control: Sequence[float] | npt.ArrayLike) -> McNemar:
    """McNemar's exact test on binary outcomes (1 right, 0 wrong) of the same examples."""
    a, b = _as_array(treatment), _as_array(control)
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} and {len(b)})")
    if not (np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()):
        raise ValueError("McNemar's test needs binary outcomes (0 or 1)")
    only_treatment = int(np.count_nonzero((a == 1) & (b == 0)))
    only_control = int(np.count_nonzero((a == 0) & (b == 1)))
    p_value = binomial_two_sided(only_control, only_control + only_treatment)
    return McNemar(only_control, only_treatment, p_value)
