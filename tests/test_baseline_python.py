"""The baseline's plain-Python rules checked against Python itself: random cells built from
the statements and expressions notebooks use (methods of strings, lists, dicts and sets,
loops, comprehensions, lambdas, errors), run for real and by the rules over a snapshot of
the same values. Wherever the rules say they know everything the cell shows, it must be
exactly what Python shows (IPython's display of the last expression included), a cell
that raises must never be called complete, and where they say it raises, it must, after
printing what they say, with the error they say."""

from __future__ import annotations

import random
from typing import Any

import pytest
from ipython_display import checked_against_python

from themisto_ext.prediction.clients.baseline import determined

VALUES: dict[str, Any] = {
    "xs": [3, 1, 2, 5], "s": "Hello world", "d": {"a": 1, "b": 2}, "t": (4, 5, 6), "n": 7,
    "f": 2.5, "st": {3, 1, 2}, "ws": ["b", "a", "c"], "z": 3 + 4j, "e": [],
    "nested": [[1, 2], [3]], "ys": [3, 1, 2, 5],
}
EXPRESSIONS = [
    *VALUES, "len(xs)", "s.upper()", "s.split()", "s.split('o')", "s.replace('l', 'L')",
    "s.find('w')", "s[::-1]", "s.title()", "s.count('l')", "'-'.join(ws)", "s.startswith('He')",
    "s.center(15, '*')", "d.get('a')", "d.get('c', 0)", "list(d.items())", "list(d)", "d.keys()",
    "sorted(st)", "len(st)", "st | {9}", "st & {1, 9}", "3 in st", "xs.index(2)", "xs.count(3)",
    "t.index(5)", "z.real", "z.conjugate()", "f.is_integer()", "n.bit_length()",
    "[x * 2 for x in xs]", "[x for x in xs if x > 2]", "{x: x % 2 for x in xs}",
    "{x % 3 for x in xs}", "sum(x for x in xs)", "list(map(lambda x: x + 1, xs))",
    "list(filter(lambda x: x % 2, xs))", "sorted(ws, key=lambda w: w)", "max(ws, key=len)",
    "sorted(xs, reverse=True)", "list(zip(xs, ws))", "list(enumerate(ws))",
    "list(reversed(xs))", "'odd' if n % 2 else 'even'", "xs[1:3]", "nested[0][1]",
    "[y for row in nested for y in row]", "range(n)", "list(range(2, n, 2))", "divmod(n, 3)",
    "round(f)", "str(xs)", "repr(s)", "f'{n:>4}|{f:.2f}'", "'{} and {}'.format(n, s)",
    "any(x > 4 for x in xs)", "min(xs)", "set(ws)", "tuple(xs)", "xs + [9]", "t * 2",
    "e or 'empty'", "not e", "hex(n)", "dict(zip(ws, xs))", "list(st)", "str(st)", "ws.pop()",
    "xs.pop(0)", "d.pop('a')", "xs.sort()", "xs.append(n)", "ws.extend(['q'])",
    "d.update({'c': 3})", "st.add(8)", "xs.remove(1)", "e.append(xs)", "iter(xs)",
    "zip(xs, ws)", "(x for x in xs)", "lambda x: x", "xs[10]", "d['zz']", "1 / 0", "int('x')",
    "undefined_name", "ys == xs",
]
STATEMENTS = [
    "{v} = {e}", "print({e})", "{e}", "{v} += 1", "xs += [{e}]",
    "for i in range(3):\n    print(i, {e})",
    "for x in xs:\n    if x > 2:\n        break\n    print(x)",
    "for x in {e}:\n    if x == 2:\n        break\nelse:\n    print('no 2')",
    "for x in ws:\n    if x == 'a':\n        continue\n    print(x, end=' ')\n"
    "else:\n    print('.')",
    "if {e}:\n    print('yes')\nelse:\n    print('no')", "print(*{e})",
    "a, b = xs[0], xs[1]\nprint(a, b)", "g = (x * 2 for x in xs)\nfor y in g:\n    break\nlist(g)",
    "k = 0\nfor x in xs:\n    k += x\nprint(k)", "alias = xs\nalias.append(0)\nprint(xs)",
    "ys.append(99)\nprint(xs)", "total = print({e})",
]


def snapshot() -> dict[str, dict[str, Any]]:
    """The values as the capture records them: type, repr, length."""
    return {name: {"type": type(value).__name__, "repr": repr(value), "size": 64,
                   "size_exact": True, "length": len(value) if hasattr(value, "__len__")
                   else None} for name, value in VALUES.items()}


def cells(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        statements = [rng.choice(STATEMENTS).format(v=rng.choice(["r", "q"]),
                                                    e=rng.choice(EXPRESSIONS))
                      for _ in range(rng.randint(1, 3))]
        made.append("\n".join(statements))
    return made


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_what_the_rules_call_complete_is_what_python_shows(seed):
    history = [{"code": "xs, s, d = ...", "runtime_variables": snapshot(), "outputs": [],
                "output": "", "error": None}]
    complete, raised = checked_against_python(cells(seed, 400), VALUES, history)
    assert complete > 150 and raised > 20  # the rules answer most of these cells


def test_a_loop_that_reads_a_long_list_at_every_step_is_given_up_not_run_for_seconds():
    # 2,000 steps that each index (or search) a list of 50,000 items would check all of it
    # at every step: the rules count what Python's operations read and give up (what a
    # cell costs: benchmarks/rules_cost.py)
    big = list(range(50_000))
    variables = {"big": {"type": "list", "repr": repr(big), "length": len(big),
                         "size": 400_056, "size_exact": True}}
    history = [{"code": "big = list(range(50_000))", "runtime_variables": variables,
                "outputs": [], "output": "", "error": None}]
    for code in ["total = 0\nfor i in range(2000):\n    total += big[i]\ntotal",
                 "c = 0\nfor i in range(2000):\n    if i in big:\n        c += 1\nc"]:
        assert determined(code, history) == ("", False, None)
    assert determined("big[5] + big[7]", history) == ("12", True, None)
