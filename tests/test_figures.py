"""The figures a cell draws, told from its code (rules/figures.py), checked
against matplotlib itself drawing the same cells."""

from __future__ import annotations

import ast

import pytest

from themisto_ext.prediction.clients.baseline import _quiet, determined_output
from themisto_ext.rules import figures

IMPORT = "import numpy as np\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 10, 50)"


def step(code: str, shown: str = "") -> dict:
    outputs = [{"output_type": "display_data", "mime_types": ["image/png", "text/plain"],
                "text": line} for line in shown.splitlines()]
    return {"code": code, "output": shown, "outputs": outputs, "error": None,
            "runtime_variables": {}}


def told(code: str, history: list[dict] | None = None) -> str | None:
    return figures.figure_text(ast.parse(code), [step(IMPORT)] if history is None
                               else history, _quiet(code), {})


def drawn(code: str) -> str:
    """What matplotlib shows for the figures ``code`` makes: run it (Agg, no display) and
    read every open figure's repr, as the inline backend does when a cell ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    with matplotlib.rc_context({"figure.figsize": (6.4, 4.8), "figure.dpi": 100}):
        exec(compile(IMPORT + "\n" + code, "<cell>", "exec"), {})
        shown = "\n".join(repr(plt.figure(n)) for n in plt.get_fignums())
    plt.close("all")
    return shown


CELLS = [
    "plt.plot(x, np.sin(x));",
    "plt.plot(x, np.sin(x))\nplt.xlim(-1, 11)\nplt.ylim(-1.5, 1.5);",
    "fig, ax = plt.subplots(2, 3, figsize=(9, 6))",
    "fig, ax = plt.subplots(2, sharex=True)\nax[0].plot(x)\nax[1].plot(x);",
    "fig = plt.figure()",
    "fig = plt.figure(figsize=(8, 3))\nax = fig.add_subplot(1, 2, 1)\n"
    "ax2 = fig.add_axes([0.6, 0.1, 0.3, 0.8])",
    "plt.imshow(np.eye(4))\nplt.colorbar();",
    "ax = plt.axes()\nax2 = ax.twinx()\nax.plot(x);",
    "for k in range(3):\n    plt.plot(x, x * k)\nplt.legend(['a', 'b', 'c']);",
    "fig, ax = plt.subplots(1, 2, figsize=(16, 6))\nfor axi in ax.flat:\n    axi.plot(x)",
    "plt.figure()\nplt.subplot(2, 1, 1)\nplt.plot(x)\nplt.subplot(2, 1, 2)\nplt.plot(x);",
    "def draw(values):\n    plt.scatter(values, values)\n\ndraw(x)",
    "y = x * 2",
    "ax = plt.axes(xticks=[], yticks=[])\nax.xaxis.set_major_locator(plt.MaxNLocator(3));",
]


@pytest.mark.parametrize("code", CELLS)
def test_the_figures_told_are_those_matplotlib_draws(code):
    assert told(code) == drawn(code)


@pytest.mark.parametrize("code", [
    "plt.plot(x, np.sin(x))",  # the Line2D list is shown too, with its address
    "plt.plot(x)\nprint('done')",
    "import seaborn as sns\nsns.histplot(x);",
    "plt.style.use('ggplot')\nplt.plot(x);",
    "with plt.style.context('fivethirtyeight'):\n    plt.hist(x);",  # a style may set dpi
    "for i in range(1, 4):\n    plt.subplot(1, 3, i)",
    "if len(x) > 3:\n    plt.plot(x);",
    "fig, ax = plt.subplots(n, 2)",
    "plt.figure(figsize=(w, 3));",
    "import pandas as pd\npd.DataFrame({'a': x, 'b': x}).hist();",
    "frame.plot(subplots=True);",
])
def test_what_the_rules_cannot_count_is_undetermined(code):
    assert told(code) is None


def test_sizes_are_learnt_from_the_figures_the_notebook_showed():
    history = [step(IMPORT), step("plt.plot(x);", "<Figure size 1000x700 with 1 Axes>")]
    assert told("plt.scatter(x, x);", history) == "<Figure size 1000x700 with 1 Axes>"
    # dpi from a figure with figsize: 4 inches showed as 288 pixels, 72 dpi
    history = [step(IMPORT),
               step("plt.figure(figsize=(4, 3))\nplt.plot(x);",
                    "<Figure size 288x216 with 1 Axes>")]
    assert told("fig, ax = plt.subplots(1, 2, figsize=(10, 4))", history) == \
        "<Figure size 720x288 with 2 Axes>"
    assert told("plt.plot(x);", history) == "<Figure size 460.8x345.6 with 1 Axes>"


def test_pyplot_is_known_by_the_name_it_was_imported_as():
    history = [step("%matplotlib inline\nimport matplotlib.pyplot as mp")]
    assert told("mp.plot([1, 2]);", history) == "<Figure size 640x480 with 1 Axes>"
    assert told("plt.xlabel('a');", history) == ""  # plt is not pyplot here
    assert told("mp.xlabel('a');", [*history, step("mp = None")]) == ""


def test_a_cell_that_draws_is_determined_by_its_figures_alone():
    state = {"x": {"type": "ndarray", "size": 512, "shape": [50], "repr": "array([...])"},
             "fit": {"type": "function", "size": 136, "repr": "<function fit>"}}
    history = [dict(step(IMPORT), runtime_variables=state)]
    assert determined_output("fig = plt.figure()", history) == \
        ("<Figure size 640x480 with 0 Axes>", True)
    assert determined_output("model = fit(x)\nplt.scatter(x, x);", history) == \
        ("<Figure size 640x480 with 1 Axes>", True)
    assert determined_output("plt.scatter(x, x)", history) == ("", False)
    assert determined_output("y = 3\ny", history) == ("3", True)  # no figure: as before
    # No variable recorded at all (a first cell failed before assigning x): a cell that
    # reads names nothing accounts for may raise NameError before it draws.
    assert determined_output("plt.hist(x, 40);", [step(IMPORT)]) == \
        ("<Figure size 640x480 with 1 Axes>", False)


def test_an_earlier_figure_shown_again_shows_its_line_as_the_snapshot_holds_it():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {}
    exec(IMPORT + "\nfig, ax = plt.subplots(2, 3, figsize=(5, 3))", namespace)
    snapshot = {"fig": {"type": "Figure", "repr": repr(namespace["fig"])},
                "ax": {"type": "ndarray", "repr": "array([[<Axes: >, ...]], dtype=object)"}}
    history = [step(IMPORT), step("fig, ax = plt.subplots(2, 3, figsize=(5, 3))",
                                  repr(namespace["fig"]))]
    cell = ("for i in range(2):\n    for j in range(3):\n"
            "        ax[i, j].text(0.5, 0.5, str((i, j)), ha='center')\n"
            "        ax[i, j].xaxis.set_major_locator(plt.MaxNLocator(3))\nfig")
    exec(cell.rsplit("\n", 1)[0], namespace)
    plt.close("all")

    def said(code: str) -> str | None:
        return figures.figure_text(ast.parse(code), history, _quiet(code), snapshot)

    assert said(cell) == repr(namespace["fig"]) == "<Figure size 500x300 with 6 Axes>"
    assert said("fig.set_size_inches(3, 3)\nfig") == ""  # resized: not the line it had
    assert said("fig.delaxes(ax[0, 0])\nfig") == ""
    assert said("fig;") == ""  # quiet
    assert said("print(1)\nfig") == ""  # prints too
    assert said("fig = None\nfig") == ""  # rebound
    assert figures.figure_text(ast.parse("fig"), history, False, {}) == ""  # not visible


def test_a_size_shown_under_a_temporary_style_is_not_learnt():
    history = [step(IMPORT), step("plt.plot(x);", "<Figure size 640x480 with 1 Axes>"),
               step("with plt.style.context('fivethirtyeight'):\n    plt.plot(x);",
                    "<Figure size 512x384 with 1 Axes>")]
    assert told("plt.scatter(x, x);", history) == "<Figure size 640x480 with 1 Axes>"


@pytest.mark.parametrize("choice", ["%matplotlib notebook", "%matplotlib widget",
                                    "import matplotlib\nmatplotlib.use('Agg')"])
def test_figures_under_another_backend_are_undetermined(choice):
    # `%matplotlib notebook` shows a Javascript widget, Agg nothing: not the inline line
    assert told("plt.plot(x);", [step(IMPORT), step(choice)]) is None
    assert told("plt.plot(x);", [step(choice), step("%matplotlib inline"), step(IMPORT)]) \
        == "<Figure size 640x480 with 1 Axes>"  # the last choice counts
    assert told("plt.plot(x);", [step("%matplotlib"), step(IMPORT)]) \
        == "<Figure size 640x480 with 1 Axes>"  # the notebook's default: inline


def test_after_a_pylab_star_import_bare_pyplot_calls_count():
    # from pylab import *: subplot(1, 2, 1) is pyplot's (it was read as no call at all)
    history = [step("from pylab import *"), step("x = linspace(0, 5, 10)\ny = x ** 2")]
    code = "subplot(1,2,1)\nplot(x, y, 'r--')\nsubplot(1,2,2)\nplot(y, x, 'g*-');"
    assert told(code, history) == "<Figure size 640x480 with 2 Axes>"
    assert told("figure()\ntwinx()\nplot(x, y);", history) is None  # twinx: not counted
    assert told(code) == "<Figure size 640x480 with 1 Axes>"  # without it, plot's figure only


def test_axes_added_to_an_earlier_cell_s_figure_show_nothing():
    # the inline backend closed it when its cell ended: fig.add_subplot shows no figure
    history = [step(IMPORT), step("fig = plt.figure(figsize=(10, 6))",
                                  "<Figure size 1000x600 with 0 Axes>")]
    assert told("ax1 = fig.add_subplot(2, 2, 1)", history) == ""
    assert told("ax = fig.add_subplot()\nax.plot(x);", history) == ""
    assert told("fig2 = plt.figure()\nax = fig2.add_subplot(1, 2, 1)", history) == \
        "<Figure size 640x480 with 1 Axes>"  # (a figsize given once is not the default)
