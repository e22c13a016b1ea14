"""The figures a cell draws, as the notebook shows them in text: ``<Figure size 640x480
with 1 Axes>``.

Under the inline backend every figure a cell creates is displayed when the cell ends (and
closed), and its text/plain is that line, whatever the plot shows. A cell that draws with
pyplot (``plt.plot``, ``plt.subplots(2, 3, figsize=(9, 6))``, ``df.plot()``, a function
defined earlier that draws) and displays nothing else therefore shows exactly those lines,
and the rules can say so when they can count the figures, their axes and their size:

* a figure is made by ``plt.figure``/``plt.subplots``, or by the first pyplot call that
  needs axes (``plt.plot``, ``plt.xlabel``...) or a pandas ``.plot()`` when no figure is open;
* axes are counted from ``plt.subplots(r, c)``, ``plt.axes``, ``plt.subplot``,
  ``add_subplot``/``add_axes``, colour bars and twins, outside loops;
* the size is ``figsize`` times the notebook's dpi, and without ``figsize`` the size the
  notebook's figures have had (both learnt from the figures earlier cells showed; the
  defaults 6.4 x 4.8 inches at 100 dpi before any).

Anything else (seaborn, ``DataFrame.hist``, figures or axes made in a loop, a changed
``rcParams`` or style, even in a ``with``, a last expression that shows its value, a
print) is undetermined:
None. The cell is never run.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from themisto_ext.records import Step
from themisto_ext.rules import names

FIGURE = re.compile(r"<Figure size (\d+(?:\.\d+)?)x(\d+(?:\.\d+)?) with (\d+) Axes>")
_INCHES = (6.4, 4.8)  # matplotlib's default figure.figsize
_DPI = 100.0
_TEMPORARY_STYLE = re.compile(r"\b(?:style\.context|rc_context)\b")
# how a notebook picks its backend: ``%matplotlib notebook``, ``matplotlib.use("agg")``
_BACKEND = re.compile(r"^[ \t]*%(?:matplotlib|pylab)\b[ \t]*([^\s#]*)"
                      r"|\bmatplotlib\.use\(\s*['\"]([^'\"]*)['\"]", re.MULTILINE)
# pyplot calls that draw on the current axes, making a figure and axes when none is open
_NEEDS_AXES = {
    "plot", "scatter", "hist", "hist2d", "bar", "barh", "imshow", "matshow", "contour",
    "contourf", "errorbar", "fill_between", "fill_betweenx", "fill", "pie", "boxplot",
    "violinplot", "hexbin", "pcolormesh", "pcolor", "stem", "step", "quiver", "streamplot",
    "text", "annotate", "title", "xlabel", "ylabel", "xlim", "ylim", "xticks", "yticks",
    "axis", "grid", "legend", "loglog", "semilogx", "semilogy", "axhline", "axvline",
    "axhspan", "axvspan", "gca", "clim", "tick_params", "stackplot", "eventplot", "polar",
}
# pyplot calls that change nothing a figure's line shows
_HARMLESS = {"show", "tight_layout", "savefig", "draw", "pause", "get_cmap", "colormaps",
             "Normalize", "cm", "setp", "margins", "suptitle"}

# the other pyplot functions a star import binds that make or change figures and axes
# (those not handled in ``pyplot_call`` leave the cell undetermined)
_STAR_BOUND = _NEEDS_AXES | _HARMLESS | {
    "figure", "subplots", "subplot", "subplot2grid", "subplot_mosaic", "axes", "colorbar",
    "gcf", "twinx", "twiny", "figimage", "figtext", "sca", "close", "clf", "cla", "rc",
    "rcdefaults", "ion", "ioff", "xkcd", "style"}
_STAR_IMPORT = re.compile(r"^[ \t]*(?:from\s+(?:pylab|matplotlib\.pyplot)\s+import\s+\*"
                          r"|%pylab\b)", re.MULTILINE)

# calls that change what an earlier figure's line shows without making a figure
_RESIZING = {"set_size_inches", "set_figwidth", "set_figheight", "set_dpi", "set", "delaxes",
             "remove", "clear", "clf", "cla"}


class _Undetermined(Exception):
    """The rules cannot tell what figures the cell shows (caught in ``figure_text``)."""


@dataclass
class _Figure:
    inches: tuple[float, float] | None  # None: the notebook's default size
    dpi: float | None = None
    axes: int = 0


@dataclass
class _Drawing:
    """The figures a cell makes, call by call."""

    pyplot: set[str]
    functions: dict[str, ast.FunctionDef]
    figures: list[_Figure] = field(default_factory=list)
    in_loop: int = 0
    in_branch: int = 0
    calling: set[str] = field(default_factory=set)
    prints: bool = False
    starred: bool = False  # ``from pylab import *``: ``subplot(1, 2, 1)`` is pyplot's

    @property
    def current(self) -> _Figure | None:
        return self.figures[-1] if self.figures else None

    def new_figure(self, call: ast.Call, axes: int) -> None:
        if self.in_loop or self.in_branch:
            raise _Undetermined("a figure made in a loop or a branch")
        self.figures.append(_Figure(_figsize(call), _number(_keyword(call, "dpi")), axes))

    def add_axes(self) -> None:
        if self.in_loop or self.in_branch:
            raise _Undetermined("axes made in a loop or a branch")
        if self.current is None:
            self.figures.append(_Figure(None))
        assert self.current is not None
        self.current.axes += 1

    def needs_axes(self) -> None:
        if self.current is None or self.current.axes == 0:
            if self.in_branch:
                raise _Undetermined("a figure a branch may make")
            if self.current is None:
                self.figures.append(_Figure(None))
            assert self.current is not None
            self.current.axes = 1

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.For | ast.While | ast.AsyncFor):
            self.in_loop += 1
            for child in [*node.body, *node.orelse]:
                self.statement(child)
            self.in_loop -= 1
            self.expressions(getattr(node, "iter", None) or getattr(node, "test", None))
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return  # defined, not run
        branch = isinstance(node, ast.If | ast.Try | ast.Match)
        self.in_branch += branch  # whether a branch runs is unknown
        for part in _parts(node):
            if isinstance(part, ast.stmt):
                self.statement(part)
            else:
                self.expressions(part)
        self.in_branch -= branch

    def expressions(self, node: ast.expr | None) -> None:
        if node is None:
            return
        for child in ast.iter_child_nodes(node):  # arguments are evaluated first
            if isinstance(child, ast.expr):
                self.expressions(child)
            elif isinstance(child, ast.keyword):
                self.expressions(child.value)
        if isinstance(node, ast.Call):
            self.call(node)

    def call(self, call: ast.Call) -> None:
        name = _dotted(call.func)
        if name is None:
            return
        head, _, rest = name.partition(".")
        attribute = name.rsplit(".", 1)[-1]
        if name in ("print", "display"):
            self.prints = True
            return
        if self.starred and name in _STAR_BOUND and name not in self.functions:
            self.pyplot_call(name, call)
        elif head in self.pyplot:
            self.pyplot_call(rest, call)
        elif name in self.functions:
            self.user_function(name)
        elif head in ("sns", "seaborn") and not rest.startswith(("set", "load_", "color")):
            raise _Undetermined("seaborn")
        elif attribute in ("add_subplot", "add_axes", "colorbar", "twinx", "twiny"):
            if self.current is not None:  # else an earlier cell's figure: the inline
                self.add_axes()  # backend closed it when that cell ended, shown no more
        elif attribute == "subplots" and len(name.split(".")) == 2:  # fig.subplots(...)
            raise _Undetermined("subplots of an open figure")
        elif attribute == "plot" or ".plot." in f".{name}.":
            if _keyword(call, "subplots") is not None:
                raise _Undetermined("one axes a column")
            if _keyword(call, "ax") is None and not _axes_like(head):
                self.needs_axes()  # pandas: a new figure when none is open
        elif attribute in ("hist", "boxplot") and not _axes_like(head):
            raise _Undetermined("DataFrame.hist draws a grid of axes")

    def pyplot_call(self, rest: str, call: ast.Call) -> None:
        first = rest.split(".", 1)[0]
        if rest == "figure":
            self.new_figure(call, 0)
        elif rest == "subplots":
            rows = _int_argument(call, 0, "nrows")
            cols = _int_argument(call, 1, "ncols")
            self.new_figure(call, rows * cols)
        elif rest in ("subplot", "subplot2grid", "axes", "colorbar"):
            self.add_axes()
        elif rest == "gcf":  # (figure is handled above)
            if self.current is None:
                self.figures.append(_Figure(None))
        elif first in _NEEDS_AXES:
            self.needs_axes()
        elif first in _HARMLESS or first[:1].isupper():
            return  # classes (plt.MaxNLocator(3), plt.Circle(...)) make no figure
        else:  # rc, rcParams, style.use, style.context (a style may set the figure's dpi
            # or size: fivethirtyeight showed figsize 11x4 as 880x320), close, ioff...
            raise _Undetermined(f"pyplot.{rest}")

    def user_function(self, name: str) -> None:
        if name in self.calling:
            raise _Undetermined("recursion")
        self.calling.add(name)
        for statement in self.functions[name].body:
            self.statement(statement)
        self.calling.discard(name)


def figure_text(cell: ast.Module, history: Sequence[Step], quiet: bool,
                snapshot: Mapping[str, Any]) -> str | None:
    """The lines the figures the parsed ``cell`` makes or shows again show, "" for none,
    when they are all the cell shows (``quiet``: its last token is a semicolon); None where
    the rules cannot tell, or the cell shows more than its figures. ``snapshot``: the
    runtime variables the prediction may read (an earlier figure is known from them)."""
    try:
        return _figure_text(cell, history, quiet, snapshot)
    except (RecursionError, _Undetermined):
        return None


def _figure_text(cell: ast.Module, history: Sequence[Step], quiet: bool,
                 snapshot: Mapping[str, Any]) -> str:
    if not _inline_backend(history):
        raise _Undetermined("another backend shows figures otherwise (or not at all)")
    dropped, added = names.cell_effect(cell, "matplotlib.pyplot")
    pyplot = (names.module_names(history, "matplotlib.pyplot") - dropped) | added
    functions = _drawing_functions(history, cell)
    drawing = _Drawing(pyplot, functions, starred=_star_imported(history, cell))
    for statement in cell.body:
        drawing.statement(statement)
    if not drawing.figures:
        return "" if quiet or drawing.prints else _earlier_figure(cell, snapshot)
    if drawing.prints or not _shows_nothing_else(cell, quiet, drawing):
        raise _Undetermined("the cell shows more than its figures")
    default, dpi = _learnt_sizes(history)
    lines = []
    for figure in drawing.figures:
        scale = figure.dpi or dpi
        if figure.inches is None:
            width, height = default if figure.dpi is None else \
                (_INCHES[0] * scale, _INCHES[1] * scale)
        else:
            width, height = figure.inches[0] * scale, figure.inches[1] * scale
        lines.append(f"<Figure size {width:g}x{height:g} with {figure.axes} Axes>")
    return "\n".join(lines)


def _star_imported(history: Sequence[Step], cell: ast.Module) -> bool:
    """Whether pyplot's functions are bare names: ``from pylab import *``, ``%pylab``."""
    return any(isinstance(node, ast.ImportFrom) and node.module in ("pylab", "matplotlib.pyplot")
               and any(alias.name == "*" for alias in node.names) for node in cell.body) \
        or any(_STAR_IMPORT.search(str(step.get("code") or "")) for step in history)


