"""Secrets deleted in the cell that bound them: shown to the redactor just before ``del``.

A value the snapshot never sees cannot be learnt from it: ``pw = open('pw').read();
print(pw); del pw`` prints a secret that is gone when the cell ends, so the output kept
it in clear. IPython's AST transformers see the cell before it runs; this one puts a call
in front of every module-level ``del`` of a secret-looking name, which hands the value
(read from the namespace, no user code runs) to the redactor while it still exists.

Invisible to the user's code as far as Python lets it be: the call has the ``del``'s line
number (tracebacks are unchanged), it never raises (the ``del`` itself raises NameError as
before), and the name it is called by is in the namespace only during cells that need it
and hidden from ``%who``. Only module-level statements are looked at: a function's local
variable is never in the namespace. The transformer is in ``shell.ast_transformers`` only
during a cell whose code has such a ``del`` (a linear scan of its text before it runs):
while any transformer is registered IPython walks every cell's whole tree again
(``ast.fix_missing_locations``), 1.5 s for a 10^5-line cell.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from typing import Any

from themisto_ext.kernel.private import untraced

HOOK = "__themisto_deleting__"

_DEL = re.compile(r"(?m)^[ \t]*del[ \t]+([^\n#]*)")

_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


class SecretDeletions(ast.NodeTransformer):
    """Put in ``shell.ast_transformers`` by ``arm`` for one cell, out by ``disarm``."""

    def __init__(self, shell: Any, is_secret: Callable[[str], bool],
                 learn: Callable[[str, Any], None]) -> None:
        self._shell = shell
        self._is_secret = is_secret
        self._learn = learn

    def visit(self, node: ast.AST) -> ast.AST:
        # IPython unregisters a transformer that raises (with a warning in the cell).
        with untraced():  # a user's trace function sees this entry frame only
            try:
                if isinstance(node, ast.Module) and self._rewrite(node.body):
                    ast.fix_missing_locations(node)
                    self._shell.user_ns[HOOK] = self._deleting
                    self._shell.user_ns_hidden[HOOK] = None
            except Exception:
                pass
        return node

    def arm(self, code: str) -> None:
        """Before a cell runs: registered if its code deletes a secret-looking name."""
        deleted = (name for line in _DEL.findall(code)
                   for name in re.split(r"[\s,()\[\];]+", line) if name.isidentifier())
        if any(self._is_secret(name) for name in deleted) \
                and self not in self._shell.ast_transformers:
            self._shell.ast_transformers.append(self)

    def disarm(self) -> None:
        """After the cell: unregistered, and the call's name leaves the namespace."""
        try:
            while self in self._shell.ast_transformers:
                self._shell.ast_transformers.remove(self)
            self._shell.user_ns.pop(HOOK, None)
            self._shell.user_ns_hidden.pop(HOOK, None)
        except Exception:
            pass

    def _rewrite(self, body: list[ast.stmt]) -> bool:
        changed = False
        for index in range(len(body) - 1, -1, -1):
            statement = body[index]
            if isinstance(statement, ast.Delete):
                names = [n for n in _names(statement.targets) if self._is_secret(n)]
                if names:
                    body.insert(index, _call(names, statement))
                    changed = True
            elif isinstance(statement, _BLOCKS):
                for block in _blocks(statement):
                    changed |= self._rewrite(block)
        return changed

    def _deleting(self, *names: str) -> None:
        with untraced():
            self._learn_all(names)

    def _learn_all(self, names: tuple[str, ...]) -> None:
        for name in names:
            try:
                value = self._shell.user_ns[name]
            except Exception:
                continue  # not bound: the ``del`` says so to the user
            try:
                self._learn(name, value)
            except Exception:
                pass


def _names(targets: Iterable[ast.expr]) -> Iterable[str]:
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Tuple | ast.List):
            yield from _names(target.elts)


def _blocks(statement: ast.stmt) -> Iterable[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if block:
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body


def _call(names: list[str], where: ast.stmt) -> ast.stmt:
    call = ast.Expr(ast.Call(ast.Name(HOOK, ast.Load()),
                             [ast.Constant(name) for name in names], []))
    return ast.copy_location(call, where)
