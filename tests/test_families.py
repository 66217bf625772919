"""A benchmark family is a plug-in: a package of its own, found through the ``pytest_researchqa.families``
entry point and the ``pytest_researchqa_families`` hook (pytester; the family is tests/families/)."""

from __future__ import annotations

import functools
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


@pytest.mark.slow
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
    # tester38 F5: a family without papers saved no question or answer, so its HTML row pages showed neither.
    [rows] = glossary.path.glob(".researchqa/runs/*/rows.jsonl")
    saved = {r["row_id"]: r["details"] for r in map(json.loads, rows.read_text().splitlines())}
    assert saved["t1"]["question"] == "What is entropy?"
    assert saved["t1"]["answer"] == "the expected surprise of a random variable, in bits"


def test_a_system_the_family_names_by_a_word_answers_its_rows(glossary, tmp_path):
    """A family ships systems of its own (``Family.systems``), as the built-in families do oracle and bm25."""
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", "--researchqa-system=glossary-echo",
                                f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, xfailed=1)
    result.stdout.fnmatch_lines(["researchqa::test_definition[[]glossary-echo-definition-t1[]] PASSED*"])
    [rows] = glossary.path.glob(".researchqa/runs/*/rows.jsonl")
    saved = {r["row_id"]: r["details"] for r in map(json.loads, rows.read_text().splitlines())}
    assert saved["t1"]["answer"] == "entropy: the expected surprise of a random variable, in bits"


def test_its_question_types_are_markers_and_its_name_a_choice(glossary, tmp_path):
    common = ("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    marked = glossary.runpytest(*common, "--researchqa-family=glossary", "-m", "definition", "--strict-markers",
                                "--collect-only", "-q")
    assert len([line for line in marked.stdout.lines if line.startswith("researchqa::")]) == 3
    wrong = glossary.runpytest(*common, "--researchqa-family=glosary")
    wrong.stderr.fnmatch_lines(["*--researchqa-family: unknown benchmark family 'glosary'; "
                                "choose from citation, glossary, rubric"])


def test_under_strict_markers_a_projects_own_test_marked_with_its_type_is_accepted_without_the_benchmark(glossary):
    glossary.makepyfile(test_words="import pytest\n\n@pytest.mark.definition\ndef test_word():\n    pass\n")
    result = glossary.runpytest("--strict-markers", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_row_of_a_type_the_family_does_not_declare_errors_alone_even_under_strict_markers(glossary, tmp_path):
    stray = [*TERMS, {"id": "t4", "term": "kernel", "keywords": ["similarity"], "type": "weird"}]
    glossary.path.joinpath("terms.jsonl").write_text("\n".join(json.dumps(t) for t in stray) + "\n")
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}",
                                "--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, xfailed=1, errors=1)
    result.stdout.fnmatch_lines(["*terms.jsonl, row 4, field 'question_type': 'weird' is not one of the glossary "
                                 "family's question types (definition)*"])


def test_without_its_package_the_family_is_unknown(pytester, tmp_path):
    result = pytester.runpytest("--researchqa-family=glossary", f"--researchqa-cache-dir={tmp_path}")
    result.stderr.fnmatch_lines(["*unknown benchmark family 'glossary'; choose from citation, rubric"])


