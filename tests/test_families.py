"""A benchmark family is a plug-in: a package of its own, found through the ``pytest_researchqa.families``
entry point and the ``pytest_researchqa_families`` hook (pytester; the family is tests/families/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import leaderboard_table, run_pytest
from llm_server import prompt_of

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
    result.stdout.fnmatch_lines(["*bootstrap interval over queries (each query resampled*over only 3 queries*"])
    assert "domain" not in leaderboard_tables_titles(result), "no row has a domain: no table of '?'"


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


def test_its_own_model_system_answers_and_its_own_judge_kind_grades_with_its_own_prompts(glossary, tmp_path, server):
    result = run_pytest(glossary, "--researchqa-dataset=terms.jsonl", "--researchqa-model=openai/good",
                        "--researchqa-judge=openai/judge-a", cache=tmp_path, server=server)
    result.assert_outcomes(xfailed=3)  # the model's definitions use no keyword: each row below its bar
    prompts = [prompt_of(request) for request in server.requests]
    assert sum("FIELD: glossary" in p for p in prompts) == 3, "the family's own task prompt, once a row"
    assert sum('defines "entropy"' in p for p in prompts) == 1, "the family's own judge prompt"
    board = leaderboard_table(result)["openai/good"]
    assert board["kw recall"].split()[0] == "0.000" and board["accuracy"].split()[0] not in ("—", "")


def leaderboard_tables_titles(result: pytest.RunResult) -> list[str]:
    return [line.split("|")[2].strip() for line in result.stdout.lines if line.startswith("| system ")]


PLAIN_FAMILY = """
import pytest
from pytest_researchqa.families import Family, MetricSpec


@pytest.hookimpl
def pytest_researchqa_families():
    declared = dict(name="plain", description="rows a model cannot answer", question_types=("definition",),
                    metrics=(MetricSpec("keyword_recall", "kw recall"),), judge_dimensions=(),
                    protocol_module="glossary_family.protocol", loader="glossary_family.rows:load_terms",
                    uses_papers=False, default_system="glossary_family.systems:dictionary")
    return [Family(**{**declared, **{extra}})]
"""


@pytest.mark.parametrize(("extra", "option", "message"), [
    ("{}", "--researchqa-model=openai/any", "--researchqa-model: the plain family declares no model system, so a "
                                            "model cannot answer its rows; name a system with --researchqa-system"),
    ("{}", "--researchqa-judge=openai/any", "--researchqa-judge: the plain family declares no judge kind, so a "
                                            "model cannot grade its rows; its own test records its metrics"),
    ("dict(judge_kinds=('ghost',), judges='glossary_family.model:KINDS')", "--researchqa-judge=openai/any",
     "the plain family's judge_kinds name 'ghost', which its judges table (glossary_family.model:KINDS) does not "
     "declare"),
    ("dict(model_system='glossary_family.model:NoSuchSystem')", "--researchqa-model=openai/any",
     "the plain family's model_system (glossary_family.model:NoSuchSystem) cannot be loaded: AttributeError: *"),
    ("dict(sample_dataset=())", "", "the plain family bundles no sample dataset: name a dataset file with "
                                    "--researchqa-dataset"),
    ("dict(loader='glossary_family.rows:TermRow')", "--researchqa-dataset=terms.jsonl",
     "the plain family's loader (glossary_family.rows:TermRow) could not read terms.jsonl: TypeError: *"),
])
def test_a_family_declaration_a_run_cannot_use_is_a_usage_error_naming_the_family_and_field(
        glossary, tmp_path, extra, option, message):
    glossary.makeconftest(PLAIN_FAMILY.replace("{extra}", extra))
    dataset = [option] if option.startswith("--researchqa-dataset") else ["--researchqa-dataset=terms.jsonl", option]
    result = glossary.runpytest("--researchqa-family=plain", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider", *[a for a in dataset if a and option])
    result.stderr.fnmatch_lines([f"*researchqa: {message}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_judge_kinds_come_from_the_families_declarations_and_a_name_is_one_familys(monkeypatch):
    import types
    from dataclasses import replace

    from pytest_researchqa.families.registry import FamilyError, available_families, judge_kinds
    from pytest_researchqa.llm.judges import ModelJudge

    citation, rubric = available_families()["citation"], available_families()["rubric"]
    assert set(judge_kinds([citation])) == {"rubric", "claims", "premise"}
    assert set(judge_kinds([rubric])) == {"coverage", "pairwise", "coverage-paper", "pairwise-paper"}
    clashing = types.ModuleType("clashing_kinds")
    clashing.KINDS = {"rubric": type("OtherRubricJudge", (ModelJudge,), {"kind": "rubric"})}  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "clashing_kinds", clashing)
    with pytest.raises(FamilyError, match="two families declare a judge kind named 'rubric'"):
        judge_kinds([citation, replace(citation, name="clash", judges="clashing_kinds:KINDS")])
