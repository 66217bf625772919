"""The four deterministic metrics and their edge cases, as docs/metrics.md states them."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from pytest_researchqa import Answer, Row, check_answer, cited_verbatim, covers_sections, grounded_refusal
from pytest_researchqa.families.citation import CITATION, metrics
from pytest_researchqa.families.citation.matcher import MatchIndex
from pytest_researchqa.families.citation.matcher.textkey import text_key
from pytest_researchqa.families.citation.metrics import keys_overlap, section_report
from pytest_researchqa.records import Recorder, RowRecord, recording_into

PAPER = (
    "Methods. We enrolled 240 adults from three clinics in 2021. Each participant attended twelve weekly sessions. "
    "Results. Systolic blood pressure fell by 6 mmHg in the intervention group. Diastolic pressure did not change. "
    "Discussion. The effect is modest but clinically relevant for people with borderline hypertension."
)
METHODS = "We enrolled 240 adults from three clinics in 2021."
RESULTS = "Systolic blood pressure fell by 6 mmHg in the intervention group."
DISCUSSION = "The effect is modest but clinically relevant for people with borderline hypertension."


def row(question_type="multi_hop", sections=None, **extra) -> Row:
    sections = sections if sections is not None else [
        {"section_label": "Methods", "alternatives": [METHODS, "Each participant attended twelve weekly sessions."]},
        {"section_label": "Results", "alternatives": [RESULTS]},
        {"section_label": "Discussion", "alternatives": [DISCUSSION]},
    ]
    return Row(row_id="r", paper_id="p", question_type=question_type, question="Q?", expected_references=sections, **extra)


class RecordView(Mapping):
    """What the assertions recorded into the test's current recorder: metrics, plus citation verdicts."""

    def __init__(self, record: RowRecord) -> None:
        self.record = record

    def _values(self) -> dict:
        values = dict(self.record.metrics)
        if self.record.citations:
            values["citations"] = self.record.citations
        return values

    def __getitem__(self, key):
        return self._values()[key]

    def __iter__(self):
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


@pytest.fixture(autouse=True)
def current_record():
    """Each test runs as a researchqa test would: with a row recorder made current."""
    record = RowRecord(row_id="r")
    with recording_into(Recorder(record, CITATION.metric_names)):
        yield record


def recorded(answer: Answer) -> RecordView:
    from pytest_researchqa.records import current_recorder

    return RecordView(current_recorder().record)


def test_coverage_is_and_across_sections_or_within_alternatives():
    answer = Answer("...", [METHODS, "Each participant attended twelve weekly sessions.", RESULTS])
    values = recorded(answer)
    with pytest.raises(AssertionError, match=r"section coverage 0.67 < 1.00: missed 1 of 3"):
        covers_sections(answer, row(), PAPER)
    assert values["section_coverage"] == pytest.approx(2 / 3)
    assert values["citation_precision"] == 1.0


def test_precision_counts_citations_that_reach_any_expected_section():
    answer = Answer("...", [METHODS, "Diastolic pressure did not change."])
    values = recorded(answer)
    covers_sections(answer, row("lookup", sections=[{"section_label": "Methods", "alternatives": [METHODS]}]), PAPER)
    assert values["citation_precision"] == 0.5 and values["section_coverage"] == 1.0


@pytest.mark.parametrize(
    "citation",
    [
        "240 adults from three clinics in 2021",  # a sub-quote of the alternative
        "Methods. We enrolled 240 adults from three clinics in 2021. Each participant attended",  # contains it
        "we ENROLLED 240 adults from three\nclin-\nics in 2021",  # the same passage under noise
    ],
)
def test_a_citation_matches_an_alternative_as_a_subquote_a_superquote_or_under_noise(citation):
    report = section_report([citation], row("lookup", sections=[{"section_label": "Methods", "alternatives": [METHODS]}]),
                            MatchIndex(PAPER))
    assert report.covered == (True,)


