"""The queries SQLite and PostgreSQL run alike, written once.

Both drivers keep the same tables (``schema.py``) and differ only in plumbing (a locked
connection vs a pool), in their parameter mark (``?`` vs ``%s``), in the column that
keeps insertion order (``rowid`` vs ``seq``) and in how they write in bulk and read JSON
in the database. What they share is here; each driver adds its own ``_query`` and
``_execute`` and the engine-specific statements (writes of ``apply``, JSON extraction).
Queries are written with ``?``; ``_sql`` gives them the driver's mark.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from themisto_ext.records import NotebookRow, Prediction, Step, StepSummary
from themisto_ext.store.base import Trajectory, TrajectoryFilter, step_summaries_of
from themisto_ext.store.roster import ClassFilter, class_queries, notebook_rows
from themisto_ext.store.schema import COLUMNS, predictions_clause, where_clause


class SharedQueries:
    MARK = "?"
    """The driver's parameter mark."""
    ORDER = "rowid"
    """The column that orders events and predictions as they were inserted."""
    PAGE = 500
    """Steps a lazy read fetches per query."""
    SLIM_DATA = "data"
    """A prediction's JSON without its prompt and raw answer (``slim`` reads)."""
    STEP_BRIEFS = ""
    """Steps in brief (``step_summaries_of`` reads the rows), read in the database: the
    parameters are the trajectory, the step after which and how many."""
    PREDICTION_BRIEFS = ""
    """Predictions in brief, oldest first: the trajectory and a range of target steps."""

    def _query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> int:
        """Run one statement in a transaction of its own; returns the rows it changed."""
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text if self.MARK == "?" else text.replace("?", self.MARK)

    # ------------------------------------------------------------ trajectories

    def list_trajectories(
        self, where: TrajectoryFilter | None = None, limit: int = 100, offset: int = 0
    ) -> list[Trajectory]:
        clause, params = where_clause(where, self.MARK)
        sql = self._sql(f"SELECT {COLUMNS} FROM trajectories{clause} "
                        "ORDER BY started_at, id LIMIT ? OFFSET ?")
        return [Trajectory(*r) for r in self._query(sql, (*params, limit, offset))]

    def count_trajectories(self, where: TrajectoryFilter | None = None) -> int:
        clause, params = where_clause(where, self.MARK)
        return int(self._query(f"SELECT count(*) FROM trajectories{clause}", params)[0][0])

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        rows = self._query(self._sql(f"SELECT {COLUMNS} FROM trajectories WHERE id = ?"),
                           (trajectory_id,))
        return Trajectory(*rows[0]) if rows else None

    def latest_for_kernel(self, kernel_id: str, user: str | None = None) -> Trajectory | None:
        clause, params = where_clause(TrajectoryFilter(kernel_id=kernel_id, user=user),
                                      self.MARK)
        rows = self._query(f"SELECT {COLUMNS} FROM trajectories{clause} "
                           "ORDER BY started_at DESC LIMIT 1", params)
        return Trajectory(*rows[0]) if rows else None

    def events(self, trajectory_id: str) -> list[dict[str, str]]:
        rows = self._query(self._sql("SELECT at, kind, detail FROM events WHERE "
                                     f"trajectory_id = ? ORDER BY {self.ORDER}"),
                           (trajectory_id,))
        return [{"at": at, "kind": kind, "detail": detail} for at, kind, detail in rows]

    def delete_trajectory(self, trajectory_id: str) -> bool:
        return self._execute(self._sql("DELETE FROM trajectories WHERE id = ?"),
                             (trajectory_id,)) > 0

    def adopt_unowned(self, user: str) -> int:
        return self._execute(self._sql("UPDATE trajectories SET user_name = ? "
                                       "WHERE user_name = ''"), (user,))

    # ------------------------------------------------------------ the class and its users

    def notebook_rows(self, where: ClassFilter) -> list[NotebookRow]:
        rows, scores, params = class_queries(where, self.MARK)
        return notebook_rows(self._query(rows, params), self._query(scores, params))

    def consents(self, users: tuple[str, ...] | None = None) -> dict[str, bool]:
        """The recorded choices (a user never asked has none: they consent)."""
        if users is not None and not users:
            return {}
        clause = "" if users is None else \
            f" WHERE user_name IN ({', '.join([self.MARK] * len(users))})"
        rows = self._query(f"SELECT user_name, consent FROM user_settings{clause}", users or ())
        return {user: bool(consent) for user, consent in rows}

    def set_consent(self, user: str, consent: bool, at: str) -> None:
        self._execute(self._sql(
            "INSERT INTO user_settings (user_name, consent, changed_at) VALUES (?, ?, ?) "
            "ON CONFLICT (user_name) DO UPDATE SET consent = excluded.consent, "
            "changed_at = excluded.changed_at"), (user, int(consent), at))

    def forget_journal(self, journal: str) -> None:
        self._execute(self._sql("DELETE FROM journal_cursors WHERE journal = ?"), (journal,))

    # ------------------------------------------------------------ steps

    def iter_step_lines(
        self, trajectory_id: str, since_step: int = 0, limit: int | None = None
    ) -> Iterator[tuple[int, str]]:
        """Steps after ``since_step`` in order, a page per query (keyset paging: every page
        is an index range scan, so memory stays flat whatever the export's size)."""
        sql = self._sql("SELECT step, data FROM steps WHERE trajectory_id = ? AND step > ? "
                        "ORDER BY step LIMIT ?")
        last, left = since_step, limit
        while left is None or left > 0:
            size = self.PAGE if left is None else min(self.PAGE, left)
            rows = self._query(sql, (trajectory_id, last, size))
            for step, data in rows:
                yield step, data
                last = step
            if left is not None:
                left -= len(rows)
            if len(rows) < size:
                return

    def iter_steps(
        self, trajectory_id: str, since_step: int = 0, limit: int | None = None
    ) -> Iterator[Step]:
        for _, line in self.iter_step_lines(trajectory_id, since_step, limit):
            yield json.loads(line)

    # ------------------------------------------------------------ predictions

    def predictions(
        self, trajectory_id: str, since_step: int = 0, target_step: int | None = None,
        unscored: bool = False, until_step: int | None = None, slim: bool = False,
    ) -> list[Prediction]:
        # Slim rows leave the prompt in the database: a prompt is most of a record (~8 kB).
        column = self.SLIM_DATA if slim else "data"
        clause, params = predictions_clause(trajectory_id, since_step, target_step,
                                            until_step, unscored, self.MARK)
        rows = self._query(f"SELECT {column} FROM predictions{clause} "
                           f"ORDER BY target_step, {self.ORDER}", params)
        return [json.loads(data) for (data,) in rows]

    def step_summaries(
        self, trajectory_id: str, since_step: int = 0, limit: int = 500
    ) -> list[StepSummary]:
        rows = self._query(self.STEP_BRIEFS, (trajectory_id, since_step, limit))
        if not rows:
            return []
        predicted = self._query(self.PREDICTION_BRIEFS,
                                (trajectory_id, since_step, rows[-1][0]))
        return step_summaries_of(rows, predicted)

    def get_prediction(self, prediction_id: str) -> Prediction | None:
        rows = self._query(self._sql("SELECT data FROM predictions WHERE id = ?"),
                           (prediction_id,))
        found: Prediction | None = json.loads(rows[0][0]) if rows else None
        return found
