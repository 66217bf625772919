"""The matcher sees the symbols a number hangs on, and never lets a margin number into a quote's numbers."""

from __future__ import annotations

import pytest
from helpers import needs_shared, shared_path

from pytest_researchqa.families.citation.matcher import MatchIndex, match_citation, match_index
from pytest_researchqa.families.citation.matcher.furniture import trailing_line_numbers

RESULTS = ("Accuracy rose to 61.4% (95% CI 58.2 to 64.6), while the error rate fell from 0.32 to -0.05 "
           "on the held-out set; all effects were significant at p < 0.05 and the gain was 2.5 ± 0.3 points.")


@pytest.mark.parametrize(
    ("quote", "why"),
    [
        ("Accuracy rose to 6.14% (95% CI 58.2 to 64.6)", "decimal point moved"),
        ("Accuracy rose to 614% (95% CI 58.2 to 64.6)", "decimal point dropped"),
        ("the error rate fell from 0.32 to 0.05 on the held-out set", "sign dropped"),
        ("the error rate fell from -0.32 to -0.05 on the held-out set", "sign added"),
        ("all effects were significant at p > 0.05 and the gain", "inequality flipped"),
        ("all effects were significant at p = 0.05 and the gain", "inequality made equality"),
        ("Accuracy rose to 61.4 (95% CI 58.2% to 64.6)", "percent moved onto another number"),
        ("the gain was 2.5 ± 3 points", "a digit dropped after the plus-minus"),
    ],
)
def test_a_quote_that_changes_only_a_symbol_of_a_number_is_altered(quote, why):
    found = match_citation(quote, RESULTS)
    assert not found.grounded, why
    assert found.verdict == "altered"


@pytest.mark.parametrize(
    "quote",
    [
        "Accuracy rose to 61.4% (95% CI 58.2 to 64.6)",
        "the error rate fell from 0.32 to \u22120.05 on the held-out set",  # Unicode minus for the hyphen
        "the error rate fell from 0.32 to \u20130.05 on the held-out set",  # an en dash, as PDFs render it
        "significant at p < 0.05 and the gain was 2.5 \u00b1 0.3 points",
        "ACCURACY ROSE TO 61.4 % (95 % CI 58.2 TO 64.6)",
    ],
)
def test_the_same_numbers_written_with_other_glyphs_or_spacing_are_verbatim(quote):
    assert match_citation(quote, RESULTS).grounded


def test_hyphens_inside_words_and_ranges_are_still_noise():
    paper = "COVID-19 cases rose in 10\u201320 districts of the state-wide survey."
    assert match_citation("COVID 19 cases rose in 10-20 districts of the statewide survey", paper).grounded


def test_an_exponent_typed_with_a_hyphen_is_the_papers_minus_and_a_dropped_one_is_not():
    # From a real paper's training details, where pypdf reads "5e −5" (a Unicode minus).
    paper = "We used AdamW with learning rate 5e \u22125, weight decay of 0.01, and the batch size of 8."
    assert match_citation("with learning rate 5e-5, weight decay of 0.01", paper).verdict == "verbatim"
    assert not match_citation("with learning rate 5e5, weight decay of 0.01", paper).grounded


def test_the_diagnosis_shows_both_readings_of_a_moved_decimal_point():
    found = match_citation("Accuracy rose to 6.14% (95% CI 58.2 to 64.6)", RESULTS)
    departure = found.departure
    assert departure.quote_after.startswith("6.14%") and departure.paper_after.startswith("61.4%")


LINE_NUMBERED = "\n".join(
    f"{number} {line}" for number, line in enumerate([
        "We report the main result on the held-out set below. The model reached an accuracy, at",
        "61.4% of the items, that no baseline matched; the margin was large and stable.",
        "Errors were mostly confusions between similar classes, as the analysis shows.",
    ] * 4, start=34))


def test_a_leading_margin_number_never_becomes_the_quotes_number():
    assert not match_citation("The model reached an accuracy, at 36", LINE_NUMBERED).grounded
    assert not match_citation("The model reached an accuracy, at 35%", LINE_NUMBERED).grounded
    assert match_citation("The model reached an accuracy, at 61.4% of the items", LINE_NUMBERED).grounded


