"""The baseline predictor: instant, deterministic answers that a model has to beat.

Output task: the cell is read with ``ast`` (IPython magics and broken code give an empty
prediction) and run symbolically, top-level statement by statement, over what the runtime
snapshot before it says (the ``runtime_variables`` of the last step of the history) *as far
as the prediction's context shows it*: nothing under ``none`` (which gives a model only
code and outputs), the curated variables under ``curated``, all under ``full``. What
can be known is predicted; the rest is assumed to print nothing, as most cells do:

* ``print(...)`` of literals, of variables whose value the snapshot holds as a literal repr,
  of ``len(x)``, ``x.shape``, ``type(x)``, f-strings of those... prints its text;
* a last expression (without ``;``) shows what IPython would show: the value as IPython's
  pretty printer renders it (``[0,\\n 1, ...]`` for a long list, ``int`` for ``type(3)``,
  nothing for ``None``), or the snapshot's own repr for a bare name (a frame's summary);
* a NumPy array the snapshot holds whole is rebuilt from its repr and computed on
  (``arrays.py``: indexing, comparisons, arithmetic, reductions, joins; bounded; a result
  computed on floats the repr may have rounded counts only if it reads the same when they
  are moved within that rounding: ``np.sin(theta)`` at pi does not), and
  ``np`` is NumPy where an earlier cell imported it so; likewise a pandas Series or
  DataFrame whose repr the snapshot holds whole and rebuilds faithfully (``frames.py``:
  columns, ``loc``/``iloc``, aggregates, ``head``, sorting, arithmetic; bounded);
* a cell that draws with matplotlib and shows nothing else shows its figures' lines
  (``<Figure size 640x480 with 1 Axes>``, ``figures.py``), whether or not the rest of it
  is known;
* ``model.fit(X, y)`` shows ``model`` as the snapshot shows it, for a model shown as
  ``Type(parameters)`` (scikit-learn's convention, which XGBoost and LightGBM follow: fit
  returns the model and leaves the parameters its repr shows);
* a variable is known from the snapshot until a statement of the cell does anything with
  it other than reading it in something this module evaluates; ``x = <known value>`` keeps
  it known.

Next-cell task: the earlier cell most like the last one (rapidfuzz ``fuzz.ratio``; ties go to
the latest) was followed by some cell; that cell is the prediction.
"""

from __future__ import annotations

import ast
import builtins
import io
import math
import re
import time
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rapidfuzz import fuzz

from themisto_ext.prediction.clients import arrays, figures, frames, names, operators
from themisto_ext.prediction.clients.base import Completion, PredictionRequest
from themisto_ext.prediction.prompts.state import curated_selection
from themisto_ext.records import Context, RuntimeVariable, Step

# Snapshot reprs that are not the value's repr (see docs/format.md).
_PLACEHOLDER = re.compile(
    r"<(redacted|repr of .* timed out|repr raised .*|int with \d+ bits|pending:.*)>"
)
_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|complex)\d*\((.*)\)")
_BUILTIN_TYPES = {name for name, value in vars(builtins).items() if isinstance(value, type)} | {
    "NoneType", "function", "builtin_function_or_method", "method", "module", "generator",
}  # fmt: skip
# Qualified names of library types seen in snapshots (pandas >= 3 names its classes so).
_LIBRARY_TYPES = {
    "DataFrame": "pandas.DataFrame",
    "Series": "pandas.Series",
    "Index": "pandas.Index",
    "ndarray": "numpy.ndarray",
}
# Types whose repr is a Python literal: one that does not parse was cut short by the snapshot.
_LITERAL_TYPES = {"str", "bytes", "int", "float", "complex", "bool"}
_LITERAL_TYPES |= {"list", "tuple", "dict", "set", "frozenset"}
_DTYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "complex": complex}
_ORDERING = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_MODULES = ("numpy", "pandas")
"""Modules whose functions the baseline computes (``arrays.py``, ``frames.py``)."""
_STR_IS_REPR = {"DataFrame", "Series"}  # print(frame) shows the same text as its repr
# IPython shows these with its own printers (signatures, qualified names), not their repr.
_NOT_SHOWN_BY_REPR = {"function", "type", "builtin_function_or_method", "method", "ABCMeta"}
_PURE_BUILTINS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (len, str, repr, abs, round, min, max, sum, sorted, int, float, bool, list, tuple)
}