def test_a_different_passage_of_the_paper_never_matches():
    report = section_report(["Diastolic pressure did not change."], row(), MatchIndex(PAPER))
    assert report.covered == (False, False, False)
    assert report.citation_precision == 0.0


def test_a_fabricated_citation_matches_nothing_even_if_it_resembles_an_alternative():
    report = section_report(["We enrolled 250 adults from three clinics in 2021."], row(), MatchIndex(PAPER))
    assert report.covered == (False, False, False)


@pytest.mark.parametrize("citation", [
    "We enrolled 240 adults from three clinics in 2021, and all of them were cured within a week.",
    "Our own trial showed that we enrolled 240 adults from three clinics in 2021.",
])
def test_an_expected_passage_with_invented_text_around_it_earns_no_credit(citation):
    index = MatchIndex(PAPER)
    assert not index.match(citation).grounded, "the invented part is not in the paper"
    report = section_report([citation], row("lookup", sections=[{"section_label": "Methods", "alternatives": [METHODS]}]),
                            index)
    assert report.covered == (False,) and report.citation_precision == 0.0


def test_without_a_paper_sections_are_matched_on_text():
    assert keys_overlap(text_key("240 adults from three clinics in 2021"), text_key(METHODS))
    assert not keys_overlap(text_key("240 adults"), text_key(METHODS)), "too short to count as a sub-quote"
    assert keys_overlap(text_key("Dataset"), text_key("Dataset")), "identical short passages match"


def test_accuracy_is_the_share_of_grounded_citations():
    answer = Answer("...", [METHODS, "We enrolled 250 adults from three clinics in 2021."])
    values = recorded(answer)
    with pytest.raises(AssertionError) as failure:
        cited_verbatim(answer, PAPER)
    assert values["citation_accuracy"] == 0.5
    message = str(failure.value)
    assert "1 of 2 citations not grounded" in message
    assert "altered" in message and "departs from the paper" in message


def test_edge_cases_are_none_not_zero():
    answer = Answer("I cannot find this.", [])
    values = recorded(answer)
    assert cited_verbatim(answer, PAPER) is None
    assert covers_sections(answer, row("comprehension", sections=[]), PAPER) is None
    assert values == {"citation_accuracy": None, "section_coverage": None, "citation_precision": None}


def test_refusal_correctness_only_punishes_fabricated_evidence():
    adversarial = row("adversarial", sections=[], expected_refusal=True)
    assert grounded_refusal(Answer("The paper does not report this.", []), adversarial, PAPER) == 1.0
    assert grounded_refusal(Answer("No: it says otherwise.", [RESULTS]), adversarial, PAPER) == 1.0
    with pytest.raises(AssertionError, match="refusal correctness 0: the answer refused"):
        grounded_refusal(Answer("The paper does not address this.", ["A placebo arm of 120 adults was enrolled."]),
                         adversarial, PAPER)
    assert grounded_refusal(Answer("x", [RESULTS]), row(), PAPER) is None, "only adversarial rows"


def test_check_answer_records_every_metric_before_failing_once():
    answer = Answer("...", ["A passage nobody wrote, long enough to check."])
    values = recorded(answer)
    with pytest.raises(AssertionError) as failure:
        check_answer(answer, row(), PAPER)
    assert set(values) == {"citations", "citation_accuracy", "section_coverage", "citation_precision"}
    assert [c.verdict for c in values["citations"]] == ["not_found"]
    assert "citation accuracy" in str(failure.value) and "section coverage" in str(failure.value)


def test_bm25_cites_passages_that_are_verbatim_and_cover_the_paper():
    from pytest_researchqa.families.citation.bm25 import Bm25System, passages
    from pytest_researchqa.papers import Paper

    text = "Intro sentence here. " + PAPER + " A closing remark about the clinics. " * 3
    chunks = passages(text)
    assert all(chunk in text for chunk in chunks)
    assert sum(len(c.split()) for c in chunks) == len(text.split()), "no word lost or repeated"
    answer = Bm25System()(row(), Paper("p", text))
    assert len(answer.citations) == 2 and all(c in text for c in answer.citations)


