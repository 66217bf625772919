"""Quotes cut from real PDFs by a second, independent extractor (pdfminer.six), the way models quote.

The plugin reads papers with pypdf; grading pypdf's own text against quotes made from that
same text would hide every extraction defect. pdfminer lays pages out on its own (text
boxes in reading order, columns apart), so its quotes cross what pypdf garbles: page
breaks with a footer, header or figure text between the halves, the other column read in
between, margin line numbers glued into words.

Kinds of genuine quote: ``plain``, ``short``, ``long`` (within a text box), ``page crossing``
(a sentence continued on the next page), ``column crossing`` (continued in the next column),
``line-numbered paper`` (any quote of a paper with margin line numbers), ``elided``.
Fabrications edit a genuine quote: symbol-only edits (decimal point moved, sign dropped,
inequality flipped, percent sign moved onto another number), a changed digit, an inserted
negation, a changed word, two distant passages spliced, shuffled words, and a paraphrase.

Used by tests/test_matcher_real.py and benchmarks/matcher_accuracy.py; needs ../shared.
"""

from __future__ import annotations

import hashlib
import pickle
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from quotes import change_a_digit

CACHE = Path(tempfile.gettempdir()) / "researchqa-pdfminer-cache"
_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?:][\"'”’)\]]*$")
_DIGITS_ONLY = re.compile(r"^[\d\s.,]+$")


@dataclass(frozen=True)
class Box:
    """A run of lines that read on from each other: same column, consecutive, evenly spaced."""

    text: str  # lines joined with "\n", as pdfminer gives them
    x0: float
    top: float
    page: int


@dataclass(frozen=True)
class Layout:
    name: str
    width: float
    pages: tuple[tuple[Box, ...], ...]
    line_numbered: bool  # margin line numbers: boxes of numbers only, down the page


LAYOUT_VERSION = "3"


def layout(pdf: Path) -> Layout:
    """pdfminer's text of every page as runs of continuous lines, cached by the file's content."""
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]
    cached = CACHE / f"{digest}-v{LAYOUT_VERSION}.pickle"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextBox, LTTextLine

    pages, width, numeric_boxes = [], 612.0, 0
    for number, page in enumerate(extract_pages(str(pdf), laparams=LAParams()), start=1):
        width = page.width
        boxes = [element for element in page if isinstance(element, LTTextBox) and element.get_text().strip()]
        every_line = [(line, box_number) for box_number, box in enumerate(boxes) for line in box
                      if isinstance(line, LTTextLine) and line.get_text().strip()]
        # pdfminer sometimes cuts one printed line into two boxes at a wide justified gap: a run
        # through such a line would join words the page never joins, so those lines end runs.
        split = {id(a) for a, box_a in every_line for b, box_b in every_line
                 if box_a != box_b and abs(a.y0 - b.y0) < 2 and 0 <= b.x0 - a.x1 < 40}
        split |= {id(b) for a, box_a in every_line for b, box_b in every_line
                  if box_a != box_b and abs(a.y0 - b.y0) < 2 and 0 <= b.x0 - a.x1 < 40}
        runs: list[Box] = []
        for element in boxes:
            if _DIGITS_ONLY.match(element.get_text()) and element.get_text().count("\n") >= 4:
                numeric_boxes += 1
            current: list = []
            for line in (ln for ln in element if isinstance(ln, LTTextLine) and ln.get_text().strip()):
                if id(line) in split:
                    if current:
                        runs.append(_run(current, page.height, number))
                    current = []
                    continue
                if current:
                    previous = current[-1]
                    gap = previous.y0 - line.y1
                    height = max(previous.height, 1.0)
                    if abs(line.x0 - previous.x0) > 25 or gap < -0.5 * height or gap > 1.2 * height:
                        runs.append(_run(current, page.height, number))
                        current = []
                current.append(line)
            if current:
                runs.append(_run(current, page.height, number))
        pages.append(tuple(runs))
    result = Layout(pdf.stem, width, tuple(pages), numeric_boxes >= max(2, len(pages) // 2))
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(result))
    return result


def _run(lines: list, page_height: float, number: int) -> Box:
    text = "\n".join(line.get_text().rstrip("\n").rstrip() for line in lines)
    return Box(text, lines[0].x0, page_height - lines[0].y1, number)


def as_a_model_writes_it(raw: str, rng: random.Random) -> str:
    """Lines joined, end-of-line hyphens rejoined, and the small liberties models take."""
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", raw)
    text = " ".join(text.split())
    if rng.random() < 0.3:
        text = text.replace('"', "\u201c").replace("'", "\u2019")
    if rng.random() < 0.4:
        text = text.rstrip(".")
    if rng.random() < 0.15:
        text = "..." + text
    if rng.random() < 0.2:
        text = "\u201c" + text + "\u201d"
    return text


_MATH = set("=<>≤≥∈∪∩∑∏∫√∞≈≠±×÷∗∼→←↔⊂⊆∀∃∂∇λμσπθαβγδεϵ^_{}|")


def _prose(box: Box) -> bool:
    """Running text a model would quote: not a table, a formula, rotated labels or a reference."""
    text = box.text
    words = text.split()
    if len(words) < 8 or "(cid:" in text or re.search(r"https?://|www\.|doi\.org", text):
        return False
    visible = text.replace(" ", "").replace("\n", "")
    letters = sum(ch.isalpha() for ch in visible)
    lower_words = sum(1 for w in words if w.isalpha() and w.islower())
    return (letters >= 0.7 * len(visible) and sum(map(len, words)) / len(words) >= 3.5
            and lower_words >= 0.5 * len(words) and sum(ch in _MATH for ch in visible) <= 0.02 * len(visible))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.replace("-\n", "-\u0000").replace("\n", " ").replace("-\u0000", "-\n"))


