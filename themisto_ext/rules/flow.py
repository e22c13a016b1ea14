"""Plain Python's control flow, as the output rules run it over values they know: ``if``
and ``for`` (with ``break``, ``continue``, ``else``), unpacking, comprehensions and
generator expressions, lambdas and the builtins that call them (``map``, ``filter``,
``sorted(key=...)``). ``interpreter.State`` builds on ``Flow``.

Bounded, as every guess is: at most ``ITERATIONS`` loop or comprehension steps and
``MADE`` characters and items computed or read per cell; an iterator is taken an item at a time
(``break`` leaves the rest, as in Python). What Python would give in an order the kernel
alone knows (a set's, by its hashes) or as an address (an iterator, a function) is not
shown: ``Undetermined``.
"""

from __future__ import annotations

import ast
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from themisto_ext.rules import operators


class Undetermined(Exception):
    """The snapshot and the cell do not determine this value; ``raises`` when they
    determine that computing it raises (an index out of range of a known list)."""

    def __init__(self, raises: bool = False, error: str | None = None) -> None:
        super().__init__()
        self.raises = raises
        self.error = error  # the last line of its traceback, where known


class Jump(Exception):
    """``break`` (``out``) or ``continue`` in a loop the rules run."""

    def __init__(self, out: bool) -> None:
        self.out = out


ITERATIONS = 2_000
"""Loop and comprehension steps a cell may take in the rules: a guess costs a moment."""
MADE = 20 * operators.MAX_LENGTH
"""Characters and items the values a cell computes, and Python's operations read, may
number in all: a loop that builds long strings 2,000 times would hold gigabytes, one that
indexes a list of 50,000 items would check them all at every step."""


class Lambda:
    """A lambda the cell made, known by its code (called in ``Flow._applied``)."""

    def __init__(self, node: ast.Lambda) -> None:
        arguments = node.args
        if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults \
                or arguments.posonlyargs:
            raise Undetermined
        self.node = node


def mutable(value: Any) -> bool:
    return isinstance(value, list | dict | set)


PURE_BUILTINS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (len, str, repr, abs, round, min, max, sum, sorted, int, float, bool, list, tuple,
              range, zip, enumerate, reversed, set, frozenset, any, all, divmod, chr, ord,
              hex, oct, bin, complex)
}
# Builtins whose result follows the order of what they read.
IN_ORDER = {"str", "repr", "list", "tuple", "zip", "enumerate", "reversed"}


