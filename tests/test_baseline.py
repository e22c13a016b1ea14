"""The baseline predictor on hand-built steps in the documented trajectory format."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ipython_display import shown_by_python

from themisto_ext.prediction.clients.base import PredictionRequest
from themisto_ext.prediction.clients.baseline import (
    BaselinePredictor,
    determined,
    determined_output,
)
from themisto_ext.prediction.prompts import PredictionTask, Prompt
from themisto_ext.trajectory import validate_step

FRAME_REPR = "        age  income\n0        23   41000\n...\n[100000 rows x 2 columns]"
VARIABLES: dict[str, dict[str, Any]] = {
    "df": {"type": "DataFrame", "size": 2400132, "size_exact": True, "shape": [100000, 2],
           "length": 100000, "repr": FRAME_REPR},
    "ages": {"type": "Series", "size": 800132, "size_exact": True, "shape": [100000],
             "length": 100000, "repr": "0        23\n1        57\n..."},
    "arr": {"type": "ndarray", "size": 96128, "size_exact": True, "shape": [4, 3, 1000],
            "repr": "array([[[0.1, ...]]])"},
    "n": {"type": "int", "size": 28, "size_exact": True, "repr": "1000"},
    "ratio": {"type": "float", "size": 24, "size_exact": True, "repr": "0.25"},
    "name": {"type": "str", "size": 54, "size_exact": True, "length": 5, "repr": "'alice'"},
    "long_text": {"type": "str", "size": 5049, "size_exact": True, "length": 5000,
                  "repr": "'" + "x" * 1000 + "'"},
    "xs": {"type": "list", "size": 120, "size_exact": True, "length": 3, "repr": "[10, 20, 30]"},
    "cut": {"type": "list", "size": 8056, "size_exact": False, "length": 1000,
            "repr": "[0, 1, 2, ...]"},
    "squares": {"type": "list", "size": 999, "size_exact": True, "length": 30,
                "repr": repr([i * i for i in range(30)])},
    "config": {"type": "dict", "size": 232, "size_exact": True, "length": 2,
               "repr": "{'lr': 0.01, 'layers': [64, 32]}"},
    "nothing": {"type": "NoneType", "size": 16, "size_exact": True, "repr": "None"},
    "mean": {"type": "float64", "size": 32, "size_exact": True, "repr": "np.float64(41.5)"},
    "model": {"type": "Model", "size": 48, "size_exact": False, "repr": "<__main__.Model object>"},
    "api_key": {"type": "str", "size": 90, "size_exact": True, "length": 40,
                "repr": "<redacted>"},
    "later": {"type": "list", "size": None, "size_exact": False, "length": 7,
              "repr": "<pending: snapshot budget used up; measured at a later cell>"},
    "helper": {"type": "function", "size": 136, "size_exact": False,
               "repr": "<function helper at 0x7f3a1c2b3d40>"},
}


def step(number: int, code: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """A step as the recorder writes it (checked against the schema)."""
    record = {
        "format_version": 1, "trajectory_id": "4c1fe0114e4146d686b5c0d3cb1b1217",
        "kernel_id": "9b8f2d0e-1c1e-4b7e-a3a4-0f3c2f6d1e55", "step": number,
        "cell_id": f"cell{number}", "notebook_path": "analysis/ages.ipynb",
        "started_at": "2026-11-29T09:34:37.112083+00:00",
        "ended_at": "2026-11-29T09:34:37.139750+00:00",
        "code": code, "output": "", "outputs": [], "execution_time": 0.027667,
        "memory_bytes": 98312192, "runtime_variables": variables or {},
        "hash_index": "5f0d6c1e9a3b47c28d1e0f6a7b2c9d41", "error": None,
    }  # fmt: skip
    validate_step(record)
    return record


HISTORY = [
    step(1, "import pandas as pd\nimport numpy as np"),
    step(2, "class Model:\n    pass\nmodel = Model()"),
    step(3, "df = pd.read_csv('ages.csv')", VARIABLES),
]


def request(task: PredictionTask, history: list[dict[str, Any]],
            target: str | None) -> PredictionRequest:
    prompt = Prompt(task=task, context="full", system="", prefix="", suffix="")
    return PredictionRequest(task=task, history=history, target_code=target, prompt=prompt)


def predict(task: PredictionTask, history: list[dict[str, Any]], target: str | None = None) -> str:
    predictor = BaselinePredictor()
    completion = asyncio.run(predictor.predict(request(task, history, target)))
    asyncio.run(predictor.aclose())
    assert completion.model == "baseline"
    assert completion.prompt_tokens is None and completion.completion_tokens is None
    # measured, and no model call (the first call imports IPython's printer: ~1 s on a busy
    # machine, so no tighter bound here; benchmarks measure speed)
    assert 0 <= completion.latency < 10
    return completion.text


def output(code: str, history: list[dict[str, Any]] = HISTORY) -> str:
    return predict("output", history, code)


def test_name_and_protocol():
    assert BaselinePredictor.name == "baseline"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("df", FRAME_REPR),  # a frame: the snapshot's summary
        ("n", "1000"),
        ("name", "'alice'"),
        ("xs", "[10, 20, 30]"),
        ("config", "{'lr': 0.01, 'layers': [64, 32]}"),
        ("mean", "np.float64(41.5)"),
        ("model", "<__main__.Model object>"),
        ("nothing", ""),  # IPython shows nothing for None
        # IPython's pretty printer breaks a long list one item per line.
        ("squares", "[" + ",\n ".join(str(i * i) for i in range(30)) + "]"),
    ],
)
def test_a_bare_name_shows_its_value(code, expected):
    assert output(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("df.shape", "(100000, 2)"),
        ("ages.shape", "(100000,)"),
        ("arr.shape", "(4, 3, 1000)"),
        ("arr.ndim", "3"),
        ("arr.size", "12000"),
        ("df.shape[0]", "100000"),
        ("len(df)", "100000"),
        ("len(arr)", "4"),  # no length recorded: the first dimension
        ("len(xs)", "3"),
        ("len(later)", "7"),  # the repr is pending, the length is known
        ("xs[0]", "10"),
        ("xs[-1]", "30"),
        ("xs[1:]", "[20, 30]"),
        ("config['layers']", "[64, 32]"),
        ("name[0]", "'a'"),
        ("n, len(xs)", "(1000, 3)"),
    ],
)
def test_sizes_shapes_and_items_come_from_the_snapshot(code, expected):
    assert output(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # IPython displays a type by its qualified name; print shows str(type).
        ("type(n)", "int"),
        ("type(nothing)", "NoneType"),
        ("type(df)", "pandas.DataFrame"),
        ("type(arr)", "numpy.ndarray"),
        ("type(model)", "__main__.Model"),
        ("print(type(n))", "<class 'int'>"),
        ("print(type(df))", "<class 'pandas.DataFrame'>"),
        ("type(ages), type(name)", "(pandas.Series, str)"),
        ("type(3.5)", "float"),
    ],
)
def test_types(code, expected):
    assert output(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("print('hi')", "hi"),
        ("print(name)", "alice"),  # a string prints without quotes
        ("print(xs)", "[10, 20, 30]"),
        ("print(mean)", "41.5"),
        ("print(df)", FRAME_REPR),
        ("print('a', 1, None, sep='-')", "a-1-None"),
        ("print('no newline', end='')", "no newline"),
        ("print(f'{len(df)} rows, {df.shape[1]} columns, ratio {ratio:.1%}')",
         "100000 rows, 2 columns, ratio 25.0%"),
        ("print(f'{name!r:>9}|')", "  'alice'|"),
        ("print('start')\nresult = model.score(df)\nprint('done')", "start\ndone"),
        ("print('Shape:', df.shape)\ndf.head()", "Shape: (100000, 2)"),
        ("total = 3\nprint(total * 2)\nprint(n)", "6\n1000"),
        ("msg = f'{n} rows'\nprint(msg)\nmsg", "1000 rows\n'1000 rows'"),
        ("returned = print('abc')", "abc"),  # an assignment that prints
        ("returned = print(n, sep='-')\nreturned", "1000"),  # None is not displayed
    ],
)
def test_prints(code, expected):
    assert output(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "x = print(compute(df))",  # prints what it cannot know
        "shown = [print(i) for i in items]",
        "class Verbose:\n    print(later)",  # a class body runs when it is defined
    ],
)
def test_an_assignment_or_definition_that_calls_print_is_not_taken_as_silent(code):
    determined = determined_output(code, HISTORY)
    assert determined is not None and determined[1] is False


@pytest.mark.parametrize(
    "code",
    [
        "my_result = print_result(20, 20)",
        "d = Dog()",  # Animal's __init__ prints
        "total = account.withdraw(5)",  # a method that prints
        "checked = checked_twice(3)",  # calls one that raises
    ],
)
def test_an_assignment_calling_a_definition_that_may_show_is_not_taken_as_silent(code):
    defined = step(1, "def print_result(a, b):\n    print(a + b)\n\n"
                      "class Animal:\n    def __init__(self):\n        print('Animal created')\n\n"
                      "class Dog(Animal):\n    pass\n\n"
                      "class Account:\n    def withdraw(self, n):\n        print('Done')\n\n"
                      "def checked(n):\n    if n < 0:\n        raise ValueError(n)\n"
                      "    return n\n\n"
                      "def checked_twice(n):\n    return checked(checked(n))",
                   {"account": _listed("<__main__.Account object>", "Account")})
    determined = determined_output(code, [defined])
    assert determined is not None and determined[1] is False


def test_an_assignment_calling_a_quiet_definition_stays_silent():
    defined = step(1, "class Circle:\n    def __init__(self, r=1):\n        self.r = r\n\n"
                      "def area(c):\n    return 3.14 * c.r ** 2")
    assert determined_output("c = Circle(2)\na = area(c)", [defined]) == ("", True)


def test_a_function_that_prints_is_silent_until_called():
    assert determined_output("def f():\n    print(n)", HISTORY) == ("", True)


@pytest.mark.parametrize(
    "code",
    [
        "x = 5",  # the last statement is an assignment
        "df['age'] = df['age'] + 1",
        "df.head()",  # depends on data the snapshot does not hold
        "n;",  # a trailing semicolon hides the result
        "print(model)",  # its str is unknown
        "api_key",  # redacted
        "later",  # not measured yet
        "long_text",  # cut short by the snapshot
        "print(cut)",  # ditto, "..." in the repr
        "helper",  # IPython would show its signature, not this repr
        "undefined_name",
        "xs[10]",  # would raise
        "for i in range(n * n):\n    print(i)",  # more steps than a guess may take
        "for row in df:\n    print(row)",
        "def f():\n    return 1",
        "%timeit df.sum()",  # magics are not Python
        "!ls",
        "df.shape +",  # a syntax error
        "",
    ],
)
def test_nothing_is_predicted_when_nothing_is_determined(code):
    assert output(code) == ""


@pytest.mark.parametrize(
    "code",
    [
        "compute(xs)\nlen(xs)",  # the call may change xs
        "df = df.dropna()\ndf.shape",
        "for xs in compute():\n    pass\nxs",
        "del name\nname",
    ],
)
def test_a_variable_the_cell_touches_is_no_longer_known(code):
    assert output(code) == ""


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("n + 1", "1001"),
        ("n = n + 1\nn", "1001"),  # x = <known value> keeps it known
        ("print(n * 2, ratio + 0.5)", "2000 0.75"),
        ("len(xs) * 2", "6"),
        ("xs + [40]", "[10, 20, 30, 40]"),
        ("-n", "-1000"),
        ("not xs", "False"),
        ("0 < ratio < 1", "True"),
        ("n > 10 and name", "'alice'"),  # the operand that decided, as Python gives it
        ("sum(xs) / len(xs)", "20.0"),
        ("f'{n // 3} left {n % 3}'", "'333 left 1'"),
    ],
)
def test_arithmetic_over_values_the_snapshot_holds(code, expected):
    assert output(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "2 ** 10**9",  # bounded before it runs: no guess may take the time the cell would
        "'x' * 10**12",
        "1 << 10**9",
        "n ** n",
        "mean + 1",  # a NumPy scalar: its arithmetic is not Python's
        "model + 1",  # an object's __add__ is the user's code
        "n / 0",  # would raise
        "ages.sum() + 1",  # the data is not in the snapshot
    ],
)
def test_arithmetic_the_baseline_cannot_know_predicts_nothing(code):
    assert output(code) == ""


def test_a_value_computed_in_one_cell_is_used_by_the_next():
    """The issue's trajectory: ``a = 6`` / ``b = a * 7; b`` / ``print(b + 1)``."""
    history = [step(1, "a = 6", {"a": {**VARIABLES["n"], "repr": "6"}})]
    assert output("b = a * 7\nb", history) == "42"
    history.append(step(2, "b = a * 7\nb", {"a": {**VARIABLES["n"], "repr": "6"},
                                            "b": {**VARIABLES["n"], "repr": "42"}}))
    assert output("print(b + 1)", history) == "43"


