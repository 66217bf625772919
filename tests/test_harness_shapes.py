"""The files the original harness writes load whole: both wrapper shapes and the flat JSONL.

The rows below are written by hand in the shapes the seed paper documents (Appendix B's
schema; its generator puts the sparse per-type fields at the top of a row, its download
script leaves ``metadata_*`` keys at the top of wrapper rows, and rows written before the
domain backfill have ``domain: null``), not produced by this plugin's own writer.
"""

from __future__ import annotations

import json
import warnings

import pytest

from pytest_researchqa.families.citation.loaders import DatasetWarning, load_dataset

EVIDENCE = [{"section_label": "Methods", "alternatives": ["We enrolled 240 adults from three clinics in 2021."]},
            {"section_label": "Results", "alternatives": ["Systolic blood pressure fell by 6 mmHg."]}]


def generator_rows() -> list[dict]:
    """As the harness's generator writes them: sparse fields at the top, domains not yet filled in."""
    return [
        {"row_id": "W1-lookup-0", "paper_id": "W1", "paper_doi": "10.1/x", "paper_s3_url": None, "domain": None,
         "question_type": "lookup", "question": "How many adults?", "expected_answer": "240",
         "expected_references": EVIDENCE[:1], "page_hint": 2, "section": "Methods",
         "chunk_description": "enrolment", "source_text": "We enrolled 240 adults from three clinics in 2021."},
        {"row_id": "W1-multihop-0", "paper_id": "W1", "domain": None, "question_type": "multi_hop",
         "question": "Did the effect justify the sample?", "expected_answer": "Yes",
         "expected_references": EVIDENCE, "judge_rubric": "integrates information from each required section",
         "required_sections": ["Methods", "Results"], "reasoning_chain": "Methods n=240; Results 6 mmHg."},
        {"row_id": "W1-adversarial-0", "paper_id": "W1", "domain": None, "question_type": "adversarial",
         "question": "What did the placebo arm show?", "expected_answer": "There was no placebo arm.",
         "expected_references": [], "expected_refusal": True,
         "false_premise": "The study has no placebo arm.", "judge_rubric": "identifies the false premise"},
    ]


def download_rows() -> list[dict]:
    """As the harness's download script leaves them: metadata_* keys at the top of wrapper rows."""
    return [
        {"row_id": "W2-multihop-0", "paper_id": "W2", "domain": "public health", "question_type": "multi_hop",
         "question": "Q?", "expected_answer": "A", "expected_references": EVIDENCE,
         "metadata_required_sections": ["Methods", "Results"], "metadata_reasoning_chain": "combine",
         "metadata_false_premise": None, "metadata_page_hint": None, "metadata_section": "",
         "judge_rubric": "r", "expected_refusal": None},
        {"row_id": "W2-adversarial-0", "paper_id": "W2", "domain": "public health", "question_type": "adversarial",
         "question": "Q?", "expected_answer": "No such arm.", "expected_references": [], "expected_refusal": False,
         "metadata_false_premise": "No placebo arm.", "metadata_required_sections": None},
    ]


@pytest.mark.parametrize("shape", ["generator wrapper", "download wrapper", "bare list"])
def test_every_row_of_the_harness_wrapper_files_loads(tmp_path, shape):
    rows = generator_rows() if shape != "download wrapper" else download_rows()
    data = rows if shape == "bare list" else {"version": "2026-03-01", "rows": rows}
    path = tmp_path / "eval_dataset.json"
    path.write_text(json.dumps(data))
    dataset = load_dataset(path)
    assert not dataset.problems, [str(p) for p in dataset.problems]
    assert [r.row_id for r in dataset.rows] == [r["row_id"] for r in rows]


def test_top_level_sparse_fields_land_in_the_rows_metadata(tmp_path):
    path = tmp_path / "eval_dataset.json"
    path.write_text(json.dumps({"rows": generator_rows() + download_rows()}))
    rows = {r.row_id: r for r in load_dataset(path).rows}
    assert rows["W1-multihop-0"].metadata.required_sections == ["Methods", "Results"]
    assert rows["W1-multihop-0"].metadata.reasoning_chain.startswith("Methods n=240")
    assert rows["W1-adversarial-0"].metadata.false_premise == "The study has no placebo arm."
    assert rows["W1-lookup-0"].metadata.page_hint == 2
    assert rows["W2-multihop-0"].metadata.required_sections == ["Methods", "Results"]
    assert rows["W2-adversarial-0"].expected_refusal is False


def test_a_null_domain_is_read_as_unknown(tmp_path):
    path = tmp_path / "eval_dataset.json"
    path.write_text(json.dumps(generator_rows()))
    assert {r.domain for r in load_dataset(path).rows} == {"unknown"}


def test_the_flat_jsonl_with_stringified_evidence_loads(tmp_path):
    flat = []
    for row in download_rows():
        row = dict(row)
        row["expected_references"] = json.dumps(row["expected_references"])
        flat.append(row)
    path = tmp_path / "eval_dataset.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in flat) + "\n")
    dataset = load_dataset(path)
    assert not dataset.problems and len(dataset.rows) == 2


def test_a_key_the_schema_does_not_know_is_reported_once_and_the_row_still_loads(tmp_path):
    rows = generator_rows()
    rows[0]["paper_title"] = "A title"
    rows[1]["paper_title"] = "Another"
    rows[2]["metadata_generator_model"] = "gemini"
    path = tmp_path / "eval_dataset.json"
    path.write_text(json.dumps(rows))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = load_dataset(path)
    assert len(dataset.rows) == 3 and not dataset.problems
    [warning] = [w for w in caught if issubclass(w.category, DatasetWarning)]
    assert "'paper_title' (first at row 1)" in str(warning.message)
    assert "'metadata_generator_model'" in str(warning.message)