def test_the_built_in_families_are_announced_through_the_same_entry_point():
    from importlib.metadata import entry_points

    from pytest_researchqa.families.registry import ENTRY_POINT_GROUP, available_families

    announced = {ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {"pytest_researchqa.families.citation", "pytest_researchqa.families.rubric"} <= announced
    assert list(available_families()) == ["citation", "rubric"]


@pytest.mark.slow
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
    ("dict(renderer='glossary_family.rows:no_board')", "--researchqa-dataset=terms.jsonl",
     "the plain family's renderer (glossary_family.rows:no_board) cannot be loaded: AttributeError: *"),
    # Typed by families.protocols: a target that loads but cannot be called as its field is said before any row.
    ("dict(after_answers='glossary_family.systems:dictionary')", "--researchqa-dataset=terms.jsonl",
     "the plain family's after_answers (glossary_family.systems:dictionary) cannot be called as (records, "
     "services, settings, say): too many positional arguments"),
    ("dict(renderer='glossary_family.systems:DEFINITIONS')", "--researchqa-dataset=terms.jsonl",
     "the plain family's renderer (glossary_family.systems:DEFINITIONS) is a dict, not a callable"),
    ("dict(systems=(('lookup', 'glossary_family.rows:load_terms'),))", "--researchqa-system=lookup",
     "the plain family's system 'lookup' (glossary_family.rows:load_terms) cannot be called as (row, paper): too "
     "many positional arguments"),
    # tester61 HIGH-1: a named system that does not load was an INTERNALERROR (exit 3).
    ("dict(systems=(('ghost', 'glossary_family.systems:nope'),))", "--researchqa-system=ghost",
     "the plain family's system 'ghost' (glossary_family.systems:nope) cannot be loaded: AttributeError: *"),
    # tester61 MED-6: a family naming no default system ran bm25 (the citation family's), refused with bm25 offered.
    ("dict(default_system='')", "--researchqa-dataset=terms.jsonl",
     "the plain family declares no default system (Family.default_system): name one with --researchqa-system, or "
     "a model with --researchqa-model"),
    # tester61 MED-4: a before_rows that raised was an INTERNALERROR.
    ("dict(before_rows='glossary_family.systems:failing_check')", "--researchqa-dataset=terms.jsonl",
     "the plain family's before_rows (glossary_family.systems:failing_check) raised ValueError: no rows today"),
    # tester62 MED-2: an async step behind a decorator passes the shape check; its coroutine is no refusal.
    ("dict(before_rows='glossary_family.systems:wrapped_async_check')", "--researchqa-dataset=terms.jsonl",
     "the plain family's before_rows (glossary_family.systems:wrapped_async_check) returned a coroutine: it is "
     "async (async def), perhaps behind a decorator; *"),
    # tester61 MED-3: an async step passed the check and was never awaited (the run ended green without it).
    ("dict(after_answers='glossary_family.systems:async_step')", "--researchqa-dataset=terms.jsonl",
     "the plain family's after_answers (glossary_family.systems:async_step) is async (async def): the plugin "
     "calls it and uses what it returns, so it must be a plain def"),
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


BROKEN = Path(__file__).resolve().parent / "broken_families"


@pytest.fixture
def broken(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    """A family plugin installed as pip would (tests/broken_families/), broken as ``BROKEN_FAMILY`` says."""
    pytester.syspathinsert(BROKEN)
    pytester.path.joinpath("shards.jsonl").write_text('{"id": "s1", "shard": "one"}\n{"id": "s2", "shard": "two"}\n')
    monkeypatch.setenv("RESEARCHQA_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


@pytest.mark.parametrize(("mode", "problem"), [
    ("import_error", "failed to load: ImportError: a dependency of broken_family is missing"),
    ("hook_raises", "has a pytest_researchqa_families hook that raised RuntimeError: the hook of broken_family exploded"),
    ("not_family", "has a pytest_researchqa_families hook that returned {'name': 'broken'}, not a Family"),
])
@pytest.mark.slow
def test_a_family_plugin_that_does_not_load_breaks_only_the_runs_that_ask_for_it_and_says_so(
        broken, monkeypatch, mode, problem):
    monkeypatch.setenv("BROKEN_FAMILY", mode)
    origin = "(entry point broken = broken_family in pytest_researchqa.families, package broken-family)"
    other = broken.runpytest("--researchqa-system=oracle", "--researchqa-results=off", "-p", "no:cacheprovider",
                             "-q")  # the citation family's bundled sample
    assert other.ret == pytest.ExitCode.OK, other.stdout.str()
    other.stdout.fnmatch_lines([f"warning: the benchmark family plugin 'broken' {origin} {problem}; "
                                "its families cannot run"])
    assert "INTERNALERROR" not in other.stdout.str() + other.stderr.str()
    asked = broken.runpytest("--researchqa-family=broken", "--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert asked.ret == pytest.ExitCode.USAGE_ERROR
    asked.stderr.fnmatch_lines([f"*--researchqa-family: unknown benchmark family 'broken'; choose from citation, "
                                f"rubric; the benchmark family plugin 'broken' {origin} {problem}"])
    broken.makepyfile(test_unrelated="def test_one():\n    assert True\n")
    plain = broken.runpytest("--strict-markers", "-p", "no:cacheprovider", "-q")
    assert plain.ret == pytest.ExitCode.OK and "broken" not in plain.stdout.str() + plain.stderr.str()


def test_an_entry_point_whose_module_implements_no_family_hook_is_named_when_its_family_is_asked_for(
        broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "no_hook")
    result = broken.runpytest("--researchqa-family=broken", "--researchqa-dataset=shards.jsonl")
    result.stderr.fnmatch_lines(["*unknown benchmark family 'broken'; choose from citation, rubric; these family "
                                 "plugins implement no pytest_researchqa_families hook: entry point broken = "
                                 "broken_family in pytest_researchqa.families, package broken-family"])


@pytest.mark.parametrize(("mode", "problem"), [
    ("loader_list", "(broken_family.rows:load_list) returned list, not a pytest_researchqa.dataset.Dataset"),
    ("dict_rows", "(broken_family.rows:load_dicts) returned rows that are not FamilyRow: row 1 (a dict) has no "
                  "'row_id', 'question', 'question_type', 'domain', 'paper_id' attribute"),
    ("no_question_type", "(broken_family.rows:load_partial) returned rows that are not FamilyRow: row 1 (a "
                         "PartialRow) has no 'question_type', 'domain', 'paper_id' attribute"),
])
def test_a_loader_returning_rows_of_the_wrong_shape_is_a_usage_error_naming_the_family_loader_and_shape(
        broken, monkeypatch, mode, problem):
    monkeypatch.setenv("BROKEN_FAMILY", mode)
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: researchqa: the broken family's loader {problem} (reading *shards.jsonl*"])
    assert "has no rows to run" not in result.stderr.str() and "AttributeError" not in result.stdout.str()


def test_a_renderer_that_raises_at_the_end_leaves_the_default_tables_and_the_runs_verdict_whole(broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "renderer_raises")
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "--researchqa-system=broken_family.rows:echo",
                              "--researchqa-json=s.json", "--researchqa-markdown=s.md", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK and "Traceback" not in result.stdout.str()
    warning = ("warning: the broken family's renderer (broken_family.rows:raising_renderer) raised ValueError: the "
               "renderer of broken_family fell over; its leaderboard is shown in the default tables")
    result.stdout.fnmatch_lines(["*researchqa leaderboard*", "| system *| score *", "*", "| broken_family.rows:echo *",
                                 "*", warning])
    assert json.loads((broken.path / "s.json").read_text())["verdict"] == "report"
    assert warning in (broken.path / "s.md").read_text()


def test_an_end_of_run_step_that_raises_fails_the_run_in_every_medium_and_the_reports_still_come(broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "after_raises")
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "--researchqa-system=broken_family.rows:echo",
                              "--researchqa-json=s.json", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*the broken family's end-of-run step (broken_family.rows:raising_step) raised "
                                 "RuntimeError: the end-of-run step of broken_family fell over; its results are missing"])
    summary = json.loads((broken.path / "s.json").read_text())
    assert summary["verdict"] == "failed"
    assert [c["name"] for c in summary["checks"] if c["state"] == "failed"] == ["run::family_step"]


def test_a_protocol_module_that_does_not_import_is_a_usage_error_naming_the_family_and_field(broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "protocol_missing")
    for extra in ((), ("-n", "2")):  # under xdist too: its controller collects nothing, and said nothing
        result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider", *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, extra
        result.stderr.fnmatch_lines(["ERROR: researchqa: the broken family's protocol_module (broken_family.nothere) "
                                     "cannot be loaded: ModuleNotFoundError: No module named 'broken_family.nothere'"])
        assert "has no rows to run" not in result.stderr.str()


def test_a_protocol_module_without_a_test_that_takes_a_row_is_a_usage_error_saying_so_not_an_empty_dataset(
        broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "protocol_empty")
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: researchqa: the dataset *shards.jsonl has 2 row(s), but no collected test "
                                 "takes them: none has a researchqa_row argument (the broken family's default tests, "
                                 "in its protocol_module broken_family.rows, have none)"])


