"""The official QASPER test split, imported as rows over text papers (needs ../shared)."""

from __future__ import annotations

import json

import pytest
from helpers import shared_path

from pytest_researchqa.families.citation.loaders import load_dataset
from pytest_researchqa.families.citation.matcher import MatchIndex
from pytest_researchqa.families.citation.qasper import FLOAT_PREFIX


@pytest.fixture(scope="module")
def qasper_file():
    return shared_path("external-datasets", "qasper-test-v0.3", "qasper-test-v0.3.json")


def test_every_question_becomes_a_valid_row(qasper_file):
    dataset = load_dataset(qasper_file)
    assert len(dataset.rows) == 1451 and dataset.problems == []
    assert len(dataset.inline_papers) == 416
    kinds = {r.question_type for r in dataset.rows}
    assert kinds == {"lookup", "comprehension", "multi_hop", "adversarial"}
    assert all(not r.expected_references for r in dataset.rows if r.is_adversarial)
    assert all(len(r.expected_references) >= 2 for r in dataset.rows if r.question_type == "multi_hop")


@pytest.mark.slow
def test_the_matcher_agrees_with_the_known_verbatim_evidence_count(qasper_file):
    """5,253 of 5,285 text evidence paragraphs occur verbatim (README of the split).

    The matcher grounds those and the ones that differ only in spacing; what it
    rejects is evidence too short to verify (one-word headings, "BIBREF33") and evidence
    that only points somewhere (a URL, "Chen et al. 2016"), which is no evidence.
    """
    raw = json.loads(qasper_file.read_text())
    dataset = load_dataset(qasper_file)
    total = verbatim = grounded = 0
    for paper_id, paper in raw.items():
        text = dataset.inline_papers[paper_id]
        index = MatchIndex(text)
        for qa in paper["qas"]:
            for answer in qa["answers"]:
                for evidence in answer["answer"]["evidence"]:
                    if evidence.startswith(FLOAT_PREFIX):
                        continue
                    total += 1
                    verbatim += evidence in text
                    found = index.match(evidence)
                    grounded += found.grounded
                    if evidence in text and not found.grounded:
                        assert found.verdict in ("too_short", "not_evidence"), evidence
    assert (total, verbatim) == (5285, 5253)
    assert grounded >= verbatim - 13
    # 5,253 verbatim + 21 whitespace variants of LaTeX, less 11 too short and 2 only references.
    assert grounded == 5272


@pytest.mark.slow
def test_the_oracle_covers_every_section_of_qasper(pytester, qasper_file, tmp_path):
    result = pytester.runpytest(
        f"--researchqa-dataset={qasper_file}", "--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}",
        "--researchqa-fail-under=section_coverage=1.0", "--researchqa-fail-under=citation_precision=1.0",
        "-p", "no:cacheprovider", "-q", "--no-header", )
    result.stdout.fnmatch_lines(["*oracle: section_coverage>=1: 1.000 ok*", "*oracle: citation_precision>=1: 1.000 ok*"])
    board = next(l for l in result.stdout.lines if l.startswith("| oracle"))
    print(board)
    assert result.ret == 0
