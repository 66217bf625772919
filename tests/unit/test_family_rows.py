"""What the plugin checks of any family's rows, whatever its loader (a tester's third-party family)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pytest_researchqa.dataset import Dataset
from pytest_researchqa.families import Family


@dataclass
class Capital:
    row_id: str
    question: str
    question_type: str = "capital"
    domain: Optional[str] = None
    paper_id: Optional[str] = None


def load_with_a_repeat(path: Path) -> Dataset[Capital]:
    return Dataset(path, [Capital("a", "France?"), Capital("dup", "Spain?"), Capital("dup", "Chad?"),
                          Capital("b", "Peru?"), Capital("dup", "Fiji?")])


def test_a_row_id_a_loader_repeats_is_an_invalid_row_naming_the_first_and_the_others_run(tmp_path):
    family = Family(name="capitals", description="", question_types=("capital",), metrics=(), judge_dimensions=(),
                    protocol_module="capitals.protocol", loader=f"{__name__}:load_with_a_repeat")
    dataset = family.load(tmp_path / "caps.jsonl")
    assert [(r.row_id, r.question) for r in dataset.rows] == [("a", "France?"), ("dup", "Spain?"), ("b", "Peru?")]
    assert [str(p) for p in dataset.problems] == [
        f"{tmp_path / 'caps.jsonl'}, row 3, field 'row_id': duplicate of row 2 ('dup')",
        f"{tmp_path / 'caps.jsonl'}, row 5, field 'row_id': duplicate of row 2 ('dup')"]
    assert {p.row_id for p in dataset.problems} == {"dup"}


def load_with_a_stray_type(path: Path) -> Dataset[Capital]:
    return Dataset(path, [Capital("fr", "France?", "weird"), Capital("es", "Spain?")])


def test_a_row_of_a_question_type_the_family_does_not_declare_is_an_invalid_row_and_the_others_run(tmp_path):
    family = Family(name="capitals", description="", question_types=("capital", "trick"), metrics=(),
                    judge_dimensions=(), protocol_module="capitals.protocol", loader=f"{__name__}:load_with_a_stray_type")
    dataset = family.load(tmp_path / "caps.jsonl")
    assert [r.row_id for r in dataset.rows] == ["es"]
    assert [str(p) for p in dataset.problems] == [
        f"{tmp_path / 'caps.jsonl'}, row 1, field 'question_type': 'weird' is not one of the capitals family's "
        "question types (capital, trick)"]


def test_a_case_id_has_each_run_of_white_space_as_one_underscore_and_other_text_as_it_is():
    from types import SimpleNamespace

    from pytest_researchqa.families.citation import CITATION

    row = SimpleNamespace(question_type="lookup", row_id="paper 1\t\u00a0q\u20282")
    assert CITATION.case_id(row, "bm25") == "bm25-lookup-paper_1_q_2"
    assert CITATION.case_id(SimpleNamespace(question_type="lookup", row_id="r-1_é"), None) == "lookup-r-1_é"