def test_values_the_cell_assigns_are_known():
    assert output("y = 5\ny") == "5"
    assert output("n = 7\nprint(n)\nlen(xs)") == "7\n3"
    assert output("pair = (n, ratio)\npair[1]") == "0.25"


def test_rebound_builtins_are_not_trusted():
    shadowing = {**VARIABLES, "len": VARIABLES["helper"]}
    assert output("len(xs)", [step(1, "def len(x):\n    return 0", shadowing)]) == ""
    assert output("def print(*a):\n    pass\nprint('hi')") == ""
    assert output("type = str\ntype(n)") == ""


def test_without_history_only_literals_are_known():
    assert output("print('hello', 42)", []) == "hello 42"
    assert output("x", []) == ""
    assert output("[1, 2][0]", []) == "1"


def test_the_state_is_the_one_after_the_last_step():
    earlier = step(1, "n = 1", {"n": {**VARIABLES["n"], "repr": "1"}})
    later = step(2, "n = 2", {"n": {**VARIABLES["n"], "repr": "2"}})
    assert output("n", [earlier, later]) == "2"
    assert output("n", [later, earlier]) == "1"


NOTEBOOK = [
    "import pandas as pd",
    "df = pd.read_csv('train.csv')",
    "df.head()",
    "df.describe()",
    "model = fit(df)",
    "df = pd.read_csv('test.csv')",
]


