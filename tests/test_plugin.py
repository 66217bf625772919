"""The plugin as a pytest user meets it (pytester)."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
from xml.etree import ElementTree

import pytest
from helpers import WITHOUT_HYPOTHESIS, leaderboard_table, run_pytest

ROWS = 27


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return functools.partial(run_pytest, pytester, cache=cache)


def leaderboard(result: pytest.RunResult) -> dict[str, list[str]]:
    """system -> its leaderboard cells, in column order."""
    return {system: list(cells.values())[1:] for system, cells in leaderboard_table(result).items()}


@pytest.mark.slow
def test_the_citation_familys_paper_protocol_says_it_takes_the_seeds_sample_and_grades_as_the_project(run):
    """tester52 HIGH-1: the README promised each paper's table "with its own procedure", yet the citation family's
    paper protocol changes only the sample, and no output said so."""
    result = run("--researchqa-system=oracle", "--researchqa-protocol=paper", "--researchqa-sample=5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["protocol: paper: the seed's evenly spaced sample *; the citations are still graded "
                                 "by this project's matcher and metrics, stricter than the seed's harness*"])


def test_an_empty_folder_runs_the_bundled_sample_with_the_protocol_test(run):
    result = run("--researchqa-system=oracle", "--researchqa-system=bm25")
    [below] = [int(l.rsplit("(", 1)[1].split(")")[0]) for l in result.stdout.lines if "rows below their bar (" in l]
    assert below > 0, "bm25 is imperfect: its rows below the bar are counted"
    result.assert_outcomes(passed=ROWS + ROWS - below, xfailed=below)
    board = leaderboard_table(result)
    oracle, bm25 = board["oracle"], board["bm25"]
    headline = ["cite prec", "sect cov", "cite acc", "refusal", "flagged"]
    assert [oracle[c] for c in headline] == ["1.000"] * 5
    assert [oracle["factual"], oracle["complete"]] == ["—", "—"], "judge columns wait for the judges"
    assert [oracle["rows"], oracle["errors"]] == [str(ROWS), "0"]
    assert float(bm25["sect cov"]) < 1.0, "bm25 is a real baseline, not an oracle"
    assert float(bm25["flagged"]) < 1.0, "bm25 never refuses: the refusal reading must show it"
    result.stdout.fnmatch_lines(["*means over answerable rows; refusal, flagged: over false-premise rows*"])
    result.stdout.fnmatch_lines(["by question type:", "by domain:"])
    result.stdout.fnmatch_lines(["researchqa: report only: no gate configured*"])
    assert result.ret == 0, "no gate and no error: the main job is a report, and exits 0"
    assert "Traceback" not in result.stdout.str() and "researchqa_row = Row(" not in result.stdout.str()


def test_the_oracle_is_perfect_and_passes_every_row(run):
    result = run("--researchqa-system=oracle")
    result.assert_outcomes(passed=ROWS)
    assert result.ret == 0


def test_the_built_in_test_sets_up_one_fixture_a_row(run):
    """pytest's own work for each fixture of a row outweighs the plugin's: the built-in test takes its case, row,
    paper and answer from one fixture (issue 24 item 2)."""
    result = run("--researchqa-system=oracle", "--setup-plan", "-k", "edu-lookup-1")
    setups = [line.split()[2].split("[")[0] for line in result.stdout.lines if line.strip().startswith("SETUP ")]
    assert setups == ["researchqa_answered"], setups
    result.stdout.fnmatch_lines(["*(fixtures used: request, researchqa_answered)"])


@pytest.mark.slow
def test_rows_run_with_the_objects_alive_before_them_out_of_the_collectors_walks_until_the_run_ends(run, pytester):
    """Python's full collections walk every object alive, and the dataset, the items and the modules live to the end of
    the run: while rows run they are frozen out of the collector's generations (gc.freeze), and handed back when the
    run ends (issue 24 item 2)."""
    pytester.makepyfile(freeze_probe="""
        import gc
        import pytest

        def pytest_runtest_setup(item):
            with open("frozen.txt", "a") as stream:
                stream.write(f"{gc.get_freeze_count()}\\n")

        @pytest.hookimpl(trylast=True)
        def pytest_unconfigure(config):
            with open("frozen.txt", "a") as stream:
                stream.write(f"end {gc.get_freeze_count()}\\n")
    """)
    pytester.syspathinsert()
    run("-p", "freeze_probe", "--researchqa-system=oracle", "-k", "edu-lookup-1 or edu-lookup-2",
        subprocess_=True).assert_outcomes(passed=2)
    *during, end = (pytester.path / "frozen.txt").read_text().splitlines()
    assert len(during) == 2 and min(map(int, during)) > 10_000, during
    assert end == "end 0", "the run hands the collector back what it froze"


@pytest.mark.slow
def test_a_run_in_a_process_that_froze_objects_itself_leaves_its_freeze_alone(run):
    import gc

    gc.freeze()  # as this test suite's conftest does for its in-process runs
    before = gc.get_freeze_count()
    run("--researchqa-system=oracle", "-k", "edu-lookup-1").assert_outcomes(passed=1)
    assert 0 < gc.get_freeze_count() <= before, "nothing of the run's own frozen, nothing of the suite's let go"


# A user's own tests of their benchmark set-up: in-process pytester runs, one after another (tester42 N2),
# with their own system, which returns the package's Answer and loads the importlib_metadata backport as a
# system on litellm does (tester43 HIGH-2, HIGH-3).
USERS_PYTESTER_TESTS = """
    import pytest

    MY_RAG = '''
    import importlib_metadata
    from pytest_researchqa import Answer

    def answer(question, paper):
        return Answer(text="The paper does not say.", citations=[])
    '''

    @pytest.mark.parametrize("system", ["my_rag:answer", "bm25", "my_rag:answer"], ids=["mine", "bm25", "mine_again"])
    def test_each_run_measures_every_row(pytester, system, tmp_path):
        pytester.makepyfile(my_rag=MY_RAG)
        pytester.syspathinsert()
        result = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-system={system}",
                                    f"--researchqa-cache-dir={tmp_path}")
        output = result.stdout.str()
        assert result.ret in (0, 1) and "27 of 27 selected rows measured (0 errors)" in output, output[-1500:]
    """


@pytest.mark.slow
@pytest.mark.parametrize("numpy_first", [True, False], ids=["numpy_in_conftest", "numpy_left_to_the_runs"])
def test_a_users_in_process_pytester_runs_each_collect_every_row_or_say_why_not(pytester, numpy_first):
    pytester.makeconftest('pytest_plugins = ["pytester"]\n' + ("import numpy  # noqa\n" if numpy_first else ""))
    pytester.makepyfile(test_setup=USERS_PYTESTER_TESTS)
    result = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "-p", "no:cacheprovider", "-p", "no:randomly")
    output = result.stdout.str()
    if numpy_first:
        result.assert_outcomes(passed=3)
        return
    # The first run loads numpy (the leaderboard's intervals); pytester drops it, and it cannot load again:
    # each later run says so (tester43 HIGH-1: the third crashed).
    result.assert_outcomes(passed=1, failed=2)
    usage_error = "ERROR: researchqa: an earlier in-process run in this interpreter (pytester's runpytest) loaded numpy"
    assert "Import numpy in your conftest.py before the first run" in output
    sections = dict(re.findall(r"_{3,} test_each_run_measures_every_row\[(\w+)\] _{3,}\n(.*?)(?=\n_{3,} |\n=+ short)",
                               output, re.S))
    assert sorted(sections) == ["bm25", "mine_again"], output[-3000:]
    assert all(usage_error in section for section in sections.values()), output[-3000:]
    assert "INTERNALERROR" not in output and "no collected test takes them" not in output


@pytest.mark.slow
def test_an_in_process_xdist_run_of_the_users_own_system_imports_it_where_the_controller_found_it(run, pytester):
    """tester44 MED-3: after pytester.syspathinsert() every local worker crashed on `No module named 'my_rag'`
    (xdist gives them the path it saw at its own import), 8 times over, and the run read "no gate configured"."""
    pytester.makepyfile(my_rag="def answer(question, paper):\n    return 'The paper does not say.'\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=my_rag:answer", "-n", "2", "--researchqa-fail-under=section_coverage=0.9")
    output = result.stdout.str()
    assert "crashed worker" not in output and "No module named" not in output, output[-3000:]
    result.stdout.fnmatch_lines([f"{ROWS} of {ROWS} selected rows measured (0 errors)*", "researchqa: gates FAILED*"])


def test_item_ids_carry_system_question_type_and_row_id(run):
    result = run("--researchqa-system=oracle", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["researchqa::test_question[[]oracle-lookup-edu-lookup-1[]]"])
    ids = [l for l in result.stdout.lines if l.startswith("researchqa::")]
    assert len(ids) == ROWS
    assert ids[0].endswith("edu-lookup-1]"), "rows keep the dataset's order"


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        (("-k", "lookup"), 6),
        (("-k", "multi_hop and education"), 2),
        (("-k", "sample-env"), 9),
        (("-k", "machine_learning"), 9),
        (("-m", "adversarial"), 9),
        (("-m", "lookup or comprehension"), 12),
    ],
)
@pytest.mark.slow
def test_k_and_m_select_the_slices_users_expect(run, selection, expected):
    result = run("--researchqa-system=oracle", *selection)
    result.assert_outcomes(passed=expected, deselected=ROWS - expected)


@pytest.mark.slow
def test_sample_picks_every_question_type_evenly_spaced_and_deterministically(run):
    first = run("--researchqa-system=oracle", "--researchqa-sample=5", "--collect-only", "-q")
    second = run("--researchqa-system=oracle", "--researchqa-sample=5", "--collect-only", "-q")
    ids = [l for l in first.stdout.lines if l.startswith("researchqa::")]
    assert ids == [l for l in second.stdout.lines if l.startswith("researchqa::")]
    # 27 rows, 5 samples: one per question type, the fifth to the largest (adversarial, 9 rows), each the
    # middle row of its share of its type among the papers sampled least so far (tester37 F23: the middle rows
    # alone were env's for every type).
    assert [i.split("-", 2)[2].rstrip("]") for i in ids] == [
        "edu-multihop-2", "edu-adv-3", "env-lookup-2", "ml-comp-1", "ml-adv-1",
    ]
    four = run("--researchqa-system=oracle", "--researchqa-sample=4", "--collect-only", "-q")
    rows = [l.split("-", 2)[2] for l in four.stdout.lines if l.startswith("researchqa::")]
    assert len(rows) == 4 and {r.split("-")[0] for r in rows} == {"edu", "env", "ml"}, rows
    ran = run("--researchqa-system=oracle", "--researchqa-sample=4")
    ran.stdout.fnmatch_lines(["4 of 4 selected rows measured (0 errors); slice: --researchqa-sample=4 (rows of 3 papers)"])


@pytest.mark.slow
def test_sample_is_drawn_from_the_rows_k_and_m_keep(run):
    result = run("--researchqa-system=oracle", "--researchqa-system=bm25", "--researchqa-sample=4", "-k", "ml and not adv",
                 "--collect-only", "-q")
    ids = [l for l in result.stdout.lines if l.startswith("researchqa::")]
    assert len(ids) == 8 and all("-ml-" in i and "adversarial" not in i for i in ids)
    assert {i.split("[", 1)[1].split("-", 1)[0] for i in ids} == {"oracle", "bm25"}, "the same rows for every system"
    marked = run("--researchqa-system=oracle", "--researchqa-sample=2", "-m", "multi_hop", "--collect-only", "-q")
    assert len([l for l in marked.stdout.lines if "multi_hop" in l]) == 2


def test_exitfirst_stops_at_the_first_failing_row(run):
    result = run("--researchqa-system=bm25", "--researchqa-fail-rows", "-x")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    assert outcomes.get("passed", 0) < ROWS - 1


@pytest.mark.slow
def test_a_row_below_its_bar_fails_as_a_short_diagnosis_without_a_traceback(run):
    result = run("--researchqa-system=bm25", "--researchqa-fail-rows", "-k", "edu-multihop-1")
    assert result.ret == 1
    text = result.stdout.str()
    assert "Traceback" not in text and "researchqa_answered = Answered(" not in text and "protocol.py" not in text
    report = text.split(" test_question[bm25-multi_hop-edu-multihop-1] _")[1].split("=====")[0]
    lines = [line for line in report.splitlines()[1:] if line.strip() and not line.startswith("---")]
    assert lines[0].startswith("bm25 · edu-multihop-1: section coverage 0.00 < 1.00"), lines
    assert len(lines) <= 8 and any("missed 'Results'" in line for line in lines)
    full = run("--researchqa-system=bm25", "--researchqa-fail-rows", "-k", "edu-multihop-1", "--tb=long")
    assert "researchqa_answered = Answered(case=Case(" in full.stdout.str(), "--tb=long still gives pytest's whole report"


@pytest.mark.slow
def test_last_failed_reruns_only_the_failed_rows(pytester: pytest.Pytester, tmp_path):
    cache = f"--researchqa-cache-dir={tmp_path}"
    pytester.makeini("[pytest]\n")
    first = pytester.runpytest("--researchqa-system=bm25", "--researchqa-fail-rows", cache)
    failed = first.parseoutcomes()["failed"]
    again = pytester.runpytest("--researchqa-system=bm25", "--researchqa-fail-rows", cache, "--lf")
    again.assert_outcomes(failed=failed, deselected=ROWS - failed)


@pytest.mark.slow
def test_junitxml_names_each_row(run, pytester):
    run("--researchqa-system=oracle", "--junitxml=report.xml")
    xml = (pytester.path / "report.xml").read_text()
    assert xml.count("<testcase ") == ROWS
    assert 'classname="researchqa"' in xml
    assert 'name="test_question[oracle-multi_hop-ml-multihop-2]"' in xml


@pytest.mark.slow
def test_a_project_can_write_its_own_tests_with_the_fixtures(run, pytester):
    pytester.makepyfile(
        test_mine="""
        from pytest_researchqa import cited_verbatim, covers_sections

        def test_my_protocol(researchqa_row, researchqa_paper, researchqa_answer):
            cited_verbatim(researchqa_answer, researchqa_paper)
            covers_sections(researchqa_answer, researchqa_row, researchqa_paper)

        def test_paper_has_pages(researchqa_row, researchqa_paper):
            assert researchqa_paper.page_of(0) == 1
        """
    )
    result = run("--researchqa-system=oracle")
    result.assert_outcomes(passed=ROWS * 2)
    assert "researchqa::" not in result.stdout.str(), "no protocol test when the project has its own"
    assert leaderboard(result)["oracle"][:3] == ["1.000", "1.000", "1.000"]
    assert "no system ran" not in result.stdout.str()


@pytest.mark.slow
def test_fixtures_work_without_any_researchqa_option(run, pytester):
    pytester.makepyfile(test_rows="def test_row(researchqa_row):\n    assert researchqa_row.question\n")
    run().assert_outcomes(passed=ROWS)


def test_a_named_system_that_no_collected_test_asks_for_is_said_not_to_have_run(run, pytester):
    # The project's own tests read rows only: the oracle named on the command line never answered, and
    # the leaderboard's one line is the dataset's. Before, nothing said why the system was missing.
    pytester.makepyfile(test_rows="def test_row(researchqa_row):\n    assert researchqa_row.question\n")
    result = run("--researchqa-system=oracle", "-k", "lookup")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["--researchqa-system named systems, but no collected test asks for an answer "
                                 "(researchqa_answer, researchqa_system or researchqa_answered): no system ran*"])


def test_a_projects_own_row_test_with_no_option_at_all_activates_the_plugin_on_first_use(pytester):
    # No option on the command line or in an ini file: the plugin reads its settings and registers the
    # run's hooks only when collection meets a test asking for a row, and the run still gets its leaderboard.
    pytester.makepyfile(test_rows="def test_row(researchqa_answer):\n    assert researchqa_answer is not None\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "lookup")
    result.assert_outcomes(passed=6)
    assert "researchqa leaderboard" in result.stdout.str()
    assert "bm25" in leaderboard(result)


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_user_system_is_called_by_module_and_function(run, pytester, flavour):
    prefix = "async " if flavour == "async" else ""
    pytester.makepyfile(
        my_rag=f"""
        {prefix}def answer(question, paper):
            first = paper.text.split(".")[0]
            return {{"answer": "See the paper.", "citations": [first]}}
        """
    )
    pytester.syspathinsert()
    result = run("--researchqa-system=my_rag:answer", "-k", "lookup")
    assert "my_rag:answer" in leaderboard(result)
    result.assert_outcomes(xfailed=6)  # one citation, always the title: covers nothing


def test_a_system_that_crashes_makes_its_rows_error_not_fail(run, pytester):
    pytester.makepyfile(broken="def answer(question, paper):\n    raise RuntimeError('index offline')\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=broken:answer", "-k", "lookup")
    result.assert_outcomes(errors=6)
    result.stdout.fnmatch_lines(["*system 'broken:answer' raised RuntimeError: index offline*"])
    assert leaderboard_table(result)["broken:answer"]["errors"] == "6"


@pytest.mark.slow
def test_an_answer_that_is_not_valid_unicode_errors_its_row_and_the_run_writes_every_file(run, pytester):
    pytester.makepyfile(halfemoji='def answer(question, paper):\n    return "broken emoji \\ud83d here"\n')
    pytester.syspathinsert()
    result = run("--researchqa-system=halfemoji:answer", "-k", "edu", "--researchqa-json=s.json",
                 "--researchqa-markdown=s.md", "--researchqa-html=s.html")
    result.assert_outcomes(errors=9)
    result.stdout.fnmatch_lines(["*its answer is not valid Unicode: a lone surrogate \\ud83d at character 13*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert json.loads((pytester.path / "s.json").read_text())["verdict"] == "failed"
    assert (pytester.path / "s.md").exists() and (pytester.path / "s.html").exists()


def test_bad_system_spec_is_a_usage_error(run):
    result = run("--researchqa-system=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown system 'nope'*oracle, bm25*"])


def test_a_bad_ini_value_is_named_by_its_ini_key_and_file(pytester):
    pytester.makeini("[pytest]\nresearchqa_sample = many\nresearchqa_judge_mode = vibes\n")
    result = pytester.runpytest("--researchqa-run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*researchqa_sample in tox.ini: not a whole number (*'many')*"])
    flagged = pytester.runpytest("--researchqa-run", "--researchqa-sample=3", "-p", "no:cacheprovider")
    flagged.stderr.fnmatch_lines(["*researchqa_judge_mode in tox.ini: 'vibes' is not one of rubric, claims*"])
    on_the_command_line = pytester.runpytest("--researchqa-judge-mode=vibes", "--researchqa-sample=3",
                                             "-p", "no:cacheprovider")
    on_the_command_line.stderr.fnmatch_lines(["*--researchqa-judge-mode: 'vibes' is not one of rubric, claims*"])


def test_a_malformed_model_param_is_a_usage_error(run):
    result = run("--researchqa-model=openai/x", "--researchqa-model-param=openai/x-temperature")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected MODEL:KEY=VALUE*"])


def write_rows(pytester: pytest.Pytester, rows: list[dict], papers: dict[str, str]) -> str:
    (pytester.path / "papers").mkdir()
    for paper_id, text in papers.items():
        (pytester.path / "papers" / f"{paper_id}.txt").write_text(text)
    lines = [json.dumps(r) if isinstance(r, dict) else r for r in rows]
    (pytester.path / "rows.jsonl").write_text("\n".join(lines) + "\n")
    return "--researchqa-dataset=rows.jsonl"


PAPER = "Methods. We enrolled 240 adults from three clinics in 2021. Results. The intervention reduced systolic blood pressure by 6 mmHg."


def flat_row(row_id: str, **extra) -> dict:
    row = {
        "row_id": row_id, "paper_id": "p1", "domain": "medicine", "question_type": "lookup",
        "question": "How many adults were enrolled?", "expected_answer": "240",
        "expected_references": [{"section_label": "Methods", "alternatives": ["We enrolled 240 adults from three clinics in 2021."]}],
        "metadata_page_hint": None,
    }
    row.update(extra)
    return row


def test_a_bad_row_errors_with_file_line_and_field_and_the_others_run(run, pytester):
    option = write_rows(pytester, [flat_row("r1"), flat_row("r2", question_type="trivia"), "{not json", flat_row("r4")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle", "-rE")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines([
        "*rows.jsonl, line 2, field 'question_type': Input should be 'lookup', 'comprehension', 'multi_hop' or 'adversarial'*",
        "*rows.jsonl, line 3, field '(row)': not valid JSON*",
    ])


@pytest.mark.slow
def test_a_dataset_whose_every_row_is_invalid_shows_each_row_error_not_an_empty_dataset(run, pytester):
    option = write_rows(pytester, [flat_row("r1", question=None), flat_row("r2", question_type="trivia")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle", "-rE")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*rows.jsonl, line 1, field 'question'*", "*rows.jsonl, line 2, field 'question_type'*"])
    result.stdout.no_fnmatch_line("*has no rows to run*")


@pytest.mark.slow
def test_invalid_rows_are_counted_apart_not_as_a_system_and_a_gate_does_not_pass_without_them(run, pytester):
    option = write_rows(pytester, [flat_row("r1"), flat_row("r2", question=None), flat_row("r3")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle", "--researchqa-fail-under=citation_accuracy=0.5")
    assert set(leaderboard_table(result)) == {"oracle"}
    result.stdout.fnmatch_lines(["2 of 2 selected rows measured (0 errors); 1 invalid dataset row(s) not run",
                                 "*1 invalid dataset row(s) errored: the gates do not excuse them*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # tester38 F17: --researchqa-allow-partial let the gate pass (exit 0, ✅) while pytest counted the errors.
    allowed = run(option, "--researchqa-system=oracle", "--researchqa-fail-under=citation_accuracy=0.5",
                  "--researchqa-allow-partial")
    allowed.stdout.fnmatch_lines(["*1 invalid dataset row(s) errored: the gates do not excuse them*"])
    assert allowed.ret == pytest.ExitCode.TESTS_FAILED and "gates passed" not in allowed.stdout.str()


def test_a_dataset_warning_is_one_line_of_the_run_without_the_plugins_source(run, pytester):
    """tester64 LOW: Python's display named the loader's file and printed its source line (`return
    _from_records(path, ...)`) before the session header."""
    option = write_rows(pytester, [flat_row("r1", paper_titel="A misspelt key"), flat_row("r2")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle")
    said = [line for line in result.outlines + result.errlines if "paper_titel" in line]
    assert len(said) == 1 and said[0].startswith("researchqa: warning: ") and said[0].endswith(
        "ignored keys the row schema does not have: 'paper_titel' (first at line 1)"), said
    assert "loaders.py" not in result.stdout.str() + result.stderr.str() and "_from_records" not in result.stderr.str()
    assert leaderboard_table(result)["oracle"]["rows"] == "2", "the rows still run"


def test_a_dataset_warning_made_an_error_by_the_projects_filters_stops_the_run_with_its_words(run, pytester):
    option = write_rows(pytester, [flat_row("r1", paper_title="A title the schema does not have")], {"p1": PAPER})
    pytester.makeini("[pytest]\nfilterwarnings =\n    error::pytest_researchqa.families.citation.loaders.DatasetWarning\n")
    result = run(option, "--researchqa-system=oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ignored keys the row schema does not have: 'paper_title'*warning filters make an error*"])


def test_a_missing_paper_errors_its_rows_with_the_cause(run, pytester):
    option = write_rows(pytester, [flat_row("r1"), flat_row("r2", paper_id="ghost")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*paper 'ghost' not found: looked for ghost.pdf/.txt/.md in *papers*"])
    assert leaderboard_table(result)["oracle"]["errors"] == "1"


def test_a_paper_id_that_escapes_the_papers_folder_is_refused(run, pytester):
    (pytester.path / "secret.txt").write_text("API_KEY=do-not-send")
    option = write_rows(pytester, [flat_row("r1", paper_id="../secret")], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*outside the papers folder*refused*"])


@pytest.mark.slow
def test_a_row_whose_expected_passage_is_not_in_the_paper_is_an_xfailed_dataset_defect(run, pytester):
    broken = flat_row("r2", expected_references=[{"section_label": "Results", "alternatives": ["A sentence the paper never had."]}])
    option = write_rows(pytester, [flat_row("r1"), broken], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*dataset defect: no expected passage of section(s) 'Results' is in the text of paper 'p1'*"])
    graded = run(option, "--researchqa-system=oracle", "--researchqa-dataset-defects=grade")
    graded.assert_outcomes(passed=1, xfailed=1)  # graded: the oracle cites the missing passage, below its bar


@pytest.mark.slow
def test_the_dataset_defect_note_counts_dataset_rows_as_the_audit_does_and_says_the_pairs_under_two_systems(
        run, pytester):
    """tester39 G7: 18 defect rows under two systems read "36 row(s) not graded"; the audit said 18."""
    broken = flat_row("r2", expected_references=[{"section_label": "Results", "alternatives": ["A sentence the paper never had."]}])
    option = write_rows(pytester, [flat_row("r1"), broken], {"p1": PAPER})
    result = run(option, "--researchqa-system=oracle", "--researchqa-system=bm25")
    result.stdout.fnmatch_lines(["1 row(s) not graded (2 (system, row) pairs): a required section is not in the "
                                 "paper (dataset defect)"])
    alone = run(option, "--researchqa-system=oracle")
    alone.stdout.fnmatch_lines(["1 row(s) not graded: a required section is not in the paper (dataset defect)"])


def test_a_row_whose_expected_passage_is_too_short_to_verify_says_so_in_its_defect(run, pytester):
    """A one-word passage may well be in the text (a tester's "habibi"): "not in the text" sent them looking."""
    short = flat_row("r3", expected_references=[{"section_label": "Methods", "alternatives": ["adults"]}])
    option = write_rows(pytester, [short], {"p1": PAPER})
    run(option, "--researchqa-system=oracle", "-rx").stdout.fnmatch_lines([
        "*dataset defect: no expected passage of section(s) 'Methods' is in the text of paper 'p1' (those of "
        "'Methods' are too short to verify: fewer than 10 letters and digits)*"])


def test_a_row_whose_expected_passage_ends_with_a_margin_number_or_is_a_reference_says_why_in_its_defect(
        run, pytester):
    """tester40 H5: passages copied from the extracted text read "not in the text" with no word of why."""
    numbered = "".join(f"Line {word} of the study's running text, as the paper prints it{number}\n"
                       for number, word in enumerate("abcdefghijkl", start=1))
    reference = "Smith, J. & Lee, K. A study of blood pressure in adults. Journal of Medicine 12, 100-110 (2021)."
    rows = [flat_row("r1", expected_references=[
                {"section_label": "Methods", "alternatives": ["Line c of the study's running text, as the paper prints it3"]}]),
            flat_row("r2", expected_references=[{"section_label": "Background", "alternatives": [reference]}])]
    option = write_rows(pytester, rows, {"p1": f"{numbered}References\n[1] {reference}\n"})
    run(option, "--researchqa-system=oracle", "-rx").stdout.fnmatch_lines([
        "*dataset defect: the expected passage of section 'Methods' is in the extracted text of paper 'p1' but is not "
        "grounded there: it ends with 3, the line or page number printed beside the paper's text there*",
        "*dataset defect: the expected passage of section 'Background' is in the extracted text of paper 'p1' but is "
        "not grounded there: it is in the reference list, which is not evidence*"])


def test_audit_prints_the_share_of_expected_passages_found_per_paper(run, pytester):
    broken = flat_row("r2", expected_references=[{"section_label": "Results", "alternatives": ["A sentence the paper never had."]}])
    option = write_rows(pytester, [flat_row("r1"), broken], {"p1": PAPER})
    result = run(option, "--researchqa-audit")
    result.stdout.fnmatch_lines(["*researchqa dataset audit*", "| p1 * | 1/2 * | 0.500 * | 1 *"])


class TestGates:
    @pytest.mark.slow
    def test_gates_that_hold_exit_zero_and_rows_below_the_bar_are_expected_failures(self, run, pytester):
        result = run("--researchqa-system=bm25", "--researchqa-fail-under=citation_accuracy=0.9",
                     "--junitxml=report.xml", "-rx")
        outcomes = result.parseoutcomes()
        assert "failed" not in outcomes and outcomes["xfailed"] > 0
        assert result.ret == 0
        result.stdout.fnmatch_lines(["*rows below their bar (*)*",
                                     "✅ bm25: citation_accuracy>=0.9: 1.000 ok",
                                     "researchqa: gates passed: 1 of 1 check(s) held",
                                     "XFAIL *bm25-lookup-edu-lookup-1* - below the per-row bar: *"])
        assert "[103%]" not in result.stdout.str() and "[100%]." not in result.stdout.str(), "no stray progress"
        suite = ElementTree.parse(pytester.path / "report.xml").getroot().find("testsuite")
        assert suite.get("failures") == "0" and suite.get("errors") == "0", "JUnit agrees with the exit status"
        [gate] = [t for t in suite.iter("testcase") if t.get("classname") == "researchqa.gates.threshold"]
        assert gate.get("name") == "citation_accuracy>=0.9[bm25]" and gate.find("failure") is None

    @pytest.mark.slow
    def test_a_failed_gate_is_a_failing_junit_testcase_and_the_final_line_agrees(self, run, pytester):
        result = run("--researchqa-system=bm25", "--researchqa-fail-under=multi_hop.section_coverage=0.9",
                     "--junitxml=report.xml")
        assert result.ret == 1
        result.assert_outcomes(passed=13, xfailed=14, failed=1)
        result.stdout.fnmatch_lines(["FAILED researchqa::gates::threshold::multi_hop.section_coverage>=0.9[[]bm25[]]*"])
        suite = ElementTree.parse(pytester.path / "report.xml").getroot().find("testsuite")
        assert suite.get("failures") == "1", "a run that exits 1 on its gates has a failing testcase"
        [gate] = [t for t in suite.iter("testcase") if t.get("classname") == "researchqa.gates.threshold"]
        failure = gate.find("failure")
        assert failure is not None and "0.417 FAILED by 0.483" in failure.get("message")
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert {"researchqa.citation_accuracy", "researchqa.section_coverage", "researchqa.latency_s"} <= set(properties)

    @pytest.mark.slow
    def test_a_gate_that_fails_says_which_and_by_how_much(self, run):
        result = run("--researchqa-system=bm25", "--researchqa-fail-under=multi_hop.section_coverage=0.9")
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*bm25: multi_hop.section_coverage>=0.9: 0.* FAILED by 0.*"])

    @pytest.mark.slow
    def test_gates_come_from_the_ini_file_too(self, run, pytester):
        pytester.makeini("[pytest]\nresearchqa_system = oracle\nresearchqa_fail_under =\n    section_coverage=1.0\n")
        result = run()
        assert result.ret == 0
        result.stdout.fnmatch_lines(["*oracle: section_coverage>=1: 1.000 ok*"])

    def test_errors_fail_the_gate(self, run, pytester):
        option = write_rows(pytester, [flat_row("r1"), flat_row("r2", paper_id="ghost")], {"p1": PAPER})
        result = run(option, "--researchqa-system=oracle", "--researchqa-fail-under=section_coverage=0.5")
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*1 row(s) errored*"])

    @pytest.mark.parametrize("gate", ["coverage=0.5", "section_coverage", "trivia.section_coverage=1", "citation_accuracy=1.5"])
    def test_a_malformed_gate_is_a_usage_error(self, run, gate):
        result = run(f"--researchqa-fail-under={gate}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_the_plugin_is_inert_when_unused(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "researchqa leaderboard" not in result.stdout.str()
    assert "researchqa::" not in result.stdout.str()


# What an installed but unused plugin loads: its hooks, their options, the fixtures, and the family hook's
# specification; exactly these, so that a new module-level import cannot slip onto every project's start-up. The
# stash, the settings, the run's hooks and the xdist adapter load when the plugin is first used. Only the package
# and the entry point pass through pytest's assertion rewriter (which, without byte-code caches, parses and
# compiles each module it loads at every start): the plugin loads the others with Python's own loader, from
# their byte-code (docs/performance.md).
START_UP_MODULES = ["pytest_researchqa", "pytest_researchqa.fixtures", "pytest_researchqa.hookspecs",
                    "pytest_researchqa.options", "pytest_researchqa.plugin", "pytest_researchqa.startup_hooks"]
REWRITTEN_AT_START_UP = ["pytest_researchqa", "pytest_researchqa.plugin"]


@pytest.mark.slow
def test_a_researchqa_run_exits_without_a_last_walk_over_its_objects_and_a_plain_run_is_left_alone(pytester):
    """Python's last garbage collections at exit walk every object left: about a second after litellm alone, and
    a run's rows, papers and records at full scale. A researchqa run freezes them at exit (after every later
    atexit step); a project that does not use the plugin keeps Python's own exit."""
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    probe = textwrap.dedent(
        """
        import atexit, gc, sys, pytest
        atexit.register(lambda: print("FROZEN AT EXIT", gc.get_freeze_count() > 0, flush=True))  # runs last
        pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]])
        """
    )
    cache = f"--researchqa-cache-dir={pytester.path / 'cache'}"
    outputs = [subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=pytester.path,
                              env={**os.environ, "PYTHONPATH": str(pytester.path)}).stdout
               for args in (["test_plain.py"], ["--researchqa-system=oracle", "-k", "edu-lookup", cache])]
    assert "FROZEN AT EXIT False" in outputs[0], outputs[0]
    assert "2 passed" in outputs[1] and "FROZEN AT EXIT True" in outputs[1], outputs[1]


@pytest.mark.slow
def test_pytest_start_up_imports_no_heavy_library(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    # pytest marks an installed plugin's package for rewriting, but not this checkout's editable install (its
    # file list names a bundled script first): the plain run marks it as a regular install has it marked.
    pytester.makepyfile(rewrite_ours="import pytest\npytest.register_assert_rewrite('pytest_researchqa')\n")
    # One fresh interpreter for the three: a plain run, --version, --help (whose text has the plugin's options).
    probe = textwrap.dedent(
        """
        import sys, pytest
        pytest.main(["-q", "-p", "no:cacheprovider", "-p", "rewrite_ours", "test_plain.py"])
        pytest.main(["--version"])
        pytest.main(["--help"])
        heavy = [m for m in ("litellm", "pydantic", "numpy", "pypdf", "rapidfuzz", "rank_bm25", "yaml") if m in sys.modules]
        print("HEAVY", heavy)
        ours = sorted(m for m in sys.modules if m.startswith("pytest_researchqa"))
        print("OURS", ours)
        print("REWRITTEN", [m for m in ours if type(sys.modules[m].__loader__).__name__ == "AssertionRewritingHook"])
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=pytester.path,
                          env={**os.environ, "PYTHONPATH": str(pytester.path)})
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr
    assert f"OURS {START_UP_MODULES}" in done.stdout, done.stdout + done.stderr
    assert f"REWRITTEN {REWRITTEN_AT_START_UP}" in done.stdout, done.stdout + done.stderr
    assert "--researchqa-fail-under" in done.stdout.split("HEAVY")[0], "pytest --help lists the plugin's options"


def test_the_plugin_names_the_same_case_fixtures_as_the_stash():
    from pytest_researchqa import startup_hooks, stash

    assert startup_hooks.CASE_FIXTURES == stash.CASE_FIXTURES


@pytest.mark.slow
def test_a_foreign_project_with_strict_settings_passes_with_the_plugin_installed(pytester):
    # Both strict settings in one fresh interpreter (a warning at import time is raised only there): warnings
    # as errors from the ini file's filters and from -W, unknown markers and ini keys as errors.
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\naddopts = --strict-markers --strict-config -W error\n")
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert "warning" not in result.stdout.str().lower()


@pytest.mark.slow
def test_ini_settings_never_add_the_benchmark_to_a_chosen_test(pytester, tmp_path):
    pytester.makeini(f"[pytest]\nresearchqa_system = oracle\nresearchqa_fail_under = citation_accuracy=0.9\n"
                     f"researchqa_cache_dir = {tmp_path}\n")
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    result = pytester.runpytest("test_unit.py::test_unit", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.ret == 0 and "researchqa leaderboard" not in result.stdout.str()
    asked = pytester.runpytest("--researchqa-run", "-p", "no:cacheprovider")
    asked.assert_outcomes(passed=ROWS + 2)  # the rows, test_unit and the gate's own testcase
    asked.stdout.fnmatch_lines(["*oracle: citation_accuracy>=0.9: 1.000 ok*"])


@pytest.mark.slow
def test_ini_settings_alone_never_import_the_named_system_in_a_plain_unit_run(pytester, tmp_path):
    # In-process runs: pytester drops the project's modules after each run, so each run imports heavy_rag
    # afresh, as a fresh interpreter would, if it imports it at all.
    marker = tmp_path / "imported"
    pytester.makepyfile(heavy_rag=f"import pathlib\npathlib.Path({str(marker)!r}).write_text('yes')\n"
                                  "def answer(question, paper):\n    return {'answer': 'x', 'citations': []}\n")
    pytester.makeini(f"[pytest]\nresearchqa_system = heavy_rag:answer\nresearchqa_cache_dir = {tmp_path}\n"
                     "researchqa_fail_under = citation_accuracy=0.9\n")
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    pytester.syspathinsert()
    plain = pytester.runpytest("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)
    assert not marker.exists(), "a unit run imported the benchmark's system"
    pytester.makeini("[pytest]\nresearchqa_system = no_such_module:answer\n")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0
    # A row test in the project is where the settings are checked: a bad system is a usage error there.
    pytester.makepyfile(test_rows="def test_row(researchqa_case, researchqa_answer):\n    pass\n")
    with_rows = pytester.runpytest("-p", "no:cacheprovider")
    assert with_rows.ret != 0
    with_rows.stdout.fnmatch_lines(["*researchqa_system in tox.ini: *no_such_module*"])
    pytester.makepyfile(test_rows="def test_row(researchqa_case, researchqa_answer):\n    pass\n")
    pytester.makeini(f"[pytest]\nresearchqa_system = heavy_rag:answer\nresearchqa_cache_dir = {tmp_path}\n")
    pytester.runpytest("-p", "no:cacheprovider", "-k", "edu-lookup-1")
    assert marker.exists(), "the check above can see an import: a run that answers rows imports the system"


@pytest.mark.slow  # a fresh interpreter under -n 2: seconds
def test_an_ini_baseline_that_does_not_exist_yet_never_breaks_a_plain_unit_run(pytester, tmp_path):
    pytester.makeini(f"[pytest]\nresearchqa_compare = main\nresearchqa_cache_dir = {tmp_path}\n")
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    for result in (pytester.runpytest("-p", "no:cacheprovider"),  # in-process: only xdist needs a fresh one
                   pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "-p", "no:cacheprovider", "-n", "2")):
        result.assert_outcomes(passed=1)
        assert result.ret == 0
    asked = pytester.runpytest("--researchqa-run", "-p", "no:cacheprovider")
    assert asked.ret == pytest.ExitCode.USAGE_ERROR
    asked.stderr.fnmatch_lines(["*researchqa_compare in tox.ini: no saved run 'main'*"])


@pytest.mark.slow
def test_under_xdist_ini_settings_alone_compare_a_projects_own_rows_with_the_saved_run(pytester, tmp_path):
    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}")
    assert pytester.runpytest("--researchqa-system=oracle", "--researchqa-save=main", *common).ret == 0
    pytester.makepyfile(test_rows="""
        from pytest_researchqa import cited_verbatim

        def test_row(researchqa_row, researchqa_answer, researchqa_paper):
            assert cited_verbatim(researchqa_answer, researchqa_paper)
    """)
    gates = (f"researchqa_system = oracle\nresearchqa_fail_on_regression = citation_accuracy\n"
             f"researchqa_cache_dir = {tmp_path}\n")  # ini settings alone: no researchqa option on the command line
    pytester.makeini(f"[pytest]\nresearchqa_compare = main\n{gates}")
    compared = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "-n", "2", "-p", "no:cacheprovider")
    assert compared.ret == 0
    compared.stdout.fnmatch_lines(["*Δ: this run minus *-main on the rows both measured*",
                                   "✅ oracle: citation_accuracy: 1.000 vs 1.000*", "researchqa: gates passed*"])
    pytester.makeini(f"[pytest]\nresearchqa_compare = nosuch\n{gates}")
    missing = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "-n", "2", "-p", "no:cacheprovider")
    missing.stdout.fnmatch_lines(["*no baseline: nothing compared (no saved run matches 'nosuch')*",
                                  "researchqa: gates UNDECIDED*", "*researchqa_compare in tox.ini: no saved run 'nosuch'*"])


def test_a_dataset_file_that_cannot_be_read_is_one_clear_line_not_a_traceback(pytester, tmp_path):
    pytester.makefile(".yaml", rows="- &first\n  row_id: r1\n- *first\n")
    asked = pytester.runpytest("--researchqa-dataset=rows.yaml", "--researchqa-json=s.json", "-p", "no:cacheprovider",
                               f"--researchqa-cache-dir={tmp_path}")
    assert asked.ret == pytest.ExitCode.USAGE_ERROR
    asked.stderr.fnmatch_lines(["ERROR: researchqa: *rows.yaml*aliases*"])
    assert not (pytester.path / "s.json").exists(), "a run that never started reports nothing"
    # Ini settings alone and the project's own row test: the file is read where the rows are parametrized.
    pytester.makeini(f"[pytest]\nresearchqa_dataset = rows.yaml\nresearchqa_cache_dir = {tmp_path}\n")
    pytester.makepyfile(test_rows="def test_row(researchqa_case, researchqa_row):\n    pass\n")
    own = pytester.runpytest("-p", "no:cacheprovider")
    own.stdout.fnmatch_lines(["*ERROR collecting test_rows.py*", "researchqa: *rows.yaml*aliases*"])
    assert "Traceback" not in own.stdout.str() and "_multicall" not in own.stdout.str()


def test_pytest9_native_toml_table_takes_typed_values(pytester, tmp_path):
    pytester.makefile(".toml", pyproject=f'[tool.pytest]\nresearchqa_sample = 6\nresearchqa_system = ["oracle"]\n'
                                          f'researchqa_cache_dir = "{tmp_path}"\n')
    result = pytester.runpytest("--researchqa-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)


# A user's system: its third row takes long enough for the user to press Ctrl-C.
CTRL_C_AT_THE_THIRD_ROW = """
calls = []

def answer(question, paper):
    calls.append(question)
    if len(calls) == 3:
        raise KeyboardInterrupt
    return {"answer": "See the paper.", "citations": [paper.text.split(".")[0]]}
"""


class TestPartialRuns:
    def test_a_gate_never_passes_a_run_stopped_by_x(self, run, pytester):
        option = write_rows(pytester, [flat_row("r1", paper_id="ghost"), flat_row("r2"), flat_row("r3")],
                            {"p1": PAPER})
        result = run(option, "--researchqa-system=oracle", "--researchqa-fail-under=citation_accuracy=0.5", "-x")
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*gate evaluated on 1 of 3 rows: the run stopped early*"])
        assert "stopping after 1 failures" in result.stdout.str(), "the gates' testcases are not rows that failed"

    def test_a_gate_that_fails_a_run_under_x_with_warnings_as_errors_is_reported_in_every_medium(self, run, pytester):
        """tester50 HIGH-1: with -x (or --maxfail) and a failing gate, the plugin unset pytest's stop, which pytest
        refuses with a warning: under `filterwarnings = error` a traceback, no verdict and no JUnit file."""
        pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
        result = run("--researchqa-system=bm25", "--researchqa-fail-under=section_coverage=0.99", "-x",
                     "--junitxml=junit.xml")
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
        text = result.stdout.str()
        assert "Traceback" not in text and "stopping after" not in text, "no row failed: nothing stopped the run"
        result.stdout.fnmatch_lines(["researchqa: gates FAILED: 1 of 1 check(s) failed"])
        junit = (pytester.path / "junit.xml").read_text()
        assert 'failures="1"' in junit and "section_coverage" in junit

    @pytest.mark.slow
    def test_under_xdist_a_run_stopped_by_x_is_said_stopped_early_not_interrupted(self, pytester, tmp_path):
        # bm25's rows fail under --researchqa-fail-rows: -x stops the run long before its 54 rows are done.
        result = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "--researchqa-system=oracle", "-x",
                                               "--researchqa-system=bm25", "--researchqa-fail-rows",
                                               "--researchqa-fail-under=citation_accuracy=0.5", "-n", "2",
                                               "-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}")
        assert result.ret != 0
        result.stdout.fnmatch_lines(["*the run stopped early (-x / --maxfail)*"])
        assert "the run was interrupted" not in result.stdout.str()

    @pytest.mark.slow
    def test_a_gate_never_passes_a_rerun_of_the_last_failures(self, run, pytester):
        option = write_rows(pytester, [flat_row("r1", paper_id="ghost"), flat_row("r2"), flat_row("r3")],
                            {"p1": PAPER})
        pytester.runpytest(option, "--researchqa-system=oracle")
        result = pytester.runpytest(option, "--researchqa-system=oracle", "--lf",
                                    "--researchqa-fail-under=citation_accuracy=0.5")
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*gate evaluated on the subset --lf selected*"])

    @pytest.mark.slow
    def test_allow_partial_lets_the_gate_decide(self, run, pytester):
        option = write_rows(pytester, [flat_row("r1"), flat_row("r2", paper_id="ghost"), flat_row("r3")],
                            {"p1": PAPER})
        result = run(option, "--researchqa-system=oracle", "--researchqa-fail-under=citation_accuracy=0.5",
                     "--maxfail=1", "--researchqa-allow-partial")
        result.stdout.fnmatch_lines(["2 of 3 selected rows measured (1 error)"])
        result.stdout.no_fnmatch_line("*gate evaluated on*")

    @pytest.mark.slow
    def test_a_run_stopped_with_ctrl_c_is_said_interrupted_everywhere_and_last_skips_it(self, run, pytester, capsys):
        from pytest_researchqa.__main__ import main
        from pytest_researchqa.runs import resolve_run

        pytester.makepyfile(slow_rag=CTRL_C_AT_THE_THIRD_ROW)
        pytester.syspathinsert()
        runs = pytester.path / ".researchqa" / "runs"
        assert run("--researchqa-system=oracle", "-k", "lookup", "--researchqa-save=whole").ret == 0
        result = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}",
                                    "--researchqa-system=slow_rag:answer", "-k", "lookup", "--researchqa-save=cut",
                                    "--researchqa-json=s.json", "--researchqa-markdown=s.md",
                                    no_reraise_ctrlc=True)  # this test goes on
        assert result.ret == pytest.ExitCode.INTERRUPTED, "pytest's own exit status for an interrupt"
        result.stdout.fnmatch_lines(["researchqa: run INTERRUPTED after 2 of 6 selected rows; report only: *"])
        # tester38 F9: without gates the Markdown (a PR comment) read as a whole run's report.
        markdown = (pytester.path / "s.md").read_text(encoding="utf-8")
        assert markdown.startswith("## researchqa — INTERRUPTED — report (no gate)")
        assert "**run INTERRUPTED after 2 of 6 selected rows; report only: " in markdown
        data = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
        assert (data["interrupted"], data["verdict"]) == (True, "report")
        assert data["partial_reasons"] == ["2 of 6 selected rows measured: the run was interrupted"]
        cut = next(runs.glob("*-cut"))
        manifest = json.loads((cut / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["outcome"]["interrupted"] is True and manifest["outcome"]["partial_reasons"]

        assert main(["--runs", str(runs), "list"]) == 0
        assert f"{cut.name}  (interrupted)" in capsys.readouterr().out.splitlines()
        assert resolve_run("last", runs).name.endswith("-whole"), "last is the last run that finished"
        assert main(["--runs", str(runs), "show", "last"]) == 0
        assert "run INTERRUPTED" not in capsys.readouterr().out
        assert main(["--runs", str(runs), "show", str(cut)]) == 0
        assert "researchqa: run INTERRUPTED after 2 of 6 selected rows; report only: " in capsys.readouterr().out
        assert main(["--runs", str(runs), "show", "cut"]) == 2
        assert f"{cut.name} was interrupted: name its folder to read it" in capsys.readouterr().err
        compared = run("--researchqa-system=oracle", "-k", "lookup", "--researchqa-compare=last")
        compared.stdout.fnmatch_lines(["against *-whole:"])
        gated = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}",
                                   "--researchqa-system=slow_rag:answer", "-k", "lookup",
                                   "--researchqa-fail-under=citation_accuracy=0.5", no_reraise_ctrlc=True)
        assert gated.ret == pytest.ExitCode.INTERRUPTED
        gated.stdout.fnmatch_lines(["*gate evaluated on 2 of 6 rows: the run was interrupted*",
                                    "researchqa: run INTERRUPTED after 2 of 6 selected rows; gates FAILED: *"])
        # Killed (kill -9): only the partial rows file. Its headline says so too, and does not take the rows it
        # saved for the rows it selected (a tester's "2 selected rows measured" when 4 were).
        killed = cut.with_name(cut.name.replace("-cut", "-killed"))
        killed.mkdir()
        # tester39 G11c: it read "run INTERRUPTED after 1 rows; report only: no gate configured" (killed, one row).
        (killed / "rows.partial.jsonl").write_bytes((cut / "rows.jsonl").read_bytes().splitlines(keepends=True)[0])
        capsys.readouterr()
        assert main(["--runs", str(runs), "show", str(killed)]) == 0
        shown = capsys.readouterr().out
        assert "researchqa: run UNFINISHED: killed after 1 row, it decided no verdict\n" in shown, shown
        assert "1 row measured (0 errors)" in shown and "report only" not in shown
        assert "this run did not finish (killed or stopped before its end)" in shown and "1 selected" not in shown
        assert main(["--runs", str(runs), "show", "--markdown", str(killed)]) == 0
        assert capsys.readouterr().out.startswith(f"## researchqa run {killed.name} (1 row) — UNFINISHED (killed): "
                                                  "no verdict")

    @pytest.mark.slow
    def test_a_run_interrupted_before_any_row_finished_still_prints_its_verdict(self, run, pytester):
        # tester38 F9: the JUnit file and the Markdown carried the gates' verdict, the terminal printed none.
        pytester.makepyfile(stopped_rag="""
            def answer(question, paper):
                raise KeyboardInterrupt
            """)
        pytester.syspathinsert()
        result = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}",
                                    "--researchqa-system=stopped_rag:answer", "-k", "lookup",
                                    "--researchqa-fail-under=citation_accuracy=0.5", "--researchqa-markdown=s.md",
                                    no_reraise_ctrlc=True)
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["*researchqa verdict*", "0 of 6 selected rows measured (0 errors)*",
                                     "❌ gate evaluated on 0 of 6 rows: the run was interrupted*",
                                     "researchqa: run INTERRUPTED after 0 of 6 selected rows; *"])
        markdown = (pytester.path / "s.md").read_text(encoding="utf-8")
        assert "run INTERRUPTED after 0 of 6 selected rows" in markdown
        # The configured gate is one of the checks, not left out as if never given (tester41 T10).
        gate = "stopped_rag:answer: citation_accuracy>=0.5 UNDECIDABLE: no graded row measured it"
        assert gate in result.stdout.str() and gate in markdown

    @pytest.mark.slow
    @pytest.mark.parametrize("first", [True, False], ids=["before_ours", "after_ours"])
    def test_a_second_ctrl_c_during_pytests_handling_of_the_first_still_saves_the_run_as_interrupted(
            self, run, pytester, first):
        # tester39 G4: the second SIGINT (GNU timeout signals the child, then its group) landed while pytest
        # reported the first, before it set exit status 2: the partial run was saved as a finished baseline.
        pytester.makepyfile(slow_rag=CTRL_C_AT_THE_THIRD_ROW)
        pytester.makeconftest(f"""
            import pytest

            @pytest.hookimpl(tryfirst={first})
            def pytest_keyboard_interrupt(excinfo):
                raise KeyboardInterrupt  # the second Ctrl-C
            """)
        result = pytester.runpytest_subprocess(
            *WITHOUT_HYPOTHESIS, "-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}",
            "--researchqa-system=slow_rag:answer", "-k", "lookup", "--researchqa-save=cut",
            "--researchqa-fail-under=citation_accuracy=0.5", "--researchqa-json=s.json")
        assert result.ret != 0
        data = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
        assert (data["interrupted"], data["verdict"], data["passed"]) == (True, "failed", False)
        assert data["partial_reasons"] == ["gate evaluated on 2 of 6 rows: the run was interrupted"]
        [cut] = (pytester.path / ".researchqa" / "runs").glob("*-cut")
        assert json.loads((cut / "manifest.json").read_text(encoding="utf-8"))["outcome"]["interrupted"] is True

    @pytest.mark.slow
    def test_a_row_whose_xdist_worker_crashed_is_named_as_such_not_as_another_failing_test(self, run, pytester,
                                                                                          capsys):
        # tester39 G5: the crash read "1 other test(s) failed" (under --researchqa-only there is none).
        pytester.makepyfile(dying_rag="""
            import os
            import signal

            def answer(question, paper, *, row):
                if row.row_id == "edu-lookup-2":
                    os.kill(os.getpid(), signal.SIGKILL)  # the worker dies, as under the kernel's OOM killer
                return {"answer": "See the paper.", "citations": [paper.text.split(".")[0]]}
            """)
        result = pytester.runpytest_subprocess(
            *WITHOUT_HYPOTHESIS, "-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}", "-n", "2",
            "--researchqa-system=dying_rag:answer", "-k", "lookup", "--researchqa-json=s.json", timeout=300)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        crashed = "❌ 1 test(s) crashed their xdist worker: researchqa::test_question[dying_rag:answer-lookup-edu-lookup-2]; "
        assert any(line.startswith(crashed) for line in result.stdout.lines), "named, not an 'other test'"
        # The other five rows still ran: xdist 3.8's by-scope scheduler hung the run after a crash (#1323).
        result.stdout.fnmatch_lines(["*1 failed, 5 xfailed*"])
        result.stdout.no_fnmatch_line("*other test(s) failed*")
        checks = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["checks"]
        assert [c["name"] for c in checks] == ["run::worker_crash"]
        # tester40 H4: a run with a crashed worker (a row missing) became `last`, the next PR's baseline.
        from pytest_researchqa.__main__ import main
        from pytest_researchqa.runs import RunNotFound, resolve_run

        runs = pytester.path / ".researchqa" / "runs"
        # tester64 LOW: the error says which folder to name to read it anyway.
        with pytest.raises(RunNotFound, match=r"only runs killed, interrupted or crashed; the newest is /.*-run: name "
                                              r"its folder to read it"):
            resolve_run("last", runs)
        capsys.readouterr()
        assert main(["--runs", str(runs), "list"]) == 0
        assert capsys.readouterr().out.strip().endswith("-run  (crashed)")

    @pytest.mark.slow
    def test_a_gated_run_whose_every_row_crashes_its_worker_ends_failing_its_gates(self, run, pytester):
        # tester40 H1: replacements starting close together made the by-paper scheduler raise KeyError
        # (INTERNALERROR); a run that survived read "no gate configured".
        pytester.makepyfile(dying_rag="""
            import os
            import signal

            def answer(question, paper, *, row):
                os.kill(os.getpid(), signal.SIGKILL)
            """)
        result = pytester.runpytest_subprocess(
            *WITHOUT_HYPOTHESIS, "-p", "no:cacheprovider", f"--researchqa-cache-dir={run.keywords['cache']}", "-n", "2",
            "--researchqa-system=dying_rag:answer", "-k", "lookup-1", "--researchqa-save=crashed",
            "--researchqa-fail-under=citation_accuracy=0.5", timeout=300)  # a row of each paper: 3 replacements
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
        result.stdout.fnmatch_lines(["❌ gate evaluated on 0 *rows: 3 test(s) crashed their xdist worker*",
                                     "researchqa: gates FAILED*"])
        assert not (pytester.path / ".researchqa" / "runs").exists(), "no row finished: nothing saved"

    @pytest.mark.slow
    def test_the_summary_says_how_much_was_measured_and_names_the_slice(self, run, pytester, capsys):
        result = run("--researchqa-system=oracle", "-k", "lookup")
        said = "6 of 6 selected rows measured (0 errors); slice: -k 'lookup'"
        result.stdout.fnmatch_lines([said])
        # tester39 G11b: show, view and --markdown of the saved run read "6 selected rows measured".
        from pytest_researchqa.__main__ import main

        runs = pytester.path / ".researchqa" / "runs"
        capsys.readouterr()
        for shown in (["show"], ["show", "--markdown"]):
            assert main(["--runs", str(runs), *shown]) == 0
            assert said in capsys.readouterr().out, shown

    def test_a_selection_that_matches_no_row_is_a_usage_error(self, run):
        result = run("--researchqa-system=oracle", "-k", "no_such_row")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*no row of *sample.yaml matches the selection (-k 'no_such_row')*"])

    @pytest.mark.slow
    def test_a_selection_that_keeps_only_a_users_own_test_runs_it_with_and_without_xdist(self, run, pytester):
        """tester45 HIGH-1: `-n 2 -k plain` crashed in xdist's scheduler (INTERNALERROR: the worker refused after
        it had sent its tests); serially the user's test never ran and the run was a usage error. `-k zzz` under
        xdist exited 5 with no word of why; serially 4, saying why."""
        pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
        gates = ("--researchqa-system=bm25", "--researchqa-fail-under=citation_accuracy=0.5", "--researchqa-json=s.json")
        for extra in ((), ("-n", "2")):
            kept = run(*gates, "-k", "plain", *extra, subprocess_=bool(extra))
            assert kept.ret == pytest.ExitCode.OK and "INTERNALERROR" not in kept.stdout.str(), kept.stdout.str()[-3000:]
            kept.assert_outcomes(passed=1, deselected=ROWS if not extra else None)
            kept.stdout.fnmatch_lines(["researchqa: report only: no benchmark row selected for the gates*"])
            assert json.loads((pytester.path / "s.json").read_text())["verdict"] == "report"
            (pytester.path / "s.json").unlink()
            none = run(*gates, "-k", "zzz", *extra, subprocess_=bool(extra))
            assert none.ret == pytest.ExitCode.USAGE_ERROR, (extra, none.stdout.str()[-3000:])
            none.stderr.fnmatch_lines(["ERROR: researchqa: no row of *sample.yaml matches the selection (-k 'zzz')"])
            # A refused run has no verdict: before, its summary read "report only: no benchmark row selected ..."
            # above the error, and it wrote a JSON summary saying "report".
            assert "researchqa verdict" not in none.stdout.str() and not (pytester.path / "s.json").exists()
        # tester47 LOW-8: a budget printed an empty plan ("total: 0 model call(s)") for a run of no benchmark row.
        budgeted = run("--researchqa-system=bm25", "--researchqa-judge=openai/gpt-4o", "--researchqa-max-cost=1",
                       "-k", "plain")
        assert budgeted.ret == pytest.ExitCode.OK and "researchqa plan" not in budgeted.stdout.str()

    def test_last_failed_after_only_a_users_own_test_failed_reruns_that_test(self, pytester, tmp_path):
        """tester46 MED-5: `--lf` collects only the failed test's file, so no row was generated, and the run was a
        usage error ("no collected test takes them") that never reran the failing test."""
        pytester.makepyfile(test_plain="def test_plain():\n    assert False\n")
        args = ("--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}")
        assert pytester.runpytest(*args).ret == pytest.ExitCode.TESTS_FAILED
        again = pytester.runpytest(*args, "--lf")
        again.assert_outcomes(failed=1)
        assert "ERROR: researchqa" not in again.stderr.str() and "run failed: 1 other test(s) failed" in (
            again.stdout.str().lower())

    def test_an_empty_dataset_is_a_usage_error_naming_the_file(self, run, pytester):
        empty = pytester.path / "empty.jsonl"
        empty.write_text("")
        result = run(f"--researchqa-dataset={empty}", "--researchqa-system=oracle")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*{empty}*"])


@pytest.mark.slow
def test_audit_with_a_gate_says_the_gates_do_not_apply(run, pytester):
    result = run("--researchqa-audit", "--researchqa-fail-under=citation_accuracy=0.9", "--researchqa-system=bm25",
                 "--researchqa-json=s.json", "--researchqa-markdown=s.md")
    assert result.ret == 0
    said = "report only: gates are not evaluated in an audit, which runs no system"
    result.stdout.fnmatch_lines(["*researchqa dataset audit*", "gates are not evaluated in an audit, which runs no system"])
    # tester45 LOW-5: the JSON said "no gate configured", Markdown "report (no gate)", and a note that the named
    # systems never ran because "no collected test asks for an answer" (an audit answers nothing, by design).
    assert json.loads((pytester.path / "s.json").read_text())["headline"].startswith(said)
    markdown = (pytester.path / "s.md").read_text()
    assert markdown.startswith("## researchqa — report (gates are not evaluated in an audit, which runs no system)")
    assert "no collected test asks for an answer" not in result.stdout.str() + markdown


ASYNC_SYSTEM = '''
import asyncio

LOOPS = set()
IN_FLIGHT = 0
PEAK = 0


class Client:
    """Like an aiohttp session: bound to the loop it was made on."""

    def __init__(self):
        self.loop = asyncio.get_running_loop()

    async def get(self, text):
        if asyncio.get_running_loop() is not self.loop:
            raise RuntimeError("Event loop is closed")
        await asyncio.sleep(0.05)
        return text


CLIENT = None


async def answer(question, paper, *, row):
    global CLIENT, IN_FLIGHT, PEAK
    CLIENT = CLIENT or Client()
    LOOPS.add(id(asyncio.get_running_loop()))
    IN_FLIGHT += 1
    PEAK = max(PEAK, IN_FLIGHT)
    try:
        citations = [s.alternatives[0] for s in row.expected_references]
        return {"answer": await CLIENT.get(row.expected_answer), "citations": citations,
                "refused": row.question_type == "adversarial"}
    finally:
        IN_FLIGHT -= 1


def test_report(request):
    pass
'''


@pytest.mark.slow
def test_an_async_system_with_one_shared_client_passes_every_row_on_one_pipelined_loop(run, pytester):
    pytester.makepyfile(asyncsys=ASYNC_SYSTEM)
    pytester.makeconftest(
        "import asyncsys\n"
        "def pytest_sessionfinish(session):\n"
        "    print(f'\\nLOOPS={len(asyncsys.LOOPS)} PEAK={asyncsys.PEAK}')\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=asyncsys:answer", "--researchqa-concurrency=3", "-s")
    result.assert_outcomes(passed=ROWS)
    result.stdout.fnmatch_lines(["*LOOPS=1 PEAK=3*"])


def test_a_crashing_system_shows_the_users_frames_once(run, pytester):
    pytester.makepyfile(crashing="def helper():\n    raise KeyError('missing index')\n\n"
                                 "def answer(question, paper):\n    return helper()\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=crashing:answer", "-k", "edu-lookup-1")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "crashing.py\", line 2, in helper" in out and "crashing.py\", line 5, in answer" in out
    assert "pytest_researchqa" not in out.split("system 'crashing:answer' raised")[1].split("short test summary")[0]
    assert "During handling of the above exception" not in out, "the user's error is shown once, not chained"


def test_a_system_module_that_cannot_be_imported_suggests_the_path(run):
    result = run("--researchqa-system=my_rag_pipeline:answer")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot import 'my_rag_pipeline'*PYTHONPATH=. pytest*"])


@pytest.mark.slow
@pytest.mark.parametrize(("target", "said"), [
    ("one_argument", "system 'shapes:one_argument': 'one_argument' cannot be called as (question, paper): too many "
                     "positional arguments"),
    ("ANSWERS", "system 'shapes:ANSWERS': 'ANSWERS' is an int, not a callable"),
])
def test_a_system_that_cannot_take_a_question_and_a_paper_is_one_usage_error_before_any_row(run, pytester, target,
                                                                                            said):
    """tester64 LOW: each row errored with `wrongsig() takes 1 positional argument but 2 were given`."""
    pytester.makepyfile(shapes="def one_argument(question):\n    return 'x'\n\nANSWERS = 3\n\n"
                               "def with_row(question, paper, *, row):\n    return {'answer': 'x', 'citations': []}\n\n"
                               "def flexible(*args, **kwargs):\n    return {'answer': 'x', 'citations': []}\n\n"
                               "def plain(question, paper):\n    return {'answer': 'x', 'citations': []}\n\n"
                               "def timed(f):\n    def wrapper(*args, **kwargs):\n        return f(*args, **kwargs)\n"
                               "    return wrapper\n\nwrapped = timed(plain)\n")
    pytester.syspathinsert()
    result = run(f"--researchqa-system=shapes:{target}", "-k", "edu-lookup")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == f"ERROR: researchqa: {said}", result.stderr.lines
    # row= when it takes it; a wrapper's *args, **kwargs takes anything, and is not sent row= (tester66 MED: a
    # decorator without functools.wraps over f(question, paper) errored every row).
    for accepted in ("with_row", "flexible", "wrapped"):
        assert run(f"--researchqa-system=shapes:{accepted}", "-k", "edu-lookup").ret == pytest.ExitCode.OK, accepted


def test_a_model_without_the_llm_extra_is_a_usage_error_naming_it(pytester, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "litellm" else real_find_spec(name, *args))
    result = pytester.runpytest("--researchqa-model=gpt-5.4", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*litellm, which is not installed: pip install 'pytest-researchqa[[]llm]'*"])


@pytest.mark.slow
def test_a_run_that_measures_nothing_says_so(run, pytester):
    pytester.makepyfile(prose="from pytest_researchqa import Answer\n\n"
                              "def answer(question, paper):\n    return Answer('Some prose.', cites=False)\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=prose:answer", "-k", "edu")
    result.stdout.fnmatch_lines(["warning: this run measured no answer quality*no judge is configured*"])


@pytest.mark.slow
def test_a_failed_model_row_says_what_the_model_was_given(run, pytester):
    pytester.makepyfile(given="from pytest_researchqa import Answer\n\n"
                              "def answer(question, paper):\n"
                              "    return Answer('x', ['A sentence that is not in the paper at all.'],\n"
                              "                  meta={'context': 'retrieved passages', 'prompt_tokens': 900,\n"
                              "                        'completion_tokens': 40})\n")
    pytester.syspathinsert()
    result = run("--researchqa-system=given:answer", "--researchqa-fail-rows", "-k", "edu-lookup-1")
    result.stdout.fnmatch_lines(["*researchqa model input*", "context: retrieved passages, 900 tokens in, 40 out"])


class TestOneOutcomeEveryMedium:
    @pytest.mark.slow
    @pytest.mark.parametrize("gate", [(), ("--researchqa-fail-under=citation_accuracy=0.5",)])
    def test_rows_failed_under_fail_rows_fail_the_run_in_every_medium_gated_or_not(self, run, pytester, gate):
        # tester39 G1: with a gate, 14 red rows and JUnit failures=14 exited 0 "gates passed ✅"; without one,
        # exit 1 with a JSON verdict "report" and passed null.
        result = run("--researchqa-system=bm25", "--researchqa-fail-rows", *gate, "--researchqa-json=s.json",
                     "--researchqa-markdown=s.md", "--junitxml=j.xml")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["❌ 14 row(s) below their bar failed as tests (--researchqa-fail-rows)",
                                     "researchqa: *FAILED*"])
        summary = json.loads((pytester.path / "s.json").read_text())
        assert (summary["verdict"], summary["passed"]) == ("failed", False)
        assert "FAILED ❌" in (pytester.path / "s.md").read_text().splitlines()[0]
        suite = ElementTree.parse(pytester.path / "j.xml").getroot().find("testsuite")
        assert int(suite.get("failures")) >= 14

    @pytest.mark.slow
    def test_gates_that_could_not_decide_are_not_passed_in_the_json_summary(self, run, pytester):
        # tester39 G8: an UNDECIDED run read `passed: true`, green on a dashboard keyed on it.
        result = run("--researchqa-system=bm25", "--researchqa-compare=main", "--researchqa-compare-missing=skip",
                     "--researchqa-fail-on-regression=citation_precision", "--researchqa-json=s.json", "-k", "lookup")
        assert result.ret == 0
        summary = json.loads((pytester.path / "s.json").read_text())
        assert (summary["verdict"], summary["passed"]) == ("undecidable", None)

    @pytest.mark.slow
    def test_an_inactive_plugin_registers_question_type_markers_only_under_strict_markers(self, pytester):
        pytester.makepyfile(test_unit="import pytest\n\n@pytest.mark.lookup\ndef test_unit():\n    pass\n")
        markers = pytester.runpytest("--markers", "-p", "no:cacheprovider")
        assert "lookup: researchqa rows" not in markers.stdout.str()
        # A project's own row test (no option) registers the markers when it is parametrized; a test marked
        # `lookup` collected before it must not fail --strict-markers because of the order. In a fresh process:
        # pytest.mark remembers markers that earlier in-process runs registered.
        pytester.makepyfile(test_zrows="def test_row(researchqa_case, researchqa_row):\n    pass\n")
        strict = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, "--strict-markers", "-p", "no:cacheprovider",
                                               "test_unit.py", "test_zrows.py")
        assert "not found in `markers`" not in strict.stdout.str()
        strict.assert_outcomes(passed=1 + ROWS)
        active = pytester.runpytest("--markers", "--researchqa-system=oracle", "-p", "no:cacheprovider")
        active.stdout.fnmatch_lines(["@pytest.mark.lookup: researchqa rows of question type lookup"])

    @pytest.mark.slow
    def test_a_path_that_does_not_exist_gets_pytests_own_error(self, run):
        result = run("--researchqa-system=bm25", "no_such_folder")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*file or directory not found: no_such_folder*"])
        assert "has no rows to run" not in result.stderr.str()

    @pytest.mark.slow
    def test_only_runs_the_benchmark_in_a_project_with_tests(self, run, pytester):
        pytester.makepyfile(test_unit="def test_unit():\n    assert False\n")
        result = run("--researchqa-only", "--researchqa-system=oracle")
        result.assert_outcomes(passed=ROWS, deselected=1)
        assert result.ret == 0

    @pytest.mark.slow
    def test_a_missing_baseline_can_be_skipped_and_the_run_says_nothing_was_compared(self, run, pytester):
        gate = ("--researchqa-system=bm25", "--researchqa-compare=main",
                "--researchqa-fail-on-regression=citation_precision")
        refused = run(*gate)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        skipped = run(*gate, "--researchqa-compare-missing=skip", "--researchqa-markdown=pr.md",
                      "--junitxml=report.xml")
        assert skipped.ret == 0
        skipped.stdout.fnmatch_lines(["⚠️ no baseline: nothing compared*", "researchqa: gates UNDECIDED*"])
        assert (pytester.path / "pr.md").read_text().startswith("## researchqa — gates UNDECIDED ⚠️")
        suite = ElementTree.parse(pytester.path / "report.xml").getroot().find("testsuite")
        [gate_case] = [t for t in suite.iter("testcase") if t.get("classname") == "researchqa.gates.regression"]
        assert gate_case.find("skipped") is not None and suite.get("failures") == "0"
        strict = run(*gate, "--researchqa-compare-missing=skip", "--researchqa-undecidable=fail")
        assert strict.ret == 1, "undecidable gates fail when the user says so"
        strict.stdout.fnmatch_lines(["researchqa: gates FAILED*"])
        # Without a regression gate nothing needs the baseline: its absence is a note, not an undecidable check.
        threshold_only = run("--researchqa-system=oracle", "--researchqa-compare=main", "--researchqa-compare-missing=skip",
                             "--researchqa-fail-under=citation_accuracy=0.5", "--researchqa-undecidable=fail")
        assert threshold_only.ret == 0
        threshold_only.stdout.fnmatch_lines(["researchqa: gates passed*",
                                             "*no baseline: nothing compared (no saved run matches 'main')*"])

    @pytest.mark.slow
    def test_the_json_summary_is_written_saved_and_shown_with_each_gates_state(self, run, pytester, capsys):
        from pytest_researchqa.__main__ import main

        result = run("--researchqa-system=bm25", "--researchqa-fail-under=multi_hop.section_coverage=0.9",
                     "--researchqa-json=summary.json", "--researchqa-save=gated")
        assert result.ret == 1
        written = json.loads((pytester.path / "summary.json").read_text())
        assert written["schema"] == "researchqa-summary/1" and written["verdict"] == "failed"
        [gate] = written["gates"]
        assert gate["state"] == "failed" and gate["value"] == pytest.approx(0.41666, abs=1e-3)
        [system] = written["systems"]
        assert system["system"] == "bm25" and system["rows"] == ROWS and system["below_bar"] == 14
        assert system["metrics"]["section_coverage"]["low"] is not None
        capsys.readouterr()
        assert main(["--runs", str(pytester.path / ".researchqa" / "runs"), "show", "gated", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == written


class TestRunsThatNeverRunTheBenchmark:
    """Settings in an ini file, a gate, a listing: none of them is a benchmark run on its own."""

    def test_collect_only_on_a_gated_run_decides_nothing_and_writes_nothing(self, pytester, tmp_path):
        pytester.makepyfile(test_x="def test_one():\n    pass\n")
        result = pytester.runpytest("-p", "no:cacheprovider", "--co", "--researchqa-fail-under=citation_accuracy=0.9",
                                    f"--researchqa-json={tmp_path / 'x.json'}", "--researchqa-results=off",
                                    f"--researchqa-cache-dir={tmp_path / 'cache'}", f"--junitxml={tmp_path / 'j.xml'}")
        assert result.ret == 0, result.stdout.str()
        assert "gate evaluated" not in result.stdout.str()
        assert not (tmp_path / "x.json").exists()
        assert "<failure" not in (tmp_path / "j.xml").read_text()

    def test_a_unit_run_in_a_project_whose_ini_configures_the_benchmark_writes_no_report(
            self, pytester, tmp_path, monkeypatch):
        summary = tmp_path / "step-summary.md"
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        pytester.makeini(f"[pytest]\nresearchqa_system = oracle\nresearchqa_fail_under = citation_accuracy=0.9\n"
                         f"researchqa_json = {tmp_path / 'rqa.json'}\nresearchqa_cache_dir = {tmp_path / 'cache'}\n")
        pytester.makepyfile(test_x="def test_one():\n    pass\n")
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
        assert result.ret == 0
        assert not (tmp_path / "rqa.json").exists()
        assert not summary.exists()

    def test_an_ini_value_of_zero_is_a_value_not_an_unset_key(self, pytester):
        pytester.makeini("[pytest]\nresearchqa_retries = 0\nresearchqa_max_cost = 0\nresearchqa_max_judge_calls = 0\n")
        pytester.makepyfile(test_settings="""
            def test_settings(researchqa_settings):
                assert (researchqa_settings.retries, researchqa_settings.max_cost,
                        researchqa_settings.max_judge_calls) == (0, 0.0, 0)
            """)
        pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    def test_help_is_shown_even_when_an_ini_setting_is_wrong(self, pytester):
        pytester.makeini("[pytest]\nresearchqa_fail_under = bogus\n")
        result = pytester.runpytest("--help")
        assert result.ret == 0
        assert "--researchqa-fail-under" in result.stdout.str()
