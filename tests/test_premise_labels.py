"""premise_flagged measured against people: the hand-labelled answers of datasets/premise (issue 26 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_researchqa import Answer, Row
from pytest_researchqa.bundled import sample_dataset
from pytest_researchqa.families.citation import metrics
from pytest_researchqa.families.citation.loaders import load_dataset
from pytest_researchqa.families.citation.oracle import oracle_answer

LABELS = Path(__file__).resolve().parent.parent / "datasets" / "premise" / "flagged-labels.jsonl"
# The heuristic's floor on the labelled set (docs/metrics.md gives the measured figures).
MIN_ACCURACY = 0.95


def labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def adversarial_rows() -> list[Row]:
    return [row for row in load_dataset(sample_dataset()).rows if metrics.expects_refusal(row)]


def as_row(label: dict) -> Row:
    return Row(row_id=label["id"], paper_id="p", question_type="adversarial", question=label["question"],
               expected_references=[], expected_refusal=True, metadata={"false_premise": label["false_premise"]})


def heuristic(label: dict) -> bool:
    return metrics.premise_flagged(as_row(label), Answer(label["answer"], [])) == 1.0


def test_every_label_has_its_fields_and_a_verdict_a_person_gave():
    fields = {"id", "row_id", "source", "question", "false_premise", "answer", "human", "kind", "split"}
    found = labels()
    assert len(found) >= 60
    assert all(set(label) == fields for label in found)
    assert {label["human"] for label in found} == {"flagged", "not_flagged"}
    assert {label["split"] for label in found} == {"development", "held-out"}
    assert len({label["id"] for label in found}) == len(found), "ids are unique"


def test_answers_to_sample_rows_carry_that_rows_question_and_false_premise():
    rows = {row.row_id: row for row in adversarial_rows()}
    tied = [label for label in labels() if label["row_id"] is not None]
    assert {label["row_id"] for label in tied} == set(rows), "every adversarial row of the sample has answers"
    for label in tied:
        row = rows[label["row_id"]]
        assert (label["question"], label["false_premise"]) == (row.question, row.metadata.false_premise), label["id"]
        if label["source"] == "sample-expected":
            assert label["answer"] == row.expected_answer and label["human"] == "flagged"


def test_the_heuristic_agrees_with_the_people_on_at_least_95_percent_of_the_labelled_answers():
    found = labels()
    misses = [f"{label['id']} ({label['human']}): {label['answer']}" for label in found
              if heuristic(label) != (label["human"] == "flagged")]
    accuracy = 1 - len(misses) / len(found)
    assert accuracy >= MIN_ACCURACY, f"accuracy {accuracy:.3f} < {MIN_ACCURACY}:\n" + "\n".join(misses)


@pytest.mark.parametrize("row", adversarial_rows(), ids=lambda row: row.row_id)
def test_the_oracles_expected_answer_is_flagged_from_its_text_alone(row):
    answer = oracle_answer(row, None)
    assert metrics.premise_flagged(row, answer) == 1.0
    text_only = Answer(answer.text, answer.citations)  # without the oracle's own refused=True
    assert metrics.premise_flagged(row, text_only) == 1.0, answer.text
