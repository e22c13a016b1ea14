"""Clean a model's answer the way the Themisto benchmark does, before it is scored.

Models asked for "the answer only" still wrap it in Markdown fences, often with a language
tag, sometimes with a sentence before or after. The answer is the fenced block then. This
is a pure function: callers keep the raw answer next to the cleaned one.
"""

from __future__ import annotations

import re

# A fence line: three or more backticks or tildes, an optional info string (language tag).
# The closing fence uses the same character and is at least as long (CommonMark); an
# unclosed fence (an answer cut off by the token limit) runs to the end.
_FENCED = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n`]*\n(?P<body>.*?)(?:^[ \t]*(?P=fence)[`~]*[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
# ```42``` or ```python x = 1``` on a single line.
_ONE_LINE = re.compile(r"^(`{3,})(?:(?:python|py|text|output)\b)?[ \t]*(?P<body>.*?)\1$")
_INLINE = re.compile(r"^`(?P<body>[^`\n]+)`$")


def postprocess(answer: str) -> str:
    """The answer without code fences, language tags and surrounding whitespace."""
    text = answer.strip()
    match = _FENCED.search(text)
    if match:
        return match.group("body").strip()
    match = _ONE_LINE.match(text) or _INLINE.match(text)
    if match:
        return match.group("body").strip()
    return text