def _window(box: Box, rng: random.Random, low: int, high: int) -> str | None:
    words = box.text.split(" ")
    tokens = _WORD.findall(box.text)
    if len(tokens) < low:
        return None
    count = rng.randint(low, min(high, len(tokens)))
    start = rng.randrange(0, len(tokens) - count + 1)
    # Re-cut from the raw text so line breaks (and their hyphens) survive for the cleaner.
    spans = list(_WORD.finditer(box.text))
    del words
    return box.text[spans[start].start():spans[start + count - 1].end()]


def _tail(box: Box, count: int) -> str:
    spans = list(_WORD.finditer(box.text))
    return box.text[spans[max(0, len(spans) - count)].start():]


def _head(box: Box, count: int) -> str:
    spans = list(_WORD.finditer(box.text))
    return box.text[:spans[min(count, len(spans)) - 1].end()]


def _paragraph(box: Box) -> bool:
    """Lines of running text (not figure labels or table cells): several, and long."""
    lines = box.text.split("\n")
    return _prose(box) and len(lines) >= 2 and sum(map(len, lines)) / len(lines) >= 40


def _continues(first: Box, second: Box) -> bool:
    """``second`` carries on the sentence ``first`` leaves open."""
    return (_paragraph(first) and _paragraph(second) and not _SENTENCE_END.search(first.text.rstrip())
            and second.text[:1].islower() and not first.text.rstrip().endswith("-"))


_REFERENCES = re.compile(r"^\s*(?:\d+\.?\s+)?(?:references|bibliography)\s*$", re.IGNORECASE)
_APPENDIX = re.compile(r"^\s*(?:appendix|appendices|supplementary|[A-H]\.?\s+[A-Z][a-z]+)", re.IGNORECASE)


def _outside_bibliography(paper: Layout) -> list[Box]:
    """Every box but those of the reference list and the running headers and footers (text that
    recurs, numbers aside, on several pages): neither is evidence a model would quote for a claim."""
    recurring: dict[str, set[int]] = {}
    for page in paper.pages:
        for box in page:
            recurring.setdefault(re.sub(r"\d+", "#", box.text.strip()), set()).add(box.page)
    furniture = {text for text, pages in recurring.items() if len(pages) >= 3}
    kept, inside = [], False
    for page in paper.pages:
        for box in page:
            first = box.text.split("\n", 1)[0]
            if _REFERENCES.match(first):
                inside = True
            elif inside and _APPENDIX.match(first) and len(first) < 80:
                inside = False
            if not inside and re.sub(r"\d+", "#", box.text.strip()) not in furniture:
                kept.append(box)
    return kept


def genuine(paper: Layout, rng: random.Random, per_kind: int) -> dict[str, list[str]]:
    allowed = {id(b) for b in _outside_bibliography(paper)}
    prose = [b for page in paper.pages for b in page if _prose(b) and id(b) in allowed]
    found: dict[str, list[str]] = {}
    if not prose:
        return found

    def add(kind: str, raw: str | None) -> None:
        if raw:
            found.setdefault(kind, []).append(as_a_model_writes_it(raw, rng))

    general = "line-numbered paper" if paper.line_numbered else None
    for _ in range(per_kind):
        add(general or "plain", _window(rng.choice(prose), rng, 12, 40))
        add("short", _window(rng.choice(prose), rng, 6, 9))
        long_boxes = [b for b in prose if len(b.text.split()) >= 60]
        if long_boxes:
            add("long", _window(rng.choice(long_boxes), rng, 60, 120))
        box = rng.choice([b for b in prose if len(b.text.split()) >= 30] or prose)
        tokens = list(_WORD.finditer(box.text))
        if len(tokens) >= 30:
            start = rng.randrange(0, len(tokens) - 29)
            first = box.text[tokens[start].start():tokens[start + 9].end()]
            second = box.text[tokens[start + 17].start():tokens[start + 29].end()]
            found.setdefault("elided", []).append(
                as_a_model_writes_it(first, rng).rstrip(".") + rng.choice([" ... ", " \u2026 ", " [...] "])
                + as_a_model_writes_it(second, rng).lstrip(".\u201c"))
    crossings: dict[str, list[str]] = {}
    for number, page in enumerate(paper.pages):
        body = [b for b in page if _prose(b)]
        for first, second in zip(body, body[1:]):
            if _continues(first, second) and second.x0 > first.x0 + 0.25 * paper.width:
                crossings.setdefault("column crossing", []).append(_tail(first, 8) + "\n" + _head(second, 8))
        if number + 1 < len(paper.pages) and body:
            following = [b for b in paper.pages[number + 1] if _prose(b)]
            if following and _continues(body[-1], following[0]):
                crossings.setdefault("page crossing", []).append(_tail(body[-1], 9) + "\n" + _head(following[0], 9))
    for kind, raws in crossings.items():
        for raw in raws[:per_kind]:
            add(kind, raw)
    return found