# Each line's margin number glued to its end by extraction, as pypdf reads some preprints (490 to 499).
GLUED = "\n".join(f"{line}{number}" for number, line in enumerate([
    "The method is evaluated on the nine held-out sets described in the previous section",
    "and compared against the strongest baselines from prior work on this benchmark [43, 44,",
    "which we run with their published settings. The accuracy of the final system was 0.9",
    "corresponding to a clear gain over the baselines, and the number of errors was 12,",
    "which is lower than before. These results were confirmed in a second study by Lee 31.",
    "To interpret these results, note that the gains hold across all of the settings in 7.",
    "ablation results follow the same pattern in every one of the nine held-out sets.",
    "We also report the variance of every score over five seeds in the appendix tables.",
    "A small ablation with the error penalties suggested a similar performance overall.",
    "Our code and data are released under an open license with the final version.",
], start=490))


@pytest.mark.parametrize("quote", [
    # "[43, 44," lists citations: its comma parts numbers, and "44,491" is no thousands number.
    "the strongest baselines from prior work on this benchmark [43, 44,491 which we run with their published settings",
    # "31." ends a sentence (the next line starts another): "31.494" is no decimal.
    "These results were confirmed in a second study by Lee 31.494 To interpret these results",
    "The accuracy of the final system was 0.9 corresponding to a clear gain over the baselines",
])
def test_a_margin_number_after_a_comma_or_stop_that_parts_or_ends_the_papers_numbers_is_copied_verbatim(quote):
    assert match_citation(quote, GLUED).grounded


@pytest.mark.parametrize(("quote", "reads", "paper_reads"), [
    ("The accuracy of the final system was 0.9492 corresponding to a clear gain", "0.9492 corr", "0.9 corr"),
    # A comma that may group thousands, the number alone on its line: "12,493" is a number the paper does not print.
    ("and the number of errors was 12,493 which is lower than before", "12,493 which", "12, which"),
    # A full stop the line goes on from in lower case may be a decimal point: "7.495".
    ("note that the gains hold across all of the settings in 7.495 ablation results follow", "7.495 abl", "7. abl"),
])
def test_a_margin_number_that_joins_a_number_of_the_text_is_shown_against_the_papers_number(quote, reads, paper_reads):
    found = match_citation(quote, GLUED)
    assert not found.grounded
    assert "line or page number" in found.explain()
    assert found.departure.quote_after.startswith(reads) and found.departure.paper_after.startswith(paper_reads)


def test_the_departure_shown_is_where_a_number_changes_not_where_the_quote_copies_a_margin_number_between_words():
    # "section490 and" reads as the paper's "section and" does, a number between words; "0.9492" does not.
    quote = ("described in the previous section490 and compared against the strongest baselines from prior work on "
             "this benchmark [43, 44,491 which we run with their published settings. The accuracy of the final "
             "system was 0.9492 corresponding to a clear gain")
    departure = match_citation(quote, GLUED).departure
    assert departure.quote_after.startswith("0.9492") and departure.paper_after.startswith("0.9 ")


def test_a_tables_last_decimals_on_a_page_after_line_numbered_ones_are_its_numbers_not_line_numbers():
    numbered = "\n".join(f"Line {word} of the numbered text goes on here{number}"
                         for number, word in enumerate("abcdefghijkl", start=1)) + "\n"
    table = "Model A B C D\nLLM1 0.71 0.43 0.71 0.46\nLLM2 0.49 0.05 0.50 0.90\nLLM3 0.36 0.21 0.51 0.26\n"
    index = MatchIndex(numbered + table, [0, len(numbered)])
    assert index.match("LLM1 0.71 0.43 0.71 0.46 LLM2 0.49 0.05 0.50 0.90 LLM3 0.36").grounded
    assert index.match("Line c of the numbered text goes on here Line d of the numbered text").grounded


