"""A failed citation's diagnosis points at the right place: the departure and the passage shown are
found by aligning the quote to where it is nearest in the paper, also when its first words differ.

Quotes are real sentences of the papers in ../shared/papers (as the plugin reads them) with the
edits models make: the first words changed, a word in the middle changed, a number changed.
"""

from __future__ import annotations

import re

import pytest
from helpers import SAMPLE, needs_shared, shared_path

from pytest_researchqa.families.citation.matcher import match_citation, match_index
from pytest_researchqa.families.citation.matcher.textkey import text_key
from pytest_researchqa.papers import read_paper

PAPERS = ("chain_of_thought.pdf", "llm_accuracy_inventivizes_hallucinations.pdf", "publicusegeneralhealthchatbots.pdf",
          "sycophancy_undersatnding.pdf")
_SENTENCE = re.compile(r"(?<=[.!?] )[A-Z][^.!?]{80,220}[.!?](?= )")
# A printed number of the text (two digits or more, or a decimal), not a citation marker glued to a word.
_NUMBER = re.compile(r"(?<![\w.])(\d\d+|\d+\.\d+)(?![\w.])")
_REFERENCE_LIKE = re.compile(r"et al\.|Proceedings|Conference|\b(?:19|20)\d\d\b")
_REPLACEMENT = {"the": "a", "a": "the", "we": "they", "is": "was", "are": "were", "of": "for", "and": "or",
                "in": "on", "to": "into", "that": "which", "this": "that", "for": "of", "with": "without"}


def _sentences(paper, count: int, need_number: bool = False) -> list[tuple[str, int]]:
    """(sentence, page) pairs: real sentences of the paper that the matcher grounds as they are."""
    flat = " ".join(paper.text.split())
    found = []
    for match in _SENTENCE.finditer(flat):
        sentence = match.group()
        if need_number != bool(_NUMBER.search(sentence)) or _REFERENCE_LIKE.search(sentence):
            continue  # reference-list entries are near-copies of each other: no one right place
        grounded = match_index(paper).match(sentence)
        # Running text only: not a running header (blanked as page furniture), one page.
        key = match_index(paper).key
        in_body = key.find(text_key(sentence)) >= 0 and key.count(text_key(sentence)) == 1  # and only once
        if grounded.grounded and grounded.verdict == "verbatim" and len(grounded.pages) == 1 and in_body:
            found.append((sentence, grounded.pages[0]))
        if len(found) == count:
            break
    return found


@pytest.fixture(scope="module", params=PAPERS)
def paper(request, read_once):
    return read_once(shared_path("papers", request.param), request.param)


def _changed_word(word: str) -> str:
    bare = word.lower().strip(",;:")
    return _REPLACEMENT.get(bare, "different") + word[len(word.rstrip(",;:")):]


@pytest.mark.slow
@needs_shared
def test_a_quote_whose_first_words_differ_is_shown_against_the_passage_it_comes_from(paper):
    sentences = _sentences(paper, 4)
    assert sentences
    for sentence, page in sentences:
        words = sentence.split(" ")
        quote = " ".join(["Notably,", _changed_word(words[1])] + words[2:])
        found = match_index(paper).match(quote)
        assert not found.grounded and found.verdict == "altered", found.explain()
        departure = found.departure
        assert departure.page == page
        assert departure.quote_before == ""
        assert departure.paper_after.startswith(words[0]), (departure.paper_after, sentence)
        explained = found.explain()
        assert "after: ''" not in explained and "from its first words" in explained


@needs_shared
def test_a_word_changed_in_the_middle_departs_at_that_word(paper):
    for sentence, page in _sentences(paper, 4):
        words = sentence.split(" ")
        middle = len(words) // 2
        changed = _changed_word(words[middle])
        quote = " ".join(words[:middle] + [changed] + words[middle + 1:])
        found = match_index(paper).match(quote)
        assert not found.grounded and found.verdict == "altered", found.explain()
        departure = found.departure
        assert departure.page == page
        assert departure.quote_after.startswith(changed.rstrip(",;:")), (departure, quote)
        assert departure.paper_after.startswith(words[middle].rstrip(",;:")[:3]), (departure, sentence)
        assert " ".join(departure.quote_before.split()).endswith(" ".join(words[max(0, middle - 3):middle]))


@needs_shared
def test_a_changed_number_departs_at_that_number_and_shows_the_papers(paper):
    sentences = _sentences(paper, 3, need_number=True)
    if not sentences:
        pytest.skip(f"{paper.paper_id}: no sentence with a number that reads back verbatim")
    for sentence, page in sentences:
        number = _NUMBER.search(sentence)
        digits = number.group(1)
        changed = digits[:-1] + ("7" if digits[-1] != "7" else "3")
        quote = sentence[:number.start(1)] + changed + sentence[number.end(1):]
        found = match_index(paper).match(quote)
        assert not found.grounded and found.verdict == "altered", found.explain()
        departure = found.departure
        assert departure.page == page
        assert re.sub(r"^\W+", "", departure.paper_after).startswith(digits), (departure, sentence)
        assert re.sub(r"^\W+", "", departure.quote_after).startswith(changed), (departure, quote)


def test_a_changed_opening_on_the_bundled_sample_names_the_real_opening():
    paper = read_paper(SAMPLE / "papers" / "sample-edu.pdf", "sample-edu")
    found = match_citation("Over two semesters, 412 students in 18 course sections took part.", paper)
    assert found.verdict == "altered"
    assert found.departure.quote_before == "" and found.departure.paper_after.startswith("Across")
    assert "from its first words" in found.explain() and "after: ''" not in found.explain()


def test_a_paraphrase_shows_the_passage_it_aligns_to():
    paper = read_paper(SAMPLE / "papers" / "sample-edu.pdf", "sample-edu")
    found = match_citation("During two terms 412 pupils across 18 sections of the course participated", paper)
    assert not found.grounded
    assert found.nearest is not None and "412 students in 18 course sections" in found.nearest.text


@pytest.mark.parametrize(("cut", "paper_reads"), [("population was 3.5", "3.58"), ("estimated at 2.6 (95", "(95%CI")])
def test_a_quote_cut_inside_one_of_the_papers_numbers_is_altered_and_says_the_whole_number(cut, paper_reads):
    """tester50 LOW-5: COVID-QA's answer spans cut inside a number were called paraphrases, and their dataset
    defect said the article did not hold them, though it does, word for word."""
    from pytest_researchqa.papers import Paper

    text = ("The basic reproduction number was estimated at 2.6 (95%CI: 1.5-3.5) in January, and the mean age "
            "of the study population was 3.58 years.")
    index = match_index(Paper(paper_id="p", text=text, page_starts=[]))
    quote = ("the basic reproduction number was " if "2.6" in cut else "the mean age of the study ") + cut
    found = index.match(quote)
    assert (found.grounded, found.verdict) == (False, "altered")
    assert found.in_text == f"it ends inside a number: the paper reads {paper_reads!r} where the passage ends " \
                           f"{cut.split()[-1]!r}"
    assert index.match(quote.replace(cut.split()[-1], paper_reads)).grounded, "the whole number is verbatim"
