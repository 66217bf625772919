"""Quotes cut from real PDFs by a second, independent extractor (pdfminer.six), the way models quote.

The plugin reads papers with pypdf; grading pypdf's own text against quotes made from that
same text would hide every extraction defect. pdfminer lays pages out on its own (text
boxes in reading order, columns apart), so its quotes cross what pypdf garbles: page
breaks with a footer, header or figure text between the halves, the other column read in
between, margin line numbers glued into words.

Kinds of genuine quote: ``plain``, ``short``, ``long`` (within a text box), ``page crossing``
(a sentence continued on the next page), ``page crossing past a caption`` (continued on the next
page with a figure's or table's caption between the halves), ``column crossing`` (continued in the next column),
``line-numbered paper`` (any quote of a paper with margin line numbers), ``elided``.
Fabrications edit a genuine quote: symbol-only edits (decimal point moved, sign dropped,
inequality flipped, percent sign moved onto another number), a changed digit, an inserted
negation, a changed word, two distant passages spliced, shuffled words, and a paraphrase.

Used by tests/test_matcher_independent.py and benchmarks/matcher_accuracy.py; needs ../shared.
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
    x1: float = 0.0
    bottom: float = 0.0


@dataclass(frozen=True)
class Layout:
    name: str
    width: float
    pages: tuple[tuple[Box, ...], ...]
    line_numbered: bool  # margin line numbers: boxes of numbers only, down the page


LAYOUT_VERSION = "9"


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
        cut, rows = _cut_and_row_lines(every_line, boxes)
        runs: list[Box] = []
        for element in boxes:
            if _DIGITS_ONLY.match(element.get_text()) and element.get_text().count("\n") >= 4:
                numeric_boxes += 1
            current: list = []
            for line in (ln for ln in element if isinstance(ln, LTTextLine) and ln.get_text().strip()):
                if id(line) in cut:
                    if current:
                        runs.append(_run(current, page.height, number))
                    current = []
                    continue
                if current and id(line) in rows:
                    runs.append(_run(current, page.height, number))
                    current = []
                if current:
                    previous = current[-1]
                    gap = previous.y0 - line.y1
                    height = max(previous.height, 1.0)
                    if (abs(line.x0 - previous.x0) > 25 or gap < -0.5 * height or gap > 1.2 * height
                            or _broken_on_purpose(previous, line, element)):
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


def _broken_on_purpose(line, following, box) -> bool:
    """The line ends where the next line's first word would still have fit, and ends no sentence:
    a heading, a label, a list item or a table's header ("User input" over a cell's text), after
    which the text does not read on. Running text breaks a line only where the next word does not
    fit (or at a paragraph's end, after a full stop)."""
    text = line.get_text().rstrip()
    if not text or _SENTENCE_END.search(text) or text.endswith("-"):
        return False
    next_word = following.get_text().split(maxsplit=1)[0] if following.get_text().strip() else ""
    character = line.width / max(1, len(text))
    return box.x1 - line.x1 > (len(next_word) + 1) * character


def _cut_and_row_lines(every_line: list, boxes: list) -> tuple[set[int], set[int]]:
    """Lines pdfminer cut out of one printed line, and lines that start a table row.

    *Cut*: pdfminer sometimes cuts a printed line in two at a wide gap (a justified line's last
    words, "... does not." + "It is thus"; a run-in heading or label and the text after it; a
    prompt's "mistake? | Answer with a single") and files the pieces as two lines of one box or
    of two boxes. A run through such a line would join words the page never joins, so those
    lines end runs. Two lines side by side belong to different columns (of the page or of a
    table) only across a gutter: the left-hand piece's box never runs under the right-hand
    piece (text wrapping under it is one paragraph), and the gutter recurs: at least three
    pairs of lines on the page, side by side, whose right-hand lines start at the same x.

    *Row*: a line beside a table's label column (a box less than half as wide as its own,
    "entertaining | Which of the ..."), or beside any column while the line above it stood
    alone (a header row under a caption), starts a new row: a run does not read on from one
    row of a table into the next.
    """
    pairs = [(a, box_a, b, box_b) for a, box_a in every_line for b, box_b in every_line
             if a is not b and abs(a.y0 - b.y0) < 2 and b.x0 >= a.x1 - 1]
    cut: set[int] = set()
    beside_left: set[int] = set()
    rows: set[int] = set()
    for a, box_a, b, box_b in pairs:
        recurring = sum(1 for _, _, other, _ in pairs if abs(other.x0 - b.x0) < 2) >= 3
        if not recurring or box_a == box_b or boxes[box_a].x1 > b.x0 + 2:
            cut.update((id(a), id(b)))
            continue
        beside_left.add(id(b))
        if boxes[box_a].width * 2 < boxes[box_b].width:
            rows.add(id(b))
    for box in boxes:
        previous = None
        for line in box:
            if id(line) in beside_left and previous is not None and id(previous) not in beside_left:
                rows.add(id(line))
            previous = line
    return cut, rows


def _run(lines: list, page_height: float, number: int) -> Box:
    text = "\n".join(line.get_text().rstrip("\n").rstrip() for line in lines)
    return Box(text, lines[0].x0, page_height - lines[0].y1, number,
               max(line.x1 for line in lines), page_height - lines[-1].y0)


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
            and lower_words >= 0.5 * len(words) and sum(map(_is_math, visible)) <= 0.02 * len(visible))