def test_bm25_finds_the_same_words_in_ascii_text_as_the_word_pattern_does():
    import random
    import re

    from pytest_researchqa.families.citation.bm25 import _STOPWORDS, tokens

    rng = random.Random(24)
    alphabet = [chr(c) for c in range(128)] + ["é", "İ", "ß", "\u00a0"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert tokens(text) == [w for w in re.findall(r"\w+", text.lower()) if w not in _STOPWORDS], repr(text)


@pytest.mark.slow
def test_bm25_cuts_passages_where_splitting_each_sentence_into_words_would():
    import random
    import re

    from pytest_researchqa.families.citation.bm25 import PASSAGE_WORDS, passage_spans

    def by_splitting(text):  # the plain reading: each sentence's words counted by str.split
        found, start, words, sentence_start = [], 0, 0, 0
        ends = [m.start() for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z(\[])", text)] + [len(text)]
        for end in ends:
            words += len(text[sentence_start:end].split())
            sentence_start = end
            if words >= PASSAGE_WORDS or end == len(text):
                kept = text[start:end].strip()
                if kept:
                    first = start + len(text[start:end]) - len(text[start:end].lstrip())
                    found.append((first, first + len(kept)))
                start, words = end, 0
        return found

    rng = random.Random(24)
    # str.split's whitespace includes the ASCII separators 0x1c-0x1f; no-break and line separators are not ASCII.
    pieces = ["a", "bc", "Def", ".", "!", "?", "..", " ", "  ", "\n", "\t", "\x1c", "\x1f", "\r\n", "(", "[", "X",
              "3.5", "é", "\u00a0", "\u2028"]
    for n in range(1500):
        chosen = pieces if n % 2 else pieces[:-3]  # ASCII texts take the counting path
        text = "".join(rng.choice(chosen) for _ in range(rng.randint(0, 1200)))
        assert passage_spans(text) == by_splitting(text), repr(text)


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_bm25_scores_every_passage_bit_for_bit_as_rank_bm25s_okapi_does(seed, ascii_only):
    import random

    from rank_bm25 import BM25Okapi

    from pytest_researchqa.families.citation.bm25 import Bm25Index, Vocabulary, passages, tokens

    rng = random.Random(seed)
    # A few words in most passages (idf below zero, floored), rare ones, numbers, accents, Turkish İ.
    words = ["results", "model", "we", "data"] * 6 + [f"w{n}" for n in range(300)] + ["3.5", "(x-y)", "a_b"]
    words += [] if ascii_only else ["İstanbul", "café"]
    text = " ".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 30))).capitalize() + "."
                    for _ in range(rng.randint(1, 120)))
    chunks = passages(text) or [text]
    reference = BM25Okapi([tokens(c) or ["_"] for c in chunks])
    # One vocabulary for two papers, as the process-wide cache shares it: another paper's words change nothing.
    vocabulary = Vocabulary()
    Bm25Index.of_text(" ".join(f"other{n} results" for n in range(50)) + " café.", vocabulary)
    index = Bm25Index.of_text(text, vocabulary)
    assert index.passages(text) == chunks
    queries = [[rng.choice(words).lower() for _ in range(rng.randint(1, 9))] for _ in range(40)]
    for query in [*queries, ["unknown"], ["_"], ["other3"], ["results", "results", "w1"], tokens("İstanbul café")]:
        assert index.scores(query).tobytes() == reference.get_scores(query).tobytes(), query
        scores = reference.get_scores(query)
        assert index.ranking(query) == sorted(range(len(chunks)), key=lambda i: (-scores[i], i)), query


