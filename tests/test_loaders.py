"""Dataset loaders: three shapes, precise errors, nothing lost."""

from __future__ import annotations

import json

import pytest
from helpers import SAMPLE

from pytest_researchqa.families.citation.loaders import DatasetError, load_dataset

GOOD = {
    "row_id": "r1",
    "paper_id": "W2741809807",
    "paper_doi": "10.1000/xyz",
    "paper_s3_url": "https://example.org/W2741809807.pdf",
    "domain": "education",
    "question_type": "multi_hop",
    "question": "Compare the two results.",
    "expected_answer": "They differ.",
    "expected_references": [
        {"section_label": "Results", "alternatives": ["First passage.", "Second passage."]},
        {"section_label": "Discussion", "alternatives": ["Third passage."]},
    ],
    "judge_rubric": "Integrates information from each required section.",
    "expected_refusal": None,
}


def test_the_published_flat_jsonl_reads_metadata_prefixes(tmp_path):
    flat = dict(GOOD, metadata_required_sections=["Results", "Discussion"], metadata_reasoning_chain="A then B",
                metadata_page_hint=None, metadata_false_premise="")
    path = tmp_path / "eval_dataset.jsonl"
    path.write_text(json.dumps(flat) + "\n\n")
    dataset = load_dataset(path)
    row = dataset.rows[0]
    assert dataset.problems == []
    assert row.metadata.required_sections == ["Results", "Discussion"]
    assert row.metadata.reasoning_chain == "A then B"
    assert row.metadata.false_premise is None
    assert [s.section_label for s in row.expected_references] == ["Results", "Discussion"]


def test_the_wrapper_json_reads_nested_metadata(tmp_path):
    path = tmp_path / "eval_dataset.json"
    path.write_text(json.dumps({"version": "2", "rows": [dict(GOOD, metadata={"page_hint": 4})]}))
    row = load_dataset(path).rows[0]
    assert row.metadata.page_hint == 4 and row.paper_id == "W2741809807"


def test_hand_written_yaml_loads_the_bundled_sample():
    dataset = load_dataset(SAMPLE / "sample.yaml")
    assert len(dataset.rows) == 27 and dataset.problems == []
    assert {r.question_type for r in dataset.rows} == {"lookup", "comprehension", "multi_hop", "adversarial"}
    multi_hop = [r for r in dataset.rows if r.question_type == "multi_hop"]
    assert {len(r.expected_references) for r in multi_hop} == {2, 3}
    adversarial = [r for r in dataset.rows if r.is_adversarial]
    assert any(r.expected_references for r in adversarial) and any(not r.expected_references for r in adversarial)