def _earlier_figure(cell: ast.Module, snapshot: Mapping[str, Any]) -> str:
    """A cell that ends with ``fig``, a figure an earlier cell made (the inline backend
    closed it then: only this expression shows it), shows that figure's line as the
    snapshot holds it, when the cell makes no figure, prints nothing, does not rebind
    ``fig`` and calls nothing that resizes it or removes axes; drawing on its axes
    (``ax.text(...)``, tick locators in a loop) changes neither. "" for any other cell."""
    last = cell.body[-1] if cell.body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Name)):
        return ""
    entry = snapshot.get(last.value.id)
    if not isinstance(entry, Mapping) or entry.get("type") != "Figure":
        return ""
    text = entry.get("repr")
    if not (isinstance(text, str) and FIGURE.fullmatch(text)):
        return ""
    if last.value.id in names.bound(cell) or any(
            isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1]
            in _RESIZING for node in ast.walk(cell)):
        return ""  # rebound, or it may change size or lose axes: the cell's own rules
    return text


def _shows_nothing_else(cell: ast.Module, quiet: bool, drawing: _Drawing) -> bool:
    """The cell's last statement shows no value: a statement, a quiet expression (``;``), a
    pyplot call that returns None, or a function defined earlier that returns nothing."""
    last = cell.body[-1]
    if not isinstance(last, ast.Expr) or quiet:
        return True
    if not isinstance(last.value, ast.Call):
        return False
    name = _dotted(last.value.func) or ""
    head, _, rest = name.partition(".")
    if head in drawing.pyplot and rest in ("show", "tight_layout"):
        return True
    function = drawing.functions.get(name)
    return function is not None and not any(
        isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function))