# Page 10 of llm_accuracy_inventivizes_hallucinations.pdf as pypdf reads it, each line's margin number glued to its
# end (269 to 298), then page 11: its Table 1, printed without margin numbers. The table's labels (OR@1, LLM1)
# and last cells (0.46, 0.18) end in digits a new page's count could start from.
COUNTED_PAGE = "".join(f"reference {number - 268} of the paper's list, with its title and venue{number}\n"
                       for number in range(269, 299))
TABLE_PAGE = ("Table 1: Closed-rubric CR@L and open-rubric OR@L mean scores with penalties L = 0, 1.\n"
              "CR@0 CR@1 OR@0 OR@1\n"
              "LLM1 0.71 0.43 0.71 0.46\n"
              "LLM1\u2217 0.61 0.52 0.73 0.55\n"
              "LLM2 0.49 0.05 0.50 0.18\n"
              "LLM2\u2217 0.42 0.28 0.51 0.30\n"
              "LLM3 0.49 0.02 0.49 0.22\n"
              "\u2217 with mitigation\n10\n")
TABLE_ROWS = ("CR@0 CR@1 OR@0 OR@1 LLM1 0.71 0.43 0.71 0.46 LLM1\u2217 0.61 0.52 0.73 0.55 "
              "LLM2 0.49 0.05 0.50 0.18")
# Page 14: a figure's labels one a line. Page 15: the margin count goes on where page 10 left it.
FIGURE_PAGE = ("Correct No answer BaselineIncorrect Mitigation\nLLM4\nLLM1\nLLM2\nLLM3\n"
               "Figure 3: The consistency-based mitigation reduces incorrect responses (hallucination rate) but\n"
               "also decreases correct responses (accuracy), posing a barrier to adoption (n = 4,326 questions per\n"
               "model).\n13\n")
METHODS_PAGE = "Methods299\n" + "".join(f"Line {number - 299} of the methods, as running text goes on{number}\n"
                                        for number in range(300, 311))


def test_a_tables_labels_and_cells_or_a_figures_labels_on_pages_of_their_own_start_no_margin_count():
    pages = [COUNTED_PAGE, TABLE_PAGE, FIGURE_PAGE, METHODS_PAGE]
    starts = [sum(map(len, pages[:number])) for number in range(len(pages))]
    text = "".join(pages)
    ranges = trailing_line_numbers(text, starts)
    assert [text[start:end] for start, end in ranges] == [str(number) for number in range(269, 311)]


@pytest.mark.parametrize("quote", [TABLE_ROWS, "LLM1 0.71 0.43 0.71 0.46", "LLM2 0.49 0.05 0.50 0.18",
                                   "Mitigation LLM4 LLM1 LLM2 LLM3"])
def test_a_verbatim_quote_of_a_table_or_figure_after_a_line_numbered_page_is_grounded(quote):
    text = COUNTED_PAGE + TABLE_PAGE + FIGURE_PAGE
    found = MatchIndex(text, [0, len(COUNTED_PAGE), len(COUNTED_PAGE + TABLE_PAGE)]).match(quote)
    assert found.grounded, found.explain()


@pytest.mark.parametrize("quote", ["LLM1 0.71 0.43 0.71 0.47", "LLM2 0.49 0.05 0.50 0.1", "LLM2 0.49 0.05 0.50 0.81"])
def test_a_changed_table_cell_after_a_line_numbered_page_is_not_grounded(quote):
    text = COUNTED_PAGE + TABLE_PAGE
    assert not MatchIndex(text, [0, len(COUNTED_PAGE)]).match(quote).grounded


def test_the_years_of_a_title_page_before_the_margin_count_starts_are_the_papers_not_line_numbers():
    title = "Evaluating large language models\nReceived: 1 July 2025\nAccepted: 15 April 2026\n(2026)\n"
    body = "".join(f"Line {word} of the numbered text goes on here{number}\n"
                   for number, word in enumerate("abcdefghijkl", start=1))
    text = title + body
    ranges = trailing_line_numbers(text, [0, len(title)])
    assert all(start >= len(title) for start, _ in ranges) and len(ranges) == 12
    assert MatchIndex(text, [0, len(title)]).match("Received: 1 July 2025 Accepted: 15 April 2026").grounded


