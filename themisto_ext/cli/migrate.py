"""``themisto migrate --from URL --to URL``: copy a store into another, so that a
single-user SQLite history joins a shared PostgreSQL store.

Resumable and idempotent: trajectories already in the target are kept as they are, steps
already there are skipped (the stores' own ``(trajectory id, step)`` key), predictions are
upserted by id; an interrupted copy is finished by running the same command again.
Journal cursors are not copied: they belong to the server that read the journals.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from typing import Any, TextIO

from themisto_ext.contract import default_user
from themisto_ext.store import TrajectoryStore, open_store, parse_store_url

PAGE = 2000
"""Steps per copied batch: one INSERT each on PostgreSQL (~5 ms for 2,000 steps)."""


def register(sub: Any) -> None:
    p = sub.add_parser("migrate", help="copy every trajectory of one store into another "
                       "(resumable, idempotent)")
    p.add_argument("--from", dest="source", required=True, metavar="URL",
                   help="the store to copy: a SQLite file, sqlite:///PATH or postgresql://...")
    p.add_argument("--to", dest="target", required=True, metavar="URL",
                   help="the store to copy into (created or migrated to the current schema)")
    p.add_argument("--user", help="owner of trajectories recorded before owners were "
                   "(default: JUPYTERHUB_USER, else the login name)")
    p.set_defaults(run=migrate)


class Progress:
    """A one-line progress bar on stderr (a line per 10% when stderr is not a terminal)."""

    def __init__(self, total: int, out: TextIO = sys.stderr, width: int = 30,
                 unit: str = "steps") -> None:
        self.total, self.out, self.width, self.unit = max(total, 1), out, width, unit
        self.done = 0
        self.started = time.monotonic()
        self._shown = -1.0
        self._tty = out.isatty()

    def add(self, n: int) -> None:
        if n <= 0:
            return
        self.done += n
        now = time.monotonic()
        fraction = min(self.done / self.total, 1.0)
        if self._tty and now - self._shown < 0.1 and fraction < 1:
            return
        if not self._tty and int(fraction * 10) == int(self._shown) and fraction < 1:
            return
        self._shown = now if self._tty else int(fraction * 10)
        filled = int(fraction * self.width)
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done:,}/{self.total:,} "
                f"{self.unit} {now - self.started:.1f} s")
        self.out.write(("\r" + line) if self._tty else line + "\n")
        self.out.flush()

    def close(self) -> None:
        if self._tty:
            self.out.write("\n")
            self.out.flush()


def copy_store(source: TrajectoryStore, target: TrajectoryStore, owner: str,
               progress: Progress | None = None) -> dict[str, int]:
    """Copy everything; returns counts of what was new in the target."""
    counts = {"trajectories": 0, "kept": 0, "steps": 0, "predictions": 0}
    for trajectory in source.list_trajectories(limit=10**9):
        there = target.get_trajectory(trajectory.id)
        if there is None:
            target.import_trajectory(replace(trajectory, user=trajectory.user or owner),
                                     source.events(trajectory.id))
            counts["trajectories"] += 1
        else:
            counts["kept"] += 1
        if there is None or there.steps < trajectory.steps:
            page: list[tuple[int, str]] = []
            for line in source.iter_step_lines(trajectory.id):
                page.append(line)
                if len(page) == PAGE:
                    counts["steps"] += _copy_page(target, trajectory.id, page, progress)
                    page = []
            counts["steps"] += _copy_page(target, trajectory.id, page, progress)
        elif progress:
            progress.add(trajectory.steps)
        for prediction in source.predictions(trajectory.id):
            counts["predictions"] += target.save_prediction(prediction)
    return counts


def _copy_page(target: TrajectoryStore, trajectory_id: str, page: list[tuple[int, str]],
               progress: Progress | None) -> int:
    added = target.import_step_lines(trajectory_id, page) if page else 0
    if progress:
        progress.add(len(page))
    return added


def migrate(args: argparse.Namespace) -> int:
    source_url, target_url = parse_store_url(args.source), parse_store_url(args.target)
    if source_url == target_url:
        raise ValueError("--from and --to name the same store")
    if source_url.engine == "sqlite" and not source_url.path.is_file():
        raise FileNotFoundError(f"{source_url.display}: no such store")
    source = open_store(source_url)
    target = open_store(target_url)
    try:
        total = sum(t.steps for t in source.list_trajectories(limit=10**9))
        progress = Progress(total)
        counts = copy_store(source, target, args.user or default_user(), progress)
        progress.close()
    finally:
        source.close()
        target.close()
    print(f"copied {counts['trajectories']} trajectories ({counts['kept']} already there), "
          f"{counts['steps']} new steps and {counts['predictions']} predictions from "
          f"{source_url.display} to {target_url.display}")
    return 0
