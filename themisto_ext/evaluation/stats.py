"""Confidence intervals and paired tests over per-example scores: pure functions, numpy only.

Examples are not independent: the steps of one trajectory share a notebook, its data and
its author. So the unit of resampling is a *cluster* (a trajectory), drawn with
replacement with all its examples; a resampled mean is the ratio of the resampled sums to
the resampled counts. *Strata*, when given, are strata of clusters: every cluster lies in
one stratum, each stratum's clusters are resampled on their own and the strata are
combined with their fixed shares of the examples. A label that puts one cluster's
examples in two strata is refused: resampling such strata would split the cluster, and
the interval would be that of a smaller unit than the one it names (``themisto
sample``'s target-length strata are strata of examples, which a trajectory crosses; they
stratify only the example bootstrap). Without clusters every example is its own cluster
(the plain bootstrap); without strata there is one stratum.

* ``bootstrap_ci``: the percentile bootstrap interval of a mean.
* ``paired_bootstrap``: the mean difference of two conditions on the same examples, its
  percentile interval from resampling the same way (the two scores of an example stay
  together), and a two-sided p-value from the bootstrap distribution shifted to the null.
* ``mcnemar_exact``: McNemar's exact test on two binary outcomes of the same examples
  (the binomial test on the discordant pairs; it takes examples as independent).
* ``holm``: Holm's step-down adjustment of a family of p-values.

Seeds are anything ``numpy.random.default_rng`` accepts (an int or a sequence of ints),
so that a caller can derive an independent, stable seed for every comparison.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

Seed = int | Sequence[int]
Labels = Sequence[Hashable] | None
_CHUNK_CELLS = 1 << 22  # resample rows per chunk x clusters: bounds memory at ~32 MB


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int
    clusters: int = 0
    """Distinct clusters among the ``n`` examples (``n`` when each example is its own)."""


@dataclass(frozen=True)
class PairedDifference:
    """``mean`` of ``treatment - control`` over ``n`` paired examples."""

    mean: float
    low: float
    high: float
    p_value: float
    n: int
    clusters: int = 0


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


@dataclass(frozen=True)
class _Stratum:
    share: float
    """The stratum's fixed share of the examples."""
    sums: npt.NDArray[np.float64]
    counts: npt.NDArray[np.float64]
    """Per cluster of the stratum: the sum of its values and how many there are."""


def _design(values: npt.NDArray[np.float64], clusters: Labels,
            strata: Labels) -> tuple[list[_Stratum], int]:
    n = len(values)
    for name, labels in (("clusters", clusters), ("strata", strata)):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} label {len(labels)} examples, not {n}")
    cluster_of = list(range(n)) if clusters is None else list(clusters)
    stratum_of: list[Hashable] = [0] * n if strata is None else list(strata)
    groups: dict[Hashable, dict[Hashable, list[int]]] = {}
    home: dict[Hashable, Hashable] = {}
    for i in range(n):
        cluster, stratum = cluster_of[i], stratum_of[i]
        if home.setdefault(cluster, stratum) != stratum:
            raise ValueError(f"cluster {cluster!r} has examples in strata {home[cluster]!r} "
                             f"and {stratum!r}: strata must be strata of clusters")
        groups.setdefault(stratum, {}).setdefault(cluster, []).append(i)
    design = []
    for members in groups.values():
        sums = np.array([values[idx].sum() for idx in members.values()])
        counts = np.array([float(len(idx)) for idx in members.values()])
        design.append(_Stratum(float(counts.sum()) / n, sums, counts))
    return design, len(set(cluster_of))


def bootstrap_means(values: npt.NDArray[np.float64], resamples: int, seed: Seed,
                    clusters: Labels = None, strata: Labels = None) -> npt.NDArray[np.float64]:
    """``resamples`` bootstrap means of ``values``, clusters drawn within strata."""
    rng = np.random.default_rng(seed)
    design, _ = _design(values, clusters, strata)
    means = np.zeros(resamples)
    for stratum in design:
        m = len(stratum.sums)
        rows = max(1, _CHUNK_CELLS // max(m, 1))
        for lo in range(0, resamples, rows):
            hi = min(resamples, lo + rows)
            index = rng.integers(0, m, size=(hi - lo, m))
            means[lo:hi] += stratum.share * (stratum.sums[index].sum(axis=1)
                                             / stratum.counts[index].sum(axis=1))
    return means


def _percentiles(means: npt.NDArray[np.float64], confidence: float) -> tuple[float, float]:
    alpha = 1 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def count_clusters(n: int, clusters: Labels) -> int:
    return n if clusters is None else len(set(clusters))


def bootstrap_ci(values: Sequence[float] | npt.ArrayLike, *, resamples: int = 10_000,
                 confidence: float = 0.95, seed: Seed = 0, clusters: Labels = None,
                 strata: Labels = None) -> Interval:
    """The mean of ``values`` with its percentile bootstrap interval; ``clusters`` and
    ``strata`` label each value's cluster and stratum (see the module)."""
    _check(resamples, confidence)
    array = _as_array(values)
    if len(array) == 0:
        raise ValueError("no values to bootstrap")
    means = bootstrap_means(array, resamples, seed, clusters, strata)
    low, high = _percentiles(means, confidence)
    return Interval(float(array.mean()), low, high, len(array),
                    count_clusters(len(array), clusters))


def paired_bootstrap(treatment: Sequence[float] | npt.ArrayLike,
                     control: Sequence[float] | npt.ArrayLike, *, resamples: int = 10_000,
                     confidence: float = 0.95, seed: Seed = 0, clusters: Labels = None,
                     strata: Labels = None) -> PairedDifference:
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
    means = bootstrap_means(diff, resamples, seed, clusters, strata)
    low, high = _percentiles(means, confidence)
    # A tolerance, so that resamples of a constant difference (equal up to rounding in the
    # last bit) count as "as extreme" as the observation when it is zero.
    tolerance = 1e-12 * max(1.0, abs(observed))
    extreme = np.count_nonzero(np.abs(means - observed) >= abs(observed) - tolerance)
    p_value = (1 + int(extreme)) / (1 + resamples)
    return PairedDifference(observed, low, high, min(1.0, p_value), len(a),
                            count_clusters(len(a), clusters))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest of m is
    multiplied by ``m - k + 1``, then made non-decreasing in that order, capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


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
