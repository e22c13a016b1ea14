"""Train/test splits of a training export, by whole groups (trajectories or notebooks).

A split is never drawn by example: consecutive steps of a trajectory share almost all of
their prompt (the history only grows), so an example in the test split whose neighbour is
in the training split has been seen nearly whole. Groups are shuffled by the seed, then
laid into the splits in the order named, each getting its fraction of the groups rounded
by largest remainder (and at least one group while there are groups to give). The result
depends only on the set of group names, the fractions and the seed, not on the order the
groups were read in; adding groups can move others, so the exported file, not a re-export,
is the record of a split.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import numpy as np

from themisto_ext.errors import SplitSpecError as SplitSpecError  # re-exported: raised here

SPLIT_BY = ("trajectory", "notebook")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


def parse_split(text: str) -> tuple[tuple[str, float], ...]:
    """``"train=0.8,test=0.2"`` -> ``(("train", 0.8), ("test", 0.2))``."""
    parts: list[tuple[str, float]] = []
    for item in text.split(","):
        name, equals, raw = item.strip().partition("=")
        name = name.strip()
        if not equals or not _NAME.fullmatch(name):
            raise SplitSpecError(f"--split {text!r}: each part is NAME=FRACTION (a name of "
                                 f"letters, digits, - and _), got {item.strip()!r}")
        try:
            fraction = float(raw)
        except ValueError:
            raise SplitSpecError(f"--split {text!r}: {raw.strip()!r} is not a number") from None
        if not math.isfinite(fraction) or not 0 < fraction <= 1:
            raise SplitSpecError(f"--split {text!r}: the fraction of {name} must be more "
                                 "than 0 and at most 1")
        if any(name == seen for seen, _ in parts):
            raise SplitSpecError(f"--split {text!r}: {name} is named twice")
        parts.append((name, fraction))
    if abs(sum(f for _, f in parts) - 1) > 1e-6:
        raise SplitSpecError(f"--split {text!r}: the fractions sum to "
                             f"{sum(f for _, f in parts):g}, not 1")
    return tuple(parts)


def _counts(groups: int, fractions: Sequence[float]) -> list[int]:
    """Groups per split: largest remainder, then at least one for each split while any
    split has more than one to give (a named test split must not come out empty)."""
    exact = [groups * f for f in fractions]
    counts = [math.floor(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: groups - sum(counts)]:
        counts[i] += 1
    for i in range(len(counts)):
        if counts[i] == 0:
            donor = max(range(len(counts)), key=lambda j: (counts[j], -j))
            if counts[donor] > 1:
                counts[donor] -= 1
                counts[i] += 1
    return counts


def assign_splits(groups: Iterable[str], split: Sequence[tuple[str, float]],
                  seed: int) -> dict[str, str]:
    """Each group's split: the groups sorted, shuffled by ``seed``, cut in the split's
    order by ``_counts``."""
    names = sorted(set(groups))
    order = np.random.default_rng(seed).permutation(len(names))
    counts = _counts(len(names), [f for _, f in split])
    assigned: dict[str, str] = {}
    start = 0
    for (name, _), count in zip(split, counts, strict=True):
        for index in order[start:start + count]:
            assigned[names[int(index)]] = name
        start += count
    return assigned
