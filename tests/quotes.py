"""Seeded generators of realistic quotes: genuine ones with the noise a model
or a PDF adds, and fabrications a careless model produces.

Used by the matcher tests and by benchmarks/grading_speed.py.
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata

WORD = re.compile(r"\S+")


@functools.lru_cache(maxsize=4)
def _words(text: str) -> list[re.Match]:
    return list(WORD.finditer(text))


def window(text: str, rng: random.Random, min_words: int = 12, max_words: int = 40) -> str:
    """A run of whole words from ``text`` (raw, with its line breaks)."""
    words = _words(text)
    if len(words) <= min_words:
        return text
    count = rng.randint(min_words, min(max_words, len(words) - 1))
    first = rng.randrange(0, len(words) - count)
    return text[words[first].start() : words[first + count - 1].end()]


def as_a_model_quotes_it(raw: str) -> str:
    """How a model copies extracted text: line breaks become spaces, hyphens rejoined."""
    joined = re.sub(r"(\w)-\n(\w)", r"\1\2", raw)
    return " ".join(joined.split())


def _ligatures(text: str) -> str:
    return text.replace("fi", "\ufb01").replace("fl", "\ufb02")


def _smart_quotes(text: str) -> str:
    return text.replace('"', "\u201c").replace("'", "\u2019").replace(" - ", " \u2013 ")


def _stray_space(text: str, rng: random.Random) -> str:
    words = [m for m in WORD.finditer(text) if len(m.group()) > 6 and m.group().isalpha()]
    if not words:
        return text
    word = rng.choice(words)
    cut = word.start() + rng.randint(2, len(word.group()) - 2)
    return text[:cut] + " " + text[cut:]


def _hyphenate(text: str, rng: random.Random) -> str:
    words = [m for m in WORD.finditer(text) if len(m.group()) > 7 and m.group().isalpha()]
    if not words:
        return text
    word = rng.choice(words)
    cut = word.start() + len(word.group()) // 2
    return text[:cut] + "-\n" + text[cut:]


NOISES = {
    "case": lambda t, r: t.upper() if r.random() < 0.5 else t.lower(),
    "ligatures": lambda t, r: _ligatures(t),
    "smart quotes and dashes": lambda t, r: _smart_quotes(t),
    "non-breaking spaces": lambda t, r: t.replace(" ", "\u00a0"),
    "line breaks": lambda t, r: t.replace(" ", "\n", 3),
    "end-of-line hyphenation": _hyphenate,
    "stray space in a word": _stray_space,
    "wrapping quote marks": lambda t, r: "\u201c" + t + ".\u201d",
    "decomposed accents": lambda t, r: unicodedata.normalize("NFD", t),
    "edge punctuation": lambda t, r: "..." + t.rstrip(".") + ";" if r.random() < 0.3 else "(" + t + ")",
}


def noisy(quote: str, rng: random.Random, kinds: int = 2) -> str:
    for name in rng.sample(sorted(NOISES), kinds):
        quote = NOISES[name](quote, rng)
    return quote


def elided(text: str, rng: random.Random) -> str | None:
    """Two nearby verbatim runs joined by an elision mark."""
    words = list(WORD.finditer(text))
    if len(words) < 60:
        return None
    start = rng.randrange(0, len(words) - 50)
    first = text[words[start].start() : words[start + 10].end()]
    second = text[words[start + 25].start() : words[start + 40].end()]
    mark = rng.choice([" ... ", " \u2026 ", " [...] ", " (...) "])
    return as_a_model_quotes_it(first) + mark + as_a_model_quotes_it(second)


def change_a_digit(words: list[str], rng: random.Random) -> bool:
    """Change one digit of one word that has digits (in place); False when none has."""
    digits = [i for i, w in enumerate(words) if re.search(r"\d", w)]
    if not digits:
        return False
    i = rng.choice(digits)
    words[i] = re.sub(r"\d", lambda m: str((int(m.group()) + rng.randint(1, 8)) % 10), words[i], count=1)
    return True


_CONTENT_SWAPS = ["significantly", "model", "increase", "decrease", "dataset", "baseline", "sample", "training"]


def fabricated(text: str, rng: random.Random, kind: str) -> str | None:
    """A quote a model invents from ``text``: None when ``text`` offers no such edit."""
    base = as_a_model_quotes_it(window(text, rng, 15, 35))
    words = base.split(" ")
    if kind == "changed number":
        if not change_a_digit(words, rng):
            return None
    elif kind == "negation":
        i = rng.randrange(1, len(words) - 1)
        words.insert(i, "not")
    elif kind == "changed word":
        candidates = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 4]
        if not candidates:
            return None
        i = rng.choice(candidates)
        replacement = rng.choice([w for w in _CONTENT_SWAPS if w != words[i].lower()])
        words[i] = replacement
    elif kind == "spliced":
        far = as_a_model_quotes_it(window(text, rng, 10, 20))
        if far in base or base in far:
            return None
        return base + " " + far
    elif kind == "shuffled sentence":
        rng.shuffle(words)
    elif kind == "decimal point moved":
        decimals = [i for i, w in enumerate(words) if re.search(r"\d\.\d", w)]
        if not decimals:
            return None
        i = rng.choice(decimals)
        moved = re.sub(r"(\d)(\d)\.(\d)", r"\1.\2\3", words[i], count=1)
        if moved == words[i]:
            moved = re.sub(r"(\d)\.(\d)(\d)", r"\1\2.\3", words[i], count=1)
        if moved == words[i]:
            return None
        words[i] = moved
    elif kind == "sign or inequality changed":
        flips = {"<": ">", ">": "<", "\u2264": "\u2265", "\u2265": "\u2264", "\u2212": "", "-": ""}
        candidates = [i for i, w in enumerate(words) if w[:1] in flips and (w[:1] in "<>\u2264\u2265" or
                                                                          re.match(r"[-\u2212]\d", w))]
        if not candidates:
            return None
        i = rng.choice(candidates)
        words[i] = flips[words[i][0]] + words[i][1:]
    return " ".join(words)


FABRICATIONS = ("changed number", "negation", "changed word", "spliced", "shuffled sentence")
# Edits that change only a symbol a number hangs on: rarer in a random window, so tested apart.
SYMBOL_FABRICATIONS = ("decimal point moved", "sign or inequality changed")