def test_the_working_broken_family_runs(broken):  # the seam's control: unset, the family works
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_saved_run_of_a_family_plugin_that_now_fails_to_load_is_shown_saying_so_not_as_uninstalled(
        broken, monkeypatch, tmp_path):
    runs = tmp_path / "runs"
    broken.runpytest("--researchqa-dataset=shards.jsonl", f"--researchqa-results={runs}", "--researchqa-save=before",
                     "-p", "no:cacheprovider").assert_outcomes(passed=2)
    monkeypatch.setenv("BROKEN_FAMILY", "hook_raises")
    status, out, err = cli("--runs", str(runs), "show", "before")
    assert status == 0, err
    assert err.startswith(f"note: {next(runs.glob('*before')).name} is a run of the broken family, which is not installed here or failed to "
                          "load (the benchmark family plugin 'broken' (entry point broken = broken_family in "
                          "pytest_researchqa.families, package broken-family) has a pytest_researchqa_families "
                          "hook that raised RuntimeError: the hook of broken_family exploded): it is shown from "
                          "the declaration it saved"), err
    assert "score" in out


def cli(*argv: str) -> tuple[int, str, str]:
    """``python -m pytest_researchqa ARGV`` in this process: exit status, stdout, stderr."""
    import contextlib
    import io

    from pytest_researchqa.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_saved_runs_of_a_family_a_conftest_declares_are_shown_viewed_and_compared_from_their_kept_declaration(
        glossary, tmp_path):
    glossary.makeconftest(PLAIN_FAMILY.replace("{extra}", "dict(renderer='plain_board:render')"))
    glossary.makepyfile(plain_board="def render(records, family, results):\n    return 'the plain board'\n")
    runs = tmp_path / "runs"
    common = ("--researchqa-family=plain", "--researchqa-dataset=terms.jsonl", f"--researchqa-results={runs}",
              f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    glossary.runpytest(*common, "--researchqa-save=base", "--researchqa-json=base.json")
    glossary.runpytest(*common, "--researchqa-save=again")
    glossary.path.joinpath("conftest.py").unlink()  # the command line never loads a project's conftest.py
    glossary.path.joinpath("plain_board.py").unlink()  # nor, here, the family's renderer

    status, out, err = cli("--runs", str(runs), "show", "base", "--json")
    assert status == 0 and err == "", err
    summary = json.loads(glossary.path.joinpath("base.json").read_text())
    assert json.loads(out) == summary
    recall = summary["systems"][0]["metrics"]["keyword_recall"]  # a family without papers resamples its queries
    assert summary["unit"] == "queries" and recall["units"] == recall["papers"] == 3, summary
    status, out, err = cli("--runs", str(runs), "show", "base")
    assert status == 0, err
    assert "kw recall" in out and "glossary_family.systems:dictionary" in out
    assert len(err.splitlines()) == 1 and err.startswith(
        f"note: {next(runs.glob('*-base')).name} is a run of the plain family, which is not installed here (a family a "
        "project's conftest.py declares, or a package since uninstalled): "), err
    assert "is shown from the declaration it saved, in the default tables (its renderer plain_board:render" in err
    status, out, err = cli("--runs", str(runs), "compare", "base", "again")
    assert status == 0, err
    assert "kw recall" in out
    status, out, err = cli("--runs", str(runs), "view", "again", "--compare", "base", "-o", str(tmp_path / "r.html"))
    assert status == 0, err
    assert (tmp_path / "r.html").stat().st_size > 0


def test_a_saved_run_without_its_family_or_a_kept_declaration_says_why_it_cannot_be_shown_and_what_to_do(
        glossary, tmp_path):
    glossary.makeconftest(PLAIN_FAMILY.replace("{extra}", "{}"))
    runs = tmp_path / "runs"
    glossary.runpytest("--researchqa-family=plain", "--researchqa-dataset=terms.jsonl", f"--researchqa-results={runs}",
                       f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider", "--researchqa-save=old")
    manifest = next(runs.glob("*old")) / "manifest.json"
    kept = json.loads(manifest.read_text())
    del kept["family_declaration"]  # as an earlier version saved it
    manifest.write_text(json.dumps(kept))
    status, out, err = cli("--runs", str(runs), "show", "old")
    assert status == 2
    assert err.startswith("error: ") and "is a run of the plain benchmark family, which is not installed here" in err
    assert "install the family's package, or compare from the project with pytest --researchqa-compare=" in err
    assert "--json' prints the summary the run saved" in err
    assert cli("--runs", str(runs), "show", "old", "--json")[0] == 0


@pytest.mark.parametrize(("options", "message"), [
    (("--researchqa-dataset=terms.jsonl", "--researchqa-system=oracle"),
     "system 'oracle' answers the citation family's rows, not the glossary family's: use "
     "glossary-echo or glossary_family.systems:dictionary, or your own package.module:function"),
    (("--researchqa-system=glossary-echo",),  # a third party's named system, asked for the citation sample's rows
     "system 'glossary-echo' answers the glossary family's rows, not the citation family's: use oracle or bm25, or "
     "your own package.module:function"),
    (("--researchqa-system=rubric-oracle",),  # the citation family's bundled sample
     "system 'rubric-oracle' answers the rubric family's rows, not the citation family's: use oracle or bm25, or "
     "your own package.module:function"),
    (("--researchqa-dataset=terms.jsonl", "--researchqa-system=nope"),
     "unknown system 'nope': for the glossary family's rows use glossary-echo, glossary_family.systems:dictionary or "
     "package.module:function"),
])
def test_a_built_in_system_named_for_another_familys_rows_is_a_usage_error_before_any_row_runs(
        glossary, tmp_path, options, message):
    result = glossary.runpytest(*options, f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: researchqa: {message}"])


@pytest.mark.slow
def test_two_families_recognizing_one_dataset_is_said_in_one_line_naming_both_and_the_one_used(glossary, tmp_path):
    glossary.makeconftest("""
import dataclasses

import pytest
from glossary_family import GLOSSARY


@pytest.hookimpl
def pytest_researchqa_families():
    return [dataclasses.replace(GLOSSARY, name="aglossary")]
""")
    common = ("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider",
              "--researchqa-results=off")
    result = glossary.runpytest(*common)
    result.stdout.fnmatch_lines(["note: 2 families recognize terms.jsonl: aglossary, glossary; this run used "
                                 "aglossary (name one with --researchqa-family)"])
    named = glossary.runpytest(*common, "--researchqa-family=glossary")
    assert "families recognize" not in named.stdout.str()


def test_an_audit_of_a_family_without_papers_that_does_not_audit_is_a_usage_error_before_any_row_runs(
        glossary, tmp_path):
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", "--researchqa-audit",
                                f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --researchqa-audit: the glossary family's rows have no papers to check and "
                                 "its test does not describe rows without an answer (Family.audits); run it with a "
                                 "system instead"])


PAPER_FAMILY = '''
import json
from dataclasses import dataclass
from typing import Optional

import pytest
from pytest_researchqa.dataset import Dataset
from pytest_researchqa.families import Family, MetricSpec


@dataclass(frozen=True)
class NoteRow:
    row_id: str
    question: str
    paper_id: str
    word: str
    question_type: str = "mention"
    domain: Optional[str] = None


def load_notes(path):
    rows = [NoteRow(d["id"], d["question"], d["paper"], d["word"]) for d in map(json.loads, path.read_text().splitlines())]
    return Dataset(path, rows, [])


def echo(question, paper, row=None):
    from pytest_researchqa import Answer

    return Answer(paper.text)


@pytest.hookimpl
def pytest_researchqa_families():
    return [Family(name="notes", description="does the paper mention a word", question_types=("mention",),
                   metrics=(MetricSpec("mentioned", "mentioned"),), judge_dimensions=(), loader="conftest:load_notes",
                   protocol_module="notes_protocol", default_system="conftest:echo")]
'''

PAPER_PROTOCOL = '''
def test_mention(researchqa_row, researchqa_paper, researchqa_answer, researchqa_recorder):
    assert researchqa_paper.paper_id == researchqa_row.paper_id
    found = researchqa_row.word in researchqa_answer.text
    researchqa_recorder.metric("mentioned", float(found))
    assert found, f"{researchqa_row.word!r} is not in {researchqa_row.paper_id}"
'''


def test_a_third_party_family_whose_rows_are_about_papers_reads_them_without_the_citation_familys_fields(
        pytester, tmp_path):
    """A family with papers (the default) got the citation family's check of expected evidence and its
    download field on its own rows: AttributeError on every row."""
    pytester.makeconftest(PAPER_FAMILY)
    pytester.makepyfile(notes_protocol=PAPER_PROTOCOL)
    pytester.syspathinsert()
    papers = pytester.mkdir("papers")
    papers.joinpath("p1.txt").write_text("Transformers attend to every token of the input.\n")
    pytester.path.joinpath("notes.jsonl").write_text("\n".join(json.dumps(n) for n in [
        {"id": "n1", "question": "Attention?", "paper": "p1", "word": "attend"},
        {"id": "n2", "question": "Convolution?", "paper": "p1", "word": "convolve"},
        {"id": "n3", "question": "Missing paper?", "paper": "p9", "word": "any"}]) + "\n")
    result = pytester.runpytest("--researchqa-family=notes", "--researchqa-dataset=notes.jsonl",
                                "--researchqa-papers=papers", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, xfailed=1, errors=1)
    result.stdout.fnmatch_lines(["*paper 'p9' not found*", "*'convolve' is not in p1*"])
    assert "AttributeError" not in result.stdout.str()


def test_two_plugins_giving_one_family_name_warn_a_plain_strict_markers_run_and_name_both_for_a_benchmark_run(
        glossary, tmp_path):
    """tester38 F11: a project that declared its family in conftest.py, then installed it as a package, got an
    INTERNALERROR on every `pytest --strict-markers`, even of tests that never use the benchmark."""
    glossary.makeconftest(PLAIN_FAMILY.replace('name="plain"', 'name="glossary"').replace("{extra}", "{}"))
    glossary.makepyfile(test_unit="def test_unit():\n    pass\n")
    plain = glossary.runpytest("--strict-markers", "-p", "no:cacheprovider", "test_unit.py")
    plain.assert_outcomes(passed=1, warnings=1)
    plain.stdout.fnmatch_lines(["*researchqa: two plugins provide a benchmark family named 'glossary': * and *"])
    benchmark = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}",
                                   "-p", "no:cacheprovider")
    assert benchmark.ret == pytest.ExitCode.USAGE_ERROR
    benchmark.stderr.fnmatch_lines(["*two plugins provide a benchmark family named 'glossary': hook in *conftest.py "
                                    "and entry point glossary = glossary_family*"])




