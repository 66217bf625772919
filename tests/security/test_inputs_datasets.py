"""Hostile or broken dataset files: each fails with a clear message, and never takes other rows down."""

from __future__ import annotations

import json

import pytest

from pytest_researchqa.loaders import DatasetError, load_dataset

ROW = {"row_id": "r1", "paper_id": "p1", "question_type": "lookup", "question": "Q?", "expected_answer": "A",
       "expected_references": [{"section_label": "M", "alternatives": ["We enrolled 240 adults in 2021."]}]}


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for level in "bcdefghij":
        previous = chr(ord(level) - 1)
        bomb.append(f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, "
                    f"*{previous}, *{previous}, *{previous}, *{previous}]")
    path = tmp_path / "rows.yaml"
    path.write_text("\n".join(bomb) + "\nrows:\n  - row_id: *j\n")
    with pytest.raises(DatasetError, match="aliases .* are not allowed"):
        load_dataset(path)


def test_deep_nesting_in_one_jsonl_line_fails_that_row_only(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["r1"]
    assert "line 2" in str(dataset.problems[0]) and "nested too deeply" in str(dataset.problems[0])


def test_invalid_utf8_in_a_jsonl_line_is_an_error_naming_the_line_not_silently_replaced(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(json.dumps(ROW).encode() + b"\n" + json.dumps({**ROW, "row_id": "r2"}).encode()[:-2]
                     + b"\xff\xfe\"}\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["r1"]
    assert "line 2" in str(dataset.problems[0]) and "not UTF-8" in str(dataset.problems[0])


def test_invalid_utf8_in_yaml_is_a_dataset_error_naming_the_line(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_bytes(b"- row_id: r1\n  question: \xff\n")
    with pytest.raises(DatasetError, match="line 2: not UTF-8"):
        load_dataset(path)


def test_an_unknown_yaml_tag_fails_that_row_only(tmp_path):
    path = tmp_path / "rows.yaml"
    good = "\n".join(f"  {line}" for line in json.dumps(ROW).splitlines())
    path.write_text(f"- !!python/object:os.system {{}}\n-\n{good}\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["r1"]
    assert "row 1 (line 1)" in str(dataset.problems[0])


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_a_byte_order_mark_is_accepted(tmp_path, suffix):
    path = tmp_path / f"rows{suffix}"
    body = json.dumps([ROW]) if suffix != ".jsonl" else json.dumps(ROW)
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert [r.row_id for r in load_dataset(path).rows] == ["r1"]


@pytest.mark.parametrize(("row_id", "message"), [(True, "not true/false"), ("  ", "must not be blank")])
def test_a_boolean_or_blank_row_id_is_refused(tmp_path, row_id, message):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{**ROW, "row_id": row_id}]))
    dataset = load_dataset(path)
    assert not dataset.rows and message in str(dataset.problems[0])


def test_numeric_ids_stay_text(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{**ROW, "row_id": 7, "paper_id": 2741809807}]))
    [row] = load_dataset(path).rows
    assert (row.row_id, row.paper_id) == ("7", "2741809807")


def test_a_malformed_qasper_file_is_a_clear_error(tmp_path):
    path = tmp_path / "qasper.json"
    path.write_text(json.dumps({"1602.0": {"qas": [{"question": "q"}], "full_text": "not a list", "title": 3}}))
    with pytest.raises(DatasetError, match="QASPER"):
        load_dataset(path)
