"""The matcher's shortcuts decide what its full searches would: a quote stuck where the paper goes on
(stuck_prefix) is one locate finds nowhere, a citation the pointer test passes over is no pointer, and
a comment is looked for wherever its opener's key may stand."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_researchqa.families.citation.matcher import MatchIndex, match_citation
from pytest_researchqa.families.citation.matcher.alignment import anchored_prefix, locate, stuck_prefix
from pytest_researchqa.families.citation.matcher.quotes import (
    _COMMENT_OPENER as COMMENT_OPENER,
)
from pytest_researchqa.families.citation.matcher.quotes import (
    COMMENT_OPENER_KEY,
    REFERENCE_ONLY,
    is_pointer,
    strip_wrapping,
)
from pytest_researchqa.families.citation.matcher.textkey import text_key

# Few words, some numbers: stretches repeat, runs stop before digits and at line starts.
_WORDS = ["the", "model", "is", "trained", "on", "data", "and", "12", "3.5", "not", "Results", "ab", "x7"]
_lines = st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join), min_size=1, max_size=30)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(lines=_lines, data=st.data())
def test_a_quote_stuck_in_the_paper_is_found_nowhere_by_locate_and_its_anchored_prefix_is_locates(
        lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines)
    breaks = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=3))))
    index = MatchIndex(text, [0, *breaks] if breaks else ())
    key = index.key
    if len(key) < 12:
        return
    start = data.draw(st.integers(0, len(key) - 12))
    quote = key[start : start + data.draw(st.integers(12, 80))]
    edit = data.draw(st.sampled_from(["none", "insert", "replace", "splice"]))
    at = data.draw(st.integers(0, len(quote)))
    if edit == "insert":
        quote = quote[:at] + data.draw(st.sampled_from(["not", "7", "q", "the"])) + quote[at:]
    elif edit == "replace":
        quote = quote[:at] + data.draw(st.sampled_from(["z", "9", "is"])) + quote[at + 1 :]
    elif edit == "splice":
        other = data.draw(st.integers(0, len(key) - 1))
        quote = quote[:at] + key[other : other + 30]
    for grams, flow, keys in ((index.grams, index._flow, index._keys(False)),
                              (index.unmasked_grams, index._unmasked_flow, index._keys(True))):
        whole, pages = keys
        stuck = stuck_prefix(whole, grams, flow, quote)
        if stuck is not None:
            assert locate(whole, pages, quote, 0, len(whole), flow, grams) is None
            assert stuck == anchored_prefix(whole, quote, 0, len(whole), grams=grams)


_HEADERS = ["Preprint. Under review.", "Workshop on the model 12", "the data and the model"]


# Pages long enough that the text around their furniture is a small part of them (else furniture_apart does not
# try): 4-6 pages of 40-70 lines. Built from a drawn seed: drawing each of their ~1,200 words through Hypothesis
# took 40 s of CPU for 300 papers, the test itself 2 s; Hypothesis still draws the seed, the header
# and the quote, and replays a failure from its seed.
def _pages(seed: int) -> list[list[str]]:
    chosen = random.Random(seed)
    return [[" ".join(chosen.choices(_WORDS, k=chosen.randint(1, 8))) for _ in range(chosen.randint(40, 70))]
            for _ in range(chosen.randint(4, 6))]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(pages=st.integers(0, 2**32).map(_pages), header=st.sampled_from(_HEADERS), data=st.data())
def test_a_quote_stuck_away_from_page_furniture_is_stuck_in_the_unmasked_key_too(
        pages: list[list[str]], header: str, data: st.DataObject) -> None:
    # Pages with a running header and a page number (blanked in the masked key): wherever
    # furniture_apart says the masked key's answer holds for the unmasked key, stuck_prefix there agrees.
    texts = [f"{header}\n" + "\n".join(lines) + f"\n{number + 1}\n" for number, lines in enumerate(pages)]
    starts = [sum(map(len, texts[:number])) for number in range(len(texts))]
    index = MatchIndex("".join(texts), starts)
    assert index.masked_ranges
    source = data.draw(st.sampled_from([index.key, index.unmasked_key]))
    if len(source) < 12:
        return
    start = data.draw(st.integers(0, len(source) - 12))
    quote = source[start : start + data.draw(st.integers(12, 80))]
    at = data.draw(st.integers(0, len(quote)))
    edit = data.draw(st.sampled_from(["none", "insert", "replace", "splice"]))
    if edit == "insert":
        quote = quote[:at] + data.draw(st.sampled_from(["not", "7", "q", "the", "preprint"])) + quote[at:]
    elif edit == "replace":
        quote = quote[:at] + data.draw(st.sampled_from(["z", "9", "is"])) + quote[at + 1 :]
    elif edit == "splice":
        other = data.draw(st.integers(0, len(source) - 1))
        quote = quote[:at] + source[other : other + 30]
    runs: list[tuple[int, int]] = []
    if stuck_prefix(index.key, index.grams, index._flow, quote, runs=runs) is not None and index.furniture_apart(quote, runs):
        assert stuck_prefix(index.unmasked_key, index.unmasked_grams, index._unmasked_flow, quote) is not None


def test_a_changed_word_is_stuck_at_once_and_a_run_that_stops_at_a_new_line_or_a_number_is_searched() -> None:
    text = ("We train the model on the full data set.\nThe results show that the model is robust to noise,\n"
            "as the accuracy of 12 on the held-out split shows.")
    index = MatchIndex(text)
    changed = text_key("The results show that the model is fragile to noise")
    assert stuck_prefix(index.key, index.grams, index._flow, changed) == (
        len(text_key("The results show that the model is ")), index.key.index("theresults"))
    assert not match_citation("The results show that the model is fragile to noise", index).grounded
    # The run stops where a line starts (a page break or a figure may be jumped there) ...
    assert stuck_prefix(index.key, index.grams, index._flow, text_key("We train the model on the full data set. So")) is None
    # ... or at a number the quote may leave out (a citation marker): left to the full search, which finds it.
    assert stuck_prefix(index.key, index.grams, index._flow, text_key("as the accuracy of on the held-out split")) is None
    assert match_citation("as the accuracy of on the held-out split shows", index).grounded


@settings(max_examples=150, deadline=None)
@given(citation=st.one_of(
    st.text(alphabet="abdoiwDOIW.:/ ()[]0123456789\uff12\u0661\u0130\u0131,;&-", max_size=40),
    st.text(alphabet="FigureTablqEsctonApdxAlrhmXv\u017f\u0131\u0130 .:019", max_size=24),
    st.sampled_from(["doi.org/abc", "DOI: xyz", "www.example.org", "HTTPS://example.org/x", "(Smith, \uff12\uff10\uff12\uff10)",
                     "arXiv:2101.00001", "arXiv: 2101.00001v2", "Figure 3", "Fig. 3b", "Table 2a:", "Tab. 1", "Eq. 4",
                     "Equation 12", "Section 3.2", "\u017fection 2", "Appendix B1", "Algorithm 1", "F\u0131gure 3",
                     "10.1234/abc", "[4, 5]", "[1-3]", "(Smith et al., 2020)", "Smith & Jones, 1999", "do\u0130: abc"])))
def test_the_pointer_test_says_what_the_pointer_pattern_says(citation: str) -> None:
    keys = [text_key(citation)]
    expected = len(citation) < 160 and REFERENCE_ONLY.fullmatch(strip_wrapping(citation).rstrip(".;,")) is not None
    assert is_pointer(citation, keys) is expected


def test_a_pointer_without_a_digit_is_no_evidence_even_where_the_paper_prints_it() -> None:
    index = MatchIndex("The code and the data are at doi.org/example-archive for everyone.")
    result = match_citation("doi.org/example-archive", index)
    assert not result.grounded and not result.is_evidence


_OPENER_WORDS = ["this", "these", "that", "those", "which", "i.e.", "ie", "i.e", "e.g.", "eg", "in other words", "here",
                 "thus", "so", "hence", "therefore", "meaning", "note", "notably", "indicating", "suggesting", "showing",
                 "in short", "overall", "essentially", "importantly", "the author", "the authors", "according",
                 "as shown", "as noted", "as stated"]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(word=st.sampled_from(_OPENER_WORDS), cases=st.lists(st.booleans(), min_size=20, max_size=20),
       tail=st.text(alphabet="abs ,.\u0131\u0130\u017f", max_size=12))
def test_every_comment_openers_key_starts_as_the_opener_keys_pattern_says(word: str, cases: list[bool], tail: str) -> None:
    text = "".join(c.upper() if up else c for c, up in zip(word, cases + [False] * len(word))) + tail
    if COMMENT_OPENER.match(text) and text_key(text).isascii():
        assert COMMENT_OPENER_KEY.match(text_key(text))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="thisewcdgnorkmaulybfp .\u0131\u0130\u017f", min_size=2, max_size=16))
def test_no_text_the_comment_opener_matches_has_a_key_the_opener_keys_pattern_misses(text: str) -> None:
    if COMMENT_OPENER.match(text) and text_key(text).isascii():
        assert COMMENT_OPENER_KEY.match(text_key(text))


@settings(max_examples=200, deadline=None)
@given(key=st.text(alphabet="thisewcdgnorkmaulybfp", max_size=60), first=st.integers(0, 60), last=st.integers(0, 60))
def test_one_search_for_an_opener_key_finds_one_where_a_match_at_each_place_would(key: str, first: int, last: int) -> None:
    from pytest_researchqa.families.citation.matcher.quotes import COMMENT_OPENER_KEY_LONGEST

    at_each = any(COMMENT_OPENER_KEY.match(key, place) for place in range(first, last + 1))
    found = COMMENT_OPENER_KEY.search(key, first, last + 1 + COMMENT_OPENER_KEY_LONGEST)
    assert at_each is (found is not None and found.start() <= last)


# A sentence the paper repeats (a template's filler text): pages of it, each ending with its page number.
_REPEATED = "A blind text like this gives you information about the selected font and the look of the letters."


def test_a_repeated_sentence_is_found_where_it_runs_over_a_page_number_not_only_where_it_first_occurs() -> None:
    first = "\n".join([_REPEATED] * 10) + "\nA blind text like this gives\n1\n"
    second = "you information about the selected font and the look of the letters.\n" + "\n".join([_REPEATED] * 3) + "\n2\n"
    index = MatchIndex(first + second, [0, len(first)])
    # Cut from the text as it stands, page number and all (as a retrieval system cuts its passages).
    quote = "A blind text like this gives\n1\nyou information about the selected font and the look of the letters."
    assert quote in index.text
    found = index.match(quote)
    assert found.grounded, found.explain()
    assert found.spans[0][0] == index.text.index(quote)


def test_a_sentence_whose_first_occurrence_is_cut_from_a_number_is_found_where_it_stands_alone() -> None:
    text = ("The warm-up was scaled by 2.5 times the learning rate of the base model in all runs.\n"
            "For the large model the final learning rate was 5 times the learning rate of the base model in all runs.")
    quote = "5 times the learning rate of the base model in all runs"
    found = match_citation(quote, text)
    assert found.grounded, found.explain()
    assert found.spans == [(text.rindex(quote), text.rindex(quote) + len(quote))]


def test_the_tenth_of_many_links_alike_in_a_reference_list_is_found_as_it_is_not_called_altered() -> None:
    # Found as it is, but in the reference list: the full path decides, its first look-ups reading the
    # links' common start at the first eight places only.
    entries = "\n".join(f"Author {n}. A paper on topic {n}, 2025.\nURL: https://arxiv.org/abs/2501.{10000 + 7 * n}."
                        for n in range(12))
    text = "We study models.\nReferences\n" + entries + "\n"
    quote = f"URL: https://arxiv.org/abs/2501.{10000 + 7 * 10}."
    found = match_citation(quote, text)
    assert found.grounded, found.explain()