# --------------------------------------------------------------------------- fabrications

_NUMBER = re.compile(r"(?<![\w.])(\d+)\.(\d+)")
_SIGNED = re.compile(r"(?<![\w.\d])[-\u2212\u2013](?=\d)")
_INEQUALITY = {"<": ">", ">": "<", "\u2264": "\u2265", "\u2265": "\u2264"}
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
_SWAPS = {"increase": "decrease", "higher": "lower", "more": "less", "larger": "smaller", "improves": "hurts",
          "better": "worse", "model": "dataset", "training": "testing", "first": "second", "positive": "negative"}
_PARAPHRASE = {"shows": "demonstrates", "use": "employ", "we": "the authors", "results": "findings",
               "large": "big", "method": "approach", "however": "but", "models": "systems", "paper": "work",
               "show": "indicate", "using": "with", "can": "may", "each": "every", "also": "additionally"}


def symbol_edit(quote: str, rng: random.Random) -> tuple[str, str] | None:
    """(kind, edited) where only a symbol a number hangs on changed; None when the quote has none."""
    options = []
    for match in _NUMBER.finditer(quote):
        whole, fraction = match.group(1), match.group(2)
        if len(fraction) >= 2 or len(whole) >= 2:
            digits = whole + fraction
            point = len(whole) + (1 if len(fraction) >= 2 else -1)
            moved = digits[:point] + "." + digits[point:]
            if moved != match.group() and not moved.startswith("."):
                options.append(("decimal point moved", quote[:match.start()] + moved + quote[match.end():]))
    for match in _SIGNED.finditer(quote):
        options.append(("sign dropped", quote[:match.start()] + quote[match.end():]))
    for position, char in enumerate(quote):
        if char in _INEQUALITY:
            options.append(("inequality flipped", quote[:position] + _INEQUALITY[char] + quote[position + 1:]))
    percents = list(_PERCENT.finditer(quote))
    numbers = [m for m in re.finditer(r"(?<![\w.%])\d+(?:\.\d+)?(?![\d.%\w])", quote)]
    if percents and numbers:
        source, target = percents[0], rng.choice(numbers)
        if target.start() != source.start():
            edited = list(quote)
            edited.insert(target.end(), "%")
            stripped = "".join(edited)
            shift = 1 if target.end() <= source.start() else 0
            cut = source.end() + shift - 1
            stripped = stripped[:cut] + stripped[cut + 1:]
            options.append(("percent moved", stripped))
    return rng.choice(options) if options else None


def fabricate(quote: str, other: str, rng: random.Random, kind: str) -> str | None:
    words = quote.split(" ")
    if len(words) < 8:
        return None
    if kind == "changed number":
        if not change_a_digit(words, rng):
            return None
    elif kind == "negation":
        words.insert(rng.randrange(2, len(words) - 1), "not")
    elif kind == "changed word":
        swappable = [i for i, w in enumerate(words) if w.lower().strip(",.;:") in _SWAPS]
        if swappable:
            i = rng.choice(swappable)
            bare = words[i].lower().strip(",.;:")
            words[i] = words[i].lower().replace(bare, _SWAPS[bare])
        else:
            candidates = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 4]
            if not candidates:
                return None
            words[rng.choice(candidates)] = rng.choice(["dataset", "baseline", "significantly", "sample"])
    elif kind == "spliced":
        if other in quote or quote in other:
            return None
        half = words[: len(words) // 2]
        other_words = other.split(" ")
        return " ".join(half + other_words[len(other_words) // 2:])
    elif kind == "shuffled":
        rng.shuffle(words)
    elif kind == "paraphrase":
        changed = 0
        for i, w in enumerate(words):
            if w.lower() in _PARAPHRASE and changed < 3:
                words[i] = _PARAPHRASE[w.lower()]
                changed += 1
        while changed < 3 and len(words) > 10:
            del words[rng.randrange(1, len(words) - 1)]
            changed += 1
        first, second = rng.sample(range(1, len(words) - 1), 2)
        words[first], words[second] = words[second], words[first]
    edited = " ".join(words)
    return edited if edited != quote else None


FABRICATIONS = ("changed number", "negation", "changed word", "spliced", "shuffled", "paraphrase")
