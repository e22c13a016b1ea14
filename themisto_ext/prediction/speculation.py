"""Speculative output predictions: a cell's output predicted from its text before it runs.

A person types a cell, pauses, reads it and only then runs it; a CPU model that starts
when the cell starts answers after the real output of every fast cell (issue 16: p50
1.26 s, p95 9.2 s from Shift+Enter on a fresh 2-core machine). The front end therefore
announces a code cell's text once it has been stable for a pause, and when the cell is
selected (``POST /speculations``); the live scheduler (``live.py``) predicts its output
from the trajectory as it stands, with exactly the prompt and session the live path
would use when the cell starts, and keeps the answer here without storing it.

When the cell then starts with the same text right after the same step, the live path
takes the kept answer (or waits for the one being written) instead of calling the model;
anything else throws the speculation away. This module is the bookkeeping only: which
speculation a trajectory has (at most one: a newer text supersedes the older one, whose
job is cancelled, which aborts a local generation at its next token and drops a job still
queued for the local worker), and whether a starting cell matches it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Literal

from themisto_ext.records import Prediction, PredictionContext

Combo = tuple[str, PredictionContext]
"""(predictor name, context) of one prediction."""
Fate = Literal["used", "thrown_away"]


@dataclass(eq=False)
class Speculation:
    """One announced cell text of one trajectory and its predictions, made or under way."""

    trajectory_id: str
    code: str
    after_step: int
    """The last step of the trajectory the predictions were made from."""
    cell_id: str | None
    outcomes: dict[Combo, asyncio.Future[Prediction | None]] = field(default_factory=dict)
    """One per predictor and context: the record, or None when it was not made
    (superseded, failed before a record existed)."""
    ready_at: dict[Combo, float] = field(default_factory=dict)
    """Wall-clock time (``time.time()``) each record was ready."""
    job: asyncio.Task[None] | None = None
    asked_at: float = field(default_factory=time.time)
    cpu_seconds: float = 0.0
    """What this machine's model spent on it so far (see ``Speculations.spend``)."""
    written: dict[Combo, str] = field(default_factory=dict)
    """The answer written so far of each prediction under way (not shown yet)."""
    running: bool = False
    """Its cell started while a prediction was still being written: the rest of the
    answer is streamed as that cell's, under ``running_cell``."""
    running_cell: str | None = None
    fate: Fate | None = None

    @property
    def target_step(self) -> int:
        return self.after_step + 1

    def matches(self, code: str | None, target_step: int) -> bool:
        return code == self.code and target_step == self.target_step

    def settle(self, combo: Combo, record: Prediction | None) -> None:
        """Hand over one prediction (None: it was not made)."""
        future = self.outcomes[combo]
        if not future.done():
            if record is not None:
                self.ready_at[combo] = time.time()
            future.set_result(record)

    def cancel(self) -> None:
        """Stop the work under way and settle what is left as not made."""
        if self.job is not None and not self.job.done():
            self.job.cancel()
        for future in self.outcomes.values():
            if not future.done():
                future.set_result(None)

    @property
    def done(self) -> bool:
        return all(f.done() for f in self.outcomes.values())


class Speculations:
    """At most one speculation per trajectory (a kernel runs one cell at a time)."""

    def __init__(self) -> None:
        self._by_trajectory: dict[str, Speculation] = {}
        self.made = 0
        """Speculations started since the server started."""
        self.used = 0
        """Speculations a starting cell took."""
        self.cpu_seconds: dict[Fate, float] = {"used": 0.0, "thrown_away": 0.0}
        """CPU seconds the model spent on speculations since the server started, by what
        became of them: the price of predicting before the cell runs."""

    def spend(self, speculation: Speculation, seconds: float) -> None:
        """The model spent ``seconds`` of CPU on ``speculation`` (reported when a job of it
        ends, possibly after its fate was decided)."""
        speculation.cpu_seconds += seconds
        if speculation.fate is not None:
            self.cpu_seconds[speculation.fate] += seconds

    def _decide(self, speculation: Speculation, fate: Fate) -> None:
        if speculation.fate is None:
            speculation.fate = fate
            self.cpu_seconds[fate] += speculation.cpu_seconds

    def get(self, trajectory_id: str) -> Speculation | None:
        return self._by_trajectory.get(trajectory_id)

    def replace(self, speculation: Speculation) -> None:
        """Make ``speculation`` its trajectory's one; an older one (an edited text, a
        selection moved on) is superseded."""
        self.discard(speculation.trajectory_id)
        self._by_trajectory[speculation.trajectory_id] = speculation
        self.made += 1

    def claim(self, trajectory_id: str, code: str | None, target_step: int) -> Speculation | None:
        """The trajectory's speculation if the cell starting as ``target_step`` with
        ``code`` is the one it predicted (taken away: it is used once); otherwise None,
        and a speculation that did not match is thrown away."""
        found = self._by_trajectory.pop(trajectory_id, None)
        if found is None:
            return None
        if found.matches(code, target_step):
            self.used += 1
            self._decide(found, "used")
            return found
        self._decide(found, "thrown_away")
        found.cancel()
        return None

    def discard(self, trajectory_id: str) -> None:
        found = self._by_trajectory.pop(trajectory_id, None)
        if found is not None:
            self._decide(found, "thrown_away")
            found.cancel()

    def stop_others(self, trajectory_id: str) -> None:
        """Stop other trajectories' speculations still being worked on: a cell running
        anywhere needs the model (the local model has one worker for every kernel)."""
        for other in [s for t, s in self._by_trajectory.items()
                      if t != trajectory_id and not s.done]:
            self.discard(other.trajectory_id)

    def clear(self) -> None:
        for trajectory_id in list(self._by_trajectory):
            self.discard(trajectory_id)
