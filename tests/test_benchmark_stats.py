"""Bootstrap intervals, paired bootstrap and McNemar's exact test against known values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from resampling import percentile_interval, reference_trajectory_bootstrap

from themisto_ext.evaluation.stats import (
    binomial_two_sided,
    bootstrap_ci,
    holm,
    mcnemar_exact,
    paired_bootstrap,
)


def exact_two_sided(k: int, n: int) -> float:
    """The textbook exact binomial test (p = 1/2): the probability of every outcome at most
    as likely as the observed one (what scipy.stats.binomtest computes)."""
    pmf = [Fraction(math.comb(n, i), 2**n) for i in range(n + 1)]
    return float(min(Fraction(1), sum(p for p in pmf if p <= pmf[k])))


@pytest.mark.parametrize(("only_control", "only_treatment", "expected"), [
    (1, 6, 0.125),            # 2 * (1 + 7) / 2**7
    (0, 10, 2 / 1024),        # 2 * 1 / 2**10
    (5, 5, 1.0),
    (0, 0, 1.0),              # no discordant pairs: no evidence either way
    (2, 12, 2 * (1 + 14 + 91) / 2**14),
])
def test_mcnemar_hand_computed(only_control, only_treatment, expected):
    concordant = 7
    treatment = [1] * only_treatment + [0] * only_control + [1] * concordant + [0] * 3
    control = [0] * only_treatment + [1] * only_control + [1] * concordant + [0] * 3
    result = mcnemar_exact(treatment, control)
    assert (result.only_control, result.only_treatment) == (only_control, only_treatment)
    assert result.p_value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (3, 20), (10, 20), (17, 40), (150, 400),
                                      (0, 1500)])
def test_binomial_tail_matches_textbook_definition(k, n):
    assert binomial_two_sided(k, n) == pytest.approx(exact_two_sided(k, n), rel=1e-12, abs=0)
    assert binomial_two_sided(k, n) == binomial_two_sided(n - k, n)


def test_mcnemar_rejects_non_binary_and_unequal_lengths():
    with pytest.raises(ValueError, match="binary"):
        mcnemar_exact([0.5, 1], [1, 0])
    with pytest.raises(ValueError, match="length"):
        mcnemar_exact([1, 0, 1], [1, 0])


def test_bootstrap_of_a_constant_is_the_constant():
    ci = bootstrap_ci([0.25] * 40, resamples=500, seed=1)
    assert (ci.mean, ci.low, ci.high, ci.n) == (0.25, 0.25, 0.25, 40)


def test_bootstrap_is_seeded():
    values = np.random.default_rng(3).random(50)
    a = bootstrap_ci(values, resamples=2000, seed=7)
    assert a == bootstrap_ci(values, resamples=2000, seed=7)
    assert a != bootstrap_ci(values, resamples=2000, seed=8)
    assert a.low < a.mean < a.high


def test_bootstrap_interval_is_close_to_the_normal_one_for_a_large_sample():
    values = np.random.default_rng(11).normal(3.0, 2.0, size=4000)
    ci = bootstrap_ci(values, resamples=4000, seed=0)
    half = 1.959964 * values.std(ddof=1) / math.sqrt(len(values))
    assert ci.low == pytest.approx(values.mean() - half, abs=half * 0.08)
    assert ci.high == pytest.approx(values.mean() + half, abs=half * 0.08)


def test_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(2024)
    trials, covered = 400, 0
    for t in range(trials):
        sample = (rng.random(80) < 0.3).astype(float)
        ci = bootstrap_ci(sample, resamples=1000, seed=t)
        covered += ci.low <= 0.3 <= ci.high
    # percentile intervals undercover a little at n = 80; 400 trials: sd of the rate ~0.011
    assert 0.90 <= covered / trials <= 0.985


def test_paired_bootstrap_of_identical_conditions():
    values = np.random.default_rng(5).random(30)
    d = paired_bootstrap(values, values, resamples=1000, seed=0)
    assert (d.mean, d.low, d.high, d.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_paired_bootstrap_of_a_constant_shift_is_as_significant_as_resampling_can_show():
    control = np.random.default_rng(6).random(30)
    d = paired_bootstrap(control + 0.1, control, resamples=999, seed=0)
    assert d.mean == pytest.approx(0.1)
    assert d.low == pytest.approx(0.1) and d.high == pytest.approx(0.1)
    assert d.p_value == pytest.approx(1 / 1000)


def test_paired_bootstrap_sign_and_pairing():
    rng = np.random.default_rng(8)
    base = rng.random(200)
    # a large between-example spread with a small, consistent improvement: only a paired
    # analysis sees it
    treatment = base * 10 + 0.05 + rng.normal(0, 0.02, 200)
    control = base * 10
    d = paired_bootstrap(treatment, control, resamples=2000, seed=1)
    assert 0.04 < d.low < d.mean < d.high < 0.06
    assert d.p_value < 0.001
    reverse = paired_bootstrap(control, treatment, resamples=2000, seed=1)
    assert reverse.mean == pytest.approx(-d.mean)


def test_paired_bootstrap_p_value_rejects_a_true_null_about_5_percent_of_the_time():
    rng = np.random.default_rng(99)
    trials, rejected = 300, 0
    for t in range(trials):
        a, b = rng.normal(size=60), rng.normal(size=60)
        rejected += paired_bootstrap(a, b, resamples=500, seed=t).p_value < 0.05
    assert 0.02 <= rejected / trials <= 0.11


@pytest.mark.parametrize("call", [
    lambda: bootstrap_ci([]),
    lambda: bootstrap_ci([1.0, float("nan")]),
    lambda: bootstrap_ci([1.0], resamples=0),
    lambda: bootstrap_ci([1.0], confidence=1.0),
    lambda: paired_bootstrap([1.0, 2.0], [1.0]),
    lambda: paired_bootstrap([], []),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


# --- clusters, strata, Holm ---------------------------------------------------------------


def clustered_sample(rng: np.random.Generator, clusters: int, size: int,
                     spread: float = 0.3) -> tuple[np.ndarray, list[int]]:
    """Scores of ``clusters`` trajectories of ``size`` examples whose true mean is 0.5:
    each trajectory shifts its examples by a common amount (the notebook's difficulty)."""
    shift = rng.normal(0, spread, clusters)
    values = np.clip(0.5 + np.repeat(shift, size) + rng.normal(0, 0.15, clusters * size), 0, 1)
    # clipping is symmetric around 0.5: the true mean stays 0.5
    return values, list(np.repeat(np.arange(clusters), size))


def test_resampling_trajectories_covers_where_resampling_examples_does_not():
    """The issue's first point: examples of a trajectory are alike, so intervals that treat
    them as independent are far too narrow."""
    rng = np.random.default_rng(12)
    trials = 200
    covered = {"example": 0, "trajectory": 0}
    for t in range(trials):
        values, clusters = clustered_sample(rng, 40, 8)
        by_example = bootstrap_ci(values, resamples=500, seed=t)
        by_cluster = bootstrap_ci(values, resamples=500, seed=t, clusters=clusters)
        covered["example"] += by_example.low <= 0.5 <= by_example.high
        covered["trajectory"] += by_cluster.low <= 0.5 <= by_cluster.high
        assert by_cluster.clusters == 40 and by_example.clusters == by_cluster.n == 320
    assert covered["example"] / trials < 0.75
    assert 0.88 <= covered["trajectory"] / trials <= 0.99


def test_strata_keep_their_share_in_every_resample():
    # Two strata of trajectories whose values are constant: only the mix could vary, and
    # the design fixes it.
    values = [0.0] * 30 + [1.0] * 10
    strata = ["a"] * 30 + ["b"] * 10
    clusters = [i % 6 for i in range(30)] + [6 + i % 4 for i in range(10)]
    ci = bootstrap_ci(values, resamples=500, seed=1, clusters=clusters, strata=strata)
    assert ci.low == pytest.approx(0.25) and ci.high == pytest.approx(0.25)
    unstratified = bootstrap_ci(values, resamples=500, seed=1, clusters=clusters)
    assert unstratified.high - unstratified.low > 0.05


def test_the_bootstrap_resamples_whole_trajectories_as_a_reference_implementation_does():
    """Issue 25, item 1: a trajectory's examples fall in several length strata; the
    interval must be that of resampling whole trajectories, not of pieces of them."""
    rng = np.random.default_rng(21)
    values, clusters = clustered_sample(rng, 11, 17)
    labels = [f"t{c}" for c in clusters]
    seed = [7, 99]
    expected = reference_trajectory_bootstrap(list(values), labels, 3000, seed)
    ci = bootstrap_ci(values, resamples=3000, seed=seed, clusters=labels)
    assert (ci.low, ci.high) == pytest.approx(percentile_interval(expected), rel=1e-12)
    assert ci.clusters == 11
    control = np.clip(values - rng.normal(0.05, 0.1, len(values)), 0, 1)
    diffs = reference_trajectory_bootstrap(list(values - control), labels, 3000, seed)
    d = paired_bootstrap(values, control, resamples=3000, seed=seed, clusters=labels)
    assert (d.low, d.high) == pytest.approx(percentile_interval(diffs), rel=1e-12)
    observed = float(np.mean(values - control))
    extreme = np.count_nonzero(np.abs(diffs - observed) >= abs(observed) - 1e-12)
    assert d.p_value == pytest.approx((1 + extreme) / 3001)


def test_strata_that_split_a_trajectory_are_refused():
    # length strata put a trajectory's examples in several strata: resampling within them
    # would resample pieces of trajectories under the trajectory's name
    with pytest.raises(ValueError, match="cluster 't0' has examples in strata 'q1' and 'q4'"):
        bootstrap_ci([0.1, 0.2, 0.3], clusters=["t0", "t0", "t1"], strata=["q1", "q4", "q4"])


def test_paired_differences_resample_whole_trajectories():
    rng = np.random.default_rng(4)
    control, clusters = clustered_sample(rng, 30, 6)
    # the treatment helps some trajectories a lot and others not at all
    gain = np.repeat(rng.choice([0.0, 0.2], 30), 6)
    treatment = control + gain
    by_cluster = paired_bootstrap(treatment, control, resamples=2000, seed=0, clusters=clusters)
    by_example = paired_bootstrap(treatment, control, resamples=2000, seed=0)
    assert by_cluster.mean == pytest.approx(by_example.mean) == pytest.approx(gain.mean())
    assert by_cluster.clusters == 30 and by_cluster.n == 180
    assert (by_cluster.high - by_cluster.low) > 1.5 * (by_example.high - by_example.low)


def test_labels_must_cover_every_value():
    with pytest.raises(ValueError, match="clusters label 2 examples, not 3"):
        bootstrap_ci([1.0, 2.0, 3.0], clusters=["a", "b"])
    with pytest.raises(ValueError, match="strata label"):
        paired_bootstrap([1.0, 2.0], [1.0, 1.0], strata=["q1"])


def test_holm_hand_computed():
    # sorted: 0.01 (x4), 0.02 (x3), 0.03 (x2), 0.5 (x1); then made non-decreasing
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.9, 0.3]) == pytest.approx([0.9, 0.6])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
    assert holm([0.4, 0.4, 0.4]) == pytest.approx([1.0, 1.0, 1.0])
    assert holm([]) == []
