"""`themisto export --format sft` (issue 24, "training data from trajectories"): the pairs
are the protocol's prompts and tagged answers, chosen as the benchmark sampler chooses
targets, split by whole groups, deduplicated, masked, and written safely."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from test_cli import themisto
from test_prompts import make_step
from test_store import interpret_lines

from themisto_ext.evaluation.sample import sample
from themisto_ext.prediction.prompts import ANSWER_TOKENS, TASKS
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.window import estimate_tokens, estimated_window
from themisto_ext.prediction.scoring import reference_for
from themisto_ext.store import SQLiteStore, TrajectoryStore
from themisto_ext.training.sft import SFTConfig, export_sft
from themisto_ext.trajectory import iter_lines


def load(store: TrajectoryStore, steps: list[dict[str, Any]], notebook: str | None = None,
         source: str = "record") -> None:
    """Steps into the store the way ingestion writes a recorded journal."""
    by_trajectory: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in steps:
        by_trajectory[step["trajectory_id"]].append(step)
    for tid, own in by_trajectory.items():
        head = {"kind": "trajectory", "trajectory_id": tid, "kernel_id": own[0]["kernel_id"],
                "notebook_path": notebook if notebook is not None else own[0].get("notebook_path"),
                "started_at": own[0]["started_at"]}
        store.apply(interpret_lines([head, *({"kind": "step", **s} for s in own)], source), None)


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def recorded(recorded_notebooks: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, list[dict[str, Any]]]:
    """A store holding two shared notebooks' real recordings, and their steps."""
    steps = [item for _, item in iter_lines(recorded_notebooks)]
    path = tmp_path_factory.mktemp("sft") / "store.sqlite3"
    store = SQLiteStore(path)
    load(store, steps)
    store.close()
    return path, steps


def toy_trajectory(tid: str, steps: int = 8, salt: str = "") -> list[dict[str, Any]]:
    return [make_step(n, f"x{salt} = {n}\nx{salt} * 2", f"{2 * n}\n", tid=tid)
            for n in range(1, steps + 1)]


def test_sft_prompts_are_the_ones_a_prediction_gets(recorded, tmp_path: Path):
    store, steps = recorded
    out = tmp_path / "sft.jsonl"
    r = themisto("export", "--all", "--format", "sft", "--context", "none,full,curated",
                 "--out", str(out), store=store)
    assert r.returncode == 0, r.stderr
    lines = read(out)
    assert {(p["task"], p["context"]) for p in lines} == {
        (t, c) for t in TASKS for c in ("none", "full", "curated")}
    by_id = defaultdict(list)
    for step in steps:
        by_id[step["trajectory_id"]].append(step)
    for pair in lines[::7]:
        history = by_id[pair["trajectory_id"]]
        position = next(i for i, s in enumerate(history) if s["step"] == pair["step"])
        target = history[position]
        prompt = build_prompt(history[:position], pair["task"], pair["context"],
                              target_code=target["code"] if pair["task"] == "output" else None)
        asked = [{k: v for k, v in m.items() if k != "weight"} for m in pair["messages"][:-1]]
        assert asked == prompt.messages()
        assert pair["messages"][-1]["role"] == "assistant"
        assert [m.get("weight") for m in pair["messages"] if m["role"] == "assistant"] == \
            [0] * len(prompt.demonstrations) + [1]


def test_sft_answer_round_trips_through_postprocess(recorded, tmp_path: Path):
    store, steps = recorded
    out = tmp_path / "sft.jsonl"
    assert themisto("export", "--all", "--format", "sft", "--context", "full", "--out",
                    str(out), store=store).returncode == 0
    targets = {(s["trajectory_id"], s["step"]): s for s in steps}
    pairs = read(out)
    assert len(pairs) > 100
    for pair in pairs:
        reference = reference_for(pair["task"], targets[(pair["trajectory_id"], pair["step"])])
        answer = pair["messages"][-1]["content"]
        assert answer.startswith("<output>\n" if pair["task"] == "output" else "<code>\n")
        assert postprocess(answer, pair["task"]) == reference.strip()


