"""The cell run symbolically over the runtime snapshot, statement by statement: what the
baseline's output rules know (``baseline.py`` says what they cover; ``arrays.py``,
``frames.py`` and ``operators.py`` compute on NumPy, pandas and plain Python values).

A ``State`` holds what is known of each variable: untouched since the snapshot (its
entry, rebuilt from its repr when read), or computed by the cell. A statement the rules
cannot run raises ``Undetermined`` inside; ``State.run`` then forgets every variable it
names and notes whether it could have shown something. Plain Python runs as Python runs
it (``if``, ``for`` with ``break``/``continue``, comprehensions, lambdas, the methods of
strings, lists, dicts and sets), within bounds: a guess costs a moment, whatever the cell
asks.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Callable, Mapping, Set
from typing import Any

from themisto_ext.rules import arrays, captured, frames, known, names, operators
from themisto_ext.rules.flow import (
    IN_ORDER,
    PURE_BUILTINS,
    Flow,
    Jump,
    Lambda,
    Undetermined,
    mutable,
    text_known,
)

_BUILTIN_TYPES = {name for name, value in vars(builtins).items() if isinstance(value, type)} | {
    "NoneType", "function", "builtin_function_or_method", "method", "module", "generator",
}  # fmt: skip
# Qualified names of library types seen in snapshots (pandas >= 3 names its classes so).
_LIBRARY_TYPES = {
    "DataFrame": "pandas.DataFrame",
    "Series": "pandas.Series",
    "Index": "pandas.Index",
    "ndarray": "numpy.ndarray",
    "float64": "numpy.float64",
    "int64": "numpy.int64",
}
_DTYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "complex": complex}
_ORDERING = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
MODULES = ("numpy", "pandas")
"""Modules whose functions the baseline computes (``arrays.py``, ``frames.py``)."""
_IMMUTABLE = frozenset({"tuple", "str", "bytes", "frozenset", "range", "Index", "RangeIndex",
                        "DatetimeIndex", "TimedeltaIndex", "CategoricalIndex", "MultiIndex"})
"""Types whose items cannot be set: ``x[i] = v`` on one raises TypeError."""
_SILENT = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.Pass,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Delete, ast.Global,
           ast.Nonlocal)


# Types whose values cannot be, or show, a list or dict changed in place (NumPy and
# pandas copy what they are built from).
_HOLD_NO_LIST = {"int", "float", "complex", "bool", "NoneType", "str", "bytes", "range",
                 "function", "type", "builtin_function_or_method", "ndarray", "DataFrame",
                 "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex", "ABCMeta",
                 "float64", "int64", "bool_", "Timestamp"}
_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try,
             ast.Match)


def _may_display(statement: ast.stmt, display: bool, showing: Set[str]) -> bool:
    """Whether an undetermined statement could show something: a displayed expression, a
    call (it may print), a raise; in an assignment or definition, a call of a printer or
    of a function, method or class of the notebook's that may show (``showing``)."""
    if isinstance(statement, _SILENT):
        return any(isinstance(node, ast.Call) and _calls_one_of(node, showing)
                   for node in _outside_functions(statement))
    if isinstance(statement, ast.Expr) and display:
        return True
    return any(isinstance(node, ast.Call | ast.Raise | ast.Assert)
               for node in ast.walk(statement))