class Flow:
    """The state's values and how loops, comprehensions and lambdas change them; the
    subclass evaluates expressions (``value``) and runs statements (``_execute``)."""

    values: dict[str, Any]  # computed by the cell (or read from the snapshot and kept)
    entries: dict[str, Any]  # untouched since the snapshot
    shadowed: set[str]  # names the user rebinds: builtins no more
    iterations: int  # loop and comprehension steps taken (bounded: ITERATIONS)
    mutations: int  # lists, dicts and sets changed in place
    _plain_containers: dict[int, tuple[Any, bool]]  # id -> (the container, plain?)
    made: int  # characters and items computed or read by Python's operations (bounded: MADE)

    def value(self, node: ast.expr) -> Any:
        raise NotImplementedError

    def _plain(self, value: Any) -> bool:
        """``operators.plain(value)``, remembered for a container: a loop that indexes a
        list of 50,000 items must not check them all at every step. A plain container
        changed by the rules stays plain (they change it with plain values only)."""
        if not isinstance(value, list | tuple | dict | set | frozenset):
            return operators.plain(value)
        known = self._plain_containers.get(id(value))
        if known is None or known[0] is not value:
            known = (value, operators.plain(value))
            self._plain_containers[id(value)] = known
        return known[1]

    def _read(self, *values: Any) -> None:
        """Count the items an operation on ``values`` may read as work done (bounded)."""
        self._spend(sum(operators.weight(value) for value in values))

    def _spend(self, amount: int) -> None:
        """``amount`` characters or items made or read: Undetermined past ``MADE``."""
        self.made += amount
        if self.made > MADE:
            raise Undetermined

    def _python(self, function: Callable[..., Any], *arguments: Any, **named: Any) -> Any:
        """``function(*arguments, **named)`` where the arguments are plain: an error it
        raises (not a refusal to compute) is the kernel's too."""
        given = [*arguments, *named.values()]
        self._read(*given)
        plain = all(self._plain(value) or _how(value) for value in given)
        try:
            return function(*arguments, **named)
        except Undetermined:  # a lambda it called: raising, or not known
            raise
        except operators.Refused:
            raise Undetermined from None
        except Exception as error:  # IndexError, ZeroDivisionError, int('x')...
            line = traceback.format_exception_only(error)[-1].strip() if plain else None
            raise Undetermined(raises=plain, error=line) from None

    def _execute(self, statement: ast.stmt, display: bool, shown: list[str]) -> None:
        raise NotImplementedError

    def _loop(self, loop: ast.For, shown: list[str]) -> None:
        """A ``for`` loop over a known iterable, its body run for each item, bounded."""
        for item in self._items(loop.iter):
            self._bind(loop.target, item)
            try:
                for inner in loop.body:
                    self._execute(inner, False, shown)
            except Jump as jump:
                if jump.out:
                    return
        for inner in loop.orelse:
            self._execute(inner, False, shown)

    def _bind(self, target: ast.expr, value: Any) -> None:
        """``target = value`` for a name, or names unpacked from a known sequence."""
        if isinstance(target, ast.Name):
            self.values[target.id] = value
            self.entries.pop(target.id, None)
            return
        if not isinstance(target, ast.Tuple | ast.List) or not (
                isinstance(value, tuple | list | str) and operators.ordered(value)):
            raise Undetermined
        if any(isinstance(element, ast.Starred) for element in target.elts):
            raise Undetermined  # *rest is not unpacked here
        if len(target.elts) > len(value):
            raise Undetermined(raises=True, error="ValueError: not enough values to unpack "
                               f"(expected {len(target.elts)}, got {len(value)})")
        if len(target.elts) < len(value):
            raise Undetermined(raises=True, error="ValueError: too many values to unpack "
                               f"(expected {len(target.elts)})")
        for element, item in zip(target.elts, value, strict=True):
            self._bind(element, item)

    def _truth(self, node: ast.expr) -> bool:
        value = self.value(node)
        if not self._plain(value):  # an array's truth raises; a Shown's is unknown
            raise Undetermined
        return bool(value)

    def _items(self, node: ast.expr) -> Iterator[Any]:
        """What iterating over the expression gives, one item at a time, within the
        cell's budget of steps."""
        try:
            source = operators.items(self.value(node))
        except operators.Refused:
            raise Undetermined from None
        while True:
            try:
                item = next(source)
            except StopIteration:
                return
            except Exception:  # a dict changed size while looped over: the kernel raised
                raise Undetermined from None
            self.iterations += 1
            if self.iterations > ITERATIONS:
                raise Undetermined
            yield item

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp,
                       ) -> Any:
        """A comprehension over known iterables, in its own scope; a generator expression
        as the iterator it makes (used up by ``sum``, ``list``...; never shown)."""
        targets = {name.id for generator in node.generators
                   for name in ast.walk(generator.target) if isinstance(name, ast.Name)}
        missing = object()
        saved = {name: (self.values.get(name, missing), self.entries.get(name, missing))
                 for name in targets}
        mutations, made = self.mutations, []  # type: ignore[var-annotated]
        try:
            self._generate(node, 0, made)
        finally:  # its variables do not leak out
            for name, (value, entry) in saved.items():
                self.values.pop(name, None)
                if value is not missing:
                    self.values[name] = value
                if entry is not missing:
                    self.entries[name] = entry
        if self.mutations != mutations:
            raise Undetermined  # a comprehension run for its side effects: not followed
        if isinstance(node, ast.DictComp):
            return dict(made)
        if isinstance(node, ast.SetComp):
            return set(made)
        return iter(made) if isinstance(node, ast.GeneratorExp) else made

    def _generate(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp,
                  level: int, made: list[Any]) -> None:
        if level == len(node.generators):
            made.append((self.value(node.key), self.value(node.value))
                        if isinstance(node, ast.DictComp) else self.value(node.elt))
            return
        generator = node.generators[level]
        if generator.is_async:
            raise Undetermined
        for item in self._items(generator.iter):
            self._bind(generator.target, item)
            if all(self._truth(condition) for condition in generator.ifs):
                self._generate(node, level + 1, made)

    def _apply(self, function: Lambda, arguments: list[ast.expr]) -> Any:
        return self._applied(function, [self.value(argument) for argument in arguments])

    def _applied(self, function: Lambda, values: Sequence[Any]) -> Any:
        """A lambda the cell made, called: its body in a scope of its parameters (the
        cell's variables as they are now, as Python's late binding has it)."""
        parameters = [argument.arg for argument in function.node.args.args]
        if len(values) != len(parameters):
            raise Undetermined(raises=True)  # the kernel raises TypeError
        missing = object()
        saved = {name: self.values.get(name, missing) for name in parameters}
        try:
            self.values.update(zip(parameters, values, strict=True))
            return self.value(function.node.body)
        finally:
            for name, value in saved.items():
                self.values.pop(name, None)
                if value is not missing:
                    self.values[name] = value

    def _function(self, node: ast.expr) -> Callable[..., Any]:
        """A function argument (``map(f, xs)``, ``key=len``): a pure builtin or a lambda."""
        value = self.value(node) if not isinstance(node, ast.Name) \
            or node.id in self.values else None
        if isinstance(value, Lambda):
            return lambda *items: self._applied(value, items)
        if isinstance(node, ast.Name) and node.id in PURE_BUILTINS \
                and node.id not in self.shadowed:
            return PURE_BUILTINS[node.id]
        raise Undetermined

    def _call_with_key(self, function: str, arguments: list[ast.expr],
                       keywords: list[ast.keyword]) -> Any:
        """``sorted(xs, key=..., reverse=...)``, ``min``/``max`` with a ``key``."""
        if function in self.shadowed or function not in ("sorted", "min", "max") or any(
                keyword.arg not in ("key", "reverse") for keyword in keywords):
            raise Undetermined
        named = {str(keyword.arg): self._function(keyword.value) if keyword.arg == "key"
                 else self.value(keyword.value) for keyword in keywords}
        values = [self.value(argument) for argument in arguments]
        if not all(operators.ordered(value) for value in values):
            raise Undetermined  # ties keep the kernel's order
        return self._python(PURE_BUILTINS[function], *values, **named)

    def _mapped(self, function: str, arguments: list[ast.expr]) -> Iterator[Any]:
        """``map(f, xs, ...)``/``filter(f, xs)``, computed now (f is pure: a lambda whose
        body the rules compute, or a pure builtin) and given as the iterator they make."""
        if function == "filter" and len(arguments) != 2:
            raise Undetermined
        apply: Callable[..., Any] = self._function(arguments[0]) if not (
            function == "filter" and isinstance(arguments[0], ast.Constant)
            and arguments[0].value is None) else bool  # filter(None, xs) keeps the truthy
        sources = [self._items(argument) for argument in arguments[1:]]
        if function == "map":
            return iter([apply(*items) for items in zip(*sources, strict=False)])  # the shortest
        kept = []
        for item in sources[0]:
            verdict = apply(item)
            if not operators.plain(verdict):
                raise Undetermined
            if verdict:
                kept.append(item)
        return iter(kept)


def _how(value: Any) -> bool:
    """An argument that says how to compute (an operator's node, a slice, a function)."""
    if isinstance(value, list) and value and all(isinstance(v, ast.AST) for v in value):
        return True  # the operators of a chained comparison
    return isinstance(value, Iterator | Lambda | slice | ast.AST)


def text_known(value: Any) -> bool:
    """Whether ``str(value)`` is the kernel's: not an iterator (its text is an address),
    nor a set (printed in the kernel's hash order)."""
    return not isinstance(value, Iterator | Lambda) and operators.ordered(value)
