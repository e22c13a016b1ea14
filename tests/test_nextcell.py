"""``hybrid``'s next cell without a model (issue 27): an earlier move repeated on the names
of the last cell, never the cell just run; a look at a value just made; else no answer."""

from __future__ import annotations

from test_baseline import HISTORY, step

from themisto_ext.prediction.clients.nextcell import carry_names, next_cell

FRAME = {"type": "DataFrame", "size": 1000, "size_exact": False, "repr": "   a\n0  1",
         "shape": [1, 1]}


def test_an_earlier_move_is_repeated_on_the_last_cells_names():
    history = [step(1, "ser = pd.Series([1, 2])"), step(2, "ser.sum()"),
               step(3, "ser.mean()"), step(4, "df = pd.DataFrame({'a': [1]})"),
               step(5, "df.sum()")]
    assert next_cell(history) == "df.mean()"


def test_names_carry_over_only_where_the_cells_line_up():
    assert carry_names("print(ser.max())", "ser.sum()", "frame.sum()") == "print(frame.max())"
    # different shapes: nothing is renamed
    assert carry_names("ser.max()", "ser.sum()", "import numpy as np") == "ser.max()"


def test_the_cell_just_run_is_never_the_answer():
    # every earlier successor is the last cell's code: no answer rather than a copy
    history = [step(1, "x = 1"), step(2, "x"), step(3, "x = 1"), step(4, "x")]
    assert next_cell(history) not in ("x",)
    repeated = [step(1, "x"), step(2, "x"), step(3, "x")]
    assert next_cell(repeated) is None


def test_a_value_just_made_and_not_shown_is_looked_at():
    made = step(1, "df = pd.read_csv('a.csv')", {"df": FRAME})
    assert next_cell([made]) == "df.head()"
    shown = {**step(1, "n = 3\nn", {"n": {"type": "int", "size": 28, "size_exact": True,
                                           "repr": "3"}}), "output": "3"}
    assert next_cell([shown]) is None  # already shown: nothing to look at
    assert next_cell([]) is None


def test_no_answer_along_a_trajectory_is_the_cell_just_run():
    for k in range(1, len(HISTORY) + 1):
        answer = next_cell(HISTORY[:k])
        assert answer is None or answer.strip() != HISTORY[k - 1]["code"].strip()
