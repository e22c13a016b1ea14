"""Names at the cursor: the live kernel's names check a code model's attribute or key.

Typed right after ``obj.`` or ``obj[``, the rest of a line begins with a name the object
has: an attribute, a dictionary's key, a frame's column. The kernel knows which (its own
completer lists them, as Tab in JupyterLab shows); a small model guesses, and guesses
names that do not exist (``pd.values``, ``np.range``, ``plt.plt``). Under a context with
runtime state (not ``none``), a suggestion whose leading name the kernel does not list is
not shown: the model is asked again, held by a grammar to the names the kernel lists, and
that name alone is offered (what follows it was the model's free guess after a wrong
name). A suggestion the kernel's names agree with, or one the check cannot judge (a
number, an expression in brackets, no names in time), is left as the model wrote it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

NameSource = Callable[[], Awaitable[Sequence[str] | None]]
"""The names the kernel's completer lists at the cursor (None: none in time, or no kernel
to ask)."""
Kind = Literal["attribute", "key"]

NAMES_WAIT = 0.6
"""Seconds from the pause that a suggestion waits for the kernel's names (a warm
completer answers in 0.01-0.4 s; a cold one's first pandas key took 4 s here): past it, the
model's text is shown unchecked."""
MOST_NAMES = 3_000
"""More names than this (a star import's namespace) are no check worth a grammar."""

_ATTRIBUTE = re.compile(r"(?:[A-Za-z_]\w*|[)\]])\.$")
_SUBSCRIPT = re.compile(r"(?:[A-Za-z_]\w*|[)\]])\[$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_STRING = re.compile(r"""(?:'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""")


def kind_at(line: str) -> Kind | None:
    """What the cursor at the end of ``line`` (its text before the cursor, not in a string
    or a comment) is about to name: an attribute (after ``name.``), a key (after
    ``name[``), or None (a number's point, an open bracket of a call, anything else)."""
    if _ATTRIBUTE.search(line):
        return "attribute"
    if _SUBSCRIPT.search(line):
        return "key"
    return None


def verdict(kind: Kind, text: str, names: Sequence[str], *, ended: bool) -> bool | None:
    """Whether ``text``, a suggestion (or its beginning: ``ended`` False) after a pause of
    ``kind``, begins with a name in ``names``: True (or not judged), False (a name the
    kernel does not list), None (not yet known: the leading name may still grow)."""
    if kind == "attribute":
        found = _IDENTIFIER.match(text)
        if found is None:
            return False if ended or text else None  # after ``name.`` comes a name
        if found.end() == len(text) and not ended:
            return None
        return found.group() in set(names)
    keys = _keys(names)
    if not keys or (text and text[0] not in "'\""):
        return True  # an index, a slice, a mask: nothing to check it with
    literal = _STRING.match(text)
    if literal is None:
        return None if not ended else False
    return ast.literal_eval(literal.group()) in keys


def usable(kind: Kind, names: Sequence[str] | None) -> list[str]:
    """The names a grammar may offer after a pause of ``kind`` (attributes: identifiers;
    keys: string literals), at most ``MOST_NAMES``; empty: no check."""
    if not names:
        return []
    if kind == "attribute":
        found = [n for n in names if _IDENTIFIER.fullmatch(n)]
    else:
        found = [n for n in names if _STRING.fullmatch(n)]
    return found if len(found) <= MOST_NAMES else []


def grammar(names: Sequence[str]) -> str:
    """A llama.cpp grammar (GBNF): one of ``names``, then a character that ends it. (With
    the names alone the model must choose between ending there and a longer name: held to
    ``array`` it wrote ``array_split``, as it wanted the ``(`` no name allows.) The names
    are a tree of their shared beginnings, not one alternative each: llama.cpp checks a
    token against every alternative still open, and numpy's 497 flat took 1.9 s to the
    name where the tree takes 0.36 s (the same name)."""
    tree: dict[str, Any] = {}
    for name in set(names):
        node = tree
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}  # a name ends here
    rules: list[str] = []
    _rules(tree, "name", rules)
    return "root ::= name end\n" + "".join(rules) + "end ::= [^A-Za-z0-9_]\n"


def _rules(node: dict[str, Any], rule: str, rules: list[str]) -> None:
    """``rule`` for the names below ``node``: a literal per branch (a chain of single
    children merged), each followed by the rule of what may come after it."""
    at = len(rules)
    rules.append("")  # (its place: a rule before the rules it uses)
    branches = []
    for char, child in sorted(node.items()):
        if not char:
            branches.append('""')
            continue
        text = char
        while len(child) == 1 and "" not in child:
            ((char, child),) = child.items()
            text += char
        if list(child) == [""]:
            branches.append(json.dumps(text))
            continue
        below = f"n{len(rules)}"
        _rules(child, below, rules)
        branches.append(f"{json.dumps(text)} {below}")
    rules[at] = f"{rule} ::= {' | '.join(branches)}\n"


def leading(kind: Kind, text: str) -> str:
    """The name ``text`` begins with after a pause of ``kind`` ("" for none)."""
    found = (_IDENTIFIER if kind == "attribute" else _STRING).match(text)
    return "" if found is None else found.group()


def _keys(names: Sequence[str]) -> set[object]:
    keys: set[object] = set()
    for name in names:
        if _STRING.fullmatch(name):
            try:
                keys.add(ast.literal_eval(name))
            except (ValueError, SyntaxError):
                continue
    return keys
