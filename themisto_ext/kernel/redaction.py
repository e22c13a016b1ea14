"""Secret redaction, applied in the kernel before anything is written anywhere.

Two independent rules, both on by default: variables whose *names* look like
credentials have their values hidden, and strings in well-known credential *formats*
are masked wherever they appear (code, outputs, reprs). Values hidden by the name rule
are masked wherever they appear too, so ``password = "hunter2"`` does not leak through
the recorded code of that very cell.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable, Iterator

from themisto_ext.contract import DEFAULT_NAME_PATTERNS, DEFAULT_VALUE_PATTERNS

REDACTED = "<redacted>"


# Short values would mask ordinary words everywhere; below this length a name-matched
# value is hidden in its own repr but not hunted for elsewhere.
MIN_LITERAL_LENGTH = 4


class Redactor:
    def __init__(
        self,
        name_patterns: Iterable[str] = DEFAULT_NAME_PATTERNS,
        value_patterns: Iterable[str] = DEFAULT_VALUE_PATTERNS,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        names = [fnmatch.translate(p.lower()) for p in name_patterns]
        self._names = re.compile("|".join(names)) if names else None
        values = list(value_patterns)
        self._values = re.compile("|".join(f"(?:{v})" for v in values)) if values else None
        self._literals: frozenset[str] = frozenset()
        self._literal_re: re.Pattern[str] | None = None

    def name_is_secret(self, name: str) -> bool:
        return bool(self.enabled and self._names and self._names.match(name.lower()))

    def set_literals(self, literals: Iterable[str]) -> bool:
        """Remember secret values to mask elsewhere; returns True when the set changed."""
        new = frozenset(s for s in literals if len(s) >= MIN_LITERAL_LENGTH)
        if new == self._literals:
            return False
        self._literals = new
        ordered = sorted(new, key=len, reverse=True)
        self._literal_re = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        return True

    def code_literals(self, code: str) -> Iterator[str]:
        """String literals the code gives to secret-looking names.

        A cell that is about to run has not bound its variables yet, so the name rule
        cannot know ``password = "hunter2"`` is secret from the namespace: read it off the
        code (assignments, keyword arguments, dict keys and subscripts).
        """
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return
        for node in ast.walk(tree):
            pairs: list[tuple[ast.AST, ast.AST | None]] = []
            if isinstance(node, ast.Assign):
                pairs = [(target, node.value) for target in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.keyword) and node.arg:
                pairs = [(ast.Name(node.arg), node.value)]
            elif isinstance(node, ast.Dict):
                pairs = [(key, value) for key, value in zip(node.keys, node.values, strict=True)
                         if key is not None]
            for target, value in pairs:
                if self.name_is_secret(_target_name(target)) and isinstance(value, ast.Constant) \
                        and isinstance(value.value, str):
                    yield value.value

    def mask_code(self, code: str) -> str:
        """``mask``, plus literals the code itself assigns to secret-looking names."""
        extra = sorted((s for s in self.code_literals(code) if len(s) >= MIN_LITERAL_LENGTH),
                       key=len, reverse=True)
        for literal in extra:
            code = code.replace(literal, REDACTED)
        return self.mask(code)

    def mask(self, text: str) -> str:
        if not self.enabled or not text:
            return text
        if self._literal_re is not None:
            text = self._literal_re.sub(REDACTED, text)
        if self._values is not None:
            text = self._values.sub(REDACTED, text)
        return text


def _target_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""