def test_bm25_keeps_indexes_within_its_byte_budget_and_rebuilds_an_evicted_one_to_the_same_answer():
    from pytest_researchqa.families.citation.bm25 import Bm25Cache, Bm25System
    from pytest_researchqa.papers import Paper

    papers = [Paper(f"p{n}", f"Paper {n} opens here. " + " ".join([PAPER] * 30)) for n in range(3)]
    probe = Bm25Cache()
    smallest = min(probe.index(paper).nbytes for paper in papers)
    cache = Bm25Cache(budget_bytes=probe.nbytes - smallest // 2)  # all the words and two indexes, not three
    system = Bm25System(cache)
    first = system(row(), papers[0])
    system(row(), papers[1])
    system(row(), papers[0])  # recently used again: papers[1] is now the oldest
    system(row(), papers[2])
    assert system.built == 3 and len(cache) == 2, "papers[0] was kept while papers[1] and papers[2] came"
    assert cache.nbytes <= cache.budget_bytes
    system(row(), papers[1])
    assert system.built == 4, "papers[1] was evicted, so it is built again"
    assert system(row(), papers[0]) == first
    # Papers without a content hash are told apart by their text, never by their id alone.
    other = Paper("p0", "Another paper entirely, with other words in it. It cites nothing of the first.")
    assert system(row(), other).citations != first.citations


def test_bm25_drops_its_shared_vocabulary_with_every_index_when_the_words_alone_would_fill_half_its_budget():
    from pytest_researchqa.families.citation.bm25 import VOCABULARY_WORD_BYTES, Bm25Cache, Bm25System
    from pytest_researchqa.papers import Paper

    papers = [Paper(f"p{n}", " ".join(f"word{n}x{k}" for k in range(200)) + ". " + PAPER) for n in range(3)]
    cache = Bm25Cache(budget_bytes=2 * 300 * VOCABULARY_WORD_BYTES)  # half of it: 300 words
    system = Bm25System(cache)
    answers = [system(row(), paper) for paper in papers]
    assert system.built == 3 and len(cache) == 1, "the third paper's words came after a reset"
    assert [system(row(), paper) for paper in papers] == answers
    assert cache.nbytes <= cache.budget_bytes


def test_bm25_systems_built_without_a_cache_share_the_processs_one():
    from pytest_researchqa.families.citation.bm25 import Bm25System, shared_cache

    assert Bm25System().cache is Bm25System().cache is shared_cache()


REFUTATION = "Diastolic pressure did not change."


def false_premise_row(**extra) -> Row:
    fields = dict(
        sections=[{"section_label": "Results", "alternatives": [REFUTATION]}],
        expected_refusal=True,
        metadata={"false_premise": "The study has no placebo arm."},
    )
    fields.update(extra)
    return row("adversarial", **fields)


@pytest.mark.parametrize(
    "answer",
    [
        Answer("The paper does not report a placebo arm.", [], refused=True),
        Answer("There was no placebo arm: all 240 adults received the intervention.", [METHODS]),
        Answer("The paper does not address a placebo arm.", [RESULTS]),  # other real evidence, not the listed one
    ],
    ids=["refuses-citing-nothing", "corrects-citing-other-evidence", "refuses-citing-other-evidence"],
)
def test_a_correct_refusal_passes_whether_or_not_it_cites_the_listed_refutation(answer):
    values = recorded(answer)
    check_answer(answer, false_premise_row(), PAPER)
    assert values["refusal_correctness"] == 1.0 and values["premise_flagged"] == 1.0
    assert "section_coverage" not in values and "citation_accuracy" not in values, (
        "false-premise rows stay out of the answerable means")


def test_a_refusal_backed_by_fabricated_evidence_fails_on_refusal_correctness():
    answer = Answer("There was no placebo arm.", ["A placebo arm of 120 adults was enrolled in 2021."])
    values = recorded(answer)
    with pytest.raises(AssertionError, match="refusal correctness 0"):
        check_answer(answer, false_premise_row(), PAPER)
    assert values["refusal_correctness"] == 0.0


def test_a_confident_answer_that_accepts_the_false_premise_fails_as_not_flagged():
    answer = Answer("The placebo arm lowered systolic pressure by 2 mmHg.", [RESULTS])
    values = recorded(answer)
    with pytest.raises(AssertionError, match="premise not flagged") as failure:
        check_answer(answer, false_premise_row(), PAPER)
    assert values["premise_flagged"] == 0.0 and values["refusal_correctness"] == 1.0
    assert "The study has no placebo arm." in str(failure.value)


@pytest.mark.parametrize(
    "text",
    [
        "There was no placebo arm; every participant received the intervention.",
        "The study covered three cities, not five.",
        "Humidity was not measured, so the paper cannot say how it modified the effect.",
        "The authors did not use a Bayesian model: the analysis was frequentist.",
        "That premise is mistaken: retention after the course was never tested.",
        "Neither a placebo group nor a waiting list was part of the design.",
    ],
)
def test_silent_corrections_of_a_premise_count_as_flagged(text):
    assert metrics.premise_flagged(false_premise_row(), Answer(text, [], refused=False)) == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "The placebo arm lowered systolic pressure by 2 mmHg.",
        "Night-time cooling reached 1.4 degrees under dense canopy.",
        "The Bayesian priors were chosen to reflect earlier trials, which did not differ much.",
        "Retention one year later was 80% of the end-of-course gain.",
    ],
)
def test_confident_answers_to_a_false_premise_are_not_flagged(text):
    assert metrics.premise_flagged(false_premise_row(), Answer(text, [])) == 0.0


