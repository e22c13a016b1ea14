"""``hybrid``'s next cell without a model (issue 27): the last cell's next variation (its
last varying part moved to a sibling), never the cell just run; else no answer."""

from __future__ import annotations

from typing import Any

from test_baseline import HISTORY, step

from themisto_ext.prediction.clients.nextcell import next_cell

STATES = {"type": "DataFrame", "size": 1000, "size_exact": True, "shape": [2, 3],
          "repr": "   population  area  density\nCA  39538223  423967  93.3\n"
                  "TX  29145505  695662  41.9"}


def after(*codes: str, variables: dict[str, Any] | None = None) -> str | None:
    """The next cell predicted after cells ``codes`` ran (the last with ``variables``)."""
    steps = [step(i + 1, code) for i, code in enumerate(codes)]
    steps[-1] = step(len(codes), codes[-1], variables)
    return next_cell(steps)


def test_a_method_or_attribute_moves_to_its_sibling():
    assert after("states.index") == "states.columns"
    assert after("indA.intersection(indB)") == "indA.union(indB)"
    assert after("data.isnull()") == "data.notnull()"
    assert after("np.vstack([x, grid])") == "np.hstack([x, grid])"


def test_an_aggregate_moves_to_the_first_the_notebook_has_not_used():
    assert after("ser.sum()") == "ser.mean()"
    assert after("ser.sum()", "ser.mean()") == "ser.median()"
    assert after("x.min()") == "x.sum()"  # sum is the first aggregate not used yet


def test_operators_and_flags_move_to_their_counterparts():
    assert after("x > 3  # greater than") == "x < 3  # greater than"  # comments stay
    assert after("x != 3") == "x == 3"
    assert after("bool(42 and 0)") == "bool(42 or 0)"
    assert after("bin(42 & 59)") == "bin(42 | 59)"
    assert after("df.sum(axis=0)") == "df.sum(axis=1)"
    assert after("df.dropna(axis='columns')") == "df.dropna(axis='rows')"


def test_an_index_moves_on_but_a_literals_data_does_not():
    assert after("x1[4]") == "x1[5]"
    assert after("x1[-1]") == "x1[-2]"
    assert after("x2[:2, :3]") == "x2[:2, :4]"  # the last part that varies
    assert after("x = np.array([1, 2, 3])") is None  # data, not an index
    assert after("grid = np.arange(16).reshape((4, 4))") is None
    assert after("d = {'a': 1, 'b': 2}") is None


def test_a_column_moves_to_the_frames_next_unused_column_from_the_snapshot():
    assert after("states['population']", variables={"states": STATES}) == "states['area']"
    # a column used before is skipped
    assert after("states['area'].sum()", "states['population']",
                 variables={"states": STATES}) == "states['density']"
    # a string that names no column of a frame in the snapshot stays as it is
    assert after("print('population')") is None
    # a frame of one column has no other to move to
    single = {**STATES, "repr": "   population\nCA  39538223"}
    assert after("states['population']", variables={"states": single}) is None


def test_a_lazy_grouping_gets_its_first_aggregate():
    assert after("df.groupby('key')") == "df.groupby('key').sum()"
    assert after("df.sum()", "df.groupby('key')") == "df.groupby('key').mean()"


def test_no_answer_where_nothing_varies_or_the_cell_failed():
    assert after("import numpy as np") is None
    assert after("df = pd.read_csv('a.csv')") is None
    assert after("def center(x):\n    return x - x.mean()") is None  # a definition
    failed = {**step(1, "x.sum()"), "error": {"ename": "NameError", "evalue": "x"}}
    assert next_cell([failed]) is None  # its successor is a fix
    assert after("f(") is None  # not Python
    assert next_cell([]) is None


def test_no_answer_along_a_trajectory_is_the_cell_just_run():
    for k in range(1, len(HISTORY) + 1):
        answer = next_cell(HISTORY[:k])
        assert answer is None or answer.strip() != HISTORY[k - 1]["code"].strip()
