"""What live predictions keep of a long session: outputs as prompts cut them, nothing of a
trajectory whose kernel stopped, prompts identical to those built from whole steps."""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_store import start, step

from themisto_ext.events import LiveEvents
from themisto_ext.journal import JournalWriter
from themisto_ext.prediction.clients import make_predictor
from themisto_ext.prediction.live import LivePredictions, landed_step
from themisto_ext.prediction.prompts.build import build_prompt, cell_limit
from themisto_ext.server.core import Themisto
from themisto_ext.server.settings import ServerSettings
from themisto_ext.store import AsyncStore, SQLiteStore


def big_step(tid: str, n: int) -> dict:
    text = f"{n}:" + "x" * 150_000 + f":end{n}"
    record = step(tid, n)
    record.update(code=f"print(x{n})", output=text,
                  outputs=[{"output_type": "stream", "name": "stdout",
                            "mime_types": ["text/plain"], "text": text}])
    return record


async def test_histories_hold_outputs_as_prompts_cut_them_and_end_with_the_kernel(
        tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    live = LivePredictions(AsyncStore(store), LiveEvents(), [make_predictor("baseline")],
                           ["none", "full"], budget_chars=8000)
    settings = ServerSettings(journal_dir=tmp_path / "journal", live_predictions=False)
    core = Themisto(settings=settings, store=live.store, live=live, events=LiveEvents())
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    for n in range(1, 41):
        journal.append(big_step("t", n))
    await core.ingest_now()
    live.schedule("t", "next-cell", 41)
    await asyncio.gather(*live._tasks)
    (history,) = live._histories.values()
    limit = cell_limit(8000)
    assert len(history) == 40
    assert all(len(s["output"]) <= limit and "outputs" not in s for s in history)
    whole = list(store.iter_steps("t"))
    for context in ("none", "full"):  # the cut changes no prompt
        assert build_prompt(history, "next-cell", context, budget_chars=8000) == \
            build_prompt(whole, "next-cell", context, budget_chars=8000)
    landed = landed_step(store, "t", 40)  # what a prediction is scored against: whole
    assert landed is not None and landed["output"] == whole[-1]["output"]
    journal.append({"kind": "end", "trajectory_id": "t", "at": "2026-01-01T01:00:00+00:00"})
    await core.ingest_now()  # the kernel shut down: nothing of it stays
    assert live._histories == {}
    await live.aclose()
