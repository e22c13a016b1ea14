"""The rules on NumPy and pandas checked against real execution: generated cells over a
student's frame (numbers, bools, text, a category, dates), a Series and arrays, with the
runtime state taken by the kernel's own snapshot (``kernel/snapshot.py``: reprs and the
values captured as data). Wherever the rules call their answer complete it must be exactly
what IPython shows; where they say the cell raises, it must raise that error."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pandas as pd
import pytest
from ipython_display import checked_against_python

from themisto_ext.contract import CaptureSettings
from themisto_ext.kernel.snapshot import Snapshotter
from themisto_ext.redaction import Redactor


def values() -> dict[str, Any]:
    df = pd.DataFrame({
        "name": ["Ann", "Bob", "Cid", "Dee", "Eve", "Fay", "Gus", "Hal"],
        "age": [21, 25, 30, 35, 40, 22, 28, 33],
        "score": [70.5, 80.0, 65.25, 90.0, 85.5, 77.0, None, 68.0],
        "city": ["Oslo", "Rome", "Oslo", "Lima", "Rome", "Oslo", "Lima", "Rome"],
    })
    df["passed"] = df["score"] >= 75
    df["grade"] = pd.Categorical(["b", "a", "c", "a", "a", "b", "c", "b"])
    df["joined"] = pd.to_datetime(["2024-01-05", "2024-02-10", "2024-03-15", "2024-04-20",
                                   "2024-05-25", "2024-06-30", "2024-07-04", "2024-08-08"])
    return {
        "df": df, "s": pd.Series([3, 1, 4, 1, 5, 9, 2, 6], name="digits"),
        "prices": pd.Series([1.5, 2.25, 3.0], index=["tea", "coffee", "cake"]),
        "a": np.arange(12).reshape(3, 4), "v": np.array([0.5, 1.25, -2.0, 3.75]),
        "flags": np.array([True, False, True]),
    }


EXPRESSIONS = [
    # columns and selection
    "df['age']", "df['age'].median()", "df['age'].min()", "df['age'].std()", "df.dtypes",
    "df['score'].mean()", "df['score'].isna().sum()", "df['passed']", "df['passed'].sum()",
    "df['passed'].mean()", "df[df['passed']]", "df[df['age'] > 30]['name']",
    "df.loc[df['city'] == 'Oslo', 'age']", "df[['name', 'age']].head(3)", "df.shape",
    "df.columns", "df.index", "len(df)", "df.iloc[2]", "df.iloc[0, 1]", "df.loc[3, 'name']",
    "df['scroe']", "df['age'] + 1", "df['age'] * df['score']", "df['score'].round(1)",
    "df.age.max()", "df.nonexistent", "df['age'].between(25, 35)",
    # aggregations and groups
    "df.groupby('city')['age'].mean()", "df.groupby('city').size()",
    "df.groupby('city')['score'].max()", "df.groupby('grade', observed=True)['age'].sum()",
    "df.groupby('passed')['age'].count()", "df['city'].value_counts()",
    "df['grade'].value_counts()", "df['city'].unique()", "df['city'].nunique()",
    "df.sort_values('age').head(3)", "df.sort_values('score', ascending=False)['name']",
    "df.nlargest(2, 'age')", "df['age'].nsmallest(3)", "df['age'].describe()",
    "df.describe()", "df['age'].tolist()", "df['name'].str.upper()",
    "df['name'].str.len()", "df['city'].str.startswith('O')", "df['name'].str.lower().tolist()",
    "df['grade'].cat.categories", "df['joined'].dt.month", "df['joined'].max()",
    "df['age'].idxmax()", "df.isnull().sum()", "df['score'].fillna(0)", "df.dropna().shape",
    "df['age'].cumsum()", "df['city'].str.contains('o')", "df.head()", "df.tail(2)",
    # Series and arrays
    "s.sum()", "s.sort_values()", "s.value_counts()", "s[s > 2]", "s.head(3)", "s.mean()",
    "prices['cake']", "prices.idxmax()", "prices * 2", "prices.sort_values()",
    "a.sum(axis=0)", "a[1]", "a[:, 2]", "a.T", "a.shape", "a > 5", "a.mean()", "v.round(1)",
    "v.sum()", "v * 2", "v[v > 0]", "np.sqrt(v[v > 0])", "flags.sum()", "a.reshape(4, 3)",
    "undefined_frame", "s.missing_method()",
]
STATEMENTS = [
    "{e}", "print({e})", "r = {e}\nr", "df['extra'] = df['age'] * 2\n{e}",
    "print('n:', len(df))\n{e}", "x = df['age'].max()\nprint(x)\n{e}",
]


def snapshot(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The runtime variables as the kernel's snapshot writes them."""
    settings = CaptureSettings(cell_budget=10, value_budget=5)  # a first pandas repr is slow
    taker = Snapshotter(settings, Redactor.of(settings))
    variables, _ = taker.take(list(found.items()), set())
    return variables


