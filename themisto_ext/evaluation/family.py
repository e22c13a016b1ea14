"""Which tests Holm's correction covers: a study's primary comparisons, and never a test
that cannot reject.

A comparison is left out of the family when it is identical by construction: two
conditions that gave the same answer on every example (``hybrid`` and ``copy-previous``
on next cells: hybrid's next cell *is* the previous cell), and, within a comparison that
differs, a metric on which every example scored the same under both (no difference to
test: the bootstrap p is 1) or a McNemar test without a discordant pair (b = c = 0:
p = 1). Such a test can never reject, so it cannot make a false discovery, yet counting
it makes Holm multiply every other p-value by a larger number (on 11 notebooks, 31 of a
report's 99 tests were such). Leaving out tests whose smallest attainable p-value is 1 is
Tarone's (1990) rule for discrete tests at its simplest.

``--primary A:B,...`` names the comparisons a study is about; the correction then covers
only their tests, and the others are reported as exploratory (``p_adjusted`` null). A
side is ``PREDICTOR`` or ``PREDICTOR@CONTEXT``; with no context on either side, a
comparison under every context the two share. A predictor's own name may hold a colon
(``openai:gpt-4o-mini``): a spec is split at the colon that leaves a known predictor on
both sides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Condition = tuple[str, str]
"""(predictor, context)."""


@dataclass(frozen=True)
class Side:
    predictor: str
    context: str | None

    def matches(self, condition: Condition) -> bool:
        return condition[0] == self.predictor and self.context in (None, condition[1])

    def __str__(self) -> str:
        return self.predictor if self.context is None else f"{self.predictor}@{self.context}"


@dataclass(frozen=True)
class Primary:
    treatment: Side
    control: Side

    def matches(self, treatment: Condition, control: Condition) -> bool:
        same_context = self.treatment.context is not None or self.control.context is not None \
            or treatment[1] == control[1]
        return same_context and self.treatment.matches(treatment) \
            and self.control.matches(control)

    def pairs(self, conditions: Sequence[Condition]) -> list[tuple[Condition, Condition]]:
        """Every (treatment, control) of ``conditions`` this spec names."""
        return [(t, c) for t in conditions for c in conditions
                if t != c and self.matches(t, c)]

    def __str__(self) -> str:
        return f"{self.treatment}:{self.control}"


def _side(text: str, known: dict[str, set[str]]) -> Side | None:
    predictor, _, context = text.partition("@")
    if predictor not in known or (context and context not in known[predictor]):
        return None
    return Side(predictor, context or None)


def parse_primary(text: str, conditions: Iterable[Condition]) -> list[Primary]:
    """The comparisons ``A:B,...`` names, each checked against the results' conditions."""
    known: dict[str, set[str]] = {}
    for predictor, context in conditions:
        known.setdefault(predictor, set()).add(context)
    specs: list[Primary] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        found = [Primary(t, c) for i, ch in enumerate(item) if ch == ":"
                 for t, c in [(_side(item[:i], known), _side(item[i + 1:], known))]
                 if t is not None and c is not None]
        if len(found) != 1:
            names = ", ".join(sorted(known))
            raise ValueError(f"--primary {item!r}: " + (
                "ambiguous" if found else "not PREDICTOR[@CONTEXT]:PREDICTOR[@CONTEXT] of "
                f"these results (predictors: {names})"))
        specs.append(found[0])
    if not specs:
        raise ValueError("--primary: name at least one comparison (A:B)")
    return specs


def degenerate(treatment: Sequence[float], control: Sequence[float]) -> bool:
    """True when both conditions scored every example alike: no difference to test."""
    return list(treatment) == list(control)