def test_next_cell_follows_the_most_similar_earlier_cell():
    history = [step(i + 1, code) for i, code in enumerate(NOTEBOOK)]
    # The last cell is most like "df = pd.read_csv('train.csv')", which "df.head()" followed.
    assert predict("next-cell", history) == "df.head()"


def test_next_cell_ties_go_to_the_latest_occurrence():
    codes = ["x = load()", "plot(x)", "x = load()", "summary(x)", "x = load()"]
    history = [step(i + 1, code) for i, code in enumerate(codes)]
    assert predict("next-cell", history) == "summary(x)"


def test_next_cell_needs_two_steps():
    assert predict("next-cell", []) == ""
    assert predict("next-cell", [step(1, "import numpy as np")]) == ""


def test_next_cell_with_two_steps_repeats_the_second():
    history = [step(1, "a = 1"), step(2, "b = 2")]
    assert predict("next-cell", history) == "b = 2"


def test_predictions_are_deterministic():
    history = [step(i + 1, code) for i, code in enumerate(NOTEBOOK)]
    assert {predict("next-cell", history) for _ in range(3)} == {"df.head()"}
    assert {output("print(f'{len(df)} rows')") for _ in range(3)} == {"100000 rows"}


def array_entry(text: str, shape: list[int]) -> dict[str, Any]:
    return {"type": "ndarray", "size": 160, "size_exact": True, "shape": shape,
            "length": shape[0], "repr": text}


ARRAYS = [
    step(1, "import numpy as np"),
    step(2, "x1 = rng.integers(10, size=6)\nx2 = rng.integers(10, size=(3, 4))", {
        "x1": array_entry("array([9, 4, 0, 3, 8, 6])", [6]),
        "x2": array_entry("array([[3, 1, 3, 7],\n       [4, 0, 2, 3],\n       [0, 0, 6, 9]])",
                          [3, 4]),
        "v": array_entry("array([ 1., nan,  3.,  4.])", [4]),
        "big": array_entry("array([   0,    1,    2, ..., 4997, 4998, 4999])", [5000]),
    }),
]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x1[-1]", "np.int64(6)"),
        ("x2[2, -1]", "np.int64(9)"),
        ("x1[::-1]", "array([6, 8, 3, 0, 4, 9])"),
        ("x2[:2, ::2]", "array([[3, 3],\n       [4, 2]])"),
        ("x2[:, 0]", "array([3, 4, 0])"),
        ("x1[:, np.newaxis].shape", "(6, 1)"),
        ("x1 > 3", "array([ True,  True, False, False,  True,  True])"),
        ("x1[x1 < 5]", "array([4, 0, 3])"),
        ("(x1 > 3) & (x1 < 9)", "array([False,  True, False, False,  True,  True])"),
        ("np.sum(x2 < 6, axis=1)", "array([3, 4, 2])"),
        ("np.any(x2 > 8), np.all(x2 < 10)", "(np.True_, np.True_)"),
        ("x2.sum()", "np.int64(38)"),
        ("v.sum(), np.nansum(v)", "(np.float64(nan), np.float64(8.0))"),
        ("print(x2)", "[[3 1 3 7]\n [4 0 2 3]\n [0 0 6 9]]"),
        ("np.concatenate([x1, x1[:2]])", "array([9, 4, 0, 3, 8, 6, 9, 4])"),
        ("np.zeros(3, dtype=int)", "array([0, 0, 0])"),
        # every ufunc, and their reduce/accumulate/outer
        ("np.add(x1, 2)", "array([11,  6,  2,  5, 10,  8])"),
        ("np.absolute(-x1[:3])", "array([9, 4, 0])"),
        ("print(np.power(2., [1, 2, 3]))", "[2. 4. 8.]"),
        ("np.add.reduce(x1), np.multiply.accumulate(x1[:3])",
         "(np.int64(30), array([ 9, 36,  0]))"),
        ("np.multiply.outer(x1[:2], x1[:2])", "array([[81, 36],\n       [36, 16]])"),
        ("np.argsort(x1)", "array([2, 3, 1, 5, 4, 0])"),
        ("np.partition(x1, 2)[:3]", "array([0, 3, 4])"),
        ("grid = np.arange(1, 7).reshape(2, 3)\ngrid.T",
         "array([[1, 4],\n       [2, 5],\n       [3, 6]])"),
        # an assignment to an item is done on the cell's copy, and a view shares it
        ("x2[0, 0] = 12\nx2[0]", "array([12,  1,  3,  7])"),
        ("sub = x2[:2, :2]\nsub[0, 0] = 99\nprint(x2[0])", "[99  1  3  7]"),
        ("sub = x2[:2, :2].copy()\nsub[0, 0] = 99\nprint(x2[0])", "[3 1 3 7]"),
    ],
)
def test_arrays_the_snapshot_holds_whole_are_computed(code, expected):
    assert output(code, ARRAYS) == expected