class BaselinePredictor:
    name = "baseline"
    window = None
    max_tokens = None

    async def predict(self, request: PredictionRequest) -> Completion:
        started = time.perf_counter()
        if request.task == "output":
            code = request.target_code or ""
            state = visible_state(request.history, request.prompt.context, code)
            text = predict_output(code, request.history, state)
        else:
            text = predict_next_cell(request.history)
        return Completion(
            text=text,
            model="baseline",
            latency=time.perf_counter() - started,
            prompt_tokens=None,
            completion_tokens=None,
            answer=text,
        )

    async def aclose(self) -> None:
        return None


def predict_next_cell(history: Sequence[Step]) -> str:
    if len(history) < 2:
        return ""
    last = history[-1]["code"]
    best, best_score = 0, -1.0
    for i in range(len(history) - 2, -1, -1):  # latest first, so that it wins ties
        similarity = fuzz.ratio(history[i]["code"], last)
        if similarity > best_score:
            best, best_score = i, similarity
    return str(history[best + 1]["code"])


def visible_state(history: Sequence[Step], context: Context,
                  target_code: str | None) -> Mapping[str, RuntimeVariable]:
    """The runtime state a prediction in ``context`` may use: what its prompt shows."""
    if not history or context == "none":
        return {}
    variables = history[-1].get("runtime_variables") or {}
    if context == "curated":
        chosen = curated_selection(history, target_code)
        return {name: entry for name, entry in variables.items() if name in chosen}
    return variables


def predict_output(code: str, history: Sequence[Step],
                   snapshot: Mapping[str, RuntimeVariable] | None = None) -> str:
    """What ``code`` displays after ``history``, as far as ``snapshot`` (default: the whole
    state before it) determines it; what it does not determine is taken to show nothing."""
    determined = determined_output(code, history, snapshot)
    return "" if determined is None else determined[0]


def determined_output(code: str, history: Sequence[Step],
                      snapshot: Mapping[str, RuntimeVariable] | None = None,
                      ) -> tuple[str, bool] | None:
    """``(shown, complete)``: what ``code`` displays as far as the rules know, and whether
    they know all of it (no statement that could display something was undetermined;
    assignments, imports and definitions are taken to show nothing). None: not Python."""
    try:
        cell = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # magics, shell escapes
        return None
    if snapshot is None:
        snapshot = (history[-1].get("runtime_variables") or {}) if history else {}
    modules = {module: names.module_names(history, module) for module in _MODULES}
    state = _State(snapshot, names.bound(cell) | set(snapshot), _classes_defined(history),
                   modules)
    text = state.shown(cell, _quiet(code))
    if state.rounded:  # computed on floats a repr rounded: only if the dropped digits
        for nudge in (1, -1):  # cannot change what it shows, either way
            nudged = _State(snapshot, state.shadowed, state.classes, modules, nudge)
            if nudged.shown(cell, _quiet(code)) != text:
                return "", False  # unknown, as any value the rules cannot tell
    drawn = figures.figure_text(cell, history, _quiet(code), snapshot)  # parsed once
    if drawn is None:
        return text, False
    # a cell that draws shows its figures and nothing else (figure_text checked that)
    return (drawn, True) if drawn else (text, not state.undetermined)


_SILENT = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.Pass,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Delete, ast.Global,
           ast.Nonlocal)