def _learnt_sizes(history: Sequence[Step]) -> tuple[tuple[float, float], float]:
    """(default size in pixels, dpi) as the notebook's figures showed them: the latest
    figure of a cell that made one figure without ``figsize`` gives the default size, the
    latest with ``figsize`` the dpi."""
    default: tuple[float, float] | None = None
    dpi: float | None = None
    for step in reversed(history):
        if _TEMPORARY_STYLE.search(str(step.get("code") or "")):
            continue  # its size held in that context only
        shown = [m for o in step.get("outputs") or []
                 if o.get("output_type") == "display_data"
                 for m in FIGURE.finditer(str(o.get("text") or ""))]
        if len(shown) != 1:
            continue
        size = float(shown[0].group(1)), float(shown[0].group(2))
        inches = _cell_figsize(str(step.get("code") or ""))
        if inches is None and default is None:
            default = size
        elif isinstance(inches, tuple) and dpi is None:
            dpi = size[0] / inches[0]
        if default is not None and dpi is not None:
            break
    if dpi is None:
        dpi = default[0] / _INCHES[0] if default is not None else _DPI
    return default or (_INCHES[0] * dpi, _INCHES[1] * dpi), dpi


def _inline_backend(history: Sequence[Step]) -> bool:
    """Whether figures go to the inline backend: the last backend the notebook chose
    (``%matplotlib notebook`` shows a widget, ``matplotlib.use("agg")`` nothing), inline
    when it chose none (IPython's default in a notebook)."""
    for step in reversed(history):
        chosen = _chosen_backend(str(step.get("code") or ""))
        if chosen is not None:
            return chosen in ("", "inline") or "inline" in chosen
    return True