@pytest.mark.parametrize(
    "code",
    [
        "big[0]",  # the repr was cut short: its values are not all known
        "np.sum(big)",  # ditto: NumPy "sums" an object it does not know into itself
        "np.min(big), np.max(big)",
        "np.arange(10**12)",  # bounded before it is made
        "np.zeros((10**6, 10**6))",
        "x1[:, np.newaxis] * np.ones(10**8)",  # a broadcast bounded before it runs
        "x1.reshape(10**5, 10**5)",
        "np.random.rand(3)",  # not a known function: no guess at randomness
        "x1.tofile('/tmp/x')",  # not a known method: nothing with side effects runs
        "np.add(x1, 2, out=x1)",  # writes: not computed
        "np.multiply.outer(np.ones(200), np.ones(200))",  # bounded before it runs
        "np.add.at(x1, [0], 1)",  # not a known ufunc method
        "x1 < x2 < 3",  # a chained comparison of arrays raises
        "x1[10]",  # would raise
    ],
)
def test_array_work_the_baseline_cannot_know_or_bound_predicts_nothing(code):
    assert output(code, ARRAYS) == ""


def test_numpy_is_known_only_under_the_name_it_was_imported_as():
    assert output("np.sum(x1)", ARRAYS) == "np.int64(30)"
    rebound = [*ARRAYS, step(3, "np = None", ARRAYS[1]["runtime_variables"])]
    assert output("np.sum(x1)", rebound) == ""
    assert output("import numpy as numpy_\nnumpy_.max(x1)", rebound) == "np.int64(9)"


@pytest.mark.parametrize("first", [
    "%matplotlib inline\nimport numpy as np",  # a magic: not Python to ast alone
    "!pip list\nimport numpy as np",
    "try:\n    import numpy as np\nexcept ImportError:\n    np = None",
    "from numpy import sum\nimport numpy as np",
])
def test_numpy_is_known_from_cells_read_as_ipython_runs_them(first):
    history = [step(1, first), ARRAYS[1]]
    assert output("np.sum(x1)", history) == "np.int64(30)"


def frame_entry(kind: str, text: str, shape: list[int]) -> dict[str, Any]:
    return {"type": kind, "size": 600, "size_exact": True, "shape": shape,
            "length": shape[0], "repr": text}


# reprs as the kernel wrote them (03.01 and 03.04 of the shared notebooks, recorded)
FRAMES = [
    step(1, "import pandas as pd"),
    step(2, "states = pd.DataFrame({'population': population, 'area': area})", {
        "data": frame_entry("Series", "0    0.25\n1    0.50\n2    0.75\n3    1.00\n"
                                      "dtype: float64", [4]),
        "states": frame_entry(
            "DataFrame",
            "              population    area\nCalifornia      39538223  423967\n"
            "Texas           29145505  695662\nFlorida         21538187  170312\n"
            "New York        20201249  141297\nPennsylvania    13002700  119280", [5, 2]),
        "mixed": frame_entry("Series", "0        1\n1      NaN\n2    hello\n3     None\n"
                                       "dtype: object", [4]),
        "df": frame_entry("DataFrame", "     a    b  c\n0  1.0  NaN  2\n1  2.0  3.0  5\n"
                                       "2  NaN  4.0  6", [3, 3]),
        # columns 0 1 2 or "0" "1" "2": the repr does not say, fillna({1: 0}) would
        "numbered": frame_entry("DataFrame", "     0    1\n0  1.0  NaN\n1  2.0  3.0", [2, 2]),
        "dated": frame_entry("Series", "2011-01-02   -0.204708\n2011-01-05    0.478943\n"
                                       "dtype: float64", [2]),
        "rounded": frame_entry("Series", "0    0.374540\n1    0.950714\n2    0.731994\n"
                                         "dtype: float64", [3]),
        "density": frame_entry(
            "DataFrame", "              area     density\nCalifornia  423967   93.257784\n"
            "Texas       695662   41.896072\nFlorida     170312  126.463121", [3, 2]),
        "long": frame_entry("Series", "0     0\n1     1\n2     2\n     ..\n97   97\n98   98\n"
                                      "99   99\nLength: 100, dtype: int64", [100]),
    }),
]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("data.sum()", "np.float64(2.5)"),
        ("data[1:3]", "1    0.50\n2    0.75\ndtype: float64"),
        ("data * 2", "0    0.5\n1    1.0\n2    1.5\n3    2.0\ndtype: float64"),
        ("states['area'].max()", "np.int64(695662)"),
        ("states.loc['Texas', 'area']", "np.int64(695662)"),
        ("states.loc['New York']",
         "population    20201249\narea            141297\nName: New York, dtype: int64"),
        ("print(states['population'].sum())", "123425864"),
        ("states.head(2)", "            population    area\nCalifornia    39538223  423967\n"
                           "Texas         29145505  695662"),
        ("states.index[0]", "'California'"),
        ("mixed.isnull()", "0    False\n1     True\n2    False\n3     True\ndtype: bool"),
        ("mixed.dropna()", "0        1\n2    hello\ndtype: object"),
        ("df.dropna()", "     a    b  c\n1  2.0  3.0  5"),
        # made from known values, under the name pandas was imported as
        ("pd.Series([2, 4, 6])", "0    2\n1    4\n2    6\ndtype: int64"),
        ("s = pd.Series({'b': 1, 'a': 2})\ns['a']", "np.int64(2)"),
        ("pd.DataFrame({'x': [1, 2]}, index=['a', 'b']).loc['b', 'x']", "np.int64(2)"),
        ("pd.Index([2, 3, 5])[1]", "np.int64(3)"),
    ],
)
def test_pandas_objects_the_snapshot_holds_whole_are_computed(code, expected):
    assert output(code, FRAMES) == expected


