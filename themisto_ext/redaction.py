"""Secret redaction, applied in the kernel before anything is written anywhere, and by the
server to cell text it is sent before the cell runs (``POST /speculations``, ``POST
/predictions``), which no kernel has seen yet.

Three rules, all on by default (``docs/format.md`` says exactly what they catch):

* **Names.** A value held under a secret-looking name (a variable, a dict key, a
  DataFrame column, an object's field, a keyword argument in code, an environment
  variable; ``secret_values.py`` finds them) is hidden in its own repr and becomes a
  *known secret*: every later occurrence of it is masked in code, outputs, tracebacks and
  reprs, for the kernel's life (known secrets are kept in this process's memory only).
  Names are matched on words (``contract.DEFAULT_NAME_PATTERNS``).
* **Keyword text.** In any text, a value written next to a secret-looking name
  (``password=...``, ``"token": "..."``, ``Authorization: Bearer ...``) is masked, and so is
  an AWS secret access key next to its key id.
* **Formats.** Strings in well-known credential formats are masked wherever they appear.

Every pattern runs in linear time in the text it scans (tested by doubling adversarial
inputs), so no output can make the hook slow.
"""

from __future__ import annotations

import ast
import base64
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, quote_plus

from themisto_ext.contract import (
    DEFAULT_NAME_PATTERNS,
    DEFAULT_VALUE_PATTERNS,
    CaptureSettings,
    dumps,
)

REDACTED = "<redacted>"

MIN_LITERAL_LENGTH = 6
"""Shorter known secrets are hidden where they were found but not hunted for elsewhere:
masking every ``admin`` or ``1234`` would mask ordinary text."""
MAX_LITERAL_LENGTH = 4096
MAX_LITERALS = 5000
"""Known secrets kept for the kernel's life; later ones are masked only where found."""
NAME_LENGTH = 200
"""Longer strings (dict keys, say) are data, not names."""
NAME_CACHE = 500_000
"""Names whose verdict is remembered. At 100,000 a namespace of 200,000 names emptied the
cache every cell and every name was cut into words again (+2 s a cell)."""
_TRIE_LENGTH = 256   # longer known secrets are searched one by one (they are rare)

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_KEYWORD = re.compile(r"(?<![\w.\-])([\"']?)([A-Za-z_][\w.\-]{0,63})\1"  # a name, maybe quoted
                      r"[ \t]{0,3}(?:=>|=|:)[ \t]{0,3}")               # then = : or =>
_VALUE = re.compile(r"(?:(?:Bearer|Basic|Token|Digest)[ \t]+)?"
                    r"(?:([\"'])[^\"'\n]{1,1024}|[^\s\"',;&)}\]>]{1,1024})")
# In code, ``password = getpass()`` or ``api_key=API_KEY`` give a secret name code, not a
# value: unquoted names, calls, subscripts and f-string fields are left alone there.
_CODE_VALUE = re.compile(r"[A-Za-z_][\w.]*[(\[]?|\{.*")
_NOT_VALUES = frozenset({"str", "bytes", "int", "float", "bool", "None", "True", "False",
                         "null", "true", "false", "Optional", "Any", "SecretStr"})
