"""What IPython shows for a cell, run for real: the baseline's rules are checked against it."""

from __future__ import annotations

import ast
import contextlib
import io
import types
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