@pytest.mark.parametrize(
    "code",
    [
        "rounded.sum()",  # shown at pandas' precision: the kernel's values are not these
        "long.sum()",  # cut short
        "data.index",  # 0, 1, 2, 3: a RangeIndex or an Index of those, the repr cannot say
        "states.to_csv('/tmp/x.csv')",  # not a known method: nothing with side effects
        "states.fillna(0, inplace=True)",
        "states['nowhere']",  # would raise
        "pd.Series(range(10**9))",  # not a known value: nothing is made
        "pd.read_csv('data.csv')",  # not a constructor this computes
        "import pandas as other\nother.Series(pd)",  # pd is not known as a value
        "numbered.fillna({1: 0})",  # labels 0 1: numbers or text, the repr does not say
        "dated.index",  # a DatetimeIndex or text
    ],
)
def test_pandas_work_the_baseline_cannot_know_predicts_nothing(code):
    assert output(code, FRAMES) == ""


def test_a_pandas_repr_that_does_not_come_back_the_same_is_not_trusted():
    # values with spaces cannot be split from their neighbours: known by their text only
    spaced = frame_entry("DataFrame", "        name  n\n0  Ada Love  1\n1   Alan T.  2", [2, 2])
    history = [step(1, "import pandas as pd"), step(2, "people = ...", {"people": spaced})]
    assert output("people['n'].sum()", history) == ""
    assert output("people", history) == spaced["repr"]  # the bare name shows its text


def test_a_cut_short_frame_gives_its_first_and_last_rows():
    """The kernel shows a long frame's 5 first and last rows: what head() and tail() show."""
    import pandas as pd

    from themisto_ext.kernel.reprs import render

    def safe_repr(value: Any) -> str:  # as the kernel writes a snapshot's repr
        return render(value, 10_000, lambda *_: "?")

    frame = pd.DataFrame({"age": range(20, 120), "income": [i * 1000 for i in range(100)],
                          "name": [f"n{i}" for i in range(100)]})
    text = safe_repr(frame)
    assert "[100 rows x 3 columns]" in text  # cut short, as the kernel writes it
    series_text = safe_repr(frame["age"])
    history = [step(1, "import pandas as pd"), step(2, "df = pd.read_csv('people.csv')", {
        "df": frame_entry("DataFrame", text, [100, 3]),
        "ages": frame_entry("Series", series_text, [100])})]
    assert output("df.head()", history) == repr(frame.head())
    assert output("df.tail(3)", history) == repr(frame.tail(3))
    assert output("df.head(2)['name']", history) == repr(frame.head(2)["name"])
    assert output("ages.head()", history) == repr(frame["age"].head())
    assert output("list(df.columns)", history) == "['age', 'income', 'name']"
    assert output("df", history) == text  # a bare name: the recorded text
    for unknown in ("df.head(10)", "df.sum()", "df['age']", "df.describe()", "ages.max()"):
        assert output(unknown, history) == "", unknown


FITTED = [
    step(1, "import numpy as np\nfrom sklearn.svm import SVC"),
    step(2, "model = SVC(kernel='linear', C=1E10)\nX = rng.random((4, 2))\ny = [0, 1, 0, 1]", {
        "model": {"type": "SVC", "size": 48, "size_exact": False,
                  "repr": "SVC(C=10000000000.0, kernel='linear')"},
        "X": array_entry("array([[0.1, 0.2],\n       [0.3, 0.4]])", [2, 2]),
        "y": {"type": "list", "size": 88, "size_exact": True, "length": 4,
              "repr": "[0, 1, 0, 1]"},
        "cut": {"type": "Pipeline", "size": 48, "size_exact": False,
                "repr": "Pipeline(steps=[('pca', PCA(n_components=150"},
        "other": {"type": "Fitter", "size": 48, "size_exact": False,
                  "repr": "<Fitter object at 0x7f00>"},
    }),
]


@pytest.mark.parametrize(("code", "expected"), [
    ("model.fit(X, y)", "SVC(C=10000000000.0, kernel='linear')"),
    ("model.fit(X[:, 0:1], np.array(y))", "SVC(C=10000000000.0, kernel='linear')"),
    ("model.fit(X, y);", ""),
    ("print(model.fit(X, y))", "SVC(C=10000000000.0, kernel='linear')"),
])
def test_fitting_a_model_shows_the_model_as_the_snapshot_shows_it(code, expected):
    assert output(code, FITTED) == expected


@pytest.mark.parametrize("code", [
    "model.fit(Xtrain, y)",  # a name the state does not know: the cell may raise
    "cut.fit(X, y)",  # the repr was cut short
    "other.fit(X, y)",  # not shown as Type(parameters): fit may return anything
    "model = SVC()\nmodel.fit(X, y)",  # rebound by the cell: its parameters unknown
    "model.set_params(C=1)\nmodel.fit(X, y)",  # changed by the cell
])
def test_fitting_what_the_snapshot_does_not_show_as_a_model_predicts_nothing(code):
    assert output(code, FITTED) == ""


ROUNDED = [
    step(1, "import numpy as np"),
    step(2, "theta = np.linspace(0, np.pi, 3)\nhalves = np.arange(4) / 2", {
        "theta": array_entry("array([0.        , 1.57079633, 3.14159265])", [3]),
        "halves": array_entry("array([0. , 0.5, 1. , 1.5])", [4]),
    }),
]