def test_an_adversarial_row_the_paper_does_answer_is_graded_as_answerable():
    answerable = false_premise_row(expected_refusal=False)
    answer = Answer("Diastolic pressure was unchanged.", [REFUTATION])
    values = recorded(answer)
    check_answer(answer, answerable, PAPER)
    assert values["section_coverage"] == 1.0 and values["citation_accuracy"] == 1.0
    assert "refusal_correctness" not in values and "premise_flagged" not in values


def test_too_short_and_pointer_citations_are_reported_not_counted_as_fabrications():
    answer = Answer("There was no placebo arm.", ["p < 0.05", "Table 2", METHODS])
    values = recorded(answer)
    check_answer(answer, false_premise_row(), PAPER)
    assert values["refusal_correctness"] == 1.0
    assert [c.verdict for c in values["citations"]] == ["too_short", "not_evidence", "verbatim"]
    assert metrics.citation_accuracy(metrics.match_citations(answer, MatchIndex(PAPER))) == 1.0


@pytest.mark.parametrize("value", [412, 6.14, {"answer": 412, "citations": []}])
def test_a_number_given_as_the_answer_becomes_its_text(value):
    from pytest_researchqa.families.citation.answers import coerce_answer

    assert coerce_answer(value, "system 's'").text in ("412", "6.14")


@pytest.mark.parametrize(("value", "says"), [
    (Answer("x", citations="Across two semesters, 412 students took part."), "citations are one string"),  # type: ignore[arg-type]
    (Answer("x", citations=["a quote", None]), "citations are not a list of strings"),  # type: ignore[list-item]
    (Answer(None, ["a quote"]), "text is NoneType, not a string"),  # type: ignore[arg-type]
    ({"answer": "x", "citations": "one quote"}, "'citations' as one string"),
])
def test_a_systems_answer_whose_citations_or_text_have_the_wrong_shape_is_refused_naming_the_field(value, says):
    """tester40 H3: citations="a quote" became 67 one-character citations, scored 0 with no error."""
    from pytest_researchqa.families.citation.answers import coerce_answer

    with pytest.raises(TypeError, match=f"system 's' returned .*{re.escape(says)}"):
        coerce_answer(value, "system 's'")


