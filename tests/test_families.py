"""A benchmark family is a plug-in: a package of its own, found through the ``pytest_researchqa.families``
entry point and the ``pytest_researchqa_families`` hook (pytester; the family is tests/families/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import leaderboard_table

FAMILIES = Path(__file__).resolve().parent / "families"
TERMS = [{"id": "t1", "term": "entropy", "keywords": ["surprise", "bits"]},
         {"id": "t2", "term": "overfitting", "keywords": ["memorizes", "new data"]},
         {"id": "t3", "term": "dropout", "keywords": ["units", "training"]}]


@pytest.fixture
def glossary(pytester: pytest.Pytester) -> pytest.Pytester:
    """The family's folder on the path, as pip would install it: the package beside its dist-info."""
    pytester.syspathinsert(FAMILIES)
    pytester.path.joinpath("terms.jsonl").write_text("\n".join(json.dumps(t) for t in TERMS) + "\n")
    return pytester


def test_a_family_installed_as_its_own_package_runs_with_its_rows_test_system_and_metric(glossary, tmp_path):
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, xfailed=1)  # a row below its bar, in a run without a gate
    result.stdout.fnmatch_lines(["researchqa::test_definition[[]glossary_family.systems:dictionary-definition-t1[]] PASSED*",
                                 "*rows below their bar (1)*", "glossary_family.systems:dictionary · t3: missing keywords: *"])
    board = leaderboard_table(result)["glossary_family.systems:dictionary"]
    assert board["kw recall"].split()[0] == "0.667" and board["rows"] == "3"
    assert "measured no answer quality" not in result.stdout.str()


def test_its_question_types_are_markers_and_its_name_a_choice(glossary, tmp_path):
    common = ("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    marked = glossary.runpytest(*common, "--researchqa-family=glossary", "-m", "definition", "--strict-markers",
                                "--collect-only", "-q")
    assert len([line for line in marked.stdout.lines if line.startswith("researchqa::")]) == 3
    wrong = glossary.runpytest(*common, "--researchqa-family=glosary")
    wrong.stderr.fnmatch_lines(["*--researchqa-family: unknown benchmark family 'glosary'; "
                                "choose from citation, glossary, rubric"])


def test_without_its_package_the_family_is_unknown(pytester, tmp_path):
    result = pytester.runpytest("--researchqa-family=glossary", f"--researchqa-cache-dir={tmp_path}")
    result.stderr.fnmatch_lines(["*unknown benchmark family 'glossary'; choose from citation, rubric"])


def test_the_built_in_families_are_announced_through_the_same_entry_point():
    from importlib.metadata import entry_points

    from pytest_researchqa.families.registry import ENTRY_POINT_GROUP, available_families

    announced = {ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {"pytest_researchqa.families.citation", "pytest_researchqa.families.rubric"} <= announced
    assert list(available_families()) == ["citation", "rubric"]


def test_a_model_cannot_answer_a_family_that_declares_no_model_system_and_the_run_says_so(glossary, tmp_path):
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider", "--researchqa-model=openai/any")
    result.stderr.fnmatch_lines(["*researchqa: --researchqa-model: the glossary family declares no model system, "
                                 "so a model cannot answer its rows; name a system with --researchqa-system"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