def test_a_quote_that_opens_the_paper_with_a_number_cuts_no_number():
    text = "2025-11-18\nScaling Generative Verifiers For Natural Language\nMathematical Proof Verification"
    assert match_citation("2025-11-18 Scaling Generative Verifiers For Natural Language", text).grounded


@pytest.fixture(scope="module")
def index(read_once):
    """llm_accuracy_inventivizes_hallucinations.pdf comes out of pypdf with each line's number glued to its end."""
    paper = read_once(shared_path("papers", "llm_accuracy_inventivizes_hallucinations.pdf"))
    return MatchIndex(paper.text, paper.page_starts)


@needs_shared
class TestGluedMarginNumbers:

    @pytest.mark.parametrize("quote", [
        "We provide a case study using four frontier models, demonstrating how open rubrics incentivize adoption",
        "We provide a case study using four frontier77 models, demonstrating how open rubrics",  # copied as glued
        "fraction of prompts appearing just once in the training data, ignoring abstentions",
        "We use thresholds t = 0, 0.5, 0.75, 0.9 corresponding to penalties L = 0, 1, 3, 9",
    ])
    def test_quotes_with_or_without_the_glued_number_between_words_are_grounded(self, index, quote):
        assert index.match(quote).grounded

    @pytest.mark.parametrize("quote", [
        "We use thresholds t = 0, 0.5, 0.75, 0.9193 corresponding to penalties",  # 0.9 and the margin's 193
        "ignoring abstentions.379",  # ends on the margin number: it reads as the sentence's number
        "fraction of prompts appearing just once in the training data, ignoring abstentions 379",
    ])
    def test_a_glued_number_that_would_join_or_end_the_quotes_numbers_is_not_grounded(self, index, quote):
        assert not index.match(quote).grounded

    @pytest.mark.parametrize("quote", [
        "CR@0 CR@1 OR@0 OR@1 LLM1 0.71 0.43 0.71 0.46 LLM1\u2217 0.61 0.52 0.73 0.55 LLM2 0.49 0.05 0.50 0.18",  # Table 1
        "LLM1 0.71 0.43 0.71 0.46",
        "Abstention threshold 0.00 0.50 0.75 0.90 0.0 0.5 0.4 0.3",  # Extended Data Fig. 2's axis labels
        "Correct No answer BaselineIncorrect Mitigation LLM4 LLM1 LLM2 LLM3",  # Fig. 3's labels
        "Received: 1 July 2025 Accepted: 15 April 2026",  # the title page, before the margin count
    ])
    def test_a_table_figure_or_title_page_without_margin_numbers_is_quoted_verbatim(self, index, quote):
        found = index.match(quote)
        assert found.grounded, found.explain()

    def test_a_passage_copied_with_the_margin_number_that_ends_its_line_says_so(self, index):
        found = index.match("that an abstention string such as IDK would be considered adequate.473")
        assert not found.grounded
        assert found.in_text.startswith("it ends with 473, the line or page number printed beside"), found.explain()


@pytest.mark.parametrize("citation", ["Baker et al., 2025", "(Smith and Jones, 2020)", "[12]", "[3, 5-7]",
                                      "https://arxiv.org/abs/2406.01574", "doi:10.1038/s44360-026-00117-x",
                                      "Figure 3", "Table 2:", "arXiv:2406.01574"])
def test_a_citation_that_only_points_somewhere_is_not_evidence(citation):
    found = match_citation(citation, RESULTS + " As Baker et al., 2025 showed (Figure 3; Table 2:).")
    assert not found.grounded and not found.is_evidence and found.verdict == "not_evidence"


@needs_shared
def test_bibliography_entries_and_running_headers_of_a_real_paper_are_not_evidence(read_once):
    paper = read_once(shared_path("papers", "chain_of_thought.pdf"))
    text = paper.text
    entry_start = text.index("Dario Amodei. The urgency of interpretability")
    entry = " ".join(text[entry_start:entry_start + 120].split())
    found = match_index(paper).match(entry)
    assert found.verdict == "not_evidence", found.explain()
    prose_start = text.index("reasoning")
    prose = " ".join(text[prose_start:prose_start + 150].split())
    assert match_index(paper).match(prose).grounded, "prose outside the reference list stays evidence"