# tester F1: a dataset of a family that could not look at it was run as the citation family's rows (each an
# invalid row of the default family, under its leaderboard), with one warning at the end.
@pytest.mark.parametrize(("mode", "problem"), [
    ("import_error", "failed to load: ImportError: a dependency of broken_family is missing"),
    ("hook_raises", "has a pytest_researchqa_families hook that raised RuntimeError: the hook of broken_family exploded"),
])
def test_a_dataset_no_family_recognizes_while_a_family_plugin_is_broken_is_refused_naming_both_not_run_as_citation_rows(
        broken, monkeypatch, mode, problem):
    monkeypatch.setenv("BROKEN_FAMILY", mode)
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: researchqa: no installed benchmark family recognizes shards.jsonl (installed: citation, rubric); "
        f"the benchmark family plugin 'broken' (entry point broken = broken_family in pytest_researchqa.families, "
        f"package broken-family) {problem}; the citation family, the default, read no row of it: shards.jsonl, "
        "line 1, field 'row_id': Field required* (and 1 more invalid row(s)). Name the dataset's family with "
        "--researchqa-family=NAME*"])
    assert "test_question" not in result.stdout.str() and "leaderboard" not in result.stdout.str()


def test_a_third_party_familys_file_none_recognizes_is_refused_naming_the_installed_families_not_run_as_citation_rows(
        glossary, tmp_path):
    glossary.path.joinpath("terms.jsonl").write_text("# glossary terms\n" + json.dumps(TERMS[0]) + "\n")
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: researchqa: no installed benchmark family recognizes terms.jsonl (installed: citation, glossary, "
        "rubric); the citation family, the default, read no row of it: terms.jsonl, line 1*. Name the dataset's "
        "family with --researchqa-family=NAME*"])
    assert "test_question" not in result.stdout.str()
    named = glossary.runpytest("--researchqa-dataset=terms.jsonl", "--researchqa-family=glossary",
                               f"--researchqa-cache-dir={tmp_path}")
    assert named.ret == pytest.ExitCode.USAGE_ERROR
    named.stderr.fnmatch_lines(["ERROR: researchqa: the glossary family's loader (glossary_family.rows:load_terms) "
                                "could not read terms.jsonl: JSONDecodeError: *"])