def chatgpt_premise_row() -> Row:
    """A false-premise row from a real paper (a study of Microsoft Copilot conversations)."""
    return Row(row_id="health-adv-1", paper_id="p", question_type="adversarial", expected_refusal=True,
               question="How did the authors validate their taxonomy on ChatGPT conversations?",
               metadata={"false_premise": "The study analysed ChatGPT conversations."}, expected_references=[])


@pytest.mark.parametrize(
    "text",
    [
        "The study used Copilot, not ChatGPT.",
        "The conversations were from Copilot rather than ChatGPT.",
        "No ChatGPT conversations were analysed.",
        "I cannot find any mention of ChatGPT conversations in the paper.",
        "Not applicable: the data are from Copilot.",
        "The authors never analysed ChatGPT data; all conversations came from Copilot.",
        "Validation is described in the methods. However, the paper does not report any ChatGPT conversations.",
    ],
)
def test_corrections_of_a_real_premise_count_as_flagged_however_they_are_worded(text):
    assert metrics.premise_flagged(chatgpt_premise_row(), Answer(text, [])) == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "They validated the taxonomy against expert human annotation on the ChatGPT conversations.",
        "The validation on ChatGPT conversations was not described in detail, but they used expert annotation.",
        "Validation was done with expert human annotation. The paper does not report the annotators' names.",
        "They validated it with expert annotation on ChatGPT logs, though the paper does not report the kappa.",
        "Expert annotators checked the taxonomy, not a crowd.",
    ],
)
def test_answers_that_accept_the_premise_are_not_flagged_by_a_hedge_about_something_else(text):
    assert metrics.premise_flagged(chatgpt_premise_row(), Answer(text, [])) == 0.0


def test_a_sub_quote_covers_its_section_even_when_a_caption_has_the_same_words_first():
    # From a real paper: the words open the Figure 1 caption before the paragraph the dataset expects.
    paper = ("Figure 1: Chain of thought as a form of working memory for the model. "
             "Introduction. Many tasks need serial steps. We treat the chain of thought as a form of working memory "
             "that the model must write down, and argue that monitoring it is useful.")
    expected = ("We treat the chain of thought as a form of working memory that the model must write down, and argue "
                "that monitoring it is useful.")
    one_section = [{"section_label": "Introduction", "alternatives": [expected]}]
    report = section_report(["chain of thought as a form of working memory"], row("lookup", one_section),
                            MatchIndex(paper))
    assert report.section_coverage == 1.0 and report.citation_precision == 1.0


def test_the_failure_message_lines_up_every_citation_with_its_own_verdict():
    answer = Answer("It fell.", ["Table 2", "p < 0.05", RESULTS, "We enrolled 240 adults"])
    with pytest.raises(AssertionError) as failure:
        covers_sections(answer, row(), PAPER)
    lines = [line.strip() for line in str(failure.value).split("cited instead:")[1].strip().splitlines()]
    assert len(lines) == 4
    assert lines[0].startswith('[1] "Table 2"') and "not evidence" in lines[0] and "not counted" in lines[0]
    assert lines[1].startswith('[2] "p < 0.05"') and "too short" in lines[1] and "not counted" in lines[1]
    assert lines[2].startswith(f'[3] "{RESULTS}"') and lines[2].endswith("-> 'Results'")
    assert lines[3].startswith('[4] "We enrolled 240 adults"') and "too short to cover a section" in lines[3]


PAPER_WITH_A_NAME = (PAPER + " Annotation. Workers on Amazon Mechanical Turk labelled every transcript twice, "
                     "and disagreements went to a third worker.")


def test_a_name_quoted_from_a_required_passage_does_not_cover_its_section():
    turk = {"section_label": "Annotation", "alternatives": [
        "Workers on Amazon Mechanical Turk labelled every transcript twice"]}
    short = Answer("Crowd workers.", ["Amazon Mechanical Turk"])
    assert section_report(short.citations, row("lookup", [turk]), MatchIndex(PAPER_WITH_A_NAME)).covered == (False,)
    whole = Answer("Crowd workers.", ["Workers on Amazon Mechanical Turk labelled every transcript twice"])
    assert section_report(whole.citations, row("lookup", [turk]), MatchIndex(PAPER_WITH_A_NAME)).covered == (True,)