def _may_display(statement: ast.stmt, display: bool) -> bool:
    """Whether an undetermined statement could show something: a displayed expression, a
    call (it may print), a raise."""
    if isinstance(statement, _SILENT):
        return False
    if isinstance(statement, ast.Expr) and display:
        return True
    return any(isinstance(node, ast.Call | ast.Raise | ast.Assert)
               for node in ast.walk(statement))


class _Undetermined(Exception):
    """The snapshot and the cell do not determine this value."""


class _Shown:
    """A value known only by its texts: IPython's display, repr(), str() (None: unknown)."""

    def __init__(self, display: str, text: str | None, representation: str | None = None) -> None:
        self.display = display
        self.text = text
        self.representation = display if representation is None else representation

    def __repr__(self) -> str:
        return self.representation

    def __str__(self) -> str:
        if self.text is None:
            raise _Undetermined
        return self.text

    def __format__(self, spec: str) -> str:
        if spec:
            raise _Undetermined
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.display)


class _State:
    """What is known of the variables, statement after statement of one cell."""

    def __init__(self, snapshot: Mapping[str, Any], shadowed: set[str], classes: set[str],
                 modules: Mapping[str, set[str]] | None = None, nudge: int = 0) -> None:
        self.entries = dict(snapshot)  # untouched since the snapshot
        self.values: dict[str, Any] = {}  # assigned by the cell to a known value
        self.shadowed = shadowed  # names the user rebinds: builtins no more
        self.classes = classes
        # the names each of _MODULES is known by (the snapshot leaves modules out)
        self.modules = {m: set((modules or {}).get(m, ())) for m in _MODULES}
        self.undetermined = False  # a statement that may have shown something was not known
        self.nudge = nudge  # rebuilt with their rounded floats moved up (1) or down (-1)
        self.rounded = False  # the cell read floats a repr may have rounded

    def shown(self, cell: ast.Module, quiet: bool) -> str:
        """What the cell shows, statement after statement."""
        texts = [self.run(statement, display=i == len(cell.body) - 1 and not quiet)
                 for i, statement in enumerate(cell.body)]
        return "".join(texts).removesuffix("\n")

    def run(self, statement: ast.stmt, display: bool) -> str:
        """What the statement shows; the state updated past it."""
        try:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if self._is_builtin_call(call, "print"):
                assert isinstance(call, ast.Call)
                return self.printed(call)
            if display and isinstance(statement, ast.Expr):
                return _display(self.value(statement.value))
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                name = statement.targets[0].id
                self.values[name] = self.value(statement.value)
                self.entries.pop(name, None)
                return ""
            if self._assigns_item(statement):
                return ""
            if isinstance(statement, ast.Import | ast.ImportFrom):
                for module, known in self.modules.items():
                    bound, imported = names.module_effect(statement, module)
                    self.modules[module] = (known - bound) | imported
                return ""
        except _Undetermined:
            pass
        self.undetermined |= _may_display(statement, display)
        # Anything else may have changed every variable it names.
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                self.entries.pop(node.id, None)
                self.values.pop(node.id, None)
                for known in self.modules.values():
                    known.discard(node.id)
        return ""

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
        try:
            arrays.assign(array, self._index(target.slice), self.value(statement.value))
        except Exception:  # what the kernel would have raised is not guessed
            raise _Undetermined from None
        return True

    def printed(self, call: ast.Call) -> str:
        options = {"sep": " ", "end": "\n"}
        for keyword in call.keywords:
            if keyword.arg not in options:  # file=, **kwargs
                raise _Undetermined
            option = self.value(keyword.value)
            if option is not None:  # None means the default
                options[keyword.arg] = str(option)
        texts = [str(self.value(argument)) for argument in call.args]
        return options["sep"].join(texts) + options["end"]

    def value(self, node: ast.expr) -> Any:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        try:
            return self._evaluate(node)
        except _Undetermined:
            raise
        except Exception:  # the expression would raise, or the guess does not apply
            raise _Undetermined from None

    def _evaluate(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            if node.id in self.values:
                return self.values[node.id]
            if node.id in _DTYPES and node.id not in self.shadowed:
                return _DTYPES[node.id]
            entry = self._entry(node.id)
            value = _from_snapshot(entry, self.nudge)
            if (arrays.is_array(value) and arrays.rounded(value)) or (
                    frames.is_frame(value) and frames.rounded(str(entry.get("repr")))):
                self.rounded = True
            if arrays.is_array(value) or frames.is_frame(value):
                self.values[node.id] = value  # one object per name, so that a view is one
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
            raise _Undetermined
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "fit":
                return self._fitted(node)
            return self._numpy_call(node.func, node.args, node.keywords)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            return self._call(node.func.id, node.args)
        if isinstance(node, ast.Subscript):
            value = self.value(node.value)
            if frames.is_frame(value):
                return frames.subscript(value, self._index(node.slice))
            if arrays.is_array(value):
                return arrays.subscript(value, self._index(node.slice))
            return value[self._index(node.slice)]
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
            return operators.binary(node.op, left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if frames.is_frame(operand):
                return frames.unary(operators.UNARY[type(node.op)], operand)
            if arrays.is_array(operand):
                return arrays.unary(operators.UNARY[type(node.op)], operand)
            return operators.unary(node.op, operand)
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            rights = [self.value(c) for c in node.comparators]
            if frames.is_frame(left) or any(frames.is_frame(r) for r in rights):
                if len(node.ops) != 1 or not isinstance(node.ops[0], _ORDERING):
                    raise _Undetermined
                return frames.binary(operators.COMPARE[type(node.ops[0])], left, rights[0])
            if arrays.is_array(left) or any(arrays.is_array(r) for r in rights):
                if len(node.ops) != 1 or not isinstance(node.ops[0], _ORDERING):
                    raise _Undetermined  # a chained comparison of arrays raises
                return arrays.binary(operators.COMPARE[type(node.ops[0])], left, rights[0])
            return operators.compare(left, node.ops, rights)
        if isinstance(node, ast.BoolOp):  # short-circuits as Python does
            result: Any = None
            for operand in node.values:
                result = self.value(operand)
                if not operators.plain(result) or (
                        bool(result) if isinstance(node.op, ast.Or) else not result):
                    break
            if not operators.plain(result):
                raise _Undetermined
            return result
        raise _Undetermined

    def _call(self, function: str, arguments: list[ast.expr]) -> Any:
        if function in self.shadowed:
            raise _Undetermined
        single = arguments[0] if len(arguments) == 1 else None
        entry = self.entries.get(single.id) if isinstance(single, ast.Name) else None
        if function == "len" and entry is not None:
            if entry.get("length") is not None:
                return int(entry["length"])
            if entry.get("shape"):
                return int(entry["shape"][0])
        if function == "type" and single is not None:
            if entry is not None:
                return self._type(str(entry["type"]))
            value = self.value(single)
            if isinstance(value, _Shown):
                raise _Undetermined
            return self._type(type(value).__name__)
        if function not in _PURE_BUILTINS:
            raise _Undetermined
        return _PURE_BUILTINS[function](*(self.value(argument) for argument in arguments))

    def _numpy_call(self, func: ast.Attribute, arguments: list[ast.expr],
                    keywords: list[ast.keyword]) -> Any:
        """``np.f(...)`` or ``array.f(...)``, for the functions ``arrays`` computes."""
        if any(keyword.arg is None for keyword in keywords) or any(
                isinstance(argument, ast.Starred) for argument in arguments):
            raise _Undetermined
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
        if frames.is_frame(owner):
            return frames.method(owner, func.attr, [self.value(a) for a in arguments], named)
        if not arrays.is_array(owner):
            raise _Undetermined
        return arrays.method(owner, func.attr, [self.value(a) for a in arguments], named)

    def _fitted(self, call: ast.Call) -> _Shown:
        """``model.fit(...)``: the model, for one the snapshot shows as ``Type(...)``,
        fitted on values the state knows by name (a name it does not know may not exist:
        the cell would raise)."""
        assert isinstance(call.func, ast.Attribute)
        owner = call.func.value
        if not isinstance(owner, ast.Name) or owner.id in self.values:
            raise _Undetermined
        entry = self._entry(owner.id)
        text, kind = entry.get("repr"), str(entry.get("type"))
        if not (isinstance(text, str) and text.startswith(f"{kind}(") and text.endswith(")")
                and text.count("(") == text.count(")")):  # not cut short
            raise _Undetermined
        for node in [*call.args, *(k.value for k in call.keywords)]:
            for name in ast.walk(node):
                if isinstance(name, ast.Name) and not (
                        name.id in self.entries or name.id in self.values
                        or any(name.id in known for known in self.modules.values())):
                    raise _Undetermined
        return _Shown(text, text)

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

    def _type(self, name: str) -> _Shown:
        if name in _BUILTIN_TYPES:
            qualified = name
        elif name in self.classes:
            qualified = f"__main__.{name}"
        else:  # a library's type; for an unknown module the name alone is a guess
            qualified = _LIBRARY_TYPES.get(name, name)
        # IPython displays a class by its qualified name; str() and repr() wrap it.
        return _Shown(qualified, f"<class '{qualified}'>", f"<class '{qualified}'>")

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
        return format(value, spec)

    def _entry(self, name: str) -> Mapping[str, Any]:
        entry = self.entries.get(name)
        if entry is None:
            raise _Undetermined
        return entry  # type: ignore[no-any-return]


def _from_snapshot(entry: Mapping[str, Any], nudge: int = 0) -> Any:
    """The value a snapshot entry stands for: a literal when its repr is one, else texts
    (``nudge``: see ``arrays.from_repr``)."""
    kind, text = entry.get("type"), entry.get("repr")
    if kind == "NoneType":
        return None
    if not isinstance(text, str) or _PLACEHOLDER.fullmatch(text) or kind in _NOT_SHOWN_BY_REPR:
        raise _Undetermined
    if kind in _LITERAL_TYPES:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise _Undetermined from None
        if type(value).__name__ != kind or not _complete(value, entry.get("length")):
            raise _Undetermined
        return value
    if kind == "ndarray":
        try:
            return arrays.from_repr(text, entry.get("shape"), nudge)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass  # cut short, or not plain data: known by its text only
    if kind in frames.KINDS:
        for rebuild in (frames.from_repr, frames.partial):  # whole, else its ends
            try:
                return rebuild(text, str(kind), entry.get("shape"), nudge)
            except (ValueError, TypeError, KeyError, IndexError, ImportError):
                pass  # not plain data, or no pandas here: known by its text only
    scalar = _NUMPY_SCALAR.fullmatch(text)
    if scalar:
        return _Shown(text, scalar.group(1))
    return _Shown(text, text if kind in _STR_IS_REPR else None)


def _complete(value: Any, length: int | None) -> bool:
    """False when the bounded repr cut the value short (its length or an "...")."""
    if length is not None and hasattr(value, "__len__") and len(value) != length:
        return False
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if item is Ellipsis:
            return False
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            pending.extend(item)
    return True


def _display(value: Any) -> str:
    """The text/plain IPython shows for a cell's last expression."""
    if value is None:
        return ""
    if isinstance(value, _Shown):
        return value.display
    from IPython.lib.pretty import pretty  # imported here: IPython takes a while to import

    return str(pretty(value))


def _quiet(code: str) -> bool:
    """IPython shows no result when the cell's last token is a semicolon."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    # IPython's DisplayHook.quiet, which does not skip a DEDENT.
    ignored = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER}
    significant = [token for token in tokens if token.type not in ignored]
    return bool(significant) and significant[-1].string == ";"


def _classes_defined(history: Iterable[Step]) -> set[str]:
    return {
        match.group(1)
        for step in history
        for match in re.finditer(r"^\s*class\s+(\w+)", str(step.get("code", "")), re.M)
    }