def test_a_familys_recognizes_that_raises_on_a_broken_file_is_a_usage_error_naming_family_and_file(broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "recognizes_raises")
    broken.path.joinpath("shards.jsonl").write_text('{"id": "s1", "shard": "one"\n')
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "INTERNALERROR" not in result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: *the broken family's recognizes() raised JSONDecodeError: * reading "
                                 "shards.jsonl (is the file that family's, and broken? *--researchqa-family=NAME*"])


def test_a_third_party_loaders_dataset_error_is_said_as_that_familys(broken, monkeypatch):
    monkeypatch.setenv("BROKEN_FAMILY", "dataset_error")
    result = broken.runpytest("--researchqa-dataset=shards.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: researchqa: the broken family's loader (broken_family.rows:load_refusing) "
                                 "could not read shards.jsonl: line 2 has no shard"])


def test_a_jsonl_file_whose_first_line_is_blank_is_still_recognized_by_its_first_row(glossary, tmp_path):
    glossary.path.joinpath("terms.jsonl").write_text("\n" + json.dumps(TERMS[0]) + "\n")
    result = glossary.runpytest("--researchqa-dataset=terms.jsonl", f"--researchqa-cache-dir={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # the glossary's own reader, which takes no blank line
    result.stderr.fnmatch_lines(["ERROR: researchqa: the glossary family's loader (glossary_family.rows:load_terms) "
                                 "could not read terms.jsonl: JSONDecodeError: *"])


def test_every_callable_the_built_in_families_declare_has_the_shape_its_protocol_names():
    from pytest_researchqa.families import resolve
    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.families.protocols import CALLED_AS, call_shape_problem
    from pytest_researchqa.families.rubric import RUBRIC
    from pytest_researchqa.systems import named_system

    checked = []
    for family in (CITATION, RUBRIC):
        for field, target in [(field, getattr(family, field)) for field in CALLED_AS]:
            if target:
                assert call_shape_problem(resolve(target), CALLED_AS[field]) is None, (family.name, field, target)
                checked.append(target)
        for name, target in family.systems:  # built and checked as the run builds them
            assert named_system(name, target, family).name == name
            checked.append(target)
    assert "pytest_researchqa.families.citation.bm25:Bm25System" in checked, "a class declared as a named system"
    assert len(checked) >= 9


class _StaticCall:
    @staticmethod
    def __call__(row, paper):
        return None


class _DictSystem(dict):
    def __call__(self, row, paper):
        return None


class _ClassCall:
    @classmethod
    def __call__(cls, row, paper):
        return None


class _NoCall:
    pass


class _Needs:
    def __init__(self, path):
        self.path = path


class _AsyncSystem:
    async def __call__(self, row, paper):
        return None


def _supplies_extra(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, "extra", **kwargs)
    return wrapper


@_supplies_extra
def _decorated(row, paper, extra):
    return None


@pytest.mark.parametrize(("target", "problem"), [
    ("_StaticCall", None), ("_ClassCall", None), ("_DictSystem", None), ("_decorated", None),
    ("_NoCall", "is a _NoCall, not a callable"),
    ("_Needs", "cannot be loaded: TypeError: *missing 1 required positional argument: 'path'"),
])
def test_a_named_system_is_checked_as_it_is_built_and_a_valid_one_is_never_refused(target, problem):
    """tester61 MED-2/5: a class whose __call__ is a staticmethod, a dict subclass and a function behind a
    decorator that supplies an argument were refused; a class whose instances cannot be called was accepted."""
    from fnmatch import fnmatch

    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.systems import SystemSpecError, named_system

    declared = f"{__name__}:{target}"
    if problem is None:
        assert named_system("mine", declared, CITATION).name == "mine"
        return
    with pytest.raises(SystemSpecError) as raised:
        named_system("mine", declared, CITATION)
    assert fnmatch(str(raised.value), f"the citation family's system 'mine' ({declared}) {problem}"), raised.value


def test_an_async_named_system_is_run_as_an_async_system():
    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.systems import named_system

    assert named_system("mine", f"{__name__}:_AsyncSystem", CITATION).is_async
    assert not named_system("mine", f"{__name__}:_DictSystem", CITATION).is_async


def test_a_system_a_conftest_family_names_asked_for_another_familys_rows_names_that_family(glossary, tmp_path):
    """tester61 LOW-14: a conftest.py's family was not among those searched, so its system read as unknown."""
    glossary.makeconftest(PLAIN_FAMILY.replace("{extra}", "dict(systems=(('plain-echo', 'glossary_family.systems:echo'),))"))
    result = glossary.runpytest("--researchqa-system=plain-echo", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: researchqa: system 'plain-echo' answers the plain family's rows, not the "
                                 "citation family's: use oracle or bm25, or your own package.module:function"])


@pytest.mark.parametrize(("systems", "problem"), [
    ("(('echo', 'glossary_family.systems:echo'), ('echo', 'glossary_family.systems:dictionary'))",
     "the plain family's systems name 'echo' more than once"),
    ("(('echo',),)", "the plain family's systems hold ('echo',): each is a (name, 'module:attribute') pair of strings*"),
    ("(('', 'glossary_family.systems:echo'),)", "the plain family's systems hold ('', *"),  # tester63 LOW
    ("(('echo', ':'),)", "the plain family's systems hold ('echo', ':'): *"),
    ("None", "the plain family's systems are None: a tuple of (name, 'module:attribute') pairs"),
])
def test_a_malformed_systems_declaration_is_said_where_the_family_is_declared(glossary, tmp_path, systems, problem):
    """tester62: two systems of one name kept the last silently."""
    glossary.makeconftest(PLAIN_FAMILY.replace("{extra}", f"dict(systems={systems})"))
    result = glossary.runpytest("--researchqa-family=plain", "--researchqa-dataset=terms.jsonl",
                                f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --researchqa-family: unknown benchmark family 'plain'*hook that raised "
                                 f"DeclarationError: {problem}"])
