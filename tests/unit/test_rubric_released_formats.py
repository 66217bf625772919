"""The rubric family on the released benchmark's own formats: the loader's string ``citation_metadata``, rows
without ``survey_title``, answers whose references follow a numbered list or a bold "Sources:", and
references dated by arXiv id or with years in their titles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_researchqa.families.citation.answers import Answer
from pytest_researchqa.families.rubric.checks import publication_year, system_checks, violates_cutoff
from pytest_researchqa.families.rubric.oracle import rubric_oracle
from pytest_researchqa.families.rubric.render import LEAKAGE_NOT_CHECKED, check_lines
from pytest_researchqa.families.rubric.rows import load_queries
from pytest_researchqa.families.rubric.task import references
from pytest_researchqa.records import RowRecord


def released_row(row_id: str, citation_metadata: object) -> dict:
    """A row of test.json as released: no survey_title; the loader types citation_metadata Optional[str]."""
    return {"id": row_id, "general_domain": "Health Sciences & Medicine", "subdomain": "Specialized Medicine",
            "field": "Anesthesiology", "query": "How do SCN9A mutations affect pain disorders?", "date": "2019-05-01",
            "rubric": [{"rubric_item": "Does the response cite Cox et al. (2006) on channelopathy and pain?",
                        "type": "citation", "citation_metadata": citation_metadata},
                       {"rubric_item": "Does the response explain gain-of-function mutations?",
                        "type": "information", "citation_metadata": None}]}


def test_a_citation_metadata_string_keeps_the_row_and_is_read_as_json_or_as_text(tmp_path: Path):
    as_json = json.dumps({"title": "An SCN9A channelopathy causes congenital inability to experience pain",
                          "year": 2006})
    rows = [released_row("json", as_json), released_row("text", "Cox JJ et al. Nature. 2006;444:894-8."),
            released_row("blank", "  "), released_row("bad", 7)]
    path = tmp_path / "test.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    dataset = load_queries(path)
    loaded = {row.row_id: row for row in dataset.rows}
    assert sorted(loaded) == ["blank", "json", "text"], "a string citation never invalidates its row"
    assert loaded["json"].rubric[0].citation == {"title": json.loads(as_json)["title"], "year": 2006}
    assert loaded["text"].rubric[0].citation == {"text": "Cox JJ et al. Nature. 2006;444:894-8."}
    assert loaded["blank"].rubric[0].citation is None
    [problem] = dataset.problems
    assert problem.field == "rubric[0].citation_metadata" and "found int" in str(problem)
    assert rubric_oracle(loaded["text"]).citations == ["Cox JJ et al. Nature. 2006;444:894-8."]


def record(system: str, answer: str, cited: list[str], title: str | None = None) -> RowRecord:
    details = {"answer": answer, "references": cited, "words": len(answer.split()), "date": "2019-06-01"}
    if title:
        details["survey_title"] = title
    return RowRecord(row_id="r", system=system, family="rubric", metrics={"coverage": 0.5}, details=details)


def test_without_survey_titles_the_leakage_check_says_plainly_that_it_cannot_run():
    lines = check_lines([record("sys", "An answer.", ["Smith (2019). A study."])], ["sys"])
    assert lines[-1] == LEAKAGE_NOT_CHECKED
    assert "the released benchmark files do not carry it" in LEAKAGE_NOT_CHECKED
    title = "Sodium channel Nav1.7 in inherited pain disorders: a review"
    named = [record("sys", "An answer.", ["Doe (2018). Sodium channel Nav1.7 in inherited pain disorders."], title)]
    lines = check_lines(named, ["sys"])
    assert LEAKAGE_NOT_CHECKED not in lines and "leakage: the source survey is cited in 1/1 answers" in lines[0]


NUMBERED_NO_HEADING = """SCN9A encodes Nav1.7; gain-of-function mutations cause erythromelalgia [1], loss of function
congenital insensitivity to pain [2].

[1] Yang Y, et al. Mutations in SCN9A cause primary erythermalgia. J Med Genet. 2004;41:171-4.
[2] Cox JJ, et al. An SCN9A channelopathy causes congenital inability to experience pain. Nature. 2006;444:894-8."""

BOLD_SOURCES = """SCN9A encodes Nav1.7, and its mutations explain several pain disorders.

**Sources:**
- Dib-Hajj SD, et al. (2013). The Nav1.7 sodium channel: from molecule to man. Nat Rev Neurosci.
- Cox JJ, et al. (2006). An SCN9A channelopathy causes congenital inability to experience pain. Nature."""


@pytest.mark.parametrize("text, first, count", [
    (NUMBERED_NO_HEADING, "[1] Yang Y, et al. Mutations in SCN9A", 2),
    (NUMBERED_NO_HEADING.replace("[1] Yang", "1. Yang").replace("[2] Cox", "2. Cox"), "1. Yang Y", 2),
    (BOLD_SOURCES, "Dib-Hajj SD, et al. (2013).", 2),
    (BOLD_SOURCES.replace("**Sources:**", "**Sources**:"), "Dib-Hajj SD", 2),
    (BOLD_SOURCES.replace("**Sources:**\n", "**Sources:** "), "Dib-Hajj SD", 2),
])
def test_references_are_read_from_a_numbered_list_without_heading_and_under_a_bold_sources(text, first, count):
    found = references(Answer(text=text))
    assert len(found) == count and found[0].startswith(first)


def test_an_answers_own_numbered_points_and_a_sentence_starting_with_sources_are_not_references():
    points = "Three mechanisms matter:\n1. Gain of function in Nav1.7\n2. Loss of function\n3. Modifier genes"
    assert references(Answer(text=points)) == []
    assert references(Answer(text="Sources of pain vary.\nSources differ by channel.")) == []


@pytest.mark.parametrize("reference, year", [
    ("[3] Chen M, et al. Evaluating large language models trained on code. arXiv:2107.03374", 2021),
    ("Chen et al. Evaluating LLMs trained on code. arXiv preprint arXiv:1906.01234 (2019).", 2019),
    ("Witten E. Anti de Sitter space and holography. arXiv:hep-th/9802150", 1998),
    ("GBD 2019 Collaborators. Global burden of 369 diseases, 1990-2019. Lancet. 2020;396:1204-22.", 2020),
    ('J. Smith, "Pain genetics since 2015," IEEE Trans. Biomed. Eng., vol. 5, pp. 1-10, Mar. 2022.', 2022),
    ("Doe, J. (2023). COVID-19 in 2020: a review. https://doi.org/10.1016/j.cell.2019.01.001", 2023),
    ("Lee K. Pain in 2010 and beyond. Nature Medicine 2023.", 2023),
    ("A review of the 2019 outbreak, by the WHO", None),
])
def test_the_publication_year_is_the_arxiv_ids_or_the_citations_own_never_a_year_in_the_title(reference, year):
    assert publication_year(reference) == year


def test_arxiv_ids_and_years_in_titles_no_longer_hide_cutoff_violations():
    cutoff = 2019
    hidden = ["[1] Chen M, et al. Evaluating large language models trained on code. arXiv:2107.03374",
              "[2] GBD 2019 Collaborators. Global burden of disease, 1990-2019. Lancet. 2020;396:1204-22."]
    assert [violates_cutoff(r, cutoff) for r in hidden] == [True, True]
    checks = system_checks("sys", [record("sys", "An answer [1][2].", hidden)])
    assert (checks.late, checks.cited) == (2, 2)