_AWS_KEY_ID = re.compile(r"A[KS]IA(?<![A-Z0-9]A[KS]IA)[0-9A-Z]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_HEX = frozenset("0123456789abcdefABCDEF")
_AWS_REACH = 120  # characters between a key id and its secret key, either side
_GLUED = ("password", "passwd", "passphrase", "passcode", "secret", "token", "apikey",
          "credential", "credentials")
"""Secret words that also count at the end of one run-together word (``PGPASSWORD``,
``authtoken``), where no separator cuts them off. Not ``pass`` or ``key``: ``bypass``,
``monkey``."""
_PROSE = re.compile(r"[a-z]{1,24}[ \t]+[A-Za-z]")
"""An unquoted keyword "value" that is a lower-case word followed by more words is prose
(``token: a unit of text``, ``Authorization: required for...``), not a credential."""
MIN_ENCODED = 8
"""Shortest base64 form of a known secret that is hunted for (shorter ones are noise)."""


def name_words(name: str) -> list[str]:
    """``dbPassword`` -> ``['db', 'password']``, ``OPENAI_API_KEY`` -> ``['openai', 'api',
    'key']``: words at separators, digits and camelCase humps, lower-cased."""
    return [w.lower() for w in _WORD.findall(name)]


def _pattern_regex(pattern: str) -> str:
    """A name pattern (``*_api_key_*``) as a regex over ``_word_word_``."""
    parts = []
    for word in pattern.lower().split("_"):
        if word == "*":
            parts.append("(?:[a-z]+_)*")
        elif word:
            glob = "".join("[a-z]*" if c == "*" else "[a-z]" if c == "?" else re.escape(c)
                           for c in word)
            parts.append(glob + "_")
    return "_" + "".join(parts)


def _fragments(patterns: Iterable[str]) -> list[str] | None:
    """A literal part of each name pattern, one of which a text must contain (lower-cased)
    for a secret-looking name to be in it; None when a pattern has none."""
    found = []
    for pattern in patterns:
        parts = [part for word in pattern.lower().split("_")
                 for part in re.split(r"[*?]", word) if part]
        if not parts:
            return None
        found.append(max(parts, key=len))
    return sorted(set(found))


def _trie_regex(words: Iterable[str]) -> str:
    """One alternation for many literals, shaped as a trie: a position is tried against
    each first character once, not against every literal."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        prefix = ""
        while len(node) == 1 and "" not in node:  # a chain: no branching, no end
            (ch, node), = node.items()
            prefix += re.escape(ch)
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return prefix
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return prefix + ("(?:" + body + ")?" if len(branches) == 1 else body + "?")
        return prefix + body

    return build(trie)


class Redactor:
    @classmethod
    def of(cls, settings: CaptureSettings) -> Redactor:
        """The redactor ``settings`` configure: the kernel's, and the server's for cell
        text sent before the cell runs (one configuration, masked alike)."""
        return cls(settings.name_patterns, settings.value_patterns, settings.redact)

    def __init__(
        self,
        name_patterns: Iterable[str] = DEFAULT_NAME_PATTERNS,
        value_patterns: Iterable[str] = DEFAULT_VALUE_PATTERNS,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        names = [_pattern_regex(p) for p in name_patterns if p.strip("_")]
        self._names = re.compile("^(?:" + "|".join(names) + ")$") if names else None
        self._name_cache: dict[str, bool] = {}
        # One regex each, not one alternation: each then starts at its literal prefix at
        # memchr speed (~0.3 ms/MB); an alternation tries every branch at every position
        # (~200 ms/MB).
        self._values = [re.compile(v) for v in value_patterns]
        self._fragments = _fragments(name_patterns)
        # Every secret name holds one of these (each pattern's words must all be there;
        # the run-together words of _GLUED each hold a default pattern's word).
        self._fragment_re = re.compile("|".join(map(re.escape, self._fragments + list(
            _GLUED)))) if self._fragments is not None else None
        self._literals: set[str] = set()
        self._learnt = 0  # secrets learnt (each also adds its escaped and encoded forms)
        self._long_literals: list[str] = []
        self._literal_re: re.Pattern[str] | None = None
        self._stale = False
        self.generation = 0
        """Bumped whenever a new secret becomes known (cached reprs are masked again)."""

    # ------------------------------------------------------------ names

    def name_is_secret(self, name: str) -> bool:
        if not self.enabled or self._names is None or len(name) > NAME_LENGTH:
            return False
        found = self._name_cache.get(name)
        if found is None:
            if self._fragment_re is not None and not self._fragment_re.search(name.lower()):
                found = False  # no pattern's literal word in it: most names, in one C call
            else:
                words = name_words(name)
                found = bool(words) and bool(self._names.match("_" + "_".join(words) + "_"))
                if not found and len(words) == 1:
                    found = words[0].endswith(_GLUED) and words[0] not in _GLUED
            if len(self._name_cache) > NAME_CACHE:
                self._name_cache.clear()
            self._name_cache[name] = found
        return found

    # ------------------------------------------------------------ known secrets

    def learn(self, values: Iterable[str]) -> bool:
        """Remember secret values for the kernel's life; True when one was new."""
        added = False
        for value in values:
            value = value.strip()
            if not MIN_LITERAL_LENGTH <= len(value) <= MAX_LITERAL_LENGTH \
                    or value in self._literals or self._learnt >= MAX_LITERALS \
                    or (value.isalpha() and self.name_is_secret(value)):
                continue  # ("password" as a value is a label: masking it would hide the word)
            self._literals.add(value)
            self._literals.update(v for v in _forms(value) if len(v) <= MAX_LITERAL_LENGTH * 6)
            self._learnt += 1
            added = True
        if added:
            self._stale = True
            self.generation += 1
        return added

    def known(self) -> int:
        return len(self._literals)

    def learn_from_code(self, code: str) -> None:
        """Learn the string literals the code gives to secret-looking names: a cell about to
        run has not bound its variables yet (assignments, keyword arguments, dict keys and
        subscripts such as ``os.environ["DB_PASSWORD"] = ...``)."""
        if self.enabled:
            self.learn(self._code_literals(code))

    def _code_literals(self, code: str) -> Iterator[str]:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
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
                if isinstance(value, ast.Constant) and isinstance(value.value, str) \
                        and self.name_is_secret(_target_name(target)):
                    yield value.value

    def _compiled(self) -> re.Pattern[str] | None:
        if self._stale:
            short = [s for s in self._literals if len(s) <= _TRIE_LENGTH]
            self._long_literals = sorted((s for s in self._literals if len(s) > _TRIE_LENGTH),
                                         key=len, reverse=True)
            self._literal_re = re.compile(_trie_regex(short)) if short else None
            self._stale = False
        return self._literal_re

    # ------------------------------------------------------------ masking

    def mask_code(self, code: str) -> str:
        """``mask`` for a cell's code, after learning the literals it gives secret names."""
        self.learn_from_code(code)
        return self.mask(code, code=True)

    def mask(self, text: str, code: bool = False) -> str:
        """``text`` with every known secret, keyword value and credential format masked.
        In ``code``, a keyword value that is itself code (a name, a call) is left alone."""
        if not self.enabled or not text:
            return text
        return apply_spans(text, self.spans(text, code))

    def touches(self, texts: list[str]) -> bool:
        """Whether ``mask`` would mask anything in any of ``texts`` (one search of them
        all: a frame's 1,000 cells are not searched one at a time)."""
        return bool(self.enabled and texts and self.spans("\n".join(texts)))

    def spans(self, text: str, code: bool = False) -> list[tuple[int, int]]:
        """Where ``mask`` would mask ``text`` (unsorted, maybe overlapping)."""
        spans: list[tuple[int, int]] = []
        if not self.enabled or not text:
            return spans
        literal_re = self._compiled()
        if literal_re is not None:
            spans += [m.span() for m in literal_re.finditer(text)]
        for literal in self._long_literals:
            start = text.find(literal)
            while start >= 0:
                spans.append((start, start + len(literal)))
                start = text.find(literal, start + len(literal))
        for pattern in self._values:
            group = "secret" if "secret" in pattern.groupindex else 0
            spans += [m.span(group) for m in pattern.finditer(text)]
        lowered = text.lower()
        if self._fragments is None or any(f in lowered for f in self._fragments):
            spans += self._keyword_spans(text, code)
        spans += _aws_secret_spans(text)
        return spans

    def _keyword_spans(self, text: str, code: bool) -> Iterator[tuple[int, int]]:
        covered = 0
        for m in _KEYWORD.finditer(text):
            if m.start() < covered or not self.name_is_secret(m.group(2)):
                continue
            value = _VALUE.match(text, m.end())
            if value is None:
                continue
            quoted = bool(value.group(1))
            if not quoted and (value.group() in _NOT_VALUES
                               or (code and _CODE_VALUE.fullmatch(value.group()))
                               or _PROSE.match(text, value.start())):
                continue
            covered = value.end()
            yield (value.end(1) if quoted else value.start()), covered


def _aws_secret_spans(text: str) -> Iterator[tuple[int, int]]:
    for key_id in _AWS_KEY_ID.finditer(text):
        lo = max(0, key_id.start() - _AWS_REACH)
        hi = min(len(text), key_id.end() + _AWS_REACH)
        for secret in _AWS_SECRET.finditer(text, lo, hi):
            if not _HEX.issuperset(secret.group()):  # a 40-hex git hash is not a key
                yield secret.span()


def _forms(secret: str) -> set[str]:
    """How a known secret may appear besides itself: its ``repr``, JSON and URL escapes,
    and the part of its base64 that is the same wherever it sits in the encoded bytes
    (``base64("user:" + secret)`` holds one of three such cores)."""
    found = {repr(secret)[1:-1], dumps(secret, compact=False)[1:-1], dumps(secret)[1:-1],
             quote(secret, safe=""), quote(secret), quote_plus(secret)}
    raw = secret.encode("utf-8", "replace")
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = -(-8 * shift // 6)                 # characters that hold the padding's bits
        end = (8 * (shift + len(raw))) // 6        # characters wholly of the secret's bits
        for core in (encoded[start:end], encoded[start:end].replace("+", "-").replace("/", "_")):
            if len(core) >= MIN_ENCODED:
                found.add(core)
    found.discard(secret)
    return found


def apply_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of ``spans`` (overlapping ones merged) replaced by ``REDACTED``."""
    return _apply(text, list(spans))


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    spans.sort()
    parts, last = [], 0
    for start, end in spans:
        if end <= last:
            continue
        if start > last:
            parts.append(text[last:start])
            parts.append(REDACTED)
        elif not parts:
            parts.append(REDACTED)
        last = max(last, end)
    parts.append(text[last:])
    return "".join(parts)


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