def test_sft_answer_the_protocol_would_misread_is_left_out_and_counted(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    steps = toy_trajectory("f" * 32)
    steps[6]["output"] = "```\nfenced\n```\n"  # postprocess would answer "fenced"
    steps[7]["output"] = "a longer output, so that none is over the 0.99 quantile\n"
    load(store, steps)
    with (tmp_path / "out.jsonl").open("w") as fh:
        result = export_sft(store, ["f" * 32], fh, SFTConfig(contexts=["none"], tasks=["output"]))
    assert result.unreadable == 1
    assert 7 not in {p["step"] for p in read(tmp_path / "out.jsonl")}


def test_sft_targets_are_the_sampler_census_with_environment_flags(recorded, tmp_path: Path,
                                                                   recorded_notebooks: Path):
    store, _ = recorded
    for rule in ("keep", "drop"):
        out = tmp_path / f"{rule}.jsonl"
        r = themisto("export", "--all", "--format", "sft", "--context", "none",
                     "--environment", rule, "--out", str(out), store=store)
        assert r.returncode == 0, r.stderr
        pairs = read(out)
        for task in TASKS:
            census = sample([recorded_notebooks], task, n=10**6, environment=rule).examples
            wanted = {(e["provenance"]["trajectory_id"], e["provenance"]["step"]):
                      e["environment_dependent"] for e in census}
            got = {(p["trajectory_id"], p["step"]): p["environment_dependent"]
                   for p in pairs if p["task"] == task}
            assert got == wanted
        flagged = sum(p["environment_dependent"] for p in pairs)
        assert (flagged > 0) == (rule == "keep")


def _three_notebooks(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "s.sqlite3"
    store = SQLiteStore(path)
    ids = []
    for k in range(12):  # 12 trajectories of 3 notebooks, each its own code
        tid = f"{k:02d}" * 16
        load(store, toy_trajectory(tid, salt=str(k)), notebook=f"nb{k % 3}.ipynb")
        ids.append(tid)
    store.close()
    return path, ids


@pytest.mark.parametrize("split_by", ["trajectory", "notebook"])
def test_sft_split_never_puts_one_trajectory_in_two_splits(tmp_path: Path, split_by: str):
    store, _ = _three_notebooks(tmp_path)
    out = tmp_path / "a.jsonl"
    args = ["export", "--all", "--format", "sft", "--context", "none", "--split",
            "train=0.75,test=0.25", "--split-by", split_by, "--seed", "3"]
    r = themisto(*args, "--out", str(out), store=store)
    assert r.returncode == 0, r.stderr
    pairs = read(out)
    for key in ("trajectory_id", "notebook_path"):
        splits = defaultdict(set)
        for pair in pairs:
            splits[pair[key]].add(pair["split"])
        if key == "trajectory_id" or split_by == "notebook":
            assert all(len(s) == 1 for s in splits.values()), splits
    assert {p["split"] for p in pairs} == {"train", "test"}
    groups = {p["group"] for p in pairs if p["split"] == "test"}
    assert len(groups) == (3 if split_by == "trajectory" else 1)  # 12 * 0.25; 3 * 0.25 rounded
    # deterministic: the same seed writes the same bytes; the groups, not examples, move
    again = tmp_path / "b.jsonl"
    assert themisto(*args, "--out", str(again), store=store).returncode == 0
    assert again.read_bytes() == out.read_bytes()


def test_sft_split_by_seed_changes_which_groups_are_held_out(tmp_path: Path):
    store, _ = _three_notebooks(tmp_path)
    held_out = set()
    for seed in range(6):
        out = tmp_path / f"{seed}.jsonl"
        assert themisto("export", "--all", "--format", "sft", "--context", "none", "--split",
                        "train=0.5,test=0.5", "--seed", str(seed), "--out", str(out),
                        store=store).returncode == 0
        held_out.add(frozenset(p["group"] for p in read(out) if p["split"] == "test"))
    assert len(held_out) > 1


def test_sft_identical_pairs_are_dropped_once_and_kept_in_the_first_split(tmp_path: Path):
    path = tmp_path / "s.sqlite3"
    store = SQLiteStore(path)
    for k in range(4):  # four runs of the same notebook: the same prompts and answers
        load(store, toy_trajectory(f"{k}" * 32), notebook=f"run{k}.ipynb")
    store.close()
    out = tmp_path / "sft.jsonl"
    r = themisto("export", "--all", "--format", "sft", "--context", "none", "--split",
                 "train=0.5,test=0.5", "--out", str(out), store=path)
    assert r.returncode == 0, r.stderr
    pairs = read(out)
    per_run = 2 * 3  # steps 6-8 (five prior steps first), both tasks
    assert len(pairs) == per_run
    assert {p["split"] for p in pairs} == {"train"}
    assert f"{3 * per_run} duplicate pairs dropped" in r.stderr


def test_sft_masks_a_secret_the_kernel_did_not(tmp_path: Path):
    """A store recorded with redaction off: the export still masks what the server would."""
    api_key = "sk-" + "Q" * 40
    store = SQLiteStore(tmp_path / "s.sqlite3")
    steps = toy_trajectory("e" * 32)
    steps[5]["code"] = f"db_password = 'correct-horse-battery'\nclient = connect('{api_key}')"
    steps[6]["output"] = f"connected with token={api_key}\n"
    steps[7]["runtime_variables"] = {"client": {"type": "Client", "size": 48,
                                                "repr": f"Client(key='{api_key}')"}}
    load(store, steps)
    with (tmp_path / "out.jsonl").open("w") as fh:
        export_sft(store, ["e" * 32], fh, SFTConfig(contexts=["full"]))
    text = (tmp_path / "out.jsonl").read_text()
    assert "correct-horse-battery" not in text and api_key not in text
    assert "<redacted>" in text


def test_sft_never_writes_over_the_store_or_a_file_of_another_kind(recorded, tmp_path: Path):
    store, _ = recorded
    before = store.read_bytes()
    base = ["export", "--all", "--format", "sft", "--context", "none", "--out"]
    r = themisto(*base, str(store), "--force", store=store)
    assert r.returncode == 1 and "is the store" in r.stderr and len(r.stderr.splitlines()) == 1
    assert store.read_bytes() == before
    steps_file = tmp_path / "steps.jsonl"
    assert themisto("export", "--all", "--out", str(steps_file), store=store).returncode == 0
    kept = steps_file.read_bytes()
    r = themisto(*base, str(steps_file), store=store)
    assert r.returncode == 1 and "not an SFT export; pass --force" in r.stderr
    assert steps_file.read_bytes() == kept
    assert themisto(*base, str(steps_file), "--force", store=store).returncode == 0
    assert "messages" in read(steps_file)[0]
    # an SFT export is replaced without --force, and nothing is left beside it
    assert themisto(*base, str(steps_file), store=store).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["steps.jsonl"]


@pytest.mark.parametrize("args,message", [
    (["--context", "none", "--split", "train=0.7,test=0.2"], "sum to 0.9, not 1"),
    (["--context", "none", "--split", "train=1,train=0"], "more than 0"),
    (["--context", "none", "--split", "train"], "NAME=FRACTION"),
    (["--context", "nope"], "--context: unknown 'nope'"),
    (["--context", "none", "--seed", "1"], "--split-by and --seed go with --split"),
    ([], "--format sft needs --context"),
])
def test_sft_bad_options_are_one_line_errors(recorded, args: list[str], message: str):
    store, _ = recorded
    r = themisto("export", "--all", "--format", "sft", "--out", "-", *args, store=store)
    assert r.returncode == 1 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_sft_options_without_the_format_are_refused(recorded):
    store, _ = recorded
    r = themisto("export", "--all", "--out", "-", "--context", "full", store=store)
    assert r.returncode == 1 and "--context goes with --format sft" in r.stderr


def test_sft_export_streams_one_trajectory_at_a_time(tmp_path: Path):
    """Each trajectory's pairs are written before the next trajectory's steps are read
    for prompts: the export holds one history, never the store."""
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ids = [f"{k}" * 32 for k in range(3)]
    for k, tid in enumerate(ids):
        load(store, toy_trajectory(tid, salt=str(k)))
    events: list[str] = []

    class Watched:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def iter_steps(self, tid: str, *args: Any):
            events.append(f"read {tid[0]}")
            return store.iter_steps(tid, *args)

    class Out:
        def write(self, line: str) -> None:
            events.append(f"wrote {json.loads(line)['trajectory_id'][0]}")

    export_sft(Watched(), ids, Out(), SFTConfig(contexts=["none"]))
    second_pass = events[3:]  # the first pass reads each trajectory once for its facts
    assert events[:3] == ["read 0", "read 1", "read 2"]
    firsts = [second_pass.index(f"read {k}") for k in "012"]
    lasts = [max(i for i, e in enumerate(second_pass) if e == f"wrote {k}") for k in "012"]
    assert firsts[0] < lasts[0] < firsts[1] < lasts[1] < firsts[2] < lasts[2]


def test_sft_window_fits_every_prompt_and_its_answer_cap(recorded, tmp_path: Path):
    """`--window` fits prompts as a prediction fits them for a model of that window."""
    store, _ = recorded
    wide, narrow = tmp_path / "wide.jsonl", tmp_path / "narrow.jsonl"
    base = ["export", "--all", "--format", "sft", "--context", "full", "--task", "next-cell"]
    assert themisto(*base, "--out", str(wide), store=store).returncode == 0
    assert themisto(*base, "--window", "2048", "--out", str(narrow), store=store).returncode == 0
    window = estimated_window(2048)
    for pair in read(narrow):
        asked = pair["messages"][:-1]
        tokens = sum(estimate_tokens(m["content"]) + 8 for m in asked)
        assert tokens <= window.tokens - ANSWER_TOKENS
    assert sum(p["dropped_steps"] for p in read(narrow)) > sum(
        p["dropped_steps"] for p in read(wide))


def test_sft_split_gives_every_named_split_a_group_while_there_are_enough():
    from themisto_ext.training.split import assign_splits

    spec = (("train", 0.9), ("dev", 0.05), ("test", 0.05))
    assigned = assign_splits([f"g{i}" for i in range(4)], spec, seed=0)
    assert sorted(assigned.values()) == ["dev", "test", "train", "train"]
    assert set(assign_splits(["only"], spec, seed=0).values()) == {"train"}


def test_sft_export_file_gets_the_mode_a_plain_write_gives(recorded, tmp_path: Path):
    import os
    import stat

    store, _ = recorded
    out = tmp_path / "sft.jsonl"
    base = ["export", "--all", "--format", "sft", "--context", "none", "--out", str(out)]
    assert themisto(*base, store=store).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    out.chmod(0o640)  # a replaced export keeps its mode
    assert themisto(*base, store=store).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_sft_options_are_the_sampler_and_split_rules_and_cost_no_numpy():
    import subprocess
    import sys

    from themisto_ext.cli import training
    from themisto_ext.evaluation import sample as sampler
    from themisto_ext.training import split

    assert training.ERROR_RULES == sampler.ERROR_RULES
    assert training.ENVIRONMENT_RULES == sampler.ENVIRONMENT_RULES
    assert training.SPLIT_BY == split.SPLIT_BY
    loaded = subprocess.run([sys.executable, "-c", "import sys, themisto_ext.cli.main; "
                             "print('numpy' in sys.modules)"], capture_output=True, text=True)
    assert loaded.stdout.strip() == "False", loaded.stderr


def test_sft_to_standard_output_keeps_the_summary_on_stderr(recorded):
    store, _ = recorded
    r = themisto("export", "--all", "--format", "sft", "--context", "curated", "--task",
                 "output", "--out", "-", store=store)
    assert r.returncode == 0, r.stderr
    pairs = [json.loads(line) for line in r.stdout.splitlines()]
    assert pairs and {p["task"] for p in pairs} == {"output"}
    assert f"wrote {len(pairs)} pairs (output/curated {len(pairs)})" in r.stderr