@functools.lru_cache(maxsize=4096)
def _chosen_backend(code: str) -> str | None:
    """The backend the cell's last ``%matplotlib``/``matplotlib.use`` picks, lower case
    ("" for ``%matplotlib`` alone); None when it picks none."""
    picks = [m.group(1) if m.group(1) is not None else m.group(2)
             for m in _BACKEND.finditer(code)]
    return picks[-1].lower() if picks else None


@functools.lru_cache(maxsize=4096)
def _cell_figsize(code: str) -> tuple[float, float] | str | None:
    """The one ``figsize`` a cell gives, None for none, "unknown" for several or a
    non-literal one. Cached: every prediction reads the history."""
    tree = names.parsed(code)
    if tree is None:
        return "unknown"
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and _keyword(n, "figsize") is not None]
    if not calls:
        return None
    sizes = {_figsize(c) for c in calls}
    if len(sizes) != 1 or None in sizes:
        return "unknown"
    return sizes.pop()


def _drawing_functions(history: Sequence[Step], cell: ast.Module) -> dict[str, ast.FunctionDef]:
    """Functions defined at top level by earlier cells or this one (the latest wins)."""
    found: dict[str, ast.FunctionDef] = {}
    for step in history:
        found.update(_functions(str(step.get("code") or "")))
    found.update({n.name: n for n in cell.body if isinstance(n, ast.FunctionDef)})
    return found


@functools.lru_cache(maxsize=4096)
def _functions(code: str) -> dict[str, ast.FunctionDef]:
    tree = names.parsed(code)
    return {} if tree is None else {n.name: n for n in tree.body
                                    if isinstance(n, ast.FunctionDef)}


def _parts(node: ast.AST) -> Iterable[ast.stmt | ast.expr]:
    """A statement's statements and expressions, in order, through ``except`` handlers,
    ``case`` clauses and ``with`` items."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt | ast.expr):
            yield child
        elif isinstance(child, ast.excepthandler | ast.match_case):
            yield from _parts(child)
        elif isinstance(child, ast.withitem):
            yield child.context_expr


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):  # data.resample('W').sum().plot(): the last name counts
        inner = _dotted(node.func)
        return None if inner is None else ".".join([inner, *reversed(parts)])
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _axes_like(name: str) -> bool:
    """An axes or figure object by its conventional name (``ax``, ``ax1``, ``axi``, ``fig``)."""
    return re.fullmatch(r"(ax|axes|axs|axi|fig|figure)\w*", name) is not None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _number(node: ast.expr | None) -> float | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return float(node.value)
    raise _Undetermined("a size that is not a literal")


def _figsize(call: ast.Call) -> tuple[float, float] | None:
    node = _keyword(call, "figsize")
    if node is None:
        return None
    if isinstance(node, ast.Tuple | ast.List) and len(node.elts) == 2:
        width, height = _number(node.elts[0]), _number(node.elts[1])
        if width is not None and height is not None:
            return width, height
    raise _Undetermined("a figsize that is not a literal")


def _int_argument(call: ast.Call, position: int, name: str) -> int:
    node = call.args[position] if len(call.args) > position else _keyword(call, name)
    if node is None:
        return 1
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    raise _Undetermined("a grid that is not a literal")
