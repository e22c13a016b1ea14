"""``themisto stats``: re-runs, edits, jumps back, errors and environment-dependent outputs."""

from __future__ import annotations

import json

import pytest

from themisto_ext.cli.main import main
from themisto_ext.evaluation.realism import describe, measure, measure_trajectory, step_facts


def step(number: int, code: str, output: str = "", cell: str | None = None,
         error: tuple[str, str] | None = None, tid: str = "t") -> dict:
    return {
        "format_version": 1, "trajectory_id": tid, "kernel_id": "k", "step": number,
        "cell_id": cell, "notebook_path": "n.ipynb",
        "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
        "code": code, "output": output, "outputs": [], "execution_time": 0.1,
        "memory_bytes": None, "runtime_variables": {}, "hash_index": f"{number:032x}",
        "error": {"ename": error[0], "evalue": error[1]} if error else None,
    }


def session() -> list[dict]:
    """A person's session: cells by notebook position (JuNE's cell_index), re-run, edited."""
    return [
        step(1, "import pandas as pd", cell="0"),
        step(2, "df = pd.read_csv('a.csv')", cell="1"),
        step(3, "df.head()", "   a\n0  1", cell="2"),
        step(4, "df.head(3)", "   a\n0  1", cell="2"),      # edited re-run
        step(5, "df = pd.read_csv('a.csv')", cell="1"),      # re-run, jumping back
        step(6, "df.head(3)", "   a\n0  1", cell="2"),      # re-run, unchanged
        step(7, "df.describe()", "...", cell="4"),           # skips cell 3: still in order
        step(8, "x = df.a.sum()", cell="3"),                 # back, to a cell not run yet
    ]


def test_reruns_edits_and_jumps_back_are_counted():
    realism = measure_trajectory(session())
    assert (realism.steps, realism.reruns, realism.edited_reruns, realism.out_of_order) == \
        (8, 3, 1, 2)


def test_without_positions_cells_are_ordered_as_they_first_ran():
    steps = [step(i + 1, code, cell=cell) for i, (cell, code) in enumerate([
        ("c-a", "a = 1"), ("c-b", "b = 2"), ("c-a", "a = 10"), ("c-b", "b = 2"),
        ("c-c", "c = a + b")])]
    realism = measure_trajectory(steps)
    assert (realism.reruns, realism.edited_reruns, realism.out_of_order) == (2, 1, 1)
    # a notebook run top to bottom (the paper's re-execution) is none of this
    top_down = [step(i + 1, f"v{i} = {i}", cell=f"id-{i}") for i in range(6)]
    flat = measure_trajectory(top_down)
    assert (flat.reruns, flat.edited_reruns, flat.out_of_order) == (0, 0, 0)


def test_errors_fixed_later_are_counted():
    """Issue 25, item 8: a development trajectory has errors its author then fixed (the
    cell runs again without one); a notebook run top to bottom has none."""
    steps = [step(1, "df = load()", cell="a", error=("NameError", "name 'load' is not defined")),
             step(2, "x = 1 / 0", cell="b", error=("ZeroDivisionError", "division by zero")),
             step(3, "from data import load", cell="c"),
             step(4, "df = load()", cell="a"),                      # fixed: a ran clean
             step(5, "x = 1 / y", cell="b", error=("NameError", "name 'y' is not defined")),
             step(6, "x = 1 / 2", cell="b")]                        # both of b's, fixed
    realism = measure_trajectory(steps)
    assert (realism.errors, realism.fixed_errors, realism.reruns, realism.edited_reruns) == \
        (3, 3, 3, 2)
    unfixed = measure_trajectory(steps[:5])
    assert (unfixed.errors, unfixed.fixed_errors) == (3, 1)
    assert "3 errors (50%; 0 caused by the environment, 3 fixed later)" in \
        describe(realism.to_json())