def _is_math(char: str) -> bool:
    # Mathematical alphanumerics (U+1D400-U+1D7FF: the italic P of "P(x)") are letters to str.isalpha.
    return char in _MATH or "\U0001d400" <= char <= "\U0001d7ff"


def _quotable(raw: str) -> bool:
    """The cut itself is running text: mostly words, not a formula, a run of numbers or a list of
    references, with at least the 10 letters and digits a citation needs. A window cut from a
    paragraph can still fall on an inline formula ("0, 1, . . . ,", "(the congruence (𝑝−1") or a
    run of references ("Christiano et al., 2017; Bai et al., 2022a;"); no model quotes that as
    evidence."""
    tokens = _AUTHOR_YEAR.sub(" ", raw).split()
    wordlike = sum(1 for token in tokens if sum(ch.isalpha() for ch in token) >= 2)
    return (wordlike * 2 >= len(raw.split()) and sum(map(str.isalnum, raw)) >= 10
            and not any("\U0001d400" <= ch <= "\U0001d7ff" for ch in raw))


# An author-year reference ("Bai et al., 2022a;"): a pointer, not text that says anything.
_AUTHOR_YEAR = re.compile(r"\(?[A-Z][\w'\-]+(?:\s+(?:et\s+al\.|and\s+[A-Z][\w'\-]+))?,?\s+\(?(?:19|20)\d\d[a-z]?\)?[;,)]?")


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


COLUMN_CUTS = 8


def _column_crossing(body: list[Box], width: float) -> tuple[Box, Box] | None:
    """On a two-column page, the left column's last text and the right column's first, when a
    sentence runs from one into the other (found by position on the page, not by either
    extractor's reading order): the left column's lowest box, left open mid-sentence, and the
    right column's highest box, starting in lower case, higher up the page."""
    # Columns of a two-column page: each at least a third of the page wide, each with real text
    # (not a figure's side text, nor a table's two columns of the same rows).
    left = [b for b in body if b.x0 < 0.45 * width and b.x1 <= 0.55 * width and b.x1 - b.x0 >= width / 3]
    right = [b for b in body if b.x0 >= 0.45 * width and b.x1 - b.x0 >= width / 3]
    if sum(b.text.count("\n") + 1 for b in left) < 10 or sum(b.text.count("\n") + 1 for b in right) < 10:
        return None
    first = max(left, key=lambda b: b.bottom)
    second = min(right, key=lambda b: b.top)
    if second.top >= first.bottom or _SENTENCE_END.search(first.text.rstrip()) or not second.text[:1].islower():
        return None
    return first, second