@pytest.mark.parametrize(("code", "expected"), [
    ("np.sin(theta)", None),  # sin(3.14159265) is 3.6e-09, sin(pi) 1.2e-16: cut digits matter
    ("theta.mean()", None),  # full precision shown: the cut digits show
    ("theta[1:]", "array([1.57079633, 3.14159265])"),  # reads the digits the repr kept
    ("theta > 1", "array([False,  True,  True])"),  # the cut digits cannot change it
    ("np.round(theta, 2)", "array([0.  , 1.57, 3.14])"),
    ("halves.sum()", "np.float64(3.0)"),  # short decimals are taken as they read
])
def test_a_result_that_depends_on_digits_a_repr_rounded_is_not_determined(code, expected):
    shown, complete = determined_output(code, ROUNDED)
    assert (shown if complete else None) == expected


@pytest.mark.parametrize(("code", "expected"), [
    ("density['area']", "California    423967\nTexas         695662\nFlorida       170312\n"
                        "Name: area, dtype: int64"),
    ("density[density.density > 50]",  # shown again: the same six decimals
     "              area     density\nCalifornia  423967   93.257784\n"
     "Florida     170312  126.463121"),
    ("density.iloc[:2]", "              area    density\nCalifornia  423967  93.257784\n"
                         "Texas       695662  41.896072"),
    ("density['density'].sum()", None),  # full precision: the cut digits show
    ("density.area.max()", "np.int64(695662)"),  # a column read as an attribute
    ("rounded * 1000", None),
    ("rounded > 0.5", "0    False\n1     True\n2     True\ndtype: bool"),
])
def test_a_frame_shown_with_rounded_floats_answers_what_the_rounding_cannot_change(
        code, expected):
    shown, complete = determined_output(code, FRAMES)
    assert (shown if complete else None) == expected


def test_the_head_of_a_long_frame_of_random_floats_is_its_first_rows_as_the_kernel_shows():
    import numpy as np
    import pandas as pd

    from themisto_ext.contract import PANDAS_DISPLAY

    df = pd.DataFrame(np.random.default_rng(0).random((1000, 3)), columns=["A", "B", "C"])
    with pd.option_context(*PANDAS_DISPLAY):
        text, head, tail = repr(df), repr(df.head()), repr(df.tail(3))
    history = [step(1, "import pandas as pd"), step(2, "df = pd.DataFrame(...)", {
        "df": {"type": "DataFrame", "size": 24_000, "size_exact": False, "shape": [1000, 3],
               "length": 1000, "repr": text}})]
    assert "..." in text and "0.6369" in text  # cut short, floats at pandas' 6 decimals
    assert determined_output("df.head()", history) == (head, True)
    assert determined_output("df.tail(3)", history) == (tail, True)
    assert determined_output("df.head().sum()", history) == ("", False)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("name.upper()", "'ALICE'"),
        ("name.capitalize() + '!'", "'Alice!'"),
        ("'-'.join(['a', 'b'])", "'a-b'"),
        ("'{0:.3f} and {1}'.format(ratio, n)", "'0.250 and 1000'"),
        ("ratio.is_integer()", "False"),
        ("complex(1, 2).conjugate()", "(1-2j)"),
        ("(3 + 4j).imag", "4.0"),
        ("config.get('lr')", "0.01"),
        ("list(config.keys())", "['lr', 'layers']"),
        ("xs.append(40)\nlen(xs)", "4"),  # changed in place: known as changed
        ("ys = xs\nxs.append(40)\nys", "[10, 20, 30, 40]"),  # an alias sees it
        ("xs.sort(reverse=True)\nprint(xs)", "[30, 20, 10]"),
        ("total = 0\nfor x in xs:\n    total += x\ntotal", "60"),
        ("for i, x in enumerate(xs):\n    print(i, x)", "0 10\n1 20\n2 30"),
        ("for i in range(10):\n    if i >= 3:\n        break\n    print(i, end=' ')", "0 1 2 "),
        ("for i in range(4):\n    if i % 2:\n        continue\n    print(i)\nelse:\n"
         "    print('done')", "0\n2\ndone"),
        ("[x // 10 for x in xs if x > 10]", "[2, 3]"),
        ("{x: x * x for x in range(3)}", "{0: 0, 1: 1, 2: 4}"),
        ("{a % 3 for a in range(1000)}", "{0, 1, 2}"),  # IPython shows sets sorted
        ("sum(x * x for x in range(4))", "14"),
        ("x = 5\n'odd' if x % 2 else 'even'", "'odd'"),
        ("print(*range(4))", "0 1 2 3"),
        ("print(*zip('ab', xs))", "('a', 10) ('b', 20)"),
        ("a, b = xs[0], xs[1]\na + b", "30"),
        ("range(10)", "range(0, 10)"),
        ("ys = xs\nxs += 'ab'\nys", "[10, 20, 30, 'a', 'b']"),  # in place, as Python does
        ("square = lambda x: x ** 2\nprint(*map(square, xs))", "100 400 900"),
        ("print(*filter(lambda x: x > 15, xs))", "20 30"),
        ("sorted(config.items(), key=lambda item: item[0])",
         "[('layers', [64, 32]), ('lr', 0.01)]"),
        ("max(['aa', name], key=len)", "'alice'"),
        ("G = (x * 2 for x in xs)\nfor g in G:\n    break\nlist(G)", "[40, 60]"),  # used up
    ],
)
def test_plain_python_over_known_values_is_run_as_python_runs_it(code, expected):
    assert output(code) == expected
    exec_globals: dict[str, Any] = {"name": "alice", "ratio": 0.25, "n": 1000,
                                    "xs": [10, 20, 30], "config": {"lr": 0.01,
                                                                   "layers": [64, 32]}}
    assert shown_by_python(code, exec_globals) == expected  # the check: Python agrees


