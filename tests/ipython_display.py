"""What IPython shows for a cell, run for real: the baseline's rules are checked against it."""

from __future__ import annotations

import ast
import contextlib
import io
import types
from collections.abc import Iterable
from typing import Any


class Raised(Exception):
    """The cell raised: what it printed first, and the last line of the traceback."""

    def __init__(self, printed: str, line: str) -> None:
        super().__init__(line)
        self.printed, self.line = printed, line


def shown_by_python(code: str, variables: dict[str, Any]) -> str:
    """The cell's prints, then its last expression as IPython displays it (nothing for
    None), run on a copy of ``variables`` (containers copied one level deep); ``Raised``
    when it raises."""
    import traceback

    from IPython.lib.pretty import pretty

    namespace = {name: value if isinstance(value, types.ModuleType) else
                 value.copy() if hasattr(value, "copy") else value
                 for name, value in variables.items()}
    tree = ast.parse(code)
    last = tree.body.pop() if isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(tree, "<cell>", "exec"), namespace)
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace) \
                if last is not None else None
    except Exception as error:
        raise Raised(printed.getvalue().removesuffix("\n"),
                     traceback.format_exception_only(error)[-1].strip()) from None
    return (printed.getvalue() + ("" if value is None else pretty(value))).removesuffix("\n")


def checked_against_python(cells: Iterable[str], variables: dict[str, Any],
                           history: list[dict[str, Any]]) -> tuple[int, int]:
    """Run each cell for real over ``variables`` and by the rules over ``history``;
    wherever the rules call their answer complete it must be exactly what Python shows,
    and where they say the cell raises, it must print what they say and raise that
    error. Returns how many answers were complete and how many said what raised."""
    from themisto_ext.prediction.clients.baseline import determined

    complete = raised = 0
    for code in cells:
        try:
            truth: str | None = shown_by_python(code, variables)
            error = None
        except Raised as raising:  # a traceback, which the rules never write whole
            truth, error = None, raising
        found = determined(code, history)
        if found is None:
            continue
        if found.complete:
            complete += 1
            assert found.text == truth, code
        if found.raised is not None:  # what it printed, then the traceback's last line
            raised += 1
            assert error is not None and (found.text, found.raised) == (
                error.printed, error.line), code
    return complete, raised