_REFERENCES = re.compile(r"^\s*(?:\d+\.?\s+)?(?:references|bibliography)\s*$", re.IGNORECASE)
_ENTRY = re.compile(r"^\[\d{1,3}\]\s+[A-Z]")
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
            if _ENTRY.match(first):
                continue  # a numbered reference-list entry, wherever the list has no heading
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
        if raw and _quotable(raw):
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
            if not (_quotable(first) and _quotable(second)):
                continue
            found.setdefault("elided", []).append(
                as_a_model_writes_it(first, rng).rstrip(".") + rng.choice([" ... ", " \u2026 ", " [...] "])
                + as_a_model_writes_it(second, rng).lstrip(".\u201c"))
    crossings: dict[str, list[str]] = {}
    for number, page in enumerate(paper.pages):
        body = [b for b in page if _prose(b) and id(b) in allowed]
        crossing = _column_crossing(body, paper.width)
        if crossing is not None:
            # Several cuts of each crossing: how much of each column a quote takes is what varies.
            for _ in range(COLUMN_CUTS):
                first, second = crossing
                crossings.setdefault("column crossing", []).append(
                    _tail(first, rng.randint(3, 12)) + "\n" + _head(second, rng.randint(3, 12)))
        if number + 1 < len(paper.pages) and body:
            following = [b for b in paper.pages[number + 1] if _prose(b) and id(b) in allowed]
            if following and _continues(body[-1], following[0]):
                crossings.setdefault("page crossing", []).append(_tail(body[-1], 9) + "\n" + _head(following[0], 9))
            captioned = _past_a_caption(page, paper.pages[number + 1], allowed)
            if captioned is not None:
                crossings.setdefault("page crossing past a caption", []).append(
                    _tail(captioned[0], 9) + "\n" + _head(captioned[1], 9))
    # Its own generator: the draws of every other kind (and of the fabrications made after) stay as they were.
    own = random.Random(f"{paper.name}-captions")
    for kind, raws in crossings.items():
        for raw in dict.fromkeys(raws[:per_kind * COLUMN_CUTS if kind == "column crossing" else per_kind]):
            if kind == "page crossing past a caption":
                if _quotable(raw):
                    found.setdefault(kind, []).append(as_a_model_writes_it(raw, own))
            else:
                add(kind, raw)
    return found


_CAPTION = re.compile(r"^\s*(?:Figure|Fig\.|Table|FIGURE|TABLE)\s*\d+\s*[:.|]")


def _past_a_caption(page: tuple[Box, ...], following: tuple[Box, ...], allowed: set[int]) -> tuple[Box, Box] | None:
    """A sentence left open by the last paragraph of a page and carried on by the first of the next,
    with a figure's or table's caption between them in reading order (after the first half on its
    page, or before the second half on the next): the last paragraph and the first, or None."""
    def paragraphs(boxes: tuple[Box, ...]) -> list[tuple[int, Box]]:
        return [(i, b) for i, b in enumerate(boxes) if _prose(b) and id(b) in allowed and not _CAPTION.match(b.text)]

    before, after = paragraphs(page), paragraphs(following)
    if not before or not after:
        return None
    (last_at, last), (first_at, first) = before[-1], after[0]
    between = [b for b in page[last_at + 1:]] + [b for b in following[:first_at]]
    if not any(_CAPTION.match(b.text) for b in between) or not _continues(last, first):
        return None
    # The halves end and begin their columns' running text: text of the same column right under the
    # first half (or right over the second) means the sentence goes on there, not on the next page
    # (a chat transcript's "I wanted to get a" was paired with the next page's first paragraph).
    if any(_goes_on_under(last, b) for b in page[last_at + 1:] if id(b) in allowed and not _CAPTION.match(b.text)):
        return None
    if any(_goes_on_under(b, first) for b in following[:first_at] if id(b) in allowed and not _CAPTION.match(b.text)):
        return None
    return last, first


def _goes_on_under(upper: Box, lower: Box) -> bool:
    """``lower`` starts at ``upper``'s left edge within a few of its lines below it: the same column's text."""
    line = (upper.bottom - upper.top) / (upper.text.count("\n") + 1)
    return abs(lower.x0 - upper.x0) <= 2 and 0 <= lower.top - upper.bottom <= 4 * line


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