@pytest.mark.parametrize(
    "code",
    [
        "print({'b', 'a'})",  # a set of strings prints in the kernel's hash order
        "list({'b', 'a'})",
        "for s in {'b', 'a'}:\n    print(s)",
        "' '.join({'b', 'a'})",
        "zip(xs, xs)",  # shows an address
        "print(iter(xs))",
        "xs.append(40)\nsquares",  # another list the snapshot holds may be xs itself
        "xs.append(compute())\nxs",
        "list(range(10 ** 12))",
        "'x'.center(10 ** 9)",
        "f'{n:1000000000}'",
        "'{:1000000000}'.format(n)",
        "'{0.__class__}'.format(n)",
        "[helper(x) for x in xs]",
        "f = lambda x: x\nf",  # IPython shows a function by its name and signature
        "from math import pi as ratio\nround(ratio, 2)",  # not the snapshot's ratio
        "f = lambda x: missing\nf(1)",
        "sorted(xs, key=helper)",
        "sorted({'b', 'a'}, key=len)",  # ties keep the set's order
        "while True:\n    print(1)",
    ],
)
def test_plain_python_the_rules_cannot_know_or_bound_predicts_nothing(code):
    determined = determined_output(code, HISTORY)
    assert determined is not None and determined[1] is False, determined


def test_a_comprehension_keeps_its_variables_to_itself():
    assert output("[n for n in range(3)]\nn") == "1000"
    assert output("total = [x for x in xs]\nx") == ""  # no x: it would raise


@pytest.mark.parametrize(
    "code",
    [
        "x = undefined_name + 1",  # it raises NameError: not "nothing shown"
        "late += 1\nlate = 0",  # read before anything binds it
        "x = xs[10]",  # IndexError on a list the snapshot holds
        "value = config['missing']",
        "ratio += 'x'",  # TypeError
        "first, second = xs",  # too many values to unpack
        "result = compute(df)",
        "for i in range(3):\n    total = missing_total + i",
    ],
)
def test_a_cell_reading_a_name_nothing_defined_is_not_taken_to_show_nothing(code):
    assert determined_output(code, HISTORY) == ("", False)


@pytest.mark.parametrize(
    "code",
    [
        "def f(value, scale=n):\n    return value * later_defined",  # read when called
        "try:\n    import json\nexcept ImportError as e:\n    problem = e",
        "frame = pd.DataFrame()",  # a module an earlier cell imported
        "_ = In",  # IPython's own
        "squares2 = [v * v for v in xs]",
        "from math import *\nresult = sin(0)",  # a star import defines unspelt names
    ],
)
def test_names_that_exist_or_may_exist_are_not_taken_as_undefined(code):
    assert determined_output(code, HISTORY) == ("", True)


def test_undefined_names_are_only_judged_on_the_whole_snapshot():
    # a part of the state (the curated context) or a star import earlier: no judgement
    part = {"n": VARIABLES["n"]}
    assert determined_output("x = compute(n)", HISTORY, part) == ("", True)
    history = [*HISTORY[:2], step(3, "from numpy import *"), HISTORY[2]]
    assert determined_output("x = compute(n)", history) == ("", True)


@pytest.mark.parametrize(
    ("code", "shown", "raised"),
    [
        ("print(n)\nx = missing + 1\nprint('never')", "1000",
         "NameError: name 'missing' is not defined"),
        ("xs[10]", "", "IndexError: list index out of range"),
        ("print('a')\nconfig['missing']", "a", "KeyError: 'missing'"),
        ("int(name)", "", "ValueError: invalid literal for int() with base 10: 'alice'"),
        ("n / 0", "", "ZeroDivisionError: division by zero"),
        ("a, b = xs", "", "ValueError: too many values to unpack (expected 2)"),
        ("for x in xs:\n    print(x)\n    if x > 10:\n        xs[10]", "10\n20",
         "IndexError: list index out of range"),  # what the loop printed first
        ("y = missing + other", "", None),  # two undefined names: which comes first?
        ("for i in xs:\n    print(missing)", "", None),  # a loop may print before it
        ("print(model.score(n))\nxs[10]", "", None),  # what came before is not known
    ],
)
def test_a_cell_the_rules_know_raises_says_what_it_prints_and_the_error(code, shown, raised):
    found = determined(code, HISTORY)
    assert found is not None and not found.complete  # the traceback's frames: not written
    assert (found.text, found.raised) == (shown, raised)


def test_after_a_star_import_the_builtins_are_not_trusted():
    # from numpy import * makes sum numpy's: sum(range(5), -1) is 10 there, 9 in Python
    history = [step(1, "from numpy import *"), step(2, "x = 1")]
    assert determined_output("sum(range(5), -1)", history) == ("", False)
    assert determined_output("print('a', 1 + 2)", history) == ("a 3", True)


def _listed(text: str, kind: str = "list") -> dict[str, Any]:
    return {"type": kind, "repr": text, "size": 64, "size_exact": True, "length": 1}


@pytest.mark.parametrize("code", ["a[0] = 9\nb", "d[5] = 6\nkv", "grow(a)\nb", "del d[1]\nkv"])
def test_a_value_that_may_be_one_changed_in_place_is_no_longer_known(code):
    # b = a and kv = d.keys() in the kernel: the snapshot cannot tell an alias
    history = [step(1, "a = [1]\nb = a\nd = {1: 2}\nkv = d.keys()\ndef grow(x):\n    x.append(0)",
                    {"a": _listed("[1]"), "b": _listed("[1]"), "d": _listed("{1: 2}", "dict"),
                     "kv": _listed("dict_keys([1])", "dict_keys")})]
    determined = determined_output(code, history)
    assert determined is not None and determined[1] is False


def test_text_columns_are_not_rebuilt_where_the_notebook_made_categoricals():
    history = [*FRAMES, step(3, "results['quartile'] = pd.qcut(results['x'], 4)", {
        "results": frame_entry("DataFrame", "  quartile  count\n0       Q1    250\n"
                                            "1       Q2    250", [2, 2])})]
    assert output("results['quartile']", history) == ""  # category, not str
    assert output("results['count'].sum()", [*FRAMES[:1], step(2, "x = 1", {
        "results": frame_entry("DataFrame", "  quartile  count\n0       Q1    250\n"
                                            "1       Q2    250", [2, 2])})]) == "np.int64(500)"


