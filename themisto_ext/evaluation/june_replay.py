"""``import-june --replay``: each trajectory of a JuNE log run again in a fresh kernel.

The log has no runtime state; the replay records real outputs, timings, memory and state
with the capture hook (``record_notebook``, as ``themisto record`` does).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from themisto_ext.records import Step


def replay(trajectories: Iterable[Iterable[Step]], total: int, notes: list[str], *,
           timeout: float = 600,
           progress: Callable[[int, int], None] | None = None) -> Iterator[list[Step]]:
    """Re-run every trajectory in a fresh kernel with the capture hook: real outputs, state.

    The log's identifiers (trajectory, kernel, notebook, cell) are kept; code, outputs,
    timings, memory and runtime state come from the replay. One trajectory is in memory at
    a time; a replay that recorded nothing gives no trajectory. Notes go to ``notes``.
    """
    with tempfile.TemporaryDirectory(prefix="themisto-june-") as tmp:
        root = Path(tmp)
        for number, steps in enumerate(trajectories, start=1):
            if progress:
                progress(number - 1, total)
            new, note = _replay_one(list(steps), root / str(number), timeout)
            if note:
                notes.append(note)
            if new:
                yield new
    if progress:
        progress(total, total)


def _replay_one(steps: list[Step], work: Path, timeout: float) -> tuple[list[Step], str | None]:
    import nbformat

    from themisto_ext.errors import ReplayError
    from themisto_ext.replay import record_notebook
    from themisto_ext.store import open_store

    work.mkdir(parents=True)
    # The recorder records non-empty cells only: empty ones have no replayed step.
    kept = [s for s in steps if s["code"].strip()]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s["code"]) for s in kept]
    path = work / "trajectory.ipynb"
    nbformat.write(nb, path)
    store = open_store(work / "store.sqlite3")
    tid = steps[0]["trajectory_id"]
    try:
        run = record_notebook(path, store, work / "journal", timeout=timeout)
        recorded = [s for t in run.trajectory_ids for s in store.iter_steps(t)]
    except ReplayError as exc:
        return [], f"trajectory {tid}: replay failed ({exc}); left out"
    finally:
        store.close()
    new: list[Step] = []
    for original, step in zip(kept, recorded, strict=False):
        new.append({**step, "trajectory_id": tid, "kernel_id": original["kernel_id"],
                    "notebook_path": original["notebook_path"], "cell_id": original["cell_id"],
                    "source": "import", "step": len(new) + 1})
    note = None
    if len(recorded) < len(kept):
        why = f" ({run.stopped_early})" if run.stopped_early else ""
        note = (f"trajectory {tid}: the replay recorded {len(recorded)} of {len(kept)} cells"
                f"{why}; the rest is left out")
    return new, note
