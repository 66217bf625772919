"""What the citation family keeps on a record's details is what its TypedDicts declare (``CitationDetails``,
``row_view.CitationView``): every key it writes is declared, with a value of the declared type, as written and
as a saved run reads it back, so the readers mypy checks against those types read what is there."""

from __future__ import annotations

import json
from concurrent.futures import Future
from contextlib import suppress
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

from pytest_researchqa import Answer, Row, check_answer
from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.families.citation.details import CitationDetails
from pytest_researchqa.records import Recorder, RowRecord
from pytest_researchqa.row_view import answer_view

PAPER = ("Methods. We enrolled 240 adults from three clinics in 2021. Each participant attended twelve weekly "
         "sessions. Results. Systolic blood pressure fell by 6 mmHg in the intervention group. Diastolic pressure "
         "did not change. Discussion. The effect is modest but clinically relevant for people with borderline "
         "hypertension.")
CITED = ["Systolic blood pressure fell by 6 mmHg in the intervention group.",  # grounded: the paper around it
         "Systolic blood pressure fell by 9 mmHg in the intervention group.",  # altered: where it departs
         "We surveyed 900 children from one school in 1999 about their diets.",  # not found: the nearest passage
         "Methods."]  # too short to verify
SECTIONS = [{"section_label": "Results", "alternatives": [CITED[0]]},
            {"section_label": "Discussion", "alternatives": ["The effect is modest but clinically relevant."]}]


def problems(value: Any, kind: Any, where: str = "details") -> list[str]:
    """Where ``value`` is not of the type ``kind`` (a TypedDict, list, Optional or plain type) says it is."""
    if is_typeddict(kind):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not an object"]
        declared = get_type_hints(kind)
        found = [f"{where}.{key}: not declared" for key in value if key not in declared]
        found += [f"{where}.{key}: missing" for key in kind.__required_keys__ if key not in value]
        return found + [p for key, item in value.items() if key in declared
                        for p in problems(item, declared[key], f"{where}.{key}")]
    if get_origin(kind) is Union:
        fits = any(not problems(value, option, where) for option in get_args(kind))
        return [] if fits else [f"{where}: {value!r} is none of {kind}"]
    if get_origin(kind) is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        (item,) = get_args(kind)
        return [p for n, each in enumerate(value) for p in problems(each, item, f"{where}[{n}]")]
    if kind is type(None):
        fits = value is None
    elif kind in (int, float):  # JSON's numbers: an int is a float too, true is neither
        fits = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    else:
        fits = isinstance(value, kind)
    return [] if fits else [f"{where}: {value!r} is not {kind.__name__}"]


class Judge:
    """A premise judge that says the premise was flagged, without a model."""

    name = "openai/judge-yes"

    def subject(self, row: Row, answer: Answer) -> tuple[str, str, str]:
        return row.question, row.metadata.false_premise or "", answer.text

    def submit(self, *subject: str) -> Future[dict[str, Any]]:
        done: Future[dict[str, Any]] = Future()
        done.set_result({"scores": {"flagged": True, "reason": "It says the study had no placebo arm."}})
        return done


def graded(question_type: str) -> RowRecord:
    """A row's record as its setup and the default test leave it: the answer's view, then what check_answer adds."""
    row = Row(row_id="r", paper_id="p", question_type=question_type, question="What fell?",
              expected_references=SECTIONS if question_type != "adversarial" else [],
              metadata={"false_premise": "The study had a placebo arm."})
    answer = Answer("Blood pressure fell.", CITED)
    record = RowRecord(row_id="r")
    record.details.update(answer_view(row, answer))
    with suppress(AssertionError):  # below its bar: what it recorded is what is looked at
        check_answer(answer, row, PAPER, recorder=Recorder(record, CITATION.metric_names),
                     premise_judge=Judge())
    return record


def test_every_detail_the_citation_family_writes_is_declared_with_its_type():
    written = {}
    for question_type in ("multi_hop", "adversarial"):
        details = graded(question_type).details
        assert problems(details, CitationDetails) == [], question_type
        written |= dict.fromkeys(details)
        written |= dict.fromkeys(key for view in details["citations"] for key in view)
    # Every key the types declare was written here at least once: none of them goes unchecked.
    assert {"sections", "premise_judge", "context", "explain", "departure", "nearest"} <= set(written)


def test_the_details_a_saved_run_reads_back_are_the_declared_types_too():
    for question_type in ("multi_hop", "adversarial"):
        saved = json.loads(json.dumps(graded(question_type).to_plain()))
        assert problems(RowRecord.from_plain(saved).details, CitationDetails) == [], question_type


def test_a_detail_of_the_wrong_type_or_an_undeclared_one_is_named():
    details = graded("multi_hop").details
    details["citations"][0]["pages"] = (1,)
    details["citations"][1]["said"] = "x"
    del details["sections"][0]["covered"]
    assert problems(details, CitationDetails) == [
        "details.citations[0].pages: tuple, not a list", "details.citations[1].said: not declared",
        "details.sections[0].covered: missing"]
