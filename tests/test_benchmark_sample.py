"""``themisto sample``: the paper's candidate rules, length strata and determinism."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from themisto_ext.cli.main import main
from themisto_ext.evaluation.sample import (
    SampleInputError,
    read_examples,
    sample,
    split_counts,
)


def step(tid: str, number: int, code: str = "x = 1", output: str = "1",
         error: dict | None = None) -> dict:
    return {
        "format_version": 1, "trajectory_id": tid, "kernel_id": f"k-{tid}", "step": number,
        "cell_id": None, "notebook_path": "n.ipynb",
        "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
        "code": code, "output": output, "outputs": [], "execution_time": 0.1,
        "memory_bytes": None, "runtime_variables": {"v": {"type": "int", "size": 28,
                                                          "repr": str(number)}},
        "hash_index": f"{number:032x}", "error": error,
    }


def write(path: Path, trajectories: list[list[dict]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for steps in trajectories:
            for s in steps:
                fh.write(json.dumps(s) + "\n")
    return path


def trajectory(tid: str, targets: list[dict], prior: int = 5) -> list[dict]:
    """``prior`` filler steps, then the given steps (keyword arguments of ``step``)."""
    steps = [step(tid, i + 1, code=f"setup_{i}()", output="") for i in range(prior)]
    return steps + [step(tid, prior + i + 1, **t) for i, t in enumerate(targets)]


def lengths_file(tmp_path: Path, lengths: list[int], name: str = "t.jsonl",
                 per_trajectory: int = 50) -> Path:
    """Output-task candidates whose outputs have the given lengths."""
    trajs = []
    for start in range(0, len(lengths), per_trajectory):
        chunk = lengths[start:start + per_trajectory]
        trajs.append(trajectory(f"t{start:05d}", [
            {"code": f"print({i})", "output": "o" * n} for i, n in enumerate(chunk)]))
    return write(tmp_path / name, trajs)


def test_targets_need_five_prior_steps(tmp_path):
    path = write(tmp_path / "t.jsonl", [trajectory("a", [{"output": "yes"}], prior=5),
                                        trajectory("b", [{"output": "no"}], prior=4)])
    result = sample([path], "output", n=10)
    assert [e["id"] for e in result.examples] == ["output-a-6"]
    assert result.dropped["fewer than 5 prior steps"] == 5 + 5


def test_empty_and_raising_targets(tmp_path):
    boom = {"ename": "ValueError", "evalue": "x", "traceback": "ValueError: x"}
    path = write(tmp_path / "t.jsonl", [trajectory("a", [
        {"code": "x = 2", "output": ""},              # nothing shown: no output target
        {"code": "   ", "output": ""},                # empty cell: no target at all
        {"code": "f()", "output": "ValueError: x", "error": boom},
        {"code": "x", "output": "2"},
        # fillers, so that the 0.99 length quantile is not one of the steps above
        *[{"code": f"print({i:020d})", "output": f"{i:020d}"} for i in range(20)],
    ])])

    def targets(task, **kwargs):
        return {e["target"]["step"] for e in sample([path], task, n=100, **kwargs).examples
                if e["target"]["step"] <= 9}

    assert targets("output") == {9}
    assert targets("next-cell") == {6, 9}
    assert targets("output", errors="keep") == {8, 9}
    result = sample([path], "output")
    assert result.dropped["empty target"] == 2
    assert result.dropped["raised an exception"] == 1


def test_a_traceback_stored_without_an_error_counts_as_raised(tmp_path, capsys):
    """Issue 25, item 5: a __repr__ that raised while its result was displayed was stored
    with ``error: null`` (an older recording) and its error output; --errors drop drops
    it and ``stats`` counts it."""
    shown = trajectory("a", [
        {"code": "df.append(other)",
         "output": "AttributeError: 'DataFrame' object has no attribute 'append'"},
        *[{"code": f"print({i:020d})", "output": f"{i:080d}"} for i in range(20)]])
    shown[5]["outputs"] = [{"output_type": "error", "mime_types": [], "ename": "AttributeError",
                            "evalue": "'DataFrame' object has no attribute 'append'",
                            "text": "AttributeError: 'DataFrame' object has no attribute"}]
    path = write(tmp_path / "t.jsonl", [shown])
    result = sample([path], "output", n=100)
    assert 6 not in {e["target"]["step"] for e in result.examples}
    assert result.dropped["raised an exception"] == 1
    assert 6 in {e["target"]["step"] for e in sample([path], "output", n=100,
                                                     errors="keep").examples}
    assert main(["stats", str(path)]) == 0
    assert "1 errors (4%; 0 caused by the environment, 0 fixed later)" in \
        capsys.readouterr().out


def seeded_then_unseeded() -> list[dict]:
    """A notebook that makes a seeded generator of its own, then draws from NumPy's global
    one, never seeded (02.07-Fancy-Indexing, step 15)."""
    return trajectory("r", [
        {"code": "rng = np.random.RandomState(42)\nx = rng.randint(100, size=10)",
         "output": ""},
        {"code": "x", "output": "array([51, 92, 14, 71, 60, 20, 82, 86, 74, 74])"},
        {"code": "np.random.choice(x, 3)", "output": "array([14, 86, 51])"},
        {"code": "print(len(x))", "output": "10"},
        *[{"code": f"print({i:020d})", "output": f"{i:080d}"} for i in range(20)]])


def test_an_unseeded_draw_after_a_seeded_generator_is_environment_dependent(tmp_path):
    """Issue 25, item 4: every example says whether its reference depends on the machine;
    a seeded RandomState seeds nothing but itself."""
    path = write(tmp_path / "t.jsonl", [seeded_then_unseeded()])
    examples = {e["target"]["step"]: e for e in sample([path], "output", n=100).examples}
    assert (examples[7]["environment_dependent"], examples[7]["environment_reasons"]) == \
        (False, [])  # drawn from the seeded generator: reproducible
    assert (examples[8]["environment_dependent"], examples[8]["environment_reasons"]) == \
        (True, ["randomness"])
    assert not examples[9]["environment_dependent"]
    # a next cell is code a person typed: never the machine's
    assert not any(e["environment_dependent"]
                   for e in sample([path], "next-cell", n=100).examples)
    # --environment drop leaves it out, and says so
    dropped = sample([path], "output", n=100, environment="drop")
    assert 8 not in {e["target"]["step"] for e in dropped.examples}
    assert dropped.dropped["depends on the environment"] == 1
    assert dropped.examples[0]["sampling"]["environment"] == "drop"


def test_the_cli_takes_the_environment_rule(tmp_path, capsys):
    path = write(tmp_path / "t.jsonl", [seeded_then_unseeded()])
    out = tmp_path / "b.jsonl"
    assert main(["sample", str(path), "--task", "output", "--out", str(out)]) == 0
    assert "--environment keep" in capsys.readouterr().out
    assert sum(e["environment_dependent"] for e in read_examples(out)) == 1
    assert main(["sample", str(path), "--task", "output", "--out", str(out),
                 "--environment", "drop"]) == 0
    assert "1 depends on the environment" in capsys.readouterr().out
    assert not any(e["environment_dependent"] for e in read_examples(out))


def test_source_live_keeps_only_trajectories_a_persons_kernel_recorded(tmp_path, capsys):
    """Issue 25, item 8: notebooks run top to bottom are replays, not development; a study
    keeps what people's kernels recorded live (each step's source, from `themisto
    export`); a file that does not say counts for --source any only."""
    live, replay, unknown = (trajectory(t, [{"code": f"print({i})", "output": str(i)}
                                            for i in range(6)]) for t in ("l", "r", "u"))
    for s in live:
        s["source"] = "kernel"
    for s in replay:
        s["source"] = "record"
    path = write(tmp_path / "t.jsonl", [live, replay, unknown])
    picked = sample([path], "output", n=100, source="live")
    assert {e["provenance"]["trajectory_id"] for e in picked.examples} == {"l"}
    assert picked.dropped["not --source live"] == 22
    assert picked.examples[0]["sampling"]["source"] == "live"
    assert {e["provenance"]["trajectory_id"] for e in sample([path], "output", n=100)
            .examples} == {"l", "r", "u"}
    assert main(["sample", str(path), "--task", "output", "--out", str(tmp_path / "b.jsonl"),
                 "--source", "record"]) == 0
    assert "--source record" in capsys.readouterr().out
    assert {e["provenance"]["trajectory_id"] for e in read_examples(tmp_path / "b.jsonl")} \
        == {"r"}


def test_targets_longer_than_the_99th_percentile_are_dropped(tmp_path):
    targets = [{"code": f"c{i:03d}", "output": f"out{i:03d}"} for i in range(300)]
    targets[10]["code"] = "y" * 5000                          # a very long cell
    targets[20]["output"] = "z" * 5000                        # a very long output
    path = write(tmp_path / "t.jsonl", [trajectory("a", targets)])
    out = {e["target"]["step"] for e in sample([path], "output", n=300).examples}
    assert 5 + 11 not in out and 5 + 21 not in out
    nxt = {e["target"]["step"] for e in sample([path], "next-cell", n=300).examples}
    assert 5 + 11 not in nxt and 5 + 21 in nxt  # output length only matters for outputs


@pytest.mark.parametrize(("n", "expected"), [(200, (10, 180, 10)), (100, (5, 90, 5)),
                                             (30, (2, 26, 2)), (10, (1, 8, 1)),
                                             (9, (0, 9, 0)), (1, (0, 1, 0))])
def test_split_counts(n, expected):
    assert split_counts(n) == expected


def test_strata_follow_the_target_length_quartiles(tmp_path):
    lengths = list(range(1, 1001))
    random.Random(0).shuffle(lengths)
    result = sample([lengths_file(tmp_path, lengths)], "output", n=200, seed=3)
    low, high = result.bounds
    counts = Counter(e["stratum"] for e in result.examples)
    assert counts == {"q1": 10, "q2-q3": 180, "q4": 10}
    for e in result.examples:
        size = len(e["target"]["output"])
        expected = "q1" if size < low else "q4" if size > high else "q2-q3"
        assert e["stratum"] == expected
    assert not result.notes


def test_a_short_stratum_is_filled_from_its_neighbour_and_reported(tmp_path):
    # Half the outputs have the minimum length: the first quartile bound equals it and
    # no candidate is strictly below it.
    lengths = [3] * 500 + list(range(4, 504))
    result = sample([lengths_file(tmp_path, lengths)], "output", n=200, seed=0)
    counts = Counter(e["stratum"] for e in result.examples)
    assert counts == {"q2-q3": 190, "q4": 10}
    assert any("stratum q1" in n and "0 candidates for a quota of 10" in n
               and "took 10 from q2-q3" in n for n in result.notes)


def test_too_few_candidates_takes_them_all_and_says_the_quotas_do_not_apply(tmp_path, capsys):
    """The issue: with few notebooks `--n 200` took every candidate, silently."""
    path = lengths_file(tmp_path, [5] * 6 + [9, 9])
    result = sample([path], "output", n=20)
    assert len(result.examples) == 8
    assert result.notes == ["every candidate is taken: 8 candidates for --n 20, so the length "
                            "quotas (1/18/1) do not apply; the examples are the whole "
                            "population: q1 0, q2-q3 6, q4 2"]
    assert {e["sampling"]["census"] for e in result.examples} == {True}
    assert main(["sample", str(path), "--task", "output", "--n", "20",
                 "--out", str(tmp_path / "b.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "note: every candidate is taken: 8 candidates for --n 20" in err
    assert "stratum" not in err  # no misleading shortfall notes for a census


def environment_trajectory(tid: str) -> list[dict]:
    missing = {"ename": "ModuleNotFoundError", "evalue": "No module named 'seaborn'"}
    cascade = {"ename": "NameError", "evalue": "name 'planets' is not defined"}
    own = {"ename": "ZeroDivisionError", "evalue": "division by zero"}
    return trajectory(tid, [
        {"code": "import seaborn as sns\nplanets = sns.load_dataset('planets')",
         "output": "ModuleNotFoundError: No module named 'seaborn'", "error": missing},
        {"code": "planets.head()", "output": "NameError: name 'planets' is not defined",
         "error": cascade},
        {"code": "1 / 0", "output": "ZeroDivisionError: division by zero", "error": own},
        {"code": "print('fine')", "output": "fine"},
        # fillers longer than the steps above, so that the 0.99 quantiles cut a filler
        *[{"code": f"print({i:070d})", "output": f"{i:070d}"} for i in range(20)],
    ])


@pytest.mark.parametrize(("rule", "kept"), [
    ("drop", {9}), ("keep", {6, 7, 8, 9}), ("drop-environment", {8, 9})])
def test_the_rule_for_targets_that_raised_is_an_option(tmp_path, rule, kept):
    path = write(tmp_path / "t.jsonl", [environment_trajectory("env")])
    result = sample([path], "output", n=100, errors=rule)
    assert {e["target"]["step"] for e in result.examples if e["target"]["step"] <= 9} == kept
    assert {e["sampling"]["errors"] for e in result.examples} == {rule}


def test_the_cli_states_the_rule_for_targets_that_raised(tmp_path, capsys):
    path = write(tmp_path / "t.jsonl", [environment_trajectory("env")])
    out = tmp_path / "b.jsonl"
    assert main(["sample", str(path), "--task", "output", "--out", str(out),
                 "--errors", "drop-environment"]) == 0
    assert "targets that raised: --errors drop-environment" in capsys.readouterr().out
    assert main(["sample", str(path), "--task", "output", "--out", str(out),
                 "--keep-errors"]) == 0  # the option's old spelling
    assert "--errors keep" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["sample", str(path), "--task", "output", "--out", str(out), "--errors", "some"])


def test_deterministic_for_a_seed_and_independent_of_file_order(tmp_path):
    lengths = [random.Random(1).randint(1, 400) for _ in range(600)]
    a = lengths_file(tmp_path, lengths[:300], "a.jsonl")
    b_trajs = [trajectory(f"u{i}", [{"output": "p" * n} for n in lengths[300 + 50 * i:
                                                                       350 + 50 * i]])
               for i in range(6)]
    b = write(tmp_path / "b.jsonl", b_trajs)
    first = [e["id"] for e in sample([a, b], "output", n=50, seed=4).examples]
    again = [e["id"] for e in sample([a, b], "output", n=50, seed=4).examples]
    swapped = [e["id"] for e in sample([b, a], "output", n=50, seed=4).examples]
    other = [e["id"] for e in sample([a, b], "output", n=50, seed=5).examples]
    assert first == again == swapped
    assert first != other
    assert len(set(first)) == 50


def test_examples_are_self_contained(tmp_path):
    steps = trajectory("abc", [{"code": "x + 1", "output": "2"}, {"code": "x", "output": "1"}])
    path = write(tmp_path / "t.jsonl", [steps])
    examples = sample([path], "output", n=5).examples
    by_step = {e["target"]["step"]: e for e in examples}
    assert by_step[7]["history"] == steps[:6]
    assert by_step[7]["target"] == steps[6]
    assert by_step[7]["task"] == "output"
    assert by_step[7]["provenance"] == {"trajectory_id": "abc", "step": 7, "file": str(path)}
    assert by_step[7]["sampling"] == {"n": 5, "seed": 0, "errors": "drop",
                                      "environment": "keep", "source": "any", "candidates": 1,
                                      "census": True}
    assert (by_step[7]["environment_dependent"], by_step[7]["environment_reasons"]) == \
        (False, [])


def test_cli_writes_a_benchmark_file(tmp_path, capsys):
    path = lengths_file(tmp_path, list(range(1, 101)))
    out = tmp_path / "bench.jsonl"
    code = main(["sample", str(path), "--task", "output", "--out", str(out), "--n", "20",
                 "--seed", "9"])
    assert code == 0
    examples = read_examples(out)
    assert len(examples) == 20
    assert "20 examples" in capsys.readouterr().out
    # the file is the same as the library's draw
    assert [e["id"] for e in examples] == \
        [e["id"] for e in sample([path], "output", n=20, seed=9).examples]


@pytest.mark.parametrize(("content", "message"), [
    ('{"trajectory_id": "a", "step": 1}\n', "t.jsonl:1: code: missing"),
    ('not json\n', "t.jsonl:1: not valid JSON"),
])
def test_bad_input_is_a_one_line_error(tmp_path, capsys, content, message):
    path = tmp_path / "t.jsonl"
    path.write_text(content)
    code = main(["sample", str(path), "--task", "output", "--out", str(tmp_path / "b.jsonl")])
    err = capsys.readouterr().err
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1


def test_split_trajectories_are_refused(tmp_path):
    a = write(tmp_path / "a.jsonl", [trajectory("same", [{"output": "1"}])])
    b = write(tmp_path / "b.jsonl", [trajectory("same", [{"output": "2"}])])
    with pytest.raises(SampleInputError,
                       match=r"b\.jsonl:1: trajectory same appeared in .*a\.jsonl"):
        sample([a, b], "output")
    with pytest.raises(SampleInputError, match="given twice"):
        sample([a, a], "output")
