"""Why a citation is not grounded: altered, stitched, a paraphrase, or not found.

Worked out only when someone reads a verdict (a failure message, a report, a repair request):
where the quote departs from the paper, or the passage of the paper it is nearest to.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from .alignment import ALIGN_CHUNK, DIGIT_GAP_LIMIT, ELISION_WINDOW, MIN_ANCHOR, align, longest_end, similarity
from .index import PaperIndex
from .quotes import plain_words, strip_wrapping
from .textkey import key_offsets, text_key
from .verdicts import ALTERED, NOT_FOUND, PARAPHRASE, STITCHED, Departure, Diagnosis, NearestPassage

if TYPE_CHECKING:  # pragma: no cover
    from rapidfuzz.distance import Opcode


def diagnose(index: PaperIndex, grounded: Callable[[str], bool], citation: str, parts: tuple[str, ...],
             number_taken_in: Callable[[str], tuple[int, int, int] | None] | None = None) -> Diagnosis:
    """Why ``citation`` (its ``parts`` between elision marks, when it has any) is not grounded in
    the paper; ``grounded`` tells whether a part alone is. ``number_taken_in`` tells, of a quote's key, where
    it takes a line or page number blanked from the paper into its numbers, as the matcher decides it (the
    quote key's position of that number, the number's raw range), or None."""
    if len(parts) > 1:
        for part in parts:
            if not grounded(part):
                inner = diagnose(index, grounded, part, (part,), number_taken_in)
                inner.summary = f"one elided part is not verbatim: {inner.summary}"
                return inner
        return Diagnosis(
            STITCHED,
            f"stitched: each of its {len(parts)} elided parts is in the paper, but not in this "
            f"order within {ELISION_WINDOW} characters of each other",
        )
    quote = parts[0] if parts else strip_wrapping(citation)
    quote_key = text_key(quote)
    at_a_number = _at_a_number(index, quote, quote_key, number_taken_in)
    if at_a_number is not None:
        return at_a_number
    key = index.key
    prefix, prefix_at = longest_end(key, quote_key)
    suffix, suffix_at = longest_end(key, quote_key, from_end=True)
    if prefix >= MIN_ANCHOR and suffix >= MIN_ANCHOR and prefix + suffix >= len(quote_key) - 2:
        joined_at = suffix_at - (len(quote_key) - suffix - prefix)
        if abs(joined_at - (prefix_at + prefix)) > DIGIT_GAP_LIMIT:
            first = index.page_of(index.raw_offset(prefix_at))
            second = index.page_of(index.raw_offset(suffix_at))
            pages = ""
            if first and second:
                pages = f" (page {first})" if first == second else f" (pages {first} and {second})"
            return Diagnosis(
                STITCHED,
                "stitched: two real passages from different places joined without an elision mark"
                + pages,
                departure=_departure(index, quote, quote_key, prefix, prefix_at + prefix),
            )
    aligned = align(key, quote_key)
    if aligned is not None:
        start, end = aligned
        segment = key[start:end]
        if similarity(quote_key, segment) >= 0.75:
            from rapidfuzz.distance import Levenshtein

            # A little of the paper on either side of the aligned stretch, so a quote's first or last
            # letters are not read as dropped.
            start, end = max(0, start - ALIGN_CHUNK), min(len(key), end + ALIGN_CHUNK)
            operations = list(Levenshtein.opcodes(quote_key, key[start:end]))
            agreeing = _agreeing(operations)
            if agreeing is not None:
                # Re-align from where the quote starts if its opening has the paper's length: the
                # margin added above must not pair the quote's first letter with a stray one.
                start = max(0, start + agreeing.dest_start - agreeing.src_start)
                operations = list(Levenshtein.opcodes(quote_key, key[start:end]))
                agreeing = _agreeing(operations)
            differences = [op for op in operations if op.tag != "equal" and op.src_start < len(quote_key)]
            if differences:
                if agreeing is None or agreeing.src_start > 0:  # the first words differ
                    departure = _opening_departure(index, quote, agreeing, start)
                else:
                    departure = _departure(index, quote, quote_key, int(differences[0].src_start),
                                           start + int(differences[0].dest_start))
                if not _reads_alike(departure):  # (a departure no reader could see is claimed nowhere)
                    return Diagnosis(ALTERED, "altered: a real passage with words or numbers changed",
                                     departure=departure)
    nearest = _nearest_passage(index, quote, aligned)
    if nearest is not None and nearest.similarity >= 65:
        return Diagnosis(PARAPHRASE, "not verbatim: a paraphrase of a passage of the paper", nearest=nearest)
    return Diagnosis(NOT_FOUND, "not found: no passage of the paper says this", nearest=nearest)


def _taken_in(index: PaperIndex, quote: str, quote_at: int, low: int, high: int) -> Diagnosis:
    """The account of a quote that is verbatim only with a line or page number the paper prints beside its
    text (``text[low:high]``, at the quote key's position ``quote_at``) read as part of one of its numbers:
    the quote from that number's word on, against the paper's text there without it."""
    offsets = key_offsets(quote)
    split = int(offsets[quote_at]) if quote_at < len(offsets) else len(quote)
    word_start = max(quote.rfind(" ", 0, split), quote.rfind("\n", 0, split)) + 1
    text = index.text
    word = quote[word_start:split]  # the quote's word up to the number ("0.9" of "0.9193"; none before " 379")
    if text[low - len(word) : low] == word:
        paper_start = low - len(word)
    else:
        paper_start = max(text.rfind(" ", 0, low), text.rfind("\n", 0, low)) + 1
    number = text[low:high].strip()
    ends = len(text_key(quote[split:])) <= len(text_key(number))  # nothing of the quote after the number
    return Diagnosis(
        ALTERED,
        f"altered: it reads the line or page number {number} printed beside the paper's text as part of its numbers",
        departure=Departure(quote_before=quote[:word_start], quote_after=quote[word_start:],
                            paper_after=_paper_from(index, paper_start),
                            page=index.page_of(paper_start)),
        in_text=(f"it ends with {number}, the line or page number printed beside the paper's text there" if ends
                 else f"it reads {number}, the line or page number printed beside the paper's text, into one of its "
                 "numbers"),
    )


def _at_a_number(index: PaperIndex, quote: str, quote_key: str,
                 number_taken_in: Callable[[str], tuple[int, int, int] | None] | None) -> Diagnosis | None:
    """The account of a quote that is the paper's text but for one of its numbers: one that takes in a margin
    line number, or one cut short inside the paper's number."""
    taken = number_taken_in(quote_key) if number_taken_in is not None else None
    if taken is not None:
        return _taken_in(index, quote, *taken)
    return _cut_inside_a_number(index, quote)


def _cut_inside_a_number(index: PaperIndex, quote: str) -> Diagnosis | None:
    """The account of a quote that is the paper's text word for word but ends inside one of its numbers (``was
    3.5`` where the paper says ``3.58``): a number the paper does not give, though the text holds the quote."""
    words = quote.split()
    if not words or not words[-1][-1:].isdigit():
        return None
    # Its digits go on in the paper, or a unit or a label glued to them does ("95" of "95%CI").
    found = re.search(r"\s+".join(map(re.escape, words)) + r"(?=[.,]?\d|[%\w])", index.text, re.IGNORECASE)
    if found is None:
        return None
    rest = re.match(r"(?:[.,]?[\d%\w])+", index.text[found.end():])
    number = words[-1] + (rest.group() if rest else "")
    last = found.end() - len(words[-1])
    return Diagnosis(
        ALTERED,
        f"altered: it ends inside the paper's number {number!r}, at {words[-1]!r}",
        departure=Departure(quote_before=quote[: quote.rfind(words[-1])], quote_after=words[-1],
                            paper_after=_paper_from(index, last), page=index.page_of(last)),
        in_text=f"it ends inside a number: the paper reads {number!r} where the passage ends {words[-1]!r}",
    )


def _reads_alike(departure: Departure) -> bool:
    """Whether the quote and the paper read the same from a departure on (as far as the shorter goes,
    whitespace aside): what differs between them is then nothing a reader sees."""
    quote, paper = " ".join(departure.quote_after.split()), " ".join(departure.paper_after.split())
    shorter = min(len(quote), len(paper))
    return quote[:shorter] == paper[:shorter]


def _agreeing(operations: list[Opcode]) -> Opcode | None:
    """The first stretch where quote and paper agree for real (letters agree by chance anywhere:
    agreement is a run of 8 or more), as an opcode, or None."""
    return next((op for op in operations if op.tag == "equal" and op.src_end - op.src_start >= 8), None)


def _opening_departure(index: PaperIndex, quote: str, agreeing: Opcode | None, start: int) -> Departure:
    """Where a quote whose first words differ sits in the paper: as many of the paper's words
    before the first agreeing stretch (``agreeing``, an opcode) as the quote has there
    ("Notably, different other" against "misbehave. Like all other": "Like all other")."""
    text = index.text
    paper_start = index.raw_offset(start)
    paper_start = max(text.rfind(" ", 0, paper_start), text.rfind("\n", 0, paper_start)) + 1
    if agreeing is not None:
        quote_words = len(quote[: int(key_offsets(quote)[agreeing.src_start])].split())
        paper_end = index.raw_offset(start + agreeing.dest_start)
        word_starts = [m.start() + paper_start for m in re.finditer(r"\S+", text[paper_start:paper_end])]
        if word_starts:
            paper_start = word_starts[max(0, len(word_starts) - max(quote_words, 1))]
    return Departure(quote_before="", quote_after=quote, paper_after=_paper_from(index, paper_start),
                     page=index.page_of(paper_start))


def _departure(index: PaperIndex, quote: str, quote_key: str, quote_at: int, paper_at: int) -> Departure:
    quote_offsets = key_offsets(quote)
    split = int(quote_offsets[quote_at]) if quote_at < len(quote_offsets) else len(quote)
    # Show the departure at the start of the word it falls in: "in |19", not "in 1|9".
    word_start = max(quote.rfind(" ", 0, split), quote.rfind("\n", 0, split)) + 1
    back = quote_at - int(quote_offsets.searchsorted(word_start))  # key characters of that word so far
    split, paper_at = word_start, max(0, paper_at - back)
    paper_raw = index.raw_offset(paper_at)
    text = index.text
    if paper_raw > 0 and text[paper_raw - 1].isalnum():  # the paper's side starts at a word too
        paper_raw = max(text.rfind(" ", 0, paper_raw), text.rfind("\n", 0, paper_raw)) + 1
    return Departure(
        quote_before=quote[:split],
        quote_after=quote[split:],
        paper_after=_paper_from(index, paper_raw),
        page=index.page_of(paper_raw),
    )


def _paper_from(index: PaperIndex, start: int) -> str:
    """The paper's text from raw offset ``start`` as the quote was compared with it: page furniture blanked
    (a margin line number glued to a word is no departure of the quote that copies it)."""
    return " ".join(index.masked_text[start : start + 200].split())[:120]


def _nearest_passage(index: PaperIndex, quote: str, aligned: tuple[int, int] | None = None) -> NearestPassage | None:
    """The passage of the paper the quote is nearest to: the stretch it aligns to, when the
    words there are about as close to the quote's as any two sentences' of the paper, else the
    two-sentence window that shares most words with it."""
    from rapidfuzz import fuzz, process

    windows = index.sentence_windows
    if not windows:
        return None
    texts = [index.masked_text[a:b] for a, b in windows]
    best = process.extractOne(quote, texts, scorer=fuzz.token_set_ratio, processor=plain_words)
    if best is None:
        return None
    _, score, position = best
    start = windows[position][0]
    nearest = NearestPassage(" ".join(texts[position].split()), index.page_of(start), float(score))
    if aligned is not None and aligned[1] > aligned[0]:
        text = index.masked_text
        low, high = index.raw_offset(aligned[0]), index.raw_offset(aligned[1] - 1) + 1
        # Whole words: back to the start of the first, on to the end of the last.
        low = max(text.rfind(" ", 0, low), text.rfind("\n", 0, low)) + 1
        ends = [at for at in (text.find(" ", high), text.find("\n", high)) if at >= 0]
        passage = text[low : min(ends) if ends else len(text)]
        passage_score = fuzz.token_set_ratio(plain_words(quote), plain_words(passage))
        if passage_score >= score - 5:
            nearest = NearestPassage(" ".join(passage.split()), index.page_of(low), float(passage_score))
    return nearest