@needs_shared
@pytest.mark.parametrize(("paper_file", "entry"), [
    ("chain_of_thought.pdf", "Dario Amodei. The urgency of interpretability, April 2025."),
    ("chain_of_thought.pdf", "Bowen Baker, Joost Huizinga, Leo Gao, Zehao Dou, Melody Y. Guan, Aleksander Madry, "
                             "Wojciech Zaremba, Jakub Pachocki, and David Farhi. Monitoring reasoning models for "
                             "misbehavior and the risks of promoting obfuscation, 2025."),
    ("sycophancy_undersatnding.pdf", "Arnav Gudibande, Eric Wallace, Charlie Snell, Xinyang Geng, Hao Liu, Pieter "
                                     "Abbeel, Sergey Levine, and Dawn Song. The false promise of imitating proprietary "
                                     "LLMs."),
])
@pytest.mark.slow
def test_reference_list_entries_led_by_full_author_names_are_not_evidence(read_once, paper_file, entry):
    paper = read_once(shared_path("papers", paper_file))
    assert match_citation(entry, paper).verdict == "not_evidence"


@pytest.mark.slow
@needs_shared
def test_a_sentence_whose_continuation_pypdf_reads_earlier_on_the_page_is_verbatim(read_once):
    # Page 2: "...Of these, 99.1% have a known" ends a line above Table 1; pypdf puts the column's
    # continuation ("platform value and are included ...") before it, after the page's top block.
    paper = read_once(shared_path("papers", "publicusegeneralhealthchatbots.pdf"))
    quote = ("the sample contains N = 617,827 conversations across the remaining intent categories. Of these, "
             "99.1% have a known platform value and are included in the mobile-versus-desktop analysis")
    assert match_citation(quote, paper).verdict == "verbatim"
    assert not match_citation(quote.replace("99.1%", "91.1%"), paper).grounded


def test_a_citation_marker_glued_to_a_word_near_the_quotes_start_is_skipped_and_a_changed_number_is_not():
    # From a real paper's text as pypdf reads it: a superscript reference number glued to "optimizer".
    paper = "The models were trained using AdamW optimizer30 with learning rate 5e \u22125, weight decay of 0.01."
    assert match_citation("using AdamW optimizer with learning rate 5e-5, weight decay of 0.01", paper).grounded
    assert not match_citation("using AdamW optimizer with learning rate 5e-4, weight decay of 0.01", paper).grounded
    assert match_citation("using AdamW optimizer30 with learning rate 5e-5", paper).grounded, "the marker quoted too"


# A page whose lines extraction glued their margin numbers to (1 to 12), then the reference list.
NUMBERED_WITH_REFERENCES = "".join(
    f"Line {word} of the study's running text, as the paper prints it{number}\n"
    for number, word in enumerate("abcdefghijkl", start=1)
) + ("References\n[1] Smith, J. & Lee, K. A study of blood pressure in adults. Journal of Medicine 12, 100-110 (2021).\n"
     "[2] Brown, A. et al. Clinics and their patients. Proceedings of the Health Conference, 2019.\n")


@pytest.mark.parametrize(("passage", "why"), [
    ("Line c of the study's running text, as the paper prints it3", "it ends with 3, the line or page number printed"),
    ("Smith, J. & Lee, K. A study of blood pressure in adults. Journal of Medicine 12, 100-110 (2021).",
     "it is in the reference list, which is not evidence"),
])
def test_a_passage_the_extracted_text_holds_says_why_it_is_not_grounded_there(passage, why):
    assert passage in NUMBERED_WITH_REFERENCES
    found = match_citation(passage, NUMBERED_WITH_REFERENCES)
    assert not found.grounded and found.in_text.startswith(why), found.explain()


@pytest.mark.parametrize("passage", ["Line c of the study's running text, as the paper prints it", "Table 2:",
                                     "A sentence the paper never had, about blood pressure in adults."])
def test_a_passage_grounded_a_pointer_or_one_the_text_does_not_hold_has_no_such_reason(passage):
    assert match_citation(passage, NUMBERED_WITH_REFERENCES).in_text == ""
