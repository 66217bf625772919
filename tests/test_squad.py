"""SQuAD-format files (COVID-QA) imported as rows over their contexts."""

from __future__ import annotations

import json

import pytest
from helpers import shared_path

from pytest_researchqa.families.citation.loaders import load_dataset

CONTEXT = ("Mother-to-child transmission (MTCT) is the main cause of HIV-1 infection in children worldwide. "
           "The first cases were seen in 1983. Genetic variants of DC-SIGNR were studied in 197 infants.")


def squad(tmp_path, qas, document_id=630):
    path = tmp_path / "covid.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [
        {"context": CONTEXT, "document_id": document_id, "qas": qas}]}]}))
    return path


def test_each_question_of_a_squad_file_is_a_lookup_row_over_its_context_with_its_answer_span_as_evidence(tmp_path):
    span = "Mother-to-child transmission (MTCT) is the main cause of HIV-1 infection in children worldwide."
    dataset = load_dataset(squad(tmp_path, [
        {"id": 262, "question": "What is the main cause?", "answers": [{"text": span + " ", "answer_start": 0}]},
        {"id": 263, "question": "When?", "answers": [{"text": "1983", "answer_start": 999}]},  # a wrong offset
        {"id": 264, "question": "Placebo?", "answers": [], "is_impossible": True},
        {"id": 265, "question": "", "answers": [{"text": "197 infants", "answer_start": 0}]},
    ]))
    assert dataset.inline_papers == {"covid-630": CONTEXT}
    first, year, refusal = dataset.rows
    assert (first.row_id, first.paper_id, first.domain, first.question_type) == ("covid-262", "covid-630", "covid",
                                                                                 "lookup")
    assert first.expected_references[0].section_label == "Answer"
    assert first.expected_references[0].alternatives == [span]
    # A year is too short to verify: its sentence is the evidence, the year stays the answer.
    assert year.expected_answer == "1983"
    assert year.expected_references[0].alternatives == ["The first cases were seen in 1983."]
    assert (refusal.question_type, refusal.expected_refusal, refusal.expected_references) == ("adversarial", True, [])
    [problem] = dataset.problems
    assert str(problem).startswith(f"{tmp_path / 'covid.json'}, paper covid-630 question 265, field 'question'")


@pytest.mark.slow
def test_the_oracle_scores_one_on_covid_qa_with_two_rows_whose_answer_is_cut_inside_a_number(pytester, tmp_path):
    covid = shared_path("external-datasets", "covid-qa", "200423_covidQA.json")
    dataset = load_dataset(covid)
    assert (len(dataset.rows), len(dataset.inline_papers), dataset.problems) == (1380, 98, [])
    result = pytester.runpytest(
        f"--researchqa-dataset={covid}", "--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}",
        "--researchqa-fail-under=section_coverage=1.0", "--researchqa-fail-under=citation_precision=1.0",
        "-p", "no:cacheprovider", "-q", "--no-header", "-rx")
    result.stdout.fnmatch_lines(["| oracle *| 1.000 ±0.000 | 1.000 ±0.000 | 1.000 ±0.000 |*",
                                 "2 row(s) not graded*dataset defect*", "*oracle: section_coverage>=1: 1.000 ok*"])
    assert result.ret == 0
    # tester50 LOW-5: the defect said no passage was in the article's text, which holds it ("... was 3.58").
    defects = [line for line in result.stdout.lines if line.startswith("XFAIL")]
    assert len(defects) == 2 and all("is in the extracted text of paper" in line and "it ends inside a number: the "
                                     "paper reads" in line for line in defects), defects


@pytest.mark.parametrize("shape", ["columns", "split", "index"])
def test_a_file_pandas_wrote_in_another_orientation_is_refused_with_the_call_that_writes_rows(tmp_path, shape):
    from pytest_researchqa.dataset import DatasetError

    rows = [{"row_id": "a", "paper_id": "p", "question_type": "lookup", "question": "Q?"},
            {"row_id": "b", "paper_id": "p", "question_type": "lookup", "question": "R?"}]
    columns = {key: {str(n): row[key] for n, row in enumerate(rows)} for key in rows[0]}
    data = {"columns": columns,
            "split": {"columns": list(rows[0]), "index": [0, 1], "data": [list(r.values()) for r in rows]},
            "index": {str(n): row for n, row in enumerate(rows)}}[shape]
    shown = {"columns": "columns", "split": "columns", "index": "rows keyed by their index"}[shape]
    for name in ("rows.json", "rows.jsonl"):  # tester42 N6: a .jsonl file of one line is the whole frame too
        path = tmp_path / name
        path.write_text(json.dumps(data))
        with pytest.raises(DatasetError, match=r"pandas' DataFrame.to_json\(orient='" + shape + r"'\): one object "
                                               f"of {shown}, not a list of rows: write "
                                               r"df.to_json\('rows.jsonl', orient='records', lines=True\)"):
            load_dataset(path)