def test_a_bad_jsonl_row_names_file_line_and_field_and_the_rest_load(tmp_path):
    path = tmp_path / "rows.jsonl"
    lines = [GOOD, dict(GOOD, row_id="r2", question_type="essay"), dict(GOOD, row_id="r3", metadata_page_hint="four"),
             dict(GOOD, row_id="r4")]
    path.write_text("\n".join(json.dumps(l) for l in lines) + "\n{broken\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["r1", "r4"]
    messages = [str(p) for p in dataset.problems]
    assert messages[0].startswith(f"{path}, line 2, field 'question_type'")
    assert messages[1].startswith(f"{path}, line 3, field 'metadata_page_hint'")
    assert messages[2].startswith(f"{path}, line 5, field '(row)': not valid JSON")


def test_a_bad_yaml_row_names_its_index_and_line(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_text(
        "rows:\n"
        "  - {row_id: a, paper_id: p, question_type: lookup, question: 'Q?'}\n"
        "  - row_id: b\n"
        "    paper_id: p\n"
        "    question_type: lookup\n"
        "    question: Q?\n"
        "    expected_references: [{section_label: Results, alternatives: []}]\n"
    )
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["a"]
    assert str(dataset.problems[0]).startswith(f"{path}, row 2 (line 3), field 'expected_references.0.alternatives'")


def test_a_row_with_several_invalid_fields_names_each_of_them_in_its_one_problem(tmp_path):
    """tester41 T7: only the first field was named, then "(and 2 more)": each re-run showed the next one."""
    path = tmp_path / "rows.yaml"
    path.write_text(
        "rows:\n"
        "  - row_id: b\n"
        "    paper_id: p\n"
        "    question_type: lookup\n"
        "    question: yes\n"
        "    expected_answer: no\n"
        "    expected_references: [{section_label: Results, alternatives: [412]}]\n"
    )
    [problem] = load_dataset(path).problems
    yaml_bool = " (YAML read {} here: quote a yes/no/on/off meant as text)"
    assert str(problem) == (
        f"{path}, row 1 (line 2), field 'question': Input should be a valid string{yaml_bool.format('true')}; "
        f"also field 'expected_answer': Input should be a valid string{yaml_bool.format('false')}; "
        "field 'expected_references.0.alternatives.0': Input should be a valid string")


def test_multi_hop_rows_need_two_sections(tmp_path):
    path = tmp_path / "rows.json"
    one = dict(GOOD, expected_references=GOOD["expected_references"][:1])
    path.write_text(json.dumps([one]))
    assert "at least two sections" in str(load_dataset(path).problems[0])


def test_duplicate_row_ids_are_reported_not_silently_merged(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([GOOD, GOOD]))
    dataset = load_dataset(path)
    assert len(dataset.rows) == 1
    assert "row 2, field 'row_id': duplicate of row 1" in str(dataset.problems[0])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("rows.json", "{not json", "line 1: not valid JSON"),
        ("rows.yaml", "rows:\n  - a: [unclosed\n", "not valid YAML"),
        ("rows.csv", "a,b", "unknown dataset format"),
        ("rows.json", '{"version": 1}', "expected"),
    ],
)
def test_an_unreadable_file_is_one_clear_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DatasetError, match=message) as error:
        load_dataset(path)
    assert str(path) in str(error.value)


