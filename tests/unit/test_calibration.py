"""Judge calibration (issue 21.7): agreement figures as seed 001 computes them, and the label file."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from pytest_researchqa.calibration import (
    Label,
    agreement,
    cohens_kappa,
    pairwise_credit,
    read_labels,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "datasets" / "sample" / "labels.jsonl"


def pair(human, judge=None, orders=None):
    return Label("pairwise", "q", None, judge, human, "a|b", tuple(orders) if orders else None)


@pytest.mark.parametrize(("label", "credit"), [
    (pair("a", "a"), 1.0), (pair("a", "b"), 0.0), (pair("a", "tie"), 0.5),   # a judge's tie: half right
    (pair("tie", "a"), None),                                                # a human tie is dropped
    (pair("a", orders=("a", "b")), 0.5),                                     # the two orders disagree
    (pair("a", orders=("a", "tie")), 0.75), (pair("b", orders=("tie", "b")), 0.75),
    (pair("a", orders=("a", "a")), 1.0),
])
def test_pairwise_credit_follows_the_papers_partial_credit_rules(label, credit):
    assert pairwise_credit(label) == credit


def test_coverage_agreement_reports_pearson_mean_difference_and_the_top_level_shares():
    human = [0, 1, 2, 3, 4, 4, 2, 1]
    judge = [0, 2, 2, 4, 4, 3, 1, 1]
    labels = [Label("coverage", f"r{n}", "s", j, h, "0") for n, (h, j) in enumerate(zip(human, judge))]
    found = agreement(labels, "coverage")
    assert found.figures["pearson"].value == pytest.approx(statistics.correlation(human, judge))
    assert found.figures["mean difference (judge - human)"].value == pytest.approx(
        (sum(judge) - sum(human)) / len(human))
    assert found.figures["human gives 4"].value == 0.25 and found.figures["judge gives 4"].value == 0.25
    low, high = found.figures["pearson"].low, found.figures["pearson"].high
    assert low is not None and high is not None and low <= found.figures["pearson"].value <= high
    assert found.confusion["4"]["3"] == 1 and sum(found.confusion["1"].values()) == 2


def test_a_judge_that_says_one_value_rates_against_the_people_or_loses_their_battles_is_flagged():
    """tester52 MED-5: a judge of pearson -1, one that always says 4, and a pairwise judge always wrong were
    reported as figures alone, exit 0, nothing said."""
    from pytest_researchqa.calibration import render

    human = [0, 1, 2, 3, 4, 4, 2, 1]
    agreeing = agreement([Label("coverage", f"r{n}", "s", h, h, "0") for n, h in enumerate(human)], "coverage")
    assert agreeing.warnings == [] and "warning" not in render([agreeing], [])
    always_four = agreement([Label("coverage", f"r{n}", "s", 4, h, "0") for n, h in enumerate(human)], "coverage")
    assert always_four.warnings == ["the judge gave every label 4: it cannot tell answers apart (no correlation "
                                    "can be computed)"]
    reversed_ = agreement([Label("judge", f"r{n}", "s", 6 - h, h, "0") for n, h in enumerate([1, 2, 3, 4, 5])],
                          "judge")
    assert [w.split(":")[0] for w in reversed_.warnings] == ["pearson -1.000", "kappa 0.000"], reversed_.warnings
    wrong = agreement([pair("a", "b"), pair("b", "a")], "pairwise")
    assert wrong.warnings[-1].startswith("accuracy 0.000: the judge prefers the answer the people did not")
    shown = render([always_four, reversed_, wrong], [])
    assert shown.count("gating on its scores is not advised") == 5, shown
    assert "the rubric paper's judges against its experts (seed 001, section 3.3): pearson 0.48 to 0.63" in shown


def test_a_misspelt_label_field_is_named_with_the_field_it_stands_for_and_a_field_of_ones_own_is_kept_apart(tmp_path):
    """tester52 MED-6: `item_idx` for `item_index` was read as a label without its item, counted nowhere, unnamed."""
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in (
        {"kind": "coverage", "row_id": "q1", "system": "s", "human": 3, "judge": 3, "item_idx": 0},
        {"kind": "coverage", "row_id": "q1", "system": "s", "human": 2, "judge": 3, "item_index": 1,
         "annotator": "ana"})) + "\n")
    labels, problems = read_labels(path)
    assert problems == [f"{path}, line 1: field 'item_idx' is not a label field: did you mean 'item_index'?"]
    assert [label.key for label in labels] == ["1"]


def test_cohens_kappa_is_one_for_agreement_and_zero_for_chance():
    assert cohens_kappa([("a", "a"), ("b", "b")], ("a", "b")) == 1.0
    assert cohens_kappa([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")], ("a", "b")) == 0.0


def test_a_bad_label_is_named_by_file_line_and_field_and_the_others_still_count(tmp_path):
    path = tmp_path / "labels.jsonl"
    good = {"schema": "researchqa-labels/1", "kind": "judge", "row_id": "r", "dimension": "factual_accuracy",
            "judge": 4, "human": 5}
    path.write_text("\n".join([json.dumps(good), "[1, 2]", json.dumps({**good, "human": 7}),
                               json.dumps({**good, "human": True}), "{not json"]) + "\n")
    labels, problems = read_labels(path)
    assert len(labels) == 1
    assert problems[0].startswith(f"{path}, line 2: a label is a JSON object")
    assert f"{path}, line 3: field 'human': 7 is not one of 1, 2, 3, 4, 5" in problems[1]
    assert "line 4: field 'human': True" in problems[2] and "line 5: not JSON" in problems[3]


def test_the_shipped_labels_still_hold_the_matchers_verdicts_and_calibrate_reads_them(capsys, tmp_path, monkeypatch):
    from pytest_researchqa.__main__ import main
    from pytest_researchqa.bundled import bundled_path
    from pytest_researchqa.families.citation.matcher import match_index
    from pytest_researchqa.papers import PaperStore

    labels, problems = read_labels(SHIPPED)
    assert not problems and len(labels) == 20
    index = match_index(PaperStore(bundled_path("datasets", "sample", "papers"), cache_dir=tmp_path).get("sample-edu", None))
    for line in SHIPPED.read_text().splitlines():
        entry = json.loads(line)
        found = index.match(entry["quote"])
        now = "grounded" if found.grounded else ("ungrounded" if found.is_evidence else "not_evidence")
        assert now == entry["judge"], f"the matcher's verdict on {entry['quote']!r} changed: relabel the set"
    assert main(["calibrate", str(SHIPPED)]) == 0
    out = capsys.readouterr().out
    assert "citation: 20 label(s)" in out and "accuracy: 0.950" in out and "kappa:" in out
    # A pip-installed user has no datasets/ folder: the docs' short name finds the set inside the package.
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "sample"]) == 0
    assert capsys.readouterr().out == out


def test_missing_judge_values_come_from_a_saved_runs_cached_verdicts(pytester, tmp_path, capsys):
    from pytest_researchqa.__main__ import main

    pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}", "--researchqa-system=bm25",
                       "-k", "edu-lookup-1", "--researchqa-save=judged")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"schema": "researchqa-labels/1", "kind": "citation", "system": "bm25",
                                  "row_id": "edu-lookup-1", "citation_index": 0, "human": "grounded"}) + "\n")
    runs = pytester.path / ".researchqa" / "runs"
    capsys.readouterr()
    assert main(["--runs", str(runs), "calibrate", str(labels), "--run", "judged", "--json"]) == 0
    [citation] = json.loads(capsys.readouterr().out)["agreement"]
    assert citation["labels"] == 1 and citation["figures"]["accuracy"]["value"] == 1.0


def test_labels_whose_row_or_system_is_not_in_the_run_are_named_apart_from_those_without_a_judge_value(
        pytester, tmp_path, capsys):
    """tester39 G10: a typo in a label's row id or system was lumped with "no judge value" and never named."""
    from pytest_researchqa.__main__ import main

    pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}", "--researchqa-system=bm25",
                       "-k", "edu-lookup-1", "--researchqa-save=judged")
    label = {"schema": "researchqa-labels/1", "kind": "citation", "system": "bm25", "row_id": "edu-lookup-1",
             "citation_index": 0, "human": "grounded"}
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(x) for x in (label, dict(label, row_id="nope-row"),
                                                          dict(label, system="bm52"))) + "\n")
    runs = pytester.path / ".researchqa" / "runs"
    capsys.readouterr()
    assert main(["--runs", str(runs), "calibrate", str(labels), "--run", "judged"]) == 0
    out = capsys.readouterr().out
    assert "citation: 3 label(s), 1 counted, 2 not counted (2 whose row or system is not in the run, below)" in out
    assert f"  not counted: {labels}, line 2: row 'nope-row' is not in the run" in out
    assert f"  not counted: {labels}, line 3: row 'edu-lookup-1' has no system 'bm52' in the run (it has 'bm25')" in out
    assert main(["--runs", str(runs), "calibrate", str(labels), "--run", "judged", "--json"]) == 0
    [citation] = json.loads(capsys.readouterr().out)["agreement"]
    assert citation["skipped"] == 2 and len(citation["not_in_run"]) == 2


