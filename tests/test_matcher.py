"""The citation matcher: what it must accept, what it must reject, and why."""

from __future__ import annotations

import random
import re
import zlib

import pytest
from helpers import SAMPLE, needs_shared, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from quotes import FABRICATIONS, NOISES, SYMBOL_FABRICATIONS, as_a_model_quotes_it, elided, fabricated, noisy, window

from pytest_researchqa import match_citation
from pytest_researchqa.families.citation.matcher import MatchIndex, match_index
from pytest_researchqa.families.citation.matcher.textkey import key_offsets, text_key
from pytest_researchqa.papers import read_paper

PAGE_1 = (
    "Preprint. Under review.\n"
    "2 Methods\n"
    "We recruited 240 adults aged 18 to 65 from three outpatient clinics between March and Septem-\n"
    "ber 2021. Participants with a prior diagnosis of hypertension were excluded. The primary out-\n"
    "come was the change in systolic blood pressure after twelve weeks of the ﬁtness programme, mea-\n"
    "sured with a validated oscillometric device.\n"
    "4\n"
)
PAGE_2 = (
    "Preprint. Under review.\n"
    "The intervention group attended supervised sessions three times a week.\n"
    "3 Results\n"
    "Systolic blood pressure fell by 6.2 mmHg in the intervention group and by 1.1 mmHg in the control\n"
    "group (difference 5.1 mmHg, 95% CI 2.9 to 7.3). The effect did not differ by sex.\n"
    "5\n"
)
PAGE_3 = (
    "Preprint. Under review.\n"
    "4 Discussion\n"
    "Adherence was high, and no serious adverse events were reported during the study period.\n"
    "6\n"
)


@pytest.fixture(scope="module")
def paper() -> MatchIndex:
    return MatchIndex(PAGE_1 + PAGE_2 + PAGE_3, [0, len(PAGE_1), len(PAGE_1) + len(PAGE_2)])


ACCEPTED = {
    "exact": "We recruited 240 adults aged 18 to 65 from three outpatient clinics",
    "case, whitespace and line breaks": "WE RECRUITED 240 adults aged 18 to 65\nfrom   three outpatient clinics",
    "end-of-line hyphenation": "between March and September 2021. Participants with a prior diagnosis",
    "ligature in the paper, plain in the quote": "after twelve weeks of the fitness programme, measured with a validated",
    "ligature in the quote": "after twelve weeks of the ﬁtness programme",
    "smart quotes, dashes and non-breaking spaces": "\u201cThe primary out\u2011come was the change in systolic\u00a0blood pressure\u201d",
    "stray space inside a word": "Participants with a prior diag nosis of hypertension were excluded.",
    "wrapping quotes and edge punctuation": "'(the change in systolic blood pressure after twelve weeks)...'",
    "across a page break with footer and header between": (
        "measured with a validated oscillometric device. The intervention group attended supervised sessions"
    ),
    "across a page break mid-sentence": "the difference was reported as follows: " [:0]
    + "The effect did not differ by sex. 4 Discussion Adherence was high",
    "ellipsis": "We recruited 240 adults ... from three outpatient clinics",
    "unicode ellipsis": "We recruited 240 adults\u2026 between March and September 2021",
    "bracketed elision": "Systolic blood pressure fell by 6.2 mmHg [...] (difference 5.1 mmHg, 95% CI 2.9 to 7.3)",
    "parenthesised elision": "Participants with a prior diagnosis (...) were excluded",
}

REJECTED = {
    "changed number at the start": ("We recruited 250 adults aged 18 to 65 from three outpatient clinics", "altered"),
    "changed number at the end": ("in the intervention group and by 1.1 mmHg in the control group (difference 5.7 mmHg", "altered"),
    "negation": ("Participants with a prior diagnosis of hypertension were not excluded.", "altered"),
    "changed name": ("from three outpatient clinics between March and October 2021.", "altered"),
    "changed content word": ("(difference 5.1 mmHg, 95% CI 2.9 to 7.3). The effect did not differ by age.", "altered"),
    "spliced without elision": (
        "We recruited 240 adults aged 18 to 65 from three outpatient clinics. Adherence was high, and no serious adverse events were reported",
        "stitched",
    ),
    "on-topic but not in the paper": ("Blood pressure medication was adjusted by the treating physician at week six.", "not_found"),
    "paraphrase": ("Between March and September 2021, we enrolled 240 adults aged 18-65 from three clinics.", "paraphrase"),
    "too short to verify": ("240 adults", "too_short"),
    "elided parts out of order": ("from three outpatient clinics ... We recruited 240 adults aged 18", "stitched"),
}


