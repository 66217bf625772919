"""Hostile or broken dataset files: each fails with a clear message, and never takes other rows down."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_researchqa.families.citation.loaders import DatasetError, load_dataset

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


@pytest.mark.parametrize(("value", "problem"), [("2018-13-45", "month must be in 1..12"),
                                              ("!!int many", "invalid literal for int()")])
def test_a_yaml_value_no_type_can_hold_fails_that_row_only(tmp_path, value, problem):
    """YAML reads 2018-13-45 as a date: the row is invalid, not the whole file (it was a usage error)."""
    path = tmp_path / "rows.yaml"
    good = "\n".join(f"  {line}" for line in json.dumps(ROW).splitlines())
    path.write_text(f"- row_id: r0\n  date: {value}\n-\n{good}\n")
    dataset = load_dataset(path)
    assert [r.row_id for r in dataset.rows] == ["r1"]
    assert "row 1 (line 1)" in str(dataset.problems[0]) and problem in str(dataset.problems[0])


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


@pytest.mark.slow
def test_hostile_row_ids_and_domains_stay_text_in_the_terminal_markdown_and_figures(pytester, tmp_path):
    """Issue 22 items 4, 5, 10, 15: a NUL, escape sequences, HTML, an image, a mention and a
    right-to-left override in a dataset's ids and domains: the run finishes and every medium shows them as text."""
    import json
    import shutil
    import xml.dom.minidom

    import cmarkgfm
    import yaml

    from pytest_researchqa.bundled import bundled_path

    rows = yaml.safe_load(bundled_path("datasets", "sample", "sample.yaml").read_text())["rows"][:6]
    rows[0]["domain"] = "edu\x00cation \x1b[2J\x1b]0;pwned\x07 <img src=x onerror=alert(1)> ![i](http://x/i.png) @octocat"
    rows[1]["row_id"] = "id\u202egnp.exe\r## researchqa \u2014 gates passed \u2705"
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copytree(bundled_path("datasets", "sample", "papers"), pytester.path / "papers")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}", "--researchqa-dataset=rows.jsonl",
        "--researchqa-system=bm25", "--researchqa-markdown=report.md", "--researchqa-plots=figures")
    assert result.ret == 0, result.stdout.str()[-3000:]
    terminal = result.stdout.str()
    assert "\x1b" not in terminal and "\x00" not in terminal and "\u202e" not in terminal
    assert "edu\\x00cation \\x1b[2J" in terminal, "shown, as escapes"
    html = cmarkgfm.github_flavored_markdown_to_html((pytester.path / "report.md").read_text())
    assert "<img" not in html and "<h2>researchqa \u2014 gates passed" not in html
    assert "@octocat" not in html.replace("@\u2060", "@ "), "no mention is made"
    for figure in (pytester.path / "figures").glob("*.svg"):
        xml.dom.minidom.parse(str(figure))  # valid XML