def test_a_pairwise_label_reads_the_run_s_battle_in_its_own_orientation_and_a_split_verdict_as_a_tie():
    from pytest_researchqa.calibration import fill_from_run

    def label(a, b):
        return Label("pairwise", "q1", None, None, "a", f"{a}|{b}", None)

    # orders[0] shows first (x) as A, orders[1] shows second (y) as A: x preferred, then y preferred.
    battles = [{"row_id": "q1", "first": "x", "second": "y", "judge": "j", "orders": ["A", "A"], "score": 0.5}]
    same, turned = fill_from_run([label("x", "y"), label("y", "x")], [], battles)
    assert (same.judge, same.judge_orders) == ("tie", ("a", "b"))
    assert (turned.judge, turned.judge_orders) == ("tie", ("b", "a"))
    agreed = [{"row_id": "q1", "first": "x", "second": "y", "judge": "j", "orders": ["B", "A"], "score": 0.0}]
    [filled] = fill_from_run([label("x", "y")], [], agreed)
    assert (filled.judge, filled.judge_orders, filled.not_in_run) == ("b", ("b", "b"), None)
    [absent] = fill_from_run([label("x", "z")], [], agreed)
    assert absent.judge is None and "no judged battle of 'x' and 'z'" in (absent.not_in_run or "")