@pytest.mark.parametrize("quote", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_faithful_quotes_are_grounded(paper, quote):
    found = paper.match(quote)
    assert found.grounded, found.explain()
    assert found.verdict in ("verbatim", "verbatim_elided")


def _answer(found):
    return (found.citation, found.grounded, found.verdict, found.key_spans, found.commentary, found._parts,
            found.spans, found.explain())


@pytest.mark.parametrize("built", [False, True], ids=["scanned", "indexed"])
@pytest.mark.parametrize("quote", [*ACCEPTED.values(), *(quote for quote, _ in REJECTED.values()),
                                   *("..." + quote for quote, _ in REJECTED.values()),
                                   "\u201c...Systolic blood pressure fell by 6.2 mmHg in the intervention group "
                                   "\u2014 this shows the programme worked.\u201d",
                                   "5.1 mmHg, 95% CI", "[Smith et al., 2020]", "doi.org/10.1000/182 reported"])
def test_the_exact_paths_answer_is_the_full_paths(paper, quote, built):
    # The exact path builds its answer without CitationMatch's constructor (and its key inline for
    # ASCII text without a digit), and answers most fabrications itself once the key's index is built
    # (_stuck_here): what it answers is what the full path answers, field by field.
    fresh = MatchIndex(paper.text, paper.page_starts)
    if built:
        fresh.grams.build()
    exact = fresh._exact_hit(quote)
    full = MatchIndex(paper.text, paper.page_starts)._match(quote)
    if exact is not None:
        assert _answer(exact) == _answer(full)
    assert _answer(fresh.match(quote)) == _answer(full)


@pytest.mark.parametrize(("quote", "verdict"), REJECTED.values(), ids=REJECTED.keys())
def test_fabrications_are_rejected_with_a_named_verdict(paper, quote, verdict):
    found = paper.match(quote)
    assert not found.grounded
    assert found.verdict == verdict, found.explain()


def test_an_appended_comment_is_grounded_and_reported_as_such(paper):
    found = paper.match(
        "Systolic blood pressure fell by 6.2 mmHg in the intervention group — this shows the programme worked."
    )
    assert found.grounded
    assert found.verdict == "verbatim_with_commentary"
    assert found.commentary.startswith("— this shows the programme worked")
    assert "the model's own comment" in found.explain()


def test_an_appended_sentence_that_alters_the_paper_is_not_commentary(paper):
    found = paper.match("The effect did not differ by sex. Adherence was low, and serious adverse events were reported")
    assert not found.grounded


def test_a_changed_number_reports_where_the_quote_departs(paper):
    found = paper.match("Systolic blood pressure fell by 6.2 mmHg in the intervention group and by 1.4 mmHg in the control")
    assert found.verdict == "altered"
    departure = found.departure
    assert departure.quote_before.endswith("and by ")
    assert departure.quote_after.startswith("1.4 mmHg"), "the departure is shown from the word's start"
    assert departure.paper_after.startswith("1.1 mmHg")
    assert departure.page == 2
    message = found.explain()
    assert "departs from the paper (page 2)" in message and "1 mmHg in the control" in message


def test_not_found_names_the_nearest_passage(paper):
    found = paper.match("Adherence was high and several adverse events led to withdrawal from the study.")
    assert not found.grounded
    assert found.nearest is not None and "Adherence was high" in found.nearest.text
    assert found.nearest.page == 3


def test_spans_are_offsets_into_the_paper_text_with_pages(paper):
    quote = "measured with a validated oscillometric device. The intervention group attended"
    found = paper.match(quote)
    assert found.pages == [1, 2]
    text = paper.text
    first, last = found.spans[0], found.spans[-1]
    assert text[first[0] : first[1]].startswith("mea-\nsured")  # the paper's own hyphenation
    assert text[last[0] : last[1]].endswith("attended")


def test_plain_text_papers_are_prepared_once():
    text = "A paper of plain text. " * 50 + "The unique sentence sits at the end."
    assert match_index(text) is match_index(text)
    assert match_citation("the unique sentence sits at the end", text).grounded
    assert match_citation("the unique sentence sits at the start", text).grounded is False


def test_a_paper_is_prepared_once_for_many_citations():
    paper = read_paper(SAMPLE / "papers" / "sample-edu.pdf", "sample-edu")
    index = match_index(paper)
    assert match_index(paper) is index
    first = match_citation("412 students in 18 course sections took part", paper)
    assert first.grounded and first.pages == [1]
    assert index.match("412 students in 18 course sections took part") is first


@given(st.text(), st.text())
def test_the_key_of_texts_apart_is_the_concatenation_of_their_keys(a, b):
    # A decimal point or a sign is read from its neighbours, so texts are kept a paragraph apart.
    assert text_key(a + "\n\n" + b) == text_key(a) + text_key(b)


def _key_by_definition(text: str) -> str:
    """The key as textkey's docstring defines it, written plainly (slow): the fast paths must agree."""
    import unicodedata

    marked = re.sub(r"(?<=\d)[.\u00b7](?=\d)", "\x01", text) if re.search(r"[0-9]", text) else text
    if re.search(r"[0-9]", text):
        marked = re.sub(r"\u2212(?=\s?\.?\d)|[-\u2010-\u2014\ufe63\uff0d](?<![^\W_].)(?<![)\]].)(?=\s?\.?\d)",
                        "\x02", marked)
    folded = marked.translate(str.maketrans({"\u2026": "...", "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl",
                                             "\ufb03": "ffi", "\ufb04": "ffl", "\u2264": "<=", "\u2265": ">=",
                                             "\u2266": "<=", "\u2267": ">=", "\u00b1": "+", "\u2260": "<>"}))
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", folded).casefold())
    key = "".join(ch for ch in folded if (ch.isalnum() or ch in "%<>=+\x01\x02") and ch != "_")
    return key.replace("\x01", ".").replace("\x02", "-")


_KEY_ALPHABET = ("ab1.-\u2212\u2013\u2014\u00b7 \n%<=\u2264\u00b1\ufb01\u00e9e\u0301\u201c\u2019\u00a0"
                 "\u03b4\u00bd\u00df)]_")


@given(st.text(alphabet=st.sampled_from(_KEY_ALPHABET)) | st.text())
def test_the_fast_key_agrees_with_the_keys_plain_definition(text):
    assert text_key(text) == _key_by_definition(text)


@given(st.lists(st.text(alphabet=st.sampled_from(_KEY_ALPHABET + "\u2026[]")), max_size=4))
def test_the_keys_of_elided_parts_in_one_pass_are_each_parts_key(parts):
    from pytest_researchqa.families.citation.matcher.textkey import part_keys

    text = " ... ".join(parts)
    assert part_keys(text) == [text_key(part) for part in text.replace("\u2026", "...").split("...")]


@given(st.text(alphabet=st.sampled_from("ab1.-\u2212 \n%<=\u2264\u00b1\ufb01\u00e9e\u0301")) | st.text())
def test_every_key_character_maps_back_to_its_source_character(text):
    key, offsets = text_key(text), key_offsets(text)
    assert len(offsets) == len(key)
    position = 0
    for offset in dict.fromkeys(offsets.tolist()):
        width = int((offsets == offset).sum())
        produced = key[position:position + width]
        position += width
        # A character gives its own key, or in context a decimal point or a sign.
        assert produced == text_key(text[offset]) or produced in (".", "-"), (text, offset, produced)


@given(st.text(alphabet=st.sampled_from(_KEY_ALPHABET)), st.text(alphabet=st.sampled_from(_KEY_ALPHABET)),
       st.booleans())
def test_the_reference_lists_key_span_is_the_length_of_the_key_before_and_within_it(before, within, appendix):
    """The span is read from the offset map; it must be what the keys' lengths say."""
    from pytest_researchqa.families.citation.matcher.index import (
        _APPENDIX_HEADING,
        _REFERENCES_HEADING,
        BIBLIOGRAPHY_LIMIT,
    )

    index = MatchIndex(before + "\nReferences\n" + within + ("\nAppendix\nProofs 1.5" if appendix else ""))
    masked = index.masked_text
    start = list(_REFERENCES_HEADING.finditer(masked))[-1].end()
    following = _APPENDIX_HEADING.search(masked, start)
    end = min(following.start() if following else len(masked), start + BIBLIOGRAPHY_LIMIT)
    length_before = len(text_key(masked[:start]))
    assert index._bibliography == (length_before, length_before + len(text_key(masked[start:end])))


@given(st.text(alphabet=st.sampled_from("ab1.-\u2212 \n%<=\u2264\u00b1\ufb01\u00e9e\u0301\u03b1\u00b7\u2013")) | st.text(),
       st.integers(1, 40))
def test_a_key_positions_text_offset_walked_from_the_offset_steps_is_the_offset_maps(text, repeat):
    """Without the whole map (a trimmed paper), raw offsets come from every OFFSET_STEP-th offset and a
    walk over the marked text; they must be the map's, at every position and past both ends."""
    text = text * repeat  # long enough for several steps and walking windows
    index = MatchIndex(text)
    index.trim()
    offsets = key_offsets(index.masked_text)
    assert "_masked_offsets" not in index.__dict__
    for position in range(-2, len(offsets) + 2):
        expected = int(offsets[min(max(position, 0), len(offsets) - 1)]) if len(offsets) else 0
        assert index.raw_offset(position) == expected, (text, position)


@pytest.mark.slow
@given(st.text(alphabet=st.sampled_from("ab1.-\u2212 \n%<=\u2264\u00b1\ufb01\u00e9e\u0301\u03b1\u00b7\u2013")) | st.text(),
       st.integers(1, 40))
def test_a_key_positions_text_offset_read_from_the_key_flags_is_the_offset_maps(text, repeat):
    """Before a trim, raw offsets come from every OFFSET_STEP-th offset and one match over the text's key
    flags (a byte a character; none where a ligature gives two key characters); they must be the map's."""
    text = text * repeat
    index = MatchIndex(text)
    offsets = key_offsets(index.masked_text)
    for position in range(-2, len(offsets) + 2):
        expected = int(offsets[min(max(position, 0), len(offsets) - 1)]) if len(offsets) else 0
        assert index.raw_offset(position) == expected, (text, position)
    # A reference list's span is read from the whole map, built with the paper ("Works Cited").
    assert ("_masked_offsets" in index.__dict__) == (index._bibliography is not None)
    widest = max((len(text_key(char)) for char in set(index.masked_text)), default=0)
    assert (index.__dict__["_text_flags"] is None) == (widest > 1 and len(offsets) > 0)


def test_a_trimmed_paper_answers_every_citation_as_a_fresh_one_and_keeps_only_its_keys(paper):
    trimmed = MatchIndex(paper.text, paper.page_starts)
    citations = [*ACCEPTED.values(), *(quote for quote, _ in REJECTED.values())]
    for citation in citations:
        trimmed.match(citation)  # builds what the full path builds
    trimmed.trim()
    assert not trimmed.grams.built and not {"_masked_offsets", "_flow", "_furniture_zones"} & set(trimmed.__dict__)
    fresh = MatchIndex(paper.text, paper.page_starts)
    for citation in citations:
        ours, theirs = trimmed.match(citation), fresh.match(citation)
        assert (ours.verdict, ours.grounded, ours.spans, ours.pages, ours.explain()) == (
            theirs.verdict, theirs.grounded, theirs.spans, theirs.pages, theirs.explain()), citation
    assert trimmed.nbytes() > len(trimmed.key)


# ------------------------------------------------------------------ bundled sample PDFs


def test_every_window_of_the_source_text_is_found_in_the_pdf_extraction():
    """Quotes taken from the clean source text must match the noisy PDF text.

    The PDFs add running headers, page numbers, margin line numbers and
    page breaks in mid-sentence: all of them between the words of a quote.
    """
    rng = random.Random(7)
    misses = []
    for source in sorted((SAMPLE / "sources").glob("*.md")):
        paper = read_paper(SAMPLE / "papers" / f"{source.stem}.pdf", source.stem)
        body = source.read_text().split("\n\n", 2)[2]  # past title and authors
        for _ in range(150):
            quote = noisy(as_a_model_quotes_it(window(body.replace("## ", ""), rng, 8, 45)), rng, 1)
            if not match_citation(quote, paper).grounded:
                misses.append(quote)
    assert misses == []


# ------------------------------------------------------------------ real papers


@pytest.fixture(scope="module")
def papers(read_once):
    return [read_once(p) for p in sorted(shared_path("papers").glob("*.pdf"))]


def _page_crossing_quote(paper, rng: random.Random) -> str | None:
    """A quote running over a page break, as a model reading clean text would give it."""
    pages = paper.pages
    if len(pages) < 3:
        return None
    number = rng.randrange(1, len(pages) - 1)
    # A reader does not see running headers, footers or page numbers as text:
    # lines that recur on several pages, or that are only a number.
    counts: dict[str, int] = {}
    for page in pages:
        for line in set(re.sub(r"\d+", "#", l.strip()) for l in page.splitlines()):
            counts[line] = counts.get(line, 0) + 1

    def furniture(line: str) -> bool:
        # A running header or footer recurs on a good share of the pages.
        return line.strip().isdigit() or counts.get(re.sub(r"\d+", "#", line.strip()), 0) >= max(3, len(pages) // 3)

    def content(page: str) -> list[str]:
        lines = [l for l in page.splitlines() if l.strip()]
        # Headers and footers sit at the page's edges; recurring lines elsewhere are content.
        while lines and furniture(lines[0]):
            lines.pop(0)
        while lines and furniture(lines[-1]):
            lines.pop()
        return lines

    before, after = content(pages[number]), content(pages[number + 1])
    if len(before) < 3 or len(after) < 3:
        return None
    tail = " ".join(before[-2:]).split()[-12:]
    head = " ".join(after[:2]).split()[:12]
    return as_a_model_quotes_it(" ".join(tail + head))


def _ungrounded(papers, make_quote, per_paper: int) -> tuple[int, list]:
    """(how many quotes were made, those the matcher did not ground).

    Windows of pypdf text copy margin numbers glued to the ends of lines; where such a
    number ends a quote or touches one of its numbers the quote must not be grounded
    (test_matcher_fidelity.py), so papers with glued margin numbers are left out here.
    """
    from pytest_researchqa.families.citation.matcher.furniture import trailing_line_numbers

    total, missed = 0, []
    for paper in papers:
        if trailing_line_numbers(paper.text, paper.page_starts):
            continue
        for _ in range(per_paper):
            quote = make_quote(paper)
            if quote is None:
                continue
            found = match_citation(quote, paper)
            if not found.is_evidence:
                continue  # a window of the reference list or of furniture: no evidence to ground
            total += 1
            if not found.grounded:
                missed.append((paper.paper_id, quote))
    return total, missed


@needs_shared
@pytest.mark.slow  # the papers fixture reads every real paper (pypdf: ~15 s, once a run)
def test_genuine_quotes_from_real_papers_are_grounded(papers):
    rng = random.Random(11)
    total, missed = _ungrounded(papers, lambda p: noisy(as_a_model_quotes_it(window(p.text, rng)), rng, 2), 60)
    elided_total, elided_missed = _ungrounded(papers, lambda p: elided(p.text, rng), 5)
    assert len(missed) + len(elided_missed) <= (total + elided_total) * 0.01, (missed + elided_missed)[:5]


@needs_shared
@pytest.mark.slow  # the papers fixture reads every real paper (pypdf: ~15 s, once a run)
def test_quotes_across_real_page_breaks_are_grounded(papers):
    rng = random.Random(5)
    total, missed = _ungrounded(papers, lambda p: _page_crossing_quote(p, rng), 6)
    assert total >= 30
    assert len(missed) <= total * 0.05, missed[:5]


@needs_shared
@pytest.mark.slow  # the papers fixture reads every real paper (pypdf: ~15 s, once a run)
@pytest.mark.parametrize("kind", FABRICATIONS)
def test_fabricated_quotes_from_real_papers_are_rejected(papers, kind):
    rng = random.Random(zlib.crc32(kind.encode()))  # hash() of a str changes from process to process
    total, accepted = 0, []
    for paper in papers:
        for _ in range(40):
            quote = fabricated(paper.text, rng, kind)
            if quote is None:
                continue
            total += 1
            found = match_citation(quote, paper)
            if found.grounded:
                accepted.append(quote)
    assert total >= 100
    assert len(accepted) <= total * 0.01, accepted[:5]


def test_the_noise_catalogue_is_exercised():
    assert len(NOISES) >= 10


@needs_shared
@pytest.mark.slow  # the papers fixture reads every real paper (pypdf: ~15 s, once a run)
@pytest.mark.parametrize("kind", SYMBOL_FABRICATIONS)
def test_symbol_only_fabrications_from_real_papers_are_never_grounded(papers, kind):
    rng = random.Random(7)
    total, accepted = 0, []
    for paper in papers:
        for _ in range(400):
            quote = fabricated(paper.text, rng, kind)
            if quote is None:
                continue
            total += 1
            if match_citation(quote, paper).grounded:
                accepted.append(quote)
    assert total >= 20
    assert accepted == []


def test_a_sentence_broken_by_a_figure_whose_labels_start_in_lower_case_is_grounded_across_the_page():
    first = ("We first find the attention heads with the largest effect on harmful instructions,\n"
             "no_suffix random_suffix adv_suffix\nSuffix type\n0\n1\n2\n(a) Attention head outputs.\n")
    second = ("and then investigate how their behavior changes when suffixes are appended to the prompt.\n"
              "The rest of the section reports what we found.\n")
    index = MatchIndex(first + second, (0, len(first)))
    quote = ("attention heads with the largest effect on harmful instructions, and then investigate how "
             "their behavior changes when suffixes")
    assert index.match(quote).grounded
    stitched = "attention heads with the largest effect on harmful instructions, the rest of the section reports"
    assert not index.match(stitched).grounded


@given(st.text(alphabet=st.sampled_from("ab .\u2026[]()\n\t")) | st.text())
def test_elisions_split_where_the_marks_pattern_splits(text):
    from pytest_researchqa.families.citation.matcher.quotes import _ELISION, split_elisions

    marked = "\u2026" in text or ".." in text or ". ." in text
    assert split_elisions(text) == ([part.strip() for part in _ELISION.split(text)] if marked else [text])


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab Tt .!?\u2014\u2013-()[]:;\"'\u201d\u2019\n")) | st.text())
def test_comment_boundaries_are_where_the_separator_and_sentence_end_patterns_find_them(text):
    from pytest_researchqa.families.citation.matcher import quotes

    # The patterns run over the whole quote, as comment_boundaries did before it matched them at their characters only.
    separators = []
    end = 0
    for mark in quotes._SEPARATOR_CHAR.finditer(text):
        at = mark.start()
        if at < end:
            continue
        spaces = at
        while spaces > end and text[spaces - 1].isspace():
            spaces -= 1
        found = quotes._HARD_SEPARATOR.match(text, spaces) or quotes._HARD_SEPARATOR.match(text, at)
        if found is not None:
            end = found.end()
            separators.append(found.span())
    assert [found.span() for found in quotes._separators(text)] == separators
    assert [found.span() for found in quotes._sentence_ends(text)] == [
        found.span() for found in quotes._SENTENCE_END.finditer(text)]


def test_a_citations_spans_and_pages_are_worked_out_once_however_often_they_are_read():
    """A graded row reads a citation's pages for its verdict and again for its view, and its spans for the view's
    context: each span end is walked to once (issue 24 item 2), and what is read is the same each time."""
    text = "Intro line.\f" + "The measured effect was large in every cohort we followed for two years. " * 3
    index = MatchIndex(text, page_starts=[0, text.index("\f") + 1])
    walked = []
    offset_of = index.raw_offset
    index.raw_offset = lambda position: walked.append(position) or offset_of(position)  # type: ignore[method-assign]
    found = index.match("the measured effect was large in every cohort we followed")
    assert found.grounded
    first = (found.pages, found.spans)
    found.pages.append(99)  # a caller's copy: the match keeps its own
    assert (found.pages, found.spans, found.pages) == (*first, first[0]) and first[0] == [2]
    assert len(walked) == 2, walked