def cells(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["\n".join(rng.choice(STATEMENTS).format(e=rng.choice(EXPRESSIONS))
                      for _ in range(rng.randint(1, 2))) for _ in range(count)]


def test_the_snapshot_keeps_small_frames_series_and_arrays_as_data():
    variables = snapshot(values())
    assert [name for name, entry in variables.items() if "data" not in entry] == []
    assert variables["df"]["data"]["dtypes"][4:6] == [
        "|b1", {"categories": {"dtype": variables["df"]["data"]["columns"]["dtype"],
                               "values": ["a", "b", "c"], "name": None}, "ordered": False}]


@pytest.mark.parametrize("seed", range(1, 6))
def test_what_the_rules_call_complete_is_what_pandas_and_numpy_show(seed):
    found = values()
    history = [{"code": "import pandas as pd\nimport numpy as np",
                "runtime_variables": snapshot(found), "outputs": [], "output": "",
                "error": None}]
    real = {**found, "pd": pd, "np": np}
    complete, raised = checked_against_python(cells(seed, 400), real, history)
    assert complete > 250 and raised > 10, (complete, raised)  # ~300 and ~20 of 400


def test_a_value_holding_a_secret_is_kept_as_masked_text_not_as_data():
    password = "correct-horse-battery-staple-42"
    found = {
        "db_password": password,  # a secret by its name: its value is masked everywhere
        "logins": pd.DataFrame({"user": ["ann", "bob"], "pw": [password, "x"]}),
        "keys": pd.Series(["AKIAIOSFODNN7EXAMPLE", "none"]),  # a credential format
        "scores": pd.Series([1.5, 2.5]),  # ordinary data: kept
    }
    variables = snapshot(found)
    assert "data" not in variables["logins"] and "data" not in variables["keys"]
    assert password not in variables["logins"]["repr"]
    assert "AKIAIOSFODNN7EXAMPLE" not in variables["keys"]["repr"]
    assert variables["scores"]["data"]["values"] == [1.5, 2.5]


def test_large_or_foreign_values_are_not_kept_as_data():
    class Label(str):  # a subclass: its repr is the user's code
        pass

    found = {
        "big": pd.DataFrame({"x": range(2_000)}),  # more than DATA_ELEMENTS values
        "foreign": pd.Series([Label("a"), "b"], dtype=object),
        "objects": np.array([1, "a"], dtype=object),
        "multi": pd.DataFrame({"x": [1, 2]}, index=pd.MultiIndex.from_tuples([(1, 2), (3, 4)])),
    }
    variables = snapshot(found)
    assert [name for name, entry in variables.items() if "data" in entry] == []


def test_the_live_stream_carries_no_captured_data():
    # the page's runtime table reads type, size and repr: a frame's 1,000 values stay on
    # the server (in the step, for the rules), not in every step event
    from themisto_ext.events import step_event

    variables = snapshot(values())
    step = {"trajectory_id": "t", "kernel_id": "k", "step": 2, "cell_id": None,
            "code": "df", "output": "", "execution_time": 0.1, "memory_bytes": None,
            "runtime_variables": variables, "error": None}
    sent = step_event(step)["step"]["runtime_variables"]  # type: ignore[arg-type]
    assert set(sent) == set(variables)
    assert all("data" not in info and info["repr"] for info in sent.values())
    assert "data" in variables["df"]  # the step itself keeps it


def test_a_record_this_pandas_cannot_rebuild_falls_back_to_the_repr_and_its_rounding():
    # a dtype an older pandas lacks: the rules read the repr, whose floats pandas rounded
    # to 6 decimals, and so do not call a sum of them complete
    shown = pd.Series([0.1234567, 0.7654321])
    entry = {"type": "Series", "size": 144, "size_exact": True, "shape": [2], "length": 2,
             "repr": repr(shown), "data": {"kind": "Series", "dtype": "<no-such-dtype",
                                            "values": [0.1234567, 0.7654321],
                                            "index": {"range": [0, 2, 1], "name": None},
                                            "name": None}}
    history = [{"code": "import pandas as pd", "runtime_variables": {"s": entry},
                "outputs": [], "output": "", "error": None}]
    from themisto_ext.prediction.clients.baseline import determined

    assert not determined("s.sum()", history).complete
    exact = dict(entry, data=snapshot({"s": shown})["s"]["data"])
    found = determined("s.sum()", [dict(history[0], runtime_variables={"s": exact})])
    assert found.complete and found.text == repr(shown.sum())


def test_a_rebuilt_object_is_shown_as_the_kernel_wrote_it_without_changing_options():
    """``frames.shown`` passes the snapshot's display settings to ``to_string`` instead of
    setting pandas' options, which are the whole server's: over generated Series and
    DataFrames it gives what ``repr`` gives under those options, or refuses."""
    from themisto_ext.contract import PANDAS_DISPLAY
    from themisto_ext.rules.frames import shown

    rng = random.Random(7)

    def column(k: int) -> Any:
        kind = rng.choice(["int", "float", "str", "bool", "category", "long", "nan", "date"])
        if kind == "int":
            return [rng.randint(-10 ** rng.randint(1, 9), 10 ** rng.randint(1, 9))
                    for _ in range(k)]
        if kind == "float":
            return [rng.uniform(-1e3, 1e3) * 10 ** rng.randint(-8, 8) for _ in range(k)]
        if kind == "str":
            return ["".join(rng.choices("abcdefXYZ", k=rng.randint(1, 8))) for _ in range(k)]
        if kind == "bool":
            return [rng.random() < .5 for _ in range(k)]
        if kind == "category":
            return pd.Categorical([rng.choice("abc") for _ in range(k)])
        if kind == "long":
            return ["x" * rng.randint(30, 80) for _ in range(k)]
        if kind == "nan":
            return [rng.choice([1.5, np.nan, 2.25]) for _ in range(k)]
        return pd.date_range("2020-01-01", periods=k, freq=rng.choice(["D", "h"]))

    before = pd.get_option("display.max_rows")
    shown_count = refused = 0
    for _ in range(600):
        rows = rng.choice([0, 1, 3, 10, 11, 25, 200])
        value: Any
        if rng.random() < .5:
            value = pd.Series(column(rows), name=rng.choice([None, "a", "a long name"]))
        else:
            value = pd.DataFrame({f"c{j}" * rng.randint(1, 4): column(rows)
                                  for j in range(rng.choice([1, 2, 5, 12, 13, 30]))})
        with pd.option_context(*PANDAS_DISPLAY):
            wanted = repr(value)
        try:
            assert shown(value) == wanted
            shown_count += 1
        except ValueError:
            refused += 1
            assert isinstance(value, pd.Series)  # texts as long as a column is wide
    assert shown_count > 500 and refused < 100, (shown_count, refused)
    assert pd.get_option("display.max_rows") == before
