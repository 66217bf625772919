"""Text from datasets, models, papers and saved runs, made safe for the medium it is shown in. Pure.

Row ids, domains, system names, answers, quotes and provider errors are data: in a terminal
they must not move the cursor, recolour or clear the screen (escape sequences) or reorder what
follows (bidirectional overrides); in GitHub Markdown they must not become HTML, images,
links, headings, table cells or @mentions. Every renderer passes such text through one of
these functions; the HTML report does the same in the page (``textContent``).
"""

from __future__ import annotations

import re

# C0 and C1 controls (newline and tab apart), DEL, and the bidirectional formatting characters.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Characters that make Markdown structure anywhere in a line; "_" only at a word's edge (GitHub reads
# snake_case as text), "&" only where it would start an entity, a block marker only at the line's start.
_MARKDOWN_INLINE = re.compile(r"[\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_MARKDOWN_ENTITY = re.compile(r"&(?=#?\w+;)")
_MARKDOWN_BLOCK_START = re.compile(r"^(\s*)([#>+=-])|^(\s*\d+)([.)])(?=\s|$)")


def visible(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """Control and bidi characters shown as escapes (``\\x1b``, ``\\u202e``); newlines and tabs kept."""
    return _CONTROLS.sub(lambda m: visible(m.group(0)), str(text))


def for_terminal(text: object) -> str:
    return printable(text)


def for_markdown(text: object) -> str:
    """One line of GitHub-flavoured Markdown that reads as the text itself: no HTML, image, link,
    emphasis, heading, table cell or @mention can come out of it."""
    flat = printable(str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " "))
    escaped = _MARKDOWN_ENTITY.sub("&amp;", flat).replace("<", "&lt;")
    escaped = _MARKDOWN_INLINE.sub(lambda m: "\\" + m.group(0), escaped)
    escaped = _MARKDOWN_BLOCK_START.sub(lambda m: "\\".join(g for g in m.groups() if g is not None), escaped)
    # A word joiner after @ keeps GitHub from notifying a user or team named in the data.
    return escaped.replace("@", "@\u2060")


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for a file. A lone surrogate (invalid Unicode that a Python string can still hold,
    from text decoded with ``surrogateescape`` or half an emoji) is written as its escape, ``\\ud83d``, which a
    JSON reader reads back as it was: one row's text never stops a run's files from being written."""
    return text.encode("utf-8", "backslashreplace")
