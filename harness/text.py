"""Text from outside (a file, a SPEC, a version, a program's output) made safe to show: on a
terminal, in Markdown, CSV, LaTeX, HTML and figures alike.

A control character (C0 but tab and, where asked, newline; DEL; C1, whose 0x9b opens an escape
sequence on its own; the bidirectional overrides, which reorder what a reader sees) is written
as its escape, `\\x1b`, so that it can neither recolour a terminal, set its title, nor vanish
unseen: a reader still sees that something was there.
"""
from __future__ import annotations

import html
import re

_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, newlines: bool = False) -> str:
    """`text` with every control character escaped (newlines kept where `newlines`, tabs always)."""
    return (_CONTROL if newlines else _CONTROL_OR_NEWLINE).sub(_escape, text)


def has_control(text: str) -> bool:
    return _CONTROL_OR_NEWLINE.search(text) is not None


def clean_data(value, newlines: bool = True):
    """A value read from a file (JSON: dicts, lists, strings, numbers) with every string, key
    included, cleaned."""
    if isinstance(value, str):
        return clean(value, newlines)
    if isinstance(value, dict):
        return {clean(k, newlines) if isinstance(k, str) else k: clean_data(v, newlines) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_data(v, newlines) for v in value]
    return value


_MARKDOWN = str.maketrans({"|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " "})


def markdown_cell(text) -> str:
    """Text from outside made one Markdown table cell that shows it as written: a `|` cannot split the
    row, nor a tag (`<b>`, `<img …>`) or an entity render, nor a newline end the row."""
    return clean(str(text), newlines=True).translate(_MARKDOWN)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def inline_html(text) -> str:
    """Markdown prose (ours, or text from outside in it) as HTML: escaped first, then its inline code spans as
    <code>, so that a reader sees `--claims-budget` as code, not its backticks."""
    return _CODE_SPAN.sub(r"<code>\1</code>", html.escape(clean(str(text), newlines=True)))
