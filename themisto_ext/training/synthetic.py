"""A synthetic corpus of notebook-style programs: ``themisto synth``.

E.T. (arXiv 2503.05703) trained on programs run over automatically generated inputs. This is
that idea at notebook scale: each notebook builds data from generated literals (numbers,
words, records) and then works on it the way course notebooks do — look at it, aggregate,
filter, reshape, group, define and call a helper, print a summary — one step a cell, with an
occasional mistake (a misspelt column, an index past the end) as people make them. Nothing
here is anyone's notebook, so training data made from it can be shared.

A notebook is a sequence of cells drawn from the operations a *kind* offers (``KINDS``:
numpy arrays, pandas frames, builtin collections, functions and loops); an operation applies
only once the variables it uses exist, so every program runs in order. Everything comes from
one ``random.Random(seed)``: the same seed gives the same notebooks, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

WORDS = ("apple", "river", "stone", "cloud", "tiger", "maple", "orbit", "pixel", "lemon",
         "delta", "ember", "frost", "grape", "harbor", "iris", "jungle", "koala", "lunar")
NAMES = ("ana", "ben", "cleo", "dev", "eli", "fay", "gus", "hana", "ivo", "jade", "kai", "lea")
GROUPS = ("north", "south", "east", "west")
MISTAKE_RATE = 0.06
"""Share of cells that are a mistake (an error a person would make, then fix)."""


@dataclass
class Program:
    """One notebook being written: its cells and the names its code has defined."""

    rng: random.Random
    cells: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # role -> variable name

    def name(self, role: str, choices: tuple[str, ...]) -> str:
        if role not in self.names:
            self.names[role] = self.rng.choice(choices)
        return self.names[role]

    def ints(self, n: int, lo: int = 0, hi: int = 100) -> list[int]:
        return [self.rng.randint(lo, hi) for _ in range(n)]


Operation = Callable[[Program], str]


def _numpy(p: Program) -> list[Operation]:
    a = p.name("array", ("x", "arr", "values", "data", "a"))
    m = p.name("matrix", ("m", "grid", "mat", "table"))
    t = p.rng.randint(10, 90)
    k = p.rng.randint(2, 7)
    return [
        lambda p: f"{a}",
        lambda p: f"{a}.sum()",
        lambda p: f"{a}.mean()",
        lambda p: f"{a}.max() - {a}.min()",
        lambda p: f"{a}[{a} > {t}]",
        lambda p: f"({a} > {t}).sum()",
        lambda p: f"{a} * {k} + 1",
        lambda p: f"len({a}), {a}.shape, {a}.dtype",
        lambda p: f"np.sort({a})[:{k}]",
        lambda p: f"np.cumsum({a})",
        lambda p: f"np.where({a} % 2 == 0, {a}, -1)",
        lambda p: f"{a}.argmax(), {a}.argmin()",
        lambda p: f"{m} = {a}[:{2 * k}].reshape(2, {k})\n{m}",
        lambda p: f"{m}.sum(axis=0)" if f"{m} = " in "\n".join(p.cells) else f"{a}.std().round(2)",
        lambda p: f"print('mean', {a}.mean().round(1), 'median', np.median({a}))",
        lambda p: f"{a}[::{k}]",
        lambda p: f"np.unique({a} % {k}, return_counts=True)",
    ]


def _numpy_start(p: Program) -> list[str]:
    a = p.name("array", ("x", "arr", "values", "data", "a"))
    n = p.rng.randint(12, 24)
    return ["import numpy as np", f"{a} = np.array({p.ints(n, 0, 99)})"]


def _pandas(p: Program) -> list[Operation]:
    df = p.name("frame", ("df", "scores", "people", "sales"))
    col = p.name("column", ("score", "points", "amount", "value"))
    t = p.rng.randint(20, 80)
    n = p.rng.randint(2, 5)
    return [
        lambda p: f"{df}.head({n})",
        lambda p: f"{df}.shape",
        lambda p: f"{df}.columns",
        lambda p: f"{df}.dtypes",
        lambda p: f"{df}['{col}'].mean()",
        lambda p: f"{df}['{col}'].sum()",
        lambda p: f"{df}.groupby('group')['{col}'].sum()",
        lambda p: f"{df}.groupby('group')['{col}'].mean().round(1)",
        lambda p: f"{df}.sort_values('{col}', ascending=False).head({n})",
        lambda p: f"{df}[{df}['{col}'] > {t}]",
        lambda p: f"len({df}[{df}['{col}'] > {t}])",
        lambda p: f"{df}['group'].value_counts()",
        lambda p: f"{df}['{col}'].describe()",
        lambda p: f"{df}['double'] = {df}['{col}'] * 2\n{df}.head({n})",
        lambda p: f"{df}.loc[{df}['{col}'].idxmax(), 'name']",
        lambda p: f"{df}['{col}'].max(), {df}['{col}'].min()",
        lambda p: f"{df}.isna().sum()",
        lambda p: f"print({df}.to_string(index=False))",
    ]


def _pandas_start(p: Program) -> list[str]:
    df = p.name("frame", ("df", "scores", "people", "sales"))
    col = p.name("column", ("score", "points", "amount", "value"))
    n = p.rng.randint(5, 9)
    names = p.rng.sample(NAMES, n)
    groups = [p.rng.choice(GROUPS[:3]) for _ in range(n)]
    values = p.ints(n, 10, 99)
    return ["import pandas as pd",
            f"{df} = pd.DataFrame({{'name': {names}, 'group': {groups}, '{col}': {values}}})\n{df}"]


def _builtins(p: Program) -> list[Operation]:
    w = p.name("words", ("words", "items", "fruits", "tokens"))
    nums = p.name("numbers", ("nums", "numbers", "counts", "sizes"))
    k = p.rng.randint(2, 5)
    return [
        lambda p: f"len({w})",
        lambda p: f"sorted({w})",
        lambda p: f"sum({nums}), max({nums}), min({nums})",
        lambda p: f"[n * {k} for n in {nums}]",
        lambda p: f"[n for n in {nums} if n % {k} == 0]",
        lambda p: f"' '.join({w}[:{k}])",
        lambda p: f"{{word: len(word) for word in {w}}}",
        lambda p: f"[word.upper() for word in {w} if len(word) > {k}]",
        lambda p: f"sorted({w}, key=len)[-{k}:]",
        lambda p: f"sum({nums}) / len({nums})",
        lambda p: f"{nums}[{k}:] + {nums}[:{k}]",
        lambda p: f"list(zip({w}, {nums}))[:{k}]",
        lambda p: f"for word, n in zip({w}[:{k}], {nums}):\n    print(f'{{word}}: {{n}}')",
        lambda p: f"{w}.count({w}[0]), {w}.index({w}[-1])",
        lambda p: f"set(len(word) for word in {w})",
    ]


def _builtins_start(p: Program) -> list[str]:
    w = p.name("words", ("words", "items", "fruits", "tokens"))
    nums = p.name("numbers", ("nums", "numbers", "counts", "sizes"))
    n = p.rng.randint(6, 10)
    return [f"{w} = {p.rng.sample(WORDS, n)}\n{w}", f"{nums} = {p.ints(n, 1, 50)}\nprint({nums})"]


def _functions(p: Program) -> list[Operation]:
    f = p.name("function", ("f", "step", "score", "collatz_len", "transform"))
    k = p.rng.randint(2, 9)
    return [
        lambda p: f"{f}({k})",
        lambda p: f"[{f}(i) for i in range({k})]",
        lambda p: f"sum({f}(i) for i in range({k * 3}))",
        lambda p: f"max(range(1, {k * 4}), key={f})",
        lambda p: f"for i in range({k}):\n    print(i, {f}(i))",
        lambda p: f"total = 0\nfor i in range({k * 2}):\n    total += {f}(i)\ntotal",
        lambda p: f"{{i: {f}(i) for i in range({k})}}",
        lambda p: f"list(map({f}, [{k}, {k + 3}, {k * 2}]))",
    ]


def _functions_start(p: Program) -> list[str]:
    f = p.name("function", ("f", "step", "score", "collatz_len", "transform"))
    a, b = p.rng.randint(2, 5), p.rng.randint(1, 9)
    body = p.rng.choice((
        f"    return {a} * n + {b}",
        f"    return n * n - {b}",
        f"    if n % 2 == 0:\n        return n // 2\n    return {a} * n + 1",
        f"    return sum(range(n)) % {a + b}",
    ))
    return [f"def {f}(n):\n{body}", f"{f}(0), {f}(1)"]


KINDS: dict[str, tuple[Callable[[Program], list[str]], Callable[[Program], list[Operation]]]] = {
    "numpy": (_numpy_start, _numpy),
    "pandas": (_pandas_start, _pandas),
    "builtins": (_builtins_start, _builtins),
    "functions": (_functions_start, _functions),
}


def _mistake(p: Program) -> str:
    names = list(p.names.values())
    return p.rng.choice((
        f"{p.rng.choice(names)}_total",                           # NameError
        f"{p.names.get('frame', 'df')}['Score']" if "frame" in p.names else "undefined_var",
        f"{p.names.get('words', 'x')}[99]" if "words" in p.names else "1 / 0",
    ))


def make_notebook(rng: random.Random, cells: int) -> tuple[str, list[str]]:
    """A kind and the code of one notebook of about ``cells`` code cells."""
    first, second = rng.sample(sorted(KINDS), 2)
    p = Program(rng)
    for kind in (first, second) if rng.random() < 0.4 else (first,):
        start, operations = KINDS[kind]
        p.cells.extend(start(p))
        ops = operations(p)
        rng.shuffle(ops)
        budget = max(3, cells // 2 if kind == second else cells - len(p.cells))
        for op in ops[:budget]:
            if rng.random() < MISTAKE_RATE:
                p.cells.append(_mistake(p))
            p.cells.append(op(p))
    return first, p.cells


def notebook_json(cells: list[str], seed: int, index: int, kind: str) -> dict[str, object]:
    """nbformat 4.5, cell ids derived from the seed (reproducible files)."""
    def cell_id(i: int) -> str:
        return hashlib.sha256(f"{seed}/{index}/{i}".encode()).hexdigest()[:12]

    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"},
                     "themisto": {"synthetic": {"seed": seed, "index": index, "kind": kind}}},
        "cells": [{"cell_type": "code", "id": cell_id(i), "metadata": {},
                   "execution_count": None, "outputs": [], "source": code}
                  for i, code in enumerate(cells)],
    }


def write_corpus(out: Path, *, seed: int, notebooks: int, cells: int = 14) -> list[Path]:
    """Write ``notebooks`` notebooks to ``out`` (``synthetic-<seed>-<n>.ipynb``) and a
    ``manifest.json`` of their kinds and cell counts; returns their paths."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    paths, manifest = [], []
    for index in range(notebooks):
        kind, code = make_notebook(rng, cells)
        path = out / f"synthetic-{seed}-{index:04d}.ipynb"
        path.write_text(json.dumps(notebook_json(code, seed, index, kind), indent=1) + "\n",
                        encoding="utf-8")
        paths.append(path)
        manifest.append({"notebook": path.name, "kind": kind, "cells": len(code)})
    (out / "manifest.json").write_text(json.dumps(
        {"seed": seed, "notebooks": manifest}, indent=1) + "\n", encoding="utf-8")
    return paths
