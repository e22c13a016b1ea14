"""A class at a glance: what the store keeps per trajectory as steps and scores arrive, so
that a roster of every user's notebooks is one grouping of trajectory rows, never a read
of steps (500 students x 20 notebooks x 200 steps open in well under a second).

Per trajectory: cells run (``steps``), ``errors``, ``active_seconds`` (the first cell's
execution time, then each cell's end minus the previous cell's end, at most
``ACTIVE_GAP``: a longer pause is a break) and ``last_at`` (the last cell's end); per
trajectory, predictor, context and task: scored predictions and their score sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from themisto_ext.records import NotebookRow, Prediction, Step
from themisto_ext.store.schema import ACTIVE_GAP


@dataclass
class StepTotals:
    """What a run of new steps of one trajectory adds to it."""

    n: int = 0
    errors: int = 0
    first_end: str | None = None
    first_execution: float = 0.0
    gaps: float = 0.0
    """Active seconds gaps the run's own steps."""
    last_end: str | None = None

    def add(self, step: Step) -> None:
        ended = _time(step.get("ended_at"))
        if self.n == 0:
            self.first_end, self.first_execution = ended, float(step.get("execution_time") or 0)
        else:
            self.gaps += gap(self.last_end, ended)
        self.n += 1
        self.errors += step.get("error") is not None
        if ended and (self.last_end is None or ended > self.last_end):
            self.last_end = ended


def totals(steps: list[Step]) -> dict[str, StepTotals]:
    """New steps' totals by trajectory, the steps of each taken in step order."""
    out: dict[str, StepTotals] = {}
    for step in sorted(steps, key=lambda s: (s["trajectory_id"], int(s["step"]))):
        out.setdefault(step["trajectory_id"], StepTotals()).add(step)
    return out


def _time(value: Any) -> str | None:
    """An ISO time the databases can read, else None (a malformed time must not stop a
    journal's ingestion at the database's cast)."""
    try:
        return str(value) if datetime.fromisoformat(str(value)).tzinfo else None
    except ValueError:
        return None


def gap(earlier: str | None, later: str | None) -> float:
    """Active seconds from one cell's end to the next's: at most ``ACTIVE_GAP``."""
    try:
        seconds = (datetime.fromisoformat(str(later)) -
                   datetime.fromisoformat(str(earlier))).total_seconds()
    except (TypeError, ValueError):
        return 0.0
    return min(max(seconds, 0.0), ACTIVE_GAP)


def scored(prediction: Prediction) -> tuple[str, str, str, float, float] | None:
    """(predictor, context, task, exact match, chrF) of a scored prediction, else None."""
    scores = prediction.get("scores")
    if not isinstance(scores, dict) or prediction.get("abstained") or prediction.get("error"):
        return None
    try:
        return (str(prediction.get("predictor", "")), str(prediction.get("context", "")),
                str(prediction.get("task", "")), float(scores["exact_match"]),
                float(scores["chrf"]))
    except (KeyError, TypeError, ValueError):
        return None  # not scores as the schema has them: nothing to total


SCORE_UPSERT = (
    "INSERT INTO score_totals (trajectory_id, predictor, context, task, n, em_sum, chrf_sum) "
    "VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT (trajectory_id, predictor, context, task) "
    "DO UPDATE SET n = score_totals.n + 1, em_sum = score_totals.em_sum + excluded.em_sum, "
    "chrf_sum = score_totals.chrf_sum + excluded.chrf_sum")
"""One more scored prediction in a trajectory's totals (``?`` marks: ``SharedQueries._sql``)."""


@dataclass
class ClassFilter:
    users: tuple[str, ...] | None = None
    """Whose notebooks (None: everyone's)."""
    active_after: str | None = None
    """Only trajectories active at or after this time (their last cell's end)."""
    active_before: str | None = None
    """Only trajectories begun before this time."""


def class_queries(where: ClassFilter, mark: str) -> tuple[str, str, list[Any]]:
    """The two grouping queries of a roster (notebook rows, then their score totals) and
    their shared parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if where.users is not None:
        clauses.append(f"t.user_name IN ({', '.join([mark] * len(where.users))})"
                       if where.users else "1 = 0")
        params.extend(where.users)
    if where.active_after is not None:
        clauses.append(f"COALESCE(t.last_at, t.started_at) >= {mark}")
        params.append(where.active_after)
    if where.active_before is not None:
        clauses.append(f"t.started_at < {mark}")
        params.append(where.active_before)
    clause = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    rows = ("SELECT t.user_name, t.notebook_path, count(*), sum(t.steps), sum(t.errors), "
            "sum(t.active_seconds), min(t.started_at), max(COALESCE(t.last_at, t.started_at)) "
            f"FROM trajectories t{clause} GROUP BY t.user_name, t.notebook_path")
    scores = ("SELECT t.user_name, t.notebook_path, s.predictor, s.context, s.task, sum(s.n), "
              "sum(s.em_sum), sum(s.chrf_sum) FROM score_totals s JOIN trajectories t "
              f"ON t.id = s.trajectory_id{clause} "
              "GROUP BY t.user_name, t.notebook_path, s.predictor, s.context, s.task")
    return rows, scores, params


def notebook_rows(rows: list[tuple[Any, ...]],
                  scores: list[tuple[Any, ...]]) -> list[NotebookRow]:
    """The roster's records (``roster.schema.json``) from the two queries' rows."""
    out: dict[tuple[str, str | None], NotebookRow] = {
        (r[0], r[1]): {"user": r[0], "notebook_path": r[1], "trajectories": int(r[2]),
                       "cells": int(r[3] or 0), "errors": int(r[4] or 0),
                       "active_seconds": round(float(r[5] or 0), 3), "first_at": r[6],
                       "last_at": r[7], "scores": []} for r in rows}
    for user, path, predictor, context, task, n, em, chrf in scores:
        row = out.get((user, path))
        if row is not None and n:
            row["scores"].append({"predictor": predictor, "context": context, "task": task,
                                  "n": int(n), "exact_match": round(float(em) / n, 4),
                                  "chrf": round(float(chrf) / n, 4)})
    return list(out.values())