def _calls_one_of(call: ast.Call, showing: Set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in names.PRINTERS or func.id in showing
    return isinstance(func, ast.Attribute) and func.attr in showing


def _changes_in_place(statement: ast.stmt) -> bool:
    """Whether the statement may change a value in place: it calls something, or assigns
    or deletes an item or attribute (``a[0] = 9``, ``del d['k']``, ``o.x += 1``)."""
    return any(isinstance(node, ast.Call) or (isinstance(node, ast.Subscript | ast.Attribute)
                                              and isinstance(node.ctx, ast.Store | ast.Del))
               for node in _outside_functions(statement))


def _outside_functions(statement: ast.stmt) -> list[ast.AST]:
    """The nodes of ``statement`` that run when it does: not a defined function's body."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return [node for decorator in statement.decorator_list for node in ast.walk(decorator)]
    nodes: list[ast.AST] = [statement]
    for child in ast.iter_child_nodes(statement):
        nodes.extend(_outside_functions(child) if isinstance(child, ast.stmt)
                     else ast.walk(child))
    return nodes


class State(Flow):
    """What is known of the variables, statement after statement of one cell."""

    def __init__(self, snapshot: Mapping[str, Any], shadowed: set[str], classes: set[str],
                 modules: Mapping[str, set[str]] | None = None, nudge: int = 0,
                 showing: Set[str] = frozenset()) -> None:
        self.entries = dict(snapshot)  # untouched since the snapshot
        self.values: dict[str, Any] = {}  # assigned by the cell to a known value
        self.shadowed = shadowed  # names the user rebinds: builtins no more
        self.classes = classes
        self.showing = showing  # the notebook's definitions that may show when called
        # the names each of MODULES is known by (the snapshot leaves modules out)
        self.modules = {m: set((modules or {}).get(m, ())) for m in MODULES}
        self.undetermined = False  # a statement that may have shown something was not known
        self.nudge = nudge  # rebuilt with their rounded floats moved up (1) or down (-1)
        self.rounded = False  # the cell read floats a repr may have rounded
        self.iterations = 0  # loop and comprehension steps taken (bounded: ITERATIONS)
        self.mutations = 0  # lists, dicts and sets changed in place
        self.made = 0  # characters and items made or read (bounded: flow.MADE)
        self.snapshot_names: set[str] = set()  # values read from the snapshot (and kept)
        self.raises = False  # a statement raises: the cell stops there
        self._plain_containers = {}
        self.unknown = False  # a statement the rules could not run (it may have raised)
        self.raised: str | None = None  # the last line of its traceback, where known

    def shown(self, cell: ast.Module, quiet: bool, undefined: Set[str] = frozenset(),
              uncertain: Set[str] = frozenset()) -> str:
        """What the cell shows, statement after statement, up to one that raises (then
        ``raised`` is the last line of its traceback where known). ``undefined`` and
        ``uncertain``: names no cell defined, and names a cell that raised may not have
        imported (``names.undefined``): reading one raises NameError (may, for the other)."""
        texts = []
        for i, statement in enumerate(cell.body):
            before = self.unknown
            read = names.read_now(statement) if undefined else set()  # (most cells: none)
            missing = read & undefined
            if missing:
                # which of several Python meets first is not worked out: no message then
                self.undetermined = self.raises = True
                simple = not isinstance(statement, _COMPOUND) and not read & uncertain
                self.raised = f"NameError: name '{min(missing)}' is not defined" \
                    if len(missing) == 1 and simple else None
            else:
                texts.append(self.run(statement, display=i == len(cell.body) - 1 and not quiet))
            if self.raises:
                if before:  # an earlier statement the rules could not run may have raised
                    self.raised = None
                break  # the cell stops at the error
        return "".join(texts).removesuffix("\n")

    def run(self, statement: ast.stmt, display: bool) -> str:
        """What the statement shows; the state updated past it."""
        shown: list[str] = []
        mutations = self.mutations
        try:
            self._execute(statement, display, shown)
            return "".join(shown)
        except Undetermined as stop:
            if stop.raises:  # it raises: the traceback is what the cell shows after
                self.undetermined = self.raises = True  # what it printed before
                self.raised = stop.error
                return "".join(shown)
        except Exception:  # a jump out of no loop (the cell would not parse)
            pass
        self.unknown = True
        self.undetermined |= _may_display(statement, display, self.showing) or (
            isinstance(statement, ast.Expr) and not isinstance(statement.value, ast.Call)
        ) or self._sets_item_of_immutable(statement)
        # (an expression computed for nothing but the error it may raise: df['scroe'];
        # ind[1] = 0 on a pandas Index, which raises TypeError)
        if self.mutations != mutations:  # changed in place, then unknown: every alias too
            self.values = {k: v for k, v in self.values.items() if not mutable(v)}
        named = [node for node in ast.walk(statement) if isinstance(node, ast.Name)]
        if _changes_in_place(statement) and any(
                mutable(self.values.get(node.id))
                or self.entries.get(node.id, {}).get("type", "int") not in _HOLD_NO_LIST
                for node in named):  # a[0] = 9 with b = a in the snapshot: b is unknown
            self._forget_aliases(None)
        # Anything else may have changed every variable it names.
        for node in named:
            self.entries.pop(node.id, None)
            self.values.pop(node.id, None)
            for names_of in self.modules.values():
                names_of.discard(node.id)
        return ""

    def _execute(self, statement: ast.stmt, display: bool, shown: list[str]) -> None:
        """Run the statement, adding what it shows to ``shown``; Undetermined where the
        rules cannot (the caller then forgets what it touched)."""
        call = statement.value if isinstance(statement, ast.Expr) else None
        if self._is_builtin_call(call, "print"):
            assert isinstance(call, ast.Call)
            shown.append(self.printed(call))
        elif isinstance(statement, ast.Expr):  # computed, so it prints nothing
            value = self.value(statement.value)
            shown.append(known.displayed(value) if display else "")
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name | ast.Tuple | ast.List):
            if self._is_builtin_call(statement.value, "print"):  # x = print(...)
                assert isinstance(statement.value, ast.Call)
                shown.append(self.printed(statement.value))
                self._bind(statement.targets[0], None)
            else:
                self._bind(statement.targets[0], self.value(statement.value))
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            current, change = self.value(statement.target), self.value(statement.value)
            if mutable(current):  # L += [...] changes L in place: its aliases too
                self._changing(current)
            self._bind(statement.target, self._python(
                operators.binary, statement.op, current, change, True))
        elif self._assigns_item(statement) or isinstance(statement, ast.Pass):
            pass
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            for module, names_of in self.modules.items():
                bound, imported = names.module_effect(statement, module)
                self.modules[module] = (names_of - bound) | imported
            for name in names.bound(statement):  # from math import pi: not the old pi
                self.values.pop(name, None)
                self.entries.pop(name, None)
        elif isinstance(statement, ast.If):
            branch = statement.body if self._truth(statement.test) else statement.orelse
            for inner in branch:
                self._execute(inner, False, shown)
        elif isinstance(statement, ast.For) and not isinstance(statement, ast.AsyncFor):
            self._loop(statement, shown)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and not (
                statement.decorator_list or statement.args.defaults
                or any(statement.args.kw_defaults)):  # runs nothing: binds a function
            self.values.pop(statement.name, None)
            self.entries.pop(statement.name, None)
        elif isinstance(statement, ast.Break | ast.Continue):
            raise Jump(isinstance(statement, ast.Break))
        else:
            raise Undetermined

    def _assigns_item(self, statement: ast.stmt) -> bool:
        """``a[i] = v`` on an array the cell or the snapshot holds, done on the cell's copy."""
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return False
        target = statement.targets[0]
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            return False
        array = self.value(target.value)
        if not arrays.is_array(array):
            return False
        if target.value.id in self.snapshot_names:  # the kernel's array may be a view of
            self._forget_arrays(target.value.id)  # another one the snapshot holds, or
            # have views there (arr_slice = arr[5:8]; arr_slice[1] = 12345 changes arr)
        try:
            arrays.assign(array, self._index(target.slice), self.value(statement.value))
        except Exception:  # what the kernel would have raised is not guessed
            raise Undetermined from None
        return True

    def _sets_item_of_immutable(self, statement: ast.stmt) -> bool:
        targets = statement.targets if isinstance(statement, ast.Assign) else \
            [statement.target] if isinstance(statement, ast.AugAssign) else []
        return any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                   and self.entries.get(t.value.id, {}).get("type") in _IMMUTABLE
                   for t in targets)

    def printed(self, call: ast.Call) -> str:
        options = {"sep": " ", "end": "\n"}
        for keyword in call.keywords:
            if keyword.arg not in options:  # file=, **kwargs
                raise Undetermined
            option = self.value(keyword.value)
            if option is not None:  # None means the default
                options[keyword.arg] = str(option)
        values: list[Any] = []
        for argument in call.args:
            if isinstance(argument, ast.Starred):  # print(*items)
                values.extend(self._items(argument.value))
            else:
                values.append(self.value(argument))
        if not all(text_known(value) for value in values):
            raise Undetermined
        text = options["sep"].join(str(value) for value in values) + options["end"]
        self._spend(len(text))
        return text

    def value(self, node: ast.expr) -> Any:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        try:
            value = self._evaluate(node)
        except Undetermined:
            raise
        except Exception:  # the expression would raise, or the guess does not apply
            raise Undetermined from None
        if not isinstance(node, ast.Name):  # made, not read: a loop may make many
            self._spend(operators.weight(value))
        return value

    def _evaluate(self, node: ast.expr) -> Any:
        # One dispatch over the expression kinds the interpreter knows, longer than 80
        # lines on purpose: read in one place, each kind's rule sits beside the others
        # (a kind it does not know raises ``Undetermined`` at the end).
        if isinstance(node, ast.Name):
            if node.id in self.values:
                return self.values[node.id]
            if node.id in _DTYPES and node.id not in self.shadowed:
                return _DTYPES[node.id]
            entry = self._entry(node.id)
            value = known.from_snapshot(entry, self.nudge)
            if captured.exact(value):
                pass  # every digit captured: nothing rounded (a record this pandas
                # could not rebuild fell back to the repr, and is checked below)
            elif (arrays.is_array(value) and arrays.rounded(value)) or (
                    frames.is_frame(value) and frames.rounded(str(entry.get("repr")))):
                self.rounded = True
            if arrays.is_array(value) or frames.is_frame(value) or mutable(value):
                self.values[node.id] = value  # one object per name: a view or an alias is
                self.snapshot_names.add(node.id)
            return value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if self._is_module("numpy", node.value.id):
                return arrays.constant(node.attr)
            recorded = self._entry(node.value.id).get("shape") \
                if node.value.id not in self.values else None
            if recorded is not None:  # NumPy and pandas objects
                shape = tuple(recorded)
                derived = {"shape": shape, "ndim": len(shape), "size": math.prod(shape)}
                if node.attr in derived:
                    return derived[node.attr]
        if isinstance(node, ast.Attribute):
            value = self.value(node.value)
            if frames.is_frame(value):
                return frames.attribute(value, node.attr)
            if arrays.is_array(value):
                return arrays.attribute(value, node.attr)
            return self._python(operators.attribute, value, node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "fit":
                return self._fitted(node)
            return self._numpy_call(node.func, node.args, node.keywords)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if isinstance(self.values.get(node.func.id), Lambda):
                if node.keywords:
                    raise Undetermined
                return self._apply(self.values[node.func.id], node.args)
            if node.keywords:
                return self._call_with_key(node.func.id, node.args, node.keywords)
            return self._call(node.func.id, node.args)
        if isinstance(node, ast.Lambda):
            return Lambda(node)
        if isinstance(node, ast.Subscript):
            value = self.value(node.value)
            if frames.is_frame(value):
                return frames.subscript(value, self._index(node.slice))
            if arrays.is_array(value):
                return arrays.subscript(value, self._index(node.slice))
            return self._python(operator.getitem, value, self._index(node.slice))
        if isinstance(node, ast.JoinedStr):
            return "".join(self._formatted(part) for part in node.values)
        if isinstance(node, ast.Tuple | ast.List):
            items = [self.value(element) for element in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.BinOp):  # arithmetic over what the snapshot holds
            left, right = self.value(node.left), self.value(node.right)
            if frames.is_frame(left) or frames.is_frame(right):
                return frames.binary(operators.BINARY[type(node.op)], left, right)
            if arrays.is_array(left) or arrays.is_array(right):
                return arrays.binary(operators.BINARY[type(node.op)], left, right)
            return self._python(operators.binary, node.op, left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if frames.is_frame(operand):
                return frames.unary(operators.UNARY[type(node.op)], operand)
            if arrays.is_array(operand):
                return arrays.unary(operators.UNARY[type(node.op)], operand)
            return self._python(operators.unary, node.op, operand)
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            rights = [self.value(c) for c in node.comparators]
            if frames.is_frame(left) or any(frames.is_frame(r) for r in rights):
                if len(node.ops) != 1 or not isinstance(node.ops[0], _ORDERING):
                    raise Undetermined
                return frames.binary(operators.COMPARE[type(node.ops[0])], left, rights[0])
            if arrays.is_array(left) or any(arrays.is_array(r) for r in rights):
                if len(node.ops) != 1 or not isinstance(node.ops[0], _ORDERING):
                    raise Undetermined  # a chained comparison of arrays raises
                return arrays.binary(operators.COMPARE[type(node.ops[0])], left, rights[0])
            self._read(*rights)  # x in big: each step reads all of big
            return self._python(operators.compare, left, node.ops, rights)
        if isinstance(node, ast.BoolOp):  # short-circuits as Python does
            result: Any = None
            for operand in node.values:
                result = self.value(operand)
                if not operators.plain(result) or (
                        bool(result) if isinstance(node.op, ast.Or) else not result):
                    break
            if not operators.plain(result):
                raise Undetermined
            return result
        if isinstance(node, ast.IfExp):
            return self.value(node.body if self._truth(node.test) else node.orelse)
        if isinstance(node, ast.Dict) and None not in node.keys:  # not {**other}
            return {self.value(k): self.value(v)  # type: ignore[arg-type]
                    for k, v in zip(node.keys, node.values, strict=True)}
        if isinstance(node, ast.Set):
            return {self.value(element) for element in node.elts}
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            return self._comprehension(node)
        raise Undetermined

    def _call(self, function: str, arguments: list[ast.expr]) -> Any:
        if function in self.shadowed:
            raise Undetermined
        if function in ("map", "filter") and len(arguments) >= 2:
            return self._mapped(function, arguments)
        single = arguments[0] if len(arguments) == 1 else None
        entry = self.entries.get(single.id) if isinstance(single, ast.Name) \
            and single.id not in self.values else None
        if function == "len" and entry is not None:
            if entry.get("length") is not None:
                return int(entry["length"])
            if entry.get("shape"):
                return int(entry["shape"][0])
        if function == "type" and single is not None:
            if entry is not None:
                return self._type(str(entry["type"]))
            value = self.value(single)
            if isinstance(value, known.Shown):
                raise Undetermined
            return self._type(type(value).__name__)
        if function not in PURE_BUILTINS:
            raise Undetermined
        values = [self.value(argument) for argument in arguments]
        if function in ("str", "repr") and not all(text_known(value) for value in values):
            raise Undetermined  # an iterator's address, a set's order: the kernel's
        if function in IN_ORDER and not all(operators.ordered(value) for value in values):
            raise Undetermined  # list({'b', 'a'}): in the kernel's hash order
        if function != "len" and any(isinstance(value, range) and not operators.plain(value)
                                     for value in values):
            raise Undetermined  # list(range(10**12)) is not guessed; a loop over it is
        return self._python(PURE_BUILTINS[function], *values)

    def _numpy_call(self, func: ast.Attribute, arguments: list[ast.expr],
                    keywords: list[ast.keyword]) -> Any:
        """``np.f(...)`` or ``array.f(...)``, for the functions ``arrays`` computes."""
        if any(keyword.arg is None for keyword in keywords) or any(
                isinstance(argument, ast.Starred) for argument in arguments):
            raise Undetermined
        named = {str(keyword.arg): self.value(keyword.value) for keyword in keywords}
        if isinstance(func.value, ast.Name) and self._is_module("numpy", func.value.id):
            return arrays.function(func.attr, [self.value(a) for a in arguments], named)
        if isinstance(func.value, ast.Attribute) and isinstance(func.value.value, ast.Name) \
                and self._is_module("numpy", func.value.value.id):  # np.add.reduce(x)
            return arrays.ufunc_method(func.value.attr, func.attr,
                                       [self.value(a) for a in arguments], named)
        if isinstance(func.value, ast.Name) and self._is_module("pandas", func.value.id):
            return frames.construct(func.attr, [self.value(a) for a in arguments], named)
        owner = self.value(func.value)
        if self._plain(owner):
            return self._plain_method(owner, func.attr, arguments, named)
        if frames.is_frame(owner):
            return frames.method(owner, func.attr, [self.value(a) for a in arguments], named)
        if not arrays.is_array(owner):
            raise Undetermined
        return arrays.method(owner, func.attr, [self.value(a) for a in arguments], named)

    def _plain_method(self, owner: Any, name: str, arguments: list[ast.expr],
                      named: dict[str, Any]) -> Any:
        """``s.upper()``, ``L.append(4)``... on a plain value; a change in place is the
        cell's object's (a name the snapshot held is read once, so aliases in the cell see
        it) but any other list, dict or set the snapshot holds may be the same object:
        those are no longer known."""
        values = [self.value(argument) for argument in arguments]
        if name == "join" and not all(operators.ordered(v) for v in values):
            raise Undetermined  # joined in the set's order: the kernel's
        if name in operators.MUTATORS.get(type(owner), ()):
            self._changing(owner)
        return self._python(operators.method, owner, name, values, named)

    def _changing(self, owner: Any) -> None:
        """``owner`` is about to change in place: forget every other value the snapshot
        holds that may be the same object or hold it (a list, a ``d.keys()`` view, an
        instance of the notebook's classes...; not a number, a string or an array)."""
        self.mutations += 1
        self._forget_aliases(owner)

    def _forget_arrays(self, keep: str) -> None:
        for other, entry in list(self.entries.items()):
            if other != keep and entry.get("type") == "ndarray":
                self.entries.pop(other)
        self.values = {k: v for k, v in self.values.items() if k == keep
                       or k not in self.snapshot_names or not arrays.is_array(v)}

    def _forget_aliases(self, owner: Any) -> None:
        for other, entry in list(self.entries.items()):
            if entry.get("type") not in _HOLD_NO_LIST:
                self.entries.pop(other)
        self.values = {k: v for k, v in self.values.items() if v is owner
                       or not isinstance(v, list | dict | set | tuple)
                       or k not in self.snapshot_names}

    def _fitted(self, call: ast.Call) -> known.Shown:
        """``model.fit(...)``: the model, for one the snapshot shows as ``Type(...)``,
        fitted on values the state knows by name (a name it does not know may not exist:
        the cell would raise)."""
        assert isinstance(call.func, ast.Attribute)
        owner = call.func.value
        if not isinstance(owner, ast.Name) or owner.id in self.values:
            raise Undetermined
        entry = self._entry(owner.id)
        text, kind = entry.get("repr"), str(entry.get("type"))
        if not (isinstance(text, str) and text.startswith(f"{kind}(") and text.endswith(")")
                and text.count("(") == text.count(")")):  # not cut short
            raise Undetermined
        for node in [*call.args, *(k.value for k in call.keywords)]:
            for name in ast.walk(node):
                if isinstance(name, ast.Name) and not (
                        name.id in self.entries or name.id in self.values
                        or any(name.id in names_of for names_of in self.modules.values())):
                    raise Undetermined
        return known.Shown(text, text)

    def _is_module(self, module: str, name: str) -> bool:
        """Whether ``name`` is ``module`` (numpy, pandas): imported so, and bound to nothing
        since."""
        return name in self.modules[module] and name not in self.values \
            and name not in self.entries

    def _is_builtin_call(self, node: ast.expr | None, function: str) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == function
            and function not in self.shadowed
        )

    def _type(self, name: str) -> known.Shown:
        if name in _BUILTIN_TYPES:
            qualified = name
        elif name in self.classes:
            qualified = f"__main__.{name}"
        elif name in _LIBRARY_TYPES:
            qualified = _LIBRARY_TYPES[name]
        else:  # another library's: its module is not known (numpy.random._generator...)
            raise Undetermined
        # IPython displays a class by its qualified name; str() and repr() wrap it.
        return known.Shown(qualified, f"<class '{qualified}'>", f"<class '{qualified}'>")

    def _index(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Tuple):  # a[1:3, ::2]
            return tuple(self._index(element) for element in node.elts)
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(None if part is None else self.value(part) for part in parts))
        return self.value(node)

    def _formatted(self, part: ast.expr) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        assert isinstance(part, ast.FormattedValue)
        value = self.value(part.value)
        conversions: dict[int, Callable[[Any], str]] = {115: str, 114: repr, 97: ascii}
        if part.conversion in conversions:
            value = conversions[part.conversion](value)
        spec = self.value(part.format_spec) if part.format_spec is not None else ""
        if not text_known(value):
            raise Undetermined
        return str(self._python(operators.formatted, value, spec))

    def _entry(self, name: str) -> Mapping[str, Any]:
        entry = self.entries.get(name)
        if entry is None:
            raise Undetermined
        return entry  # type: ignore[no-any-return]