def test_numpy_print_options_the_notebook_set_are_followed():
    history = [step(1, "import numpy as np\nnp.set_printoptions(precision=4, suppress=True)"),
               step(2, "arr = np.array([[1.7247, 2.6182], [0.8286, -0.959]])",
                    {"arr": array_entry("array([[ 1.7247,  2.6182],\n       [ 0.8286, -0.959 ]])",
                                        [2, 2])})]
    assert output("np.array([1e-20, 1 / 3])", history) == "array([0.    , 0.3333])"
    # rounded to 4 decimals by the kernel: a mean's last digit is not known
    assert output("arr - arr.mean(1).reshape((2, 1))", history) == ""
    assert output("arr.shape", history) == "(2, 2)"
    computed = [*history, step(3, "np.set_printoptions(**settings)")]
    assert output("np.array([1.5])", computed) == ""  # options not readable: nothing
    reset = [*history, step(3, "np.set_printoptions(precision=8, suppress=False)")]
    assert output("np.array([1e-20, 1 / 3])", reset) == "array([1.00000000e-20, 3.33333333e-01])"


def test_an_array_changed_in_place_may_be_a_view_of_another():
    history = [step(1, "import numpy as np\narr = np.arange(10)\narr_slice = arr[5:8]", {
        "arr": array_entry("array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])", [10]),
        "arr_slice": array_entry("array([5, 6, 7])", [3])})]
    assert output("arr_slice[1] = 12345\narr", history) == ""
    assert output("arr_slice[1] = 12345\narr_slice", history) == "array([    5, 12345,     7])"
    assert output("v = arr[5:8]\nv[0] = 0\narr", history) == \
        "array([0, 1, 2, 3, 4, 0, 6, 7, 8, 9])"  # a view the cell made: numpy's own


def test_the_type_of_another_library_s_object_is_not_guessed():
    history = [step(1, "import numpy as np\nrng = np.random.default_rng(0)", {
        "rng": {"type": "Generator", "repr": "Generator(PCG64) at 0x7F0", "size": 64,
                "size_exact": True}})]
    assert output("type(rng)", history) == ""  # numpy.random._generator.Generator


def test_pandas_display_options_the_notebook_set_are_followed():
    import pandas as pd

    expected = pd.Series([0.5, 1.0, 1.5, 2.0])
    with pd.option_context("display.max_rows", 2, "display.min_rows", 2):
        truncated = repr(expected)
    assert "..." in truncated
    state = FRAMES[-1]["runtime_variables"]
    for setting in ("pd.options.display.max_rows = 2\npd.options.display.min_rows = 2",
                    "pd.set_option('display.max_rows', 2, 'min_rows', 2)"):
        history = [*FRAMES, step(3, setting, state)]
        assert output("data * 2", history) == truncated
        assert output("data * 2", [*history, step(4, "pd.reset_option('all')", state)]) == \
            "0    0.5\n1    1.0\n2    1.5\n3    2.0\ndtype: float64"
    assert output("data * 2", [*FRAMES, step(3, "pd.options.display.max_rows = rows", state)]) \
        == ""


def test_a_notebooks_pandas_options_are_applied_in_the_rules_own_process(monkeypatch):
    """pandas' options are the process's: the server's never change, even while an
    evaluation under a notebook's ``display.max_rows`` runs (here the server's
    ``option_context`` is made to fail: the answer still comes, from the rules' process)."""
    import pandas as pd

    from themisto_ext.rules import display_options

    with pd.option_context("display.max_rows", 2, "display.min_rows", 2):
        truncated = repr(pd.Series([0.5, 1.0, 1.5, 2.0]))
    state = FRAMES[-1]["runtime_variables"]
    history = [*FRAMES, step(3, "pd.options.display.max_rows = 2\n"
                                "pd.options.display.min_rows = 2", state)]

    def changed(*args: object) -> None:
        raise AssertionError(f"the server's pandas options changed: {args}")

    monkeypatch.setattr(pd, "option_context", changed)
    monkeypatch.setattr(pd, "set_option", changed)
    assert output("data * 2", history) == truncated
    assert pd.get_option("display.max_rows") == 60
    outside = display_options.Options(pandas={"display.max_rows": 2})
    with pytest.raises(RuntimeError), display_options.applied(outside):  # refused here
        pass


def test_the_rules_own_process_dying_loses_one_answer_not_the_next():
    import os

    from themisto_ext.rules import apart

    assert apart.apart(os._exit, 3, fallback="unknown") == "unknown"
    state = FRAMES[-1]["runtime_variables"]
    history = [*FRAMES, step(3, "pd.options.display.max_rows = 2\n"
                                "pd.options.display.min_rows = 2", state)]
    assert "..." in output("data * 2", history)  # a new process answers


def test_the_rules_own_process_inherits_no_secret(monkeypatch):
    import os

    from themisto_ext.rules import apart

    monkeypatch.setenv("THEMISTO_TEST_API_KEY", "sk-not-for-the-worker")
    apart.apart(os._exit, 3, fallback=None)  # a worker started after the variable was set
    assert apart.apart(os.getenv, "THEMISTO_TEST_API_KEY", "absent",
                       fallback="lost") == "absent"
    assert apart.apart(os.getenv, "PATH", fallback=None) == os.environ["PATH"]


def test_the_rules_own_process_starts_whatever_the_main_script():
    """Not multiprocessing's spawn, which re-runs the parent's ``__main__`` (nothing to
    run under ``python -c``; a script's unguarded code, once more)."""
    import subprocess
    import sys

    code = ("from themisto_ext.rules.apart import apart\n"
            "print(apart(len, 'abc', fallback=-1), apart(divmod, 7, 0, fallback=-1))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["3", "-1"], done.stderr  # and an error is unknown


def test_numpy_print_options_do_not_change_what_pandas_rounded():
    # pandas shows 6 decimals whatever NumPy's precision: 0.374540 may still be cut
    state = FRAMES[-1]["runtime_variables"]
    history = [*FRAMES, step(3, "np.set_printoptions(precision=10)", state)]
    assert output("rounded.sum()", history) == ""