def test_a_json_file_holding_json_lines_as_hugging_face_writes_it_loads_as_json_lines(tmp_path):
    """tester39 G9: Dataset.to_json() writes JSON Lines under .json; it read "line 2: not valid JSON: Extra data"."""
    good = {"row_id": "a", "paper_id": "p", "question_type": "lookup", "question": "Q?"}
    bad = {"row_id": "b", "paper_id": "p", "question_type": "trivia", "question": "Q?"}
    path = tmp_path / "hf.json"
    path.write_text("\n".join(json.dumps(r) for r in (good, dict(good, row_id="c"), bad)) + "\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["a", "c"]
    assert str(dataset.problems[0]).startswith(f"{path}, line 3, field 'question_type'")
    from pytest_researchqa.dataset_files import file_records

    assert [where for where, _ in file_records(path)] == ["line 1", "line 2", "line 3"], "any family's reader too"
    one = tmp_path / "one.json"
    one.write_text(json.dumps(good) + "\n")  # one object: JSON, the wrapper shape's error, with how to fix it
    with pytest.raises(DatasetError, match=r"found an object with keys 'row_id'.* \(a single row\? put it in a list, "
                                           r"or name the file \.jsonl\)"):
        load_dataset(one)


def test_a_yaml_stream_of_several_documents_is_refused_with_what_to_write_instead(tmp_path):
    import yaml

    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump_all([{"row_id": "a"}, {"row_id": "b"}]))
    with pytest.raises(DatasetError, match=r"not valid YAML: .*another document \(several YAML documents, '---' "
                                           r"between them, as yaml.safe_dump_all writes: a dataset is one document "
                                           r"holding a list of rows, as yaml.safe_dump\(rows\) writes\)"):
        load_dataset(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DatasetError, match="dataset file not found"):
        load_dataset(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapper", "bare-list"])
def test_a_bad_json_row_names_its_position_from_one_and_its_line(tmp_path, wrapped):
    good = {"row_id": "a", "paper_id": "p", "question_type": "lookup", "question": "Q?"}
    bad = {"row_id": "b", "paper_id": "p", "question_type": "trivia", "question": "Q?"}
    rows = json.dumps([good, bad], indent=2)
    text = json.dumps({"version": "1", "note": {"rows": []}}, indent=2)[:-2] + ',\n  "rows": ' + rows + "\n}" if wrapped else rows
    path = tmp_path / "rows.json"
    path.write_text(text)
    dataset = load_dataset(path)
    line = text.splitlines().index(next(l for l in text.splitlines() if '"b"' in l)) + 1 - 1  # the row opens a line above its id
    assert str(dataset.problems[0]).startswith(f"{path}, row 2 (line {line}), field 'question_type'")


def test_rows_of_one_file_share_their_field_sets_and_equal_metadata_and_read_as_before(tmp_path):
    # Issue 24 item 2: fewer objects a row for Python's collector to walk; what a row says is unchanged.
    lines = []
    for number in range(3):
        flat = {**GOOD, "row_id": f"r{number}", "expected_references": json.dumps(GOOD["expected_references"]),
                "metadata_section": "Results", "metadata_page_hint": None}
        del flat["paper_doi"]
        lines.append(json.dumps(flat))
    lines.append(json.dumps({**GOOD, "row_id": "r9", "metadata": {"section": "Results", "page_hint": None}}))
    (tmp_path / "rows.jsonl").write_text("\n".join(lines[:3]) + "\n")
    (tmp_path / "rows.json").write_text(json.dumps({"rows": [json.loads(lines[3])]}))
    first, second, third = load_dataset(tmp_path / "rows.jsonl").rows
    [given_null] = load_dataset(tmp_path / "rows.json").rows

    assert first.model_fields_set is second.model_fields_set is third.model_fields_set
    assert first.metadata is second.metadata is third.metadata
    assert first.expected_references[0].model_fields_set is second.expected_references[1].model_fields_set
    # page_hint given as null is a field set: not the flat rows' metadata, which dropped the null
    assert given_null.metadata == first.metadata
    assert given_null.metadata.model_fields_set == {"section", "page_hint"} != first.metadata.model_fields_set
    assert first.model_dump(exclude_unset=True)["metadata"] == {"section": "Results"}
    copied = first.model_copy(update={"paper_doi": "10.1/2"})
    assert "paper_doi" in copied.model_fields_set and "paper_doi" not in second.model_fields_set
    assert first == second.model_copy(update={"row_id": "r0"})


def test_a_dataset_whose_every_row_is_invalid_says_so_and_not_that_no_test_asked_for_an_answer(pytester, tmp_path):
    """tester42 N6: the run's notes said 'no collected test asks for an answer: no system ran'."""
    (pytester.path / "bad.jsonl").write_text('{"row_id": 5}\n')
    result = pytester.runpytest("-p", "no:cacheprovider", "--researchqa-dataset=bad.jsonl",
                                "--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}")
    result.stdout.fnmatch_lines(["*invalid row: bad.jsonl, line 1, field *"])
    assert "no collected test asks for an answer" not in result.stdout.str()


def test_a_yaml_expected_answer_written_as_a_number_is_its_text(tmp_path):
    """tester64 LOW: `expected_answer: 412` was refused ('Input should be a valid string'), where a system's 412 is
    read as its text; true/false stay refused with the YAML hint."""
    path = tmp_path / "rows.yaml"
    path.write_text("rows:\n"
                    "  - {row_id: a, paper_id: p, question_type: lookup, question: 'How many?', expected_answer: 412}\n"
                    "  - {row_id: b, paper_id: p, question_type: lookup, question: 'What share?', expected_answer: 0.25}\n"
                    "  - {row_id: c, paper_id: p, question_type: lookup, question: 'Is it?', expected_answer: no}\n")
    dataset = load_dataset(path)
    assert [(r.row_id, r.expected_answer) for r in dataset.rows] == [("a", "412"), ("b", "0.25")]
    assert "YAML read false here" in str(dataset.problems[0])
