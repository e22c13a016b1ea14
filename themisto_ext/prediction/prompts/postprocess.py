"""Read a model's answer back, the same way for every transport, before it is scored.

The protocol asks for the answer between the task's tags (``<output>`` ... ``</output>``),
and stops generation at the closing tag, so a reply normally is ``<output>\\n42\\n`` (or
``\\n42\\n`` when the transport began the reply with the tag). Models still stray: a
sentence before the tag, another tag of the prompts' format after the answer (``</cell>``,
a new ``<cell ...>``), or the answer wrapped in Markdown fences with a language tag. So:

1. the text up to and including the task's opening tag goes (a leading tag of the other
   task too: a next-cell answer that opens an ``<output>`` block);
2. the text from the first remaining tag of the prompts' markup on goes (``MARKUP``:
   no ``</output>``, ``<state_changes>`` or ``<cell step=...>`` survives);
3. a fenced block, when there is one, is the answer; surrounding whitespace goes.

This is a pure function: callers keep the raw answer next to the cleaned one.
``partial_answer`` reads an answer still being written (streamed) the same way.
"""

from __future__ import annotations

import re

from themisto_ext.prediction.prompts import ANSWER_TAGS, MARKUP, PredictionTask

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
_OPENING = {task: re.compile(re.escape(opening.strip()[:-1]) + r"(?:\s[^>\n]*)?>[ \t]*\n?")
            for task, (opening, _) in ANSWER_TAGS.items()}
"""The task's opening tag, with attributes (``<output error="NameError">``) and its newline."""
_ANY_OPENING = re.compile(r"\s*<(?:output|code)(?:\s[^>\n]*)?>[ \t]*\n?")
_MARKUP = re.compile("|".join(re.escape(tag) for tag in MARKUP))


def postprocess(answer: str, task: PredictionTask | None = None) -> str:
    """The answer without prompt markup, code fences, language tags and surrounding
    whitespace. Without ``task`` only fences and whitespace are removed."""
    text = answer
    if task is not None:
        opening = _OPENING[task].search(text)
        if opening is not None:
            text = text[opening.end():]
        else:
            leading = _ANY_OPENING.match(text)
            if leading is not None:
                text = text[leading.end():]
        markup = _MARKUP.search(text)
        if markup is not None:
            text = text[:markup.start()]
    text = text.strip()
    match = _FENCED.search(text)
    if match:
        return match.group("body").strip()
    match = _ONE_LINE.match(text) or _INLINE.match(text)
    if match:
        return match.group("body").strip()
    return text


def partial_answer(text: str, task: PredictionTask) -> str:
    """An answer still being written, read as ``postprocess`` will read it whole: a tag
    still being written at its end (``<outp``, ``</out``) is left out, so that a reader
    never sees markup that the finished answer will not have."""
    opened = text.rfind("<")
    if opened >= 0 and ">" not in text[opened:]:
        text = text[:opened]
    return postprocess(text, task)
