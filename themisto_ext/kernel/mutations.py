"""Which variables a cell may have changed in place, read off its code.

A value whose identity and shape did not change can still have been mutated
(``df["a"] = 0``, ``items.append(1)``); re-measuring every value a cell *names* is safe
but costly for big objects that cells mostly read (``df.shape``, ``len(numbers)``). So a
name counts as possibly mutated only where the code could change it: as an assignment or
``del`` target (directly or through a subscript or attribute), when a method outside a
read-only list is called on it (or on something reached from it), when ``inplace=True``
is passed, or when it is handed to a call that is not known to be read-only. Code that
does not parse as Python, or that calls magics, falls back to every name it mentions.
"""

from __future__ import annotations

import ast
import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARSE_LIMIT = 200_000  # characters (ast.parse takes ~0.25 s per MB)

_READ_ONLY_FUNCTIONS = frozenset({
    "abs", "all", "any", "bool", "callable", "dict", "dir", "display", "enumerate", "float",
    "format", "frozenset", "hasattr", "hash", "id", "int", "isinstance", "issubclass", "iter",
    "len", "list", "max", "min", "print", "range", "repr", "reversed", "round", "set",
    "sorted", "str", "sum", "tuple", "type", "zip",
})

_READ_ONLY_METHODS = frozenset({
    # numpy / pandas / builtins methods that return new objects and never change the receiver
    "abs", "agg", "aggregate", "all", "any", "argmax", "argmin", "argsort", "astype",
    "between", "copy", "corr", "count", "cov", "cummax", "cummin", "cumprod", "cumsum",
    "describe", "diff", "dot", "duplicated", "endswith", "equals", "flatten", "get",
    "groupby", "head", "idxmax", "idxmin", "info", "isin", "isna", "isnull", "item",
    "items", "join", "keys", "lower", "max", "mean", "median", "memory_usage", "merge",
    "min", "nlargest", "notna", "notnull", "nsmallest", "nunique", "pct_change",
    "pivot_table", "prod", "quantile", "ravel", "reshape", "rolling", "round",
    "select_dtypes", "shift", "split", "startswith", "std", "strip", "sum", "tail",
    "to_dict", "to_frame", "to_list", "to_numpy", "to_string", "tolist", "transpose",
    "unique", "upper", "value_counts", "values", "var",
})


def _maybe_mutated_by_call(call: ast.Call) -> bool:
    """Whether a call could change the object its method is called on."""
    for keyword in call.keywords:
        if keyword.arg == "inplace" and not (
            isinstance(keyword.value, ast.Constant) and keyword.value.value is False
        ):
            return True
    return not (isinstance(call.func, ast.Attribute) and call.func.attr in _READ_ONLY_METHODS)


def _argument_is_safe(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _READ_ONLY_FUNCTIONS
    return isinstance(func, ast.Attribute) and func.attr in _READ_ONLY_METHODS and not any(
        k.arg == "inplace" for k in call.keywords)


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.parents: dict[ast.AST, ast.AST] = {}
        self.mutated: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.mutated.add(node.id)
            return
        child: ast.AST = node
        parent = self.parents.get(child)
        while parent is not None:
            if isinstance(parent, ast.Attribute | ast.Subscript) and parent.value is child:
                if not isinstance(parent.ctx, ast.Load):
                    self.mutated.add(node.id)  # x.a = ..., x[i] = ..., del x[i]
                    return
            elif isinstance(parent, ast.Call) and parent.func is child:
                if child is not node and _maybe_mutated_by_call(parent):
                    self.mutated.add(node.id)
                    return
            elif isinstance(parent, ast.Call):
                if not _argument_is_safe(parent):
                    self.mutated.add(node.id)  # f(x) may change x
                return
            elif isinstance(parent, ast.Starred | ast.keyword | ast.List | ast.Tuple | ast.Set
                            | ast.Dict):
                pass  # inside an argument or a literal: decided further up
            else:
                return  # read: an operand, a comparison, an iterable...
            child, parent = parent, self.parents.get(parent)


def possibly_mutated(code: str, python: str | None = None) -> set[str]:
    """Names the cell may have rebound or changed in place.

    ``python`` is the cell as IPython ran it (magics transformed), when known.
    """
    source = python if python is not None else code
    if len(source) > PARSE_LIMIT:
        return set(_IDENTIFIER.findall(code))  # parsing would take longer than the cell's budget
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(_IDENTIFIER.findall(code))
    if "get_ipython" in source:
        return set(_IDENTIFIER.findall(code))  # magic arguments are strings: can't tell
    visitor = _Visitor()
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            visitor.parents[child] = parent
    visitor.visit(tree)
    return visitor.mutated