def test_errors_the_environment_caused_are_told_from_the_codes_own():
    steps = [
        step(1, "import seaborn as sns\nplanets = sns.load_dataset('planets')",
             error=("ModuleNotFoundError", "No module named 'seaborn'")),
        step(2, "planets.head()", error=("NameError", "name 'planets' is not defined")),
        step(3, "undefined_thing", error=("NameError", "name 'undefined_thing' is not defined")),
        step(4, "1 / 0", error=("ZeroDivisionError", "division by zero")),
        step(5, "df.fillna(method='ffill')",
             error=("TypeError", "NDFrame.fillna() got an unexpected keyword argument 'method'")),
        step(6, "pd.read_csv('data/missing.csv')",
             error=("FileNotFoundError", "[Errno 2] No such file or directory")),
        step(7, "planets = [1, 2]"),
        step(8, "planets.count(3) + nothing",
             error=("NameError", "name 'planets' is not defined")),  # defined by now: its own
    ]
    causes = [f.cause for f in step_facts(steps)]
    assert causes == ["environment", "environment", "code", "code", "environment",
                      "environment", None, "code"]
    realism = measure_trajectory(steps)
    assert (realism.errors, realism.environment_errors) == (7, 4)


@pytest.mark.parametrize(("code", "output", "kinds"), [
    ("obj", "<__main__.Model object at 0x7f3a1c2b3d40>", {"address"}),
    ("%timeit sum(range(100))", "1.2 µs ± 3 ns per loop (mean ± std. dev. of 7 runs)",
     {"timing"}),
    ("import datetime\ndatetime.datetime.now()", "datetime.datetime(2026, 1, 1, 9, 0)",
     {"clock"}),
    ("np.random.rand(2)", "array([0.1, 0.7])", {"randomness"}),
    ("rng = np.random.default_rng(seed=1)\nrng.integers(10, size=2)", "array([4, 5])", set()),
    ("x[0]", "np.int64(9)", {"version"}),
    ("print(1)", "1", set()),
])
def test_outputs_that_depend_on_the_environment(code, output, kinds):
    facts = step_facts([step(1, "import numpy as np"), step(2, code, output)])
    assert facts[1].kinds == kinds


def test_unseeded_randomness_follows_the_variables_it_made_until_a_seed_is_set():
    steps = [step(1, "x = np.random.rand(3)"), step(2, "x", "array([0.5, 0.1, 0.9])"),
             step(3, "np.random.seed(0)"), step(4, "y = np.random.rand(2)"),
             step(5, "y", "array([0.55, 0.72])")]
    assert [f.kinds for f in step_facts(steps)] == [
        frozenset(), {"randomness"}, frozenset(), frozenset(), frozenset()]


def test_a_seeded_generator_of_ones_own_does_not_seed_the_global_one():
    """Issue 25, item 4: ``RandomState(42)`` earlier in the notebook marked every later
    draw as seeded; ``np.random.choice`` draws from NumPy's global generator, never seeded."""
    steps = [step(1, "import numpy as np\nimport random"),
             step(2, "rng = np.random.RandomState(42)\nx = rng.randint(10, size=3)"),
             step(3, "x", "array([6, 3, 7])"),
             step(4, "np.random.choice(x, 2)", "array([3, 6])"),
             step(5, "picked = np.random.permutation(x)"),
             step(6, "picked", "array([7, 6, 3])"),
             step(7, "random.seed(1)\nrandom.random()", "0.13436424411240122"),
             step(8, "np.random.seed(0); np.random.rand()", "0.5488135039273248"),
             step(9, "np.random.rand()", "0.7151893663724195"),
             step(10, "np.random.default_rng().random()", "0.42")]
    assert [sorted(f.kinds) for f in step_facts(steps)] == [
        [], [], [], ["randomness"], [], ["randomness"], [], [], [], ["randomness"]]


def test_stats_command_prints_and_writes_the_counts(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    other = [step(i + 1, f"print({i})", str(i), cell=str(i), tid="u") for i in range(3)]
    path.write_text("".join(json.dumps(s) + "\n" for s in [*session(), *other]))
    out = tmp_path / "stats.json"
    assert main(["stats", str(path), "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("t  n.ipynb: 1 trajectories, 8 steps: 3 re-runs (38% of "
                               "steps; 1 edited, 12%), 2 out-of-order executions (25%), "
                               "0 errors (0%; 0 caused by the environment, 0 fixed later)")
    assert lines[-1].startswith("all: 2 trajectories, 11 steps: 3 re-runs")
    written = json.loads(out.read_text())
    assert written["total"] == measure([session(), other]).to_json()
    assert [t["trajectory_id"] for t in written["trajectories"]] == ["t", "u"]


def test_stats_command_refuses_a_bad_file(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("not json\n")
    assert main(["stats", str(path)]) == 1
    assert "t.jsonl:1" in capsys.readouterr().err
    assert main(["stats", str(tmp_path / "absent.jsonl")]) == 1