def test_a_short_expected_text_is_covered_by_quoting_it_whole():
    name = {"section_label": "Annotation", "alternatives": ["Amazon Mechanical Turk"]}
    report = section_report(["Amazon Mechanical Turk"], row("lookup", [name]), MatchIndex(PAPER_WITH_A_NAME))
    assert report.covered == (True,)


def test_a_longer_quote_holding_a_short_expected_text_whole_covers_it_as_the_text_itself_does_at_its_place():
    """tester41 T3: "a standardized effect of d = 0.38" scored 0 where "effect of d = 0.38", the dataset's
    own alternative, scored 1: the floor's waiver asked for the text itself, not a quote holding it."""
    paper = PAPER_WITH_A_NAME + " Results. The quizzes had a standardized effect of d = 0.38 on exam scores."
    effect = {"section_label": "Results", "alternatives": ["effect of d = 0.38"]}
    index = MatchIndex(paper)
    assert section_report(["a standardized effect of d = 0.38"], row("lookup", [effect]), index).covered == (True,)
    assert section_report(["effect of d = 0.38"], row("lookup", [effect]), index).covered == (True,)
    # Elsewhere in the paper the same words are another passage; without a paper a short text is too common.
    twice = paper + " Discussion. A larger effect of d = 0.38 would need more sections."
    elsewhere = "A larger effect of d = 0.38 would"
    assert section_report([elsewhere], row("lookup", [effect]), MatchIndex(twice)).covered == (False,)
    assert section_report(["a standardized effect of d = 0.38"], row("lookup", [effect])).covered == (False,)
    name = {"section_label": "Annotation", "alternatives": ["Amazon Mechanical Turk"]}
    assert section_report(["Workers on Amazon Mechanical Turk"], row("lookup", [name]), index).covered == (True,)


def test_a_reasoning_chain_given_as_a_list_of_steps_is_one_text():
    chained = row(metadata={"reasoning_chain": ["240 adults enrolled", "blood pressure fell by 6 mmHg"]})
    assert chained.metadata.reasoning_chain == "240 adults enrolled -> blood pressure fell by 6 mmHg"


def test_each_citations_view_shows_the_sections_the_rows_one_section_report_gives_it():
    """check_answer works out the section report once a row and hands it to the views: the same sections as each
    citation's own report, for one reaching a section, one reaching none, a fabricated one and one too short."""
    from pytest_researchqa.families.citation.views import citation_views

    index = MatchIndex(PAPER)
    answer = Answer(text="a", citations=[RESULTS, "Diastolic pressure did not change.",
                                         "We enrolled 900 children from one school in 1999.", "Methods.", METHODS])
    for question_type in ("multi_hop", "adversarial"):
        shown = row(question_type)
        matches = metrics.match_citations(answer, index)
        report = section_report(answer.citations, shown, index)
        assert citation_views(matches, index, shown, report) == citation_views(matches, index, shown)
        assert [v["sections"] for v in citation_views(matches, index, shown, report)] == [
            ["Results"], [], [], [], ["Methods"]]


def test_an_answer_of_an_earlier_import_of_the_package_is_refused_saying_so():
    """tester43 HIGH-2: after an in-process pytester run, "returned Answer; return an Answer" said nothing."""
    from pytest_researchqa.answers import Answer as CurrentAnswer
    from pytest_researchqa.answers import coerce_answer

    stale = type("Answer", (), {"__module__": CurrentAnswer.__module__, "__qualname__": CurrentAnswer.__qualname__})
    with pytest.raises(TypeError, match="system 's' returned an Answer of an earlier import of pytest_researchqa.answers"):
        coerce_answer(stale(), "system 's'")
