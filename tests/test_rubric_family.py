"""The rubric family as a pytest user meets it: research queries, coverage judging, battles and Elo (pytester,
models and judges served by the local scripted server)."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
import shutil
import urllib.parse

import pytest
from helpers import leaderboard_table, needs_shared, run_pytest, shared_path

REAL_QUERIES = ("external-datasets", "penn-researchqa-partial", "researchqa_med_med.jsonl")
SAMPLE_ROWS = 12
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


pytestmark = pytest.mark.usefixtures("litellm_loaded")


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path_factory, server):
    cache = tmp_path_factory.mktemp("cache")
    return functools.partial(run_pytest, pytester, cache=cache, server=server)


def section(result: pytest.RunResult, title: str) -> list[str]:
    """The lines of the table printed under ``title`` (header included)."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    table = []
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.slow
@needs_shared
def test_the_50_real_queries_load_answer_and_skip_grading_with_the_reason(run):
    path = shared_path(*REAL_QUERIES)
    result = run(f"--researchqa-dataset={path}", "--researchqa-judge=openai/judge-a", "-rs", "--strict-markers")
    result.assert_outcomes(skipped=50)
    result.stdout.fnmatch_lines(["*SKIPPED [[]50[]]*no rubric items: answered and saved, not graded*"])
    board = leaderboard_table(result)["rubric-oracle"]
    assert board["graded"] == "0" and board["not graded"] == "50" and board["Coverage %"] == "—"
    assert result.ret == 0, "rows without rubric items never fail"


@needs_shared
def test_the_real_queries_in_the_released_test_json_shape_load_with_string_citations(tmp_path):
    lines = shared_path(*REAL_QUERIES).read_text(
        encoding="utf-8").splitlines()
    real = [json.loads(line) for line in lines if line.strip()]
    rows = [{"id": r["task_id"], **{k: r["metadata"][k] for k in ("general_domain", "subdomain", "field")},
             "query": r["question"], "date": "2024-01-01",
             "rubric": [{"rubric_item": "Does the response cite the key trial?", "type": "citation",
                         "citation_metadata": "Smith J. A trial. Lancet. 2020."}]} for r in real]
    path = tmp_path / "test.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    from pytest_researchqa.families.rubric.rows import load_queries

    dataset = load_queries(path)
    assert len(dataset.rows) == len(real) == 50 and not dataset.problems


@pytest.mark.slow
@needs_shared
def test_the_real_queries_select_by_field_and_by_general_domain_marker(run):
    path = shared_path(*REAL_QUERIES)
    by_field = run(f"--researchqa-dataset={path}", "--collect-only", "-q", "-k", "Anesthesiology")
    by_field.stdout.fnmatch_lines(["researchqa::test_query[[]rubric-oracle-Anesthesiology-*[]]"])
    by_domain = run(f"--researchqa-dataset={path}", "--collect-only", "-q", "-m", "social_sciences",
                    "--strict-markers")
    by_domain.stdout.fnmatch_lines(["5/50 tests collected (45 deselected)*"])


@pytest.mark.slow
def test_the_bundled_sample_with_the_rubric_oracle_covers_every_item(run, server):
    result = run("--researchqa-family=rubric", "--researchqa-judge=openai/judge-a")
    result.assert_outcomes(passed=SAMPLE_ROWS)
    board = leaderboard_table(result)["rubric-oracle"]
    assert board["Coverage %"] == "100.0" and board["graded"] == str(SAMPLE_ROWS)
    assert server.calls("judge-a") == SAMPLE_ROWS, "one coverage call per answer, every item in it"
    kinds = section(result, "rubric items not completely covered")
    assert cells(kinds[0]) == ["system", "citation", "limitation", "comparison", "example", "impact", "other"]
    assert all(c.startswith("0% (") for c in cells(kinds[2])[1:]), "every kind represented, none missed"
    # One system fights no battle: the footer says how Coverage % is made and says nothing of an Elo nobody
    # computed (tester52 LOW-7: it named the bootstrap's median under the paper protocol, which reports the mean).
    footer = next(line for line in result.stdout.lines if line.startswith("Coverage %: "))
    assert "Elo" not in footer, footer


@pytest.mark.slow
def test_under_the_paper_protocol_a_system_that_wins_every_battle_keeps_its_battles_and_shows_no_finite_elo(
        run, server, pytester, capsys):
    """tester39 G3: plain Bradley-Terry has no finite fit when good wins every battle; the run crashed with
    ZeroDivisionError and lost the judged battles."""
    result = run("--researchqa-model=openai/good", "--researchqa-model=openai/sloppy", "--researchqa-json=s.json",
                 "--researchqa-judge=openai/judge-a", "--researchqa-family=rubric", "--researchqa-protocol=paper")
    result.assert_outcomes(passed=2 * SAMPLE_ROWS)
    assert result.ret == 0 and "ZeroDivisionError" not in result.stdout.str()
    board = leaderboard_table(result)
    assert list(board) == ["openai/good", "openai/sloppy"]
    assert (board["openai/good"]["Elo"], board["openai/sloppy"]["Elo"]) == ("+∞", "−∞")
    assert board["openai/good"]["battles"] == str(SAMPLE_ROWS)
    assert cells(section(result, "pairwise:")[2])[2] == "100% (12)", "the win matrix is drawn"
    result.stdout.fnmatch_lines(["*Elo: no finite value: plain Bradley-Terry (the paper protocol, no prior) has none "
                                 "when a group of systems wins every battle against the rest: openai/good won every "
                                 "battle against the others (+∞); openai/sloppy lost every one against the others "
                                 "(−∞); the win matrix*"])
    # tester52 MED-2/3: nothing said which procedure the run followed, nor Table 3's 5-point ensemble.
    result.stdout.fnmatch_lines(["protocol: paper: the rubric paper's procedure: *plain Bradley-Terry, the mean of "
                                 "1,000 bootstraps; the ensemble counts Eq. 1's 4 points a direct vote "
                                 "(--researchqa-ensemble=notebook: Table 3's 5)*"])
    summary = json.loads((pytester.path / "s.json").read_text())
    assert any(note.startswith("protocol: paper: ") for note in summary["notes"]), summary["notes"]
    results = summary["family_results"]
    assert results["battles"] == SAMPLE_ROWS and results["elo"] == {}
    assert results["no_finite_fit"] == {"openai/good": "+", "openai/sloppy": "-"}
    # Each battle as judged is kept: which query, the direct judge in both orders (tester41 T4), so calibrate
    # --run fills a pairwise label from the run, whichever way round the label names the two systems.
    judged = results["judged"]
    assert len(judged) == SAMPLE_ROWS and {b["judge"] for b in judged} == {"openai/judge-a"}
    battle = judged[0]
    assert set(battle) == {"row_id", "first", "second", "judge", "orders", "score"}
    labels = pytester.path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(label) for label in (
        {"kind": "pairwise", "row_id": battle["row_id"], "system_a": battle["second"], "system_b": battle["first"],
         "human": "a" if battle["second"] == "openai/good" else "b"},
        {"kind": "pairwise", "row_id": "no-such-row", "system_a": "openai/good", "system_b": "openai/sloppy",
         "human": "a"})) + "\n")
    from pytest_researchqa.__main__ import main

    capsys.readouterr()
    assert main(["calibrate", str(labels), "--run", "last", "--json"]) == 0
    [pairwise] = [k for k in json.loads(capsys.readouterr().out)["agreement"] if k["kind"] == "pairwise"]
    assert (pairwise["labels"], pairwise["skipped"]) == (1, 1) and len(pairwise["not_in_run"]) == 1, pairwise
    assert "has no judged battle of 'openai/good' and 'openai/sloppy'" in pairwise["not_in_run"][0]
    assert pairwise["figures"]["accuracy"]["value"] == 1.0, "the judge prefers good in both orders, as the person"


@pytest.mark.slow
def test_two_models_get_coverage_elo_a_win_matrix_and_the_kind_table_and_a_rerun_calls_nobody(run, server,
                                                                                              capsys, pytester,
                                                                                              tmp_path):
    args = ("--researchqa-model=openai/good", "--researchqa-model=openai/sloppy", "--researchqa-judge=openai/judge-a",
            "--researchqa-family=rubric")
    first = run(*args)
    first.assert_outcomes(passed=2 * SAMPLE_ROWS)
    board = leaderboard_table(first)
    good, sloppy = board["openai/good"], board["openai/sloppy"]
    assert list(board) == ["openai/good", "openai/sloppy"], "best first"
    assert float(good["Coverage %"]) > float(sloppy["Coverage %"])
    low, high = (float(x) for x in good["95% CI"].split("–"))
    assert low <= float(good["Coverage %"]) <= high
    assert float(good["Elo"]) > 1000 > float(sloppy["Elo"]) and float(good["± SD"]) >= 0
    assert good["battles"] == sloppy["battles"] == str(SAMPLE_ROWS)
    wins = section(first, "pairwise:")
    assert cells(wins[0]) == ["row beats column", "openai/good", "openai/sloppy"]
    assert cells(wins[2])[2] == "100% (12)" and cells(wins[3])[1] == "0% (12)"
    assert section(first, "rubric items not completely covered")
    assert section(first, "by general domain")
    text = first.stdout.str()
    assert "same family" not in text, "aliases on a local server are of unknown families (tester37 F8)"
    assert "openai/sloppy: date cutoff: 12/12 dated citations after the cutoff (100%)" in text
    assert "openai/good: date cutoff: 0/24 dated citations after the cutoff (0%)" in text
    calls = server.calls()
    assert server.calls("judge-a") == 2 * SAMPLE_ROWS + 2 * SAMPLE_ROWS, "coverage per answer, 2 orders per battle"
    again = run(*args)
    assert server.calls() == calls, "answers, coverage and battles all come from the cache"
    assert leaderboard_table(again)["openai/good"]["Elo"] == good["Elo"]
    # tester47: the estimate assumed an empty cache (72 calls planned, 0 made), so a budget refused warm reruns.
    assert estimate(first)[:2] == (calls, 2 * SAMPLE_ROWS) and estimate(again)[:2] == (0, 0)
    again.stdout.fnmatch_lines([f"researchqa: this run asks 0 model call(s) ({calls} cached, no retries)*",
                                "researchqa: estimated cost $0.0000 *"])
    from pytest_researchqa.__main__ import main

    capsys.readouterr()
    assert main(["show"]) == 0  # in pytester's folder
    shown = capsys.readouterr().out
    assert "| openai/good " in shown and "row beats column" in shown, "a saved run shows its battles and Elo"
    assert "rubric items not completely covered" in shown, "the family's board reads the rows' details: kept"
    assert main(["show", "--json"]) == 0  # a dashboard reads the family's headline result too (tester37 F3)
    results = json.loads(capsys.readouterr().out)["family_results"]
    assert results["battles"] == SAMPLE_ROWS and results["rules"]["protocol"] == "project"
    assert round(results["elo"]["openai/good"]["median"]) == float(good["Elo"]) > results["elo"]["openai/sloppy"]["median"]
    # The HTML report draws the board the terminal prints (tester37 F3): Elo, battles, the win matrix ...
    report = pytester.path / "rub.html"
    assert main(["view", "-o", str(report)]) == 0
    packed = re.search(r'id="researchqa-data"[^>]*>([^<]+)<', report.read_text()).group(1)
    page = json.loads(gzip.decompress(base64.b64decode(packed)))
    tables = {t["title"] or t["headers"][0]: t for t in page["board"] if "headers" in t}
    assert tables["system"]["headers"][:6] == ["system", "Coverage %", "95% CI", "Elo", "± SD", "battles"]
    assert tables["system"]["rows"][0][:6] == ["openai/good", good["Coverage %"], good["95% CI"], good["Elo"],
                                               good["± SD"], good["battles"]]
    assert tables["row beats column"]["rows"][0] == ["openai/good", "·", "100% (12)"]
    assert {"by general domain (Coverage %)", "rubric items not completely covered (coverage < 4), by kind"} <= set(tables)
    assert any("Elo: Bradley-Terry" in p.get("text", "") for p in page["board"]), "the board's own notes"
    assert page["guards"] == [], "no same-family guard for aliases on a local server"
    if CHROMIUM is not None:  # ... and a row page each rubric item's score with the judge's justification
        from test_html_report import dump

        dom = dump(report, "row=" + urllib.parse.quote("openai/good\u241fai-dense-retrieval"), tmp_path,
                   screenshot="report-rubric-row.png")
        aside = dom.split('<aside id="row-page">', 1)[1]
        assert re.search(r'<p class="justification"><strong>openai/judge-a: \d</strong> \d+ of \d+ key words', aside)
        # ... and the battle the answer was in, the direct judge in both orders (tester41 T4), reviewable
        assert aside.count('class="justification"') == 8 + 1, "one per rubric item of the row, and its battle"
        assert "pairwise battles (1)" in aside and "<strong>vs openai/sloppy: won</strong>" in aside
        assert re.search(r"openai/judge-a preferred (this answer|tie|openai/sloppy) with this answer shown (first|"
                         r"second), (this answer|tie|openai/sloppy) with it shown (first|second); the ensemble", aside)
        assert aside.count('class="review"') == 8 + 1
        assert 'id="leaderboard"' in dom and "row beats column" in dom
    assert [b for b in page["battles"] if b["row_id"] == "ai-dense-retrieval"], "the page carries the battles"


@pytest.mark.slow
def test_battles_per_pair_are_capped_and_the_same_every_run(run, server):
    args = ("--researchqa-system=rubric-oracle", "--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
            "--researchqa-judge=openai/judge-a", "--researchqa-battles=5")
    result = run(*args)
    assert leaderboard_table(result)["rubric-oracle"]["battles"] == "5"
    asked = [r["messages"][-1]["content"] for r in server.requests if "<<<RESPONSE_A" in r["messages"][-1]["content"]]
    assert len(asked) == 10, "five battles, each in both orders"
    run(*args, "--researchqa-refresh")
    again = [r["messages"][-1]["content"] for r in server.requests if "<<<RESPONSE_A" in r["messages"][-1]["content"]]
    assert len(again) == 10, "the same five battles: all from the cache"


@pytest.mark.slow
def test_a_position_biased_judge_is_reported_and_its_votes_cancel(run):
    result = run("--researchqa-model=openai/good", "--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
                 "--researchqa-judge=openai/judge-first")
    result.stdout.fnmatch_lines(["the direct judge gave the same verdict in both orders in 0% of battles"])
    board = leaderboard_table(result)
    assert float(board["openai/good"]["Elo"]) > float(board["openai/sloppy"]["Elo"]), "coverage decides"


def test_a_judge_that_never_gives_a_verdict_makes_the_row_an_error_not_a_zero(run, pytester):
    result = run("--researchqa-family=rubric", "--researchqa-judge=openai/judge-broken", "--researchqa-retries=0",
                 "-k", "Ecology", "--junitxml=rubric.xml")
    # An error (E), as a row whose system raised, and as the summary counts it (tester37 F9); not a failed test.
    result.assert_outcomes(errors=2)
    assert result.ret == 1
    board = leaderboard_table(result)["rubric-oracle"]
    assert board["Coverage %"] == "—" and board["errors"] == "2" and board["judge err"] == "2"
    result.stdout.fnmatch_lines(["*no coverage verdict for this answer (openai/judge-broken: judge *",
                                 "*run FAILED: 2 row(s) errored*"])
    junit = (pytester.path / "rubric.xml").read_text()
    assert junit.count("<error ") == 2 and "<failure" not in junit


@pytest.mark.slow
def test_the_task_options_are_switchable_and_recorded_per_row(run, server, pytester):
    run("--researchqa-model=openai/good", "--researchqa-family=rubric", "-k", "Linguistics",
        "--researchqa-date-cutoff=off", "--researchqa-length-words=0", "--researchqa-save=plain")
    run("--researchqa-model=openai/good", "--researchqa-family=rubric", "-k", "Linguistics",
        "--researchqa-save=default")
    prompts = [r["messages"][-1]["content"] for r in server.requests if r["model"] == "good"]
    assert len(prompts) == 2, "changing the task asks again"
    assert "2018-08-01" not in prompts[0] and "words" not in prompts[0].split("FIELD:")[0].split("citations")[-1]
    assert "on or before 2018-08-01" in prompts[1] and "about 250 words" in prompts[1]
    runs = pytester.path / ".researchqa" / "runs"
    tasks = {}
    for folder in runs.iterdir():
        record = json.loads((folder / "rows.jsonl").read_text().splitlines()[0])
        tasks[folder.name.rsplit("-", 1)[1]] = record["details"]["task"]
    assert tasks["plain"] == {"date_cutoff": None, "length_words": None}
    assert tasks["default"] == {"date_cutoff": "2018-08-01", "length_words": 250}


@pytest.mark.slow
def test_rows_without_items_can_be_judged_on_the_generic_rubric(run, pytester, server):
    rows = pytester.path / "queries.jsonl"
    rows.write_text(json.dumps({"task_id": "q1", "question": "How do coral reefs recover after bleaching events?",
                                "metadata": {"field": "Marine Biology", "general_domain": "Life & Earth Sciences",
                                             "subdomain": "Life Sciences"}}) + "\n")
    result = run(f"--researchqa-dataset={rows}", "--researchqa-model=openai/good", "--researchqa-judge=openai/judge-a",
                 "--researchqa-generic-rubric")
    result.assert_outcomes(passed=1)
    [coverage] = [r["messages"][-1]["content"] for r in server.requests if r["model"] == "judge-a"]
    assert "8. " in coverage.split("RUBRIC ITEMS:")[1] and "Does the answer cite published work" in coverage


@pytest.mark.slow
def test_xdist_gives_the_same_rubric_leaderboard_as_a_serial_run(run):
    args = ("--researchqa-model=openai/good", "--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
            "--researchqa-judge=openai/judge-a")
    serial = run(*args, "-p", "no:xdist")  # in-process: only the xdist run needs a fresh interpreter
    parallel = run(*args, "-n", "2", subprocess_=True)
    assert "2 workers" in parallel.stdout.str()
    # The controller's progress, written past pytest's capture to the terminal (a subprocess, as a user runs it).
    parallel.stdout.fnmatch_lines([f"researchqa: {2 * SAMPLE_ROWS} model row(s) queued (openai/good, openai/sloppy); "
                                   "calls start as each of the 2 workers starts, up to 1 at a time per provider in "
                                   "each worker; progress every 15s"])

    def stable(result: pytest.RunResult) -> dict:
        return {s: {k: v for k, v in row.items() if k != "latency s"} for s, row in leaderboard_table(result).items()}

    assert stable(parallel) == stable(serial)
    assert stable(parallel)["openai/good"]["battles"] == str(SAMPLE_ROWS)
    total = estimate(serial)[0]
    assert total == 6 * SAMPLE_ROWS, "answers, coverage and both orders of each battle, for two models"
    # The controller prints the estimate; the serial run's calls are on disk now, so it asks none.
    parallel.stdout.fnmatch_lines([f"researchqa: this run asks 0 model call(s) ({total} cached, no retries)*"])


@pytest.mark.slow
def test_the_existing_judge_guards_apply_to_the_coverage_judge(run, pytester):
    # Served remotely (profile=remote), 'openai/' is the model's family, as for a hosted model.
    result = run("--researchqa-model=openai/good", "--researchqa-family=rubric", "--researchqa-judge=openai/judge-flaky",
                 "--researchqa-judge-repeats=2", "--researchqa-model-param=openai/good:profile=remote",
                 "--researchqa-model-param=openai/judge-flaky:profile=remote", "--researchqa-html=r.html")
    result.stdout.fnmatch_lines([
        "*warning: judge openai/judge-flaky grades openai/good, a model of the same family (openai)*",
        "flip rate: */* judge scores (*) changed when * sampled verdicts were re-judged 2 more time(s)"])
    packed = re.search(r'id="researchqa-data"[^>]*>([^<]+)<', (pytester.path / "r.html").read_text()).group(1)
    guards = [g["message"] for g in json.loads(gzip.decompress(base64.b64decode(packed)))["guards"]]
    assert [g.split(":")[0] for g in guards] == ["warning", "flip rate"], "the HTML report shows the guards too"


@pytest.mark.slow
def test_a_projects_own_test_grades_coverage_and_a_failing_row_shows_each_items_reason(run, pytester):
    pytester.makepyfile(test_mine="""
        from pytest_researchqa.families.rubric.grading import grade_coverage


        def test_answer_covers_most_items(researchqa_row, researchqa_answer, researchqa_judge):
            result = grade_coverage(researchqa_answer, researchqa_row, researchqa_judge)
            assert result["consensus"]["coverage"] >= 3.5
    """)
    result = run("--researchqa-model=openai/sloppy", "--researchqa-family=rubric", "--researchqa-judge=openai/judge-a",
                 "--researchqa-fail-rows", "-k", "Linguistics")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*researchqa judges*", "  openai/judge-a item 1 coverage 0: 0 of * key words present."])
    assert leaderboard_table(result)["openai/sloppy"]["graded"] == "1"


@pytest.mark.parametrize(("option", "message"), [
    ("--researchqa-battles=0", "--researchqa-battles: '0' is not 'all' or a whole number of at least 1"),
    ("--researchqa-length-words=-5", "--researchqa-length-words: must be at least 0"),
    ("--researchqa-fail-under=coverage=60", "thresholds for coverage are between 0 and 1"),
    # tester64 MED: without a judge no row has a coverage, so the gate read UNDECIDABLE and the run passed.
    ("--researchqa-fail-under=coverage=0.6", "--researchqa-fail-under coverage: measured by the run's judges, and "
                                             "the run has none: such a gate could never decide (add --researchqa-judge=MODEL)"),
    ("--researchqa-compare=main --researchqa-fail-on-regression=coverage",
     "--researchqa-fail-on-regression coverage: measured by the run's judges, and the run has none*"),
])
def test_bad_rubric_options_are_usage_errors_naming_the_option(run, option, message):
    result = run("--researchqa-family=rubric", *option.split())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_an_ini_gate_on_coverage_leaves_a_plain_pytest_alone_and_stops_a_run_without_a_judge(run, pytester):
    """tester65 HIGH: ini gates with the judge given on CI's command line made every plain `pytest` a usage error."""
    pytester.makeini("[pytest]\nresearchqa_family = rubric\nresearchqa_fail_under = coverage=0.6\n")
    pytester.makepyfile(test_own="def test_one():\n    assert True\n")
    plain = pytester.runpytest("-p", "no:cacheprovider", "test_own.py")  # no researchqa option at all
    assert plain.ret == pytest.ExitCode.OK, plain.stderr.str()
    plain.assert_outcomes(passed=1)
    unjudged = run("--researchqa-run")
    assert unjudged.ret == pytest.ExitCode.USAGE_ERROR
    unjudged.stderr.fnmatch_lines(["*researchqa_fail_under in *.ini coverage: measured by the run's judges, and "
                                   "the run has none*"])


def test_a_rubric_plan_says_a_model_no_provider_serves_and_a_budget_counts_its_priced_calls(run, server):
    """tester66: the rubric plan said only 'no price for gpt4o' (every call would fail), and a model without a price
    made the estimate unknown, so a budget below the priced judge's own calls never refused the run."""
    args = ("--researchqa-family=rubric", "--researchqa-model=gpt4o", "--researchqa-judge=openai/gpt-4o",
            "--researchqa-model-param=openai/gpt-4o:profile=remote")
    planned = run(*args, "--researchqa-dry-run")
    planned.stdout.fnmatch_lines(["researchqa: litellm cannot tell which provider serves 'gpt4o': every call would "
                                  "fail; name it PROVIDER/MODEL, e.g. openai/gpt-4o"])
    refused = run(*args, "--researchqa-max-cost=0.01")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and server.calls() == 0
    refused.stderr.fnmatch_lines(["*the run's estimated cost $0.* is above --researchqa-max-cost=$0.0100*"])


def test_the_audit_describes_the_rows_without_answering(run, server):
    result = run("--researchqa-family=rubric", "--researchqa-audit")
    result.stdout.fnmatch_lines(["*researchqa dataset audit*", "12 row(s) loaded; no system ran",
                                 "12 with rubric items (96 items, 8.0 per row)",
                                 "12 with a date cutoff, 3 naming their source survey",
                                 "item kinds: citation 12 (12%), limitation *, comparison *, example *, impact *, other *"])
    assert server.calls() == 0


@pytest.mark.slow
def test_a_gate_on_coverage_by_general_domain_decides_the_exit_status(run, pytester, tmp_path):
    passing = run("--researchqa-family=rubric", "--researchqa-judge=openai/judge-a",
                  "--researchqa-fail-under=humanities.coverage=0.9")
    assert passing.ret == 0
    failing = run("--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
                  "--researchqa-judge=openai/judge-a", "--researchqa-fail-under=coverage=0.5",
                  "--researchqa-html=gated.html")
    coverage = leaderboard_table(failing)["openai/sloppy"]["Coverage %"]
    # The gate takes a fraction, the board shows percent: the line gives both (tester43 LOW-4).
    failing.stdout.fnmatch_lines([f"openai/sloppy: coverage>=0.5: * FAILED by * (Coverage % {coverage} against 50)"])
    assert failing.ret == 1
    if CHROMIUM is not None:  # the report marks the board's Coverage % cell the gate failed on (tester42 N3)
        from test_html_report import dump

        board = dump(pytester.path / "gated.html", "", tmp_path, screenshot="report-rubric-gate.png").split('id="leaderboard"', 1)[1].split("</table>")[0]
        marked = re.findall(r'<td class="num gate-failed" title="([^"]*)">(.*?)</td>', board)
        assert len(marked) == 1 and "coverage&gt;=0.5" in marked[0][0], marked
        assert f">{coverage}<" in marked[0][1], "the Coverage % cell, not another of the row"


def test_editing_a_judge_prompt_changes_every_verdicts_cache_key(tmp_path, monkeypatch):
    import shutil

    from pytest_researchqa.bundled import bundled_path
    from pytest_researchqa.families.registry import make_judge
    from pytest_researchqa.llm import judges
    from pytest_researchqa.llm.cache import AnswerCache
    from pytest_researchqa.llm.engine import ModelRunner
    from pytest_researchqa.llm.system import ModelSpec

    runner = ModelRunner()
    try:
        def keys() -> tuple[str, str]:
            spec, cache = ModelSpec("openai/judge-a"), AnswerCache(tmp_path)
            coverage = make_judge("coverage", spec, runner, cache)
            pairwise = make_judge("pairwise", spec, runner, cache)
            return coverage.key("q", ("Does the response mention x?",), "x"), pairwise.key("q", "one", "two")

        before = keys()
        assert keys() == before, "the same prompt, the same keys"
        edited = tmp_path / "judges"
        shutil.copytree(bundled_path("judges"), edited)
        for name in ("coverage.md", "pairwise.md"):
            (edited / name).write_text((edited / name).read_text() + "\nBe strict.\n")
        monkeypatch.setattr(judges, "bundled_path", lambda *parts: tmp_path.joinpath(*parts))
        after = keys()
        assert after[0] != before[0] and after[1] != before[1]
    finally:
        runner.close()


def test_the_audit_counts_invalid_rows_apart(run, pytester):
    rows = [{"id": "q-1", "field": "Ecology", "general_domain": "Life & Earth Sciences", "subdomain": "Ecology",
             "query": "How do fires shape savannas?", "date": "2020-01-01",
             "rubric": [{"rubric_item": "Does the response name grazing?", "type": "general"}]},
            {"id": "q-2", "field": "Ecology", "general_domain": "Life & Earth Sciences", "subdomain": "Ecology",
             "query": "And floods?", "date": "2018-13-45", "rubric": [{"rubric_item": "Does it cite work?"}]}]
    (pytester.path / "mine.json").write_text(json.dumps(rows))
    result = run("--researchqa-family=rubric", "--researchqa-dataset=mine.json", "--researchqa-audit")
    result.stdout.fnmatch_lines(["1 row(s) loaded; no system ran", "*1 invalid dataset row(s): each is an erroring*"])


ESTIMATE = re.compile(r"researchqa: this run asks (\d+) model call\(s\) \(\d+ cached, no retries\): "
                      r"(?:(\d+) answer call\(s\) \(\d+ model\(s\), \d+ queries\); )?(\d+) judge call\(s\)(?:: "
                      r"(\d+) coverage \(\d+ answers of \d+ system\(s\)\) \+ (\d+) pairwise \((\d+) battles x 2 orders\))?")


def estimate(result: pytest.RunResult) -> tuple[int, ...]:
    """The call estimate's figures (total, answers, judges, coverage, pairwise, battles) and the line it is on."""
    for number, line in enumerate(result.stdout.lines):
        found = ESTIMATE.search(line)
        if found:
            return (*(int(g or 0) for g in found.groups()), number)
    raise AssertionError("no call estimate printed")


@pytest.mark.slow
def test_the_call_estimate_printed_before_the_first_call_equals_the_calls_the_server_received(run, server):
    result = run("--researchqa-model=openai/good", "--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
                 "--researchqa-judge=openai/judge-a", "--researchqa-battles=5")
    result.assert_outcomes(passed=2 * SAMPLE_ROWS)
    total, answers, judges, coverage, pairwise, battles, line = estimate(result)
    assert (answers, coverage, battles, pairwise) == (2 * SAMPLE_ROWS, 2 * SAMPLE_ROWS, 5, 10)
    assert total == len(server.requests) == answers + judges
    assert answers == server.calls("good") + server.calls("sloppy") and judges == server.calls("judge-a")
    first_row = next(n for n, text in enumerate(result.stdout.lines) if "researchqa::test_query" in text
                     or text.startswith("researchqa "))
    assert line < first_row, "printed before any row runs"
    cost = result.stdout.lines[line + 1]
    assert cost.startswith("researchqa: estimated cost — (tokens estimated as prompt characters / 4"), cost
    assert "no price for openai/good, openai/judge-a, openai/sloppy: a local server" in cost and "$0" not in cost


@pytest.mark.slow
def test_a_priced_judge_gets_a_dollar_estimate_and_re_judgements_are_counted(run, server):
    result = run("--researchqa-system=rubric-oracle", "--researchqa-model=openai/sloppy", "--researchqa-family=rubric",
                 "--researchqa-judge=openai/gpt-4o-mini", "--researchqa-judge-repeats=2",
                 "--researchqa-model-param=openai/gpt-4o-mini:profile=remote")  # priced, though served here
    total, answers, judges, coverage, pairwise, battles, line = estimate(result)
    assert (answers, battles) == (SAMPLE_ROWS, SAMPLE_ROWS) and coverage > 2 * SAMPLE_ROWS, "re-judged rows add calls"
    assert judges == server.calls("gpt-4o-mini") and total == len(server.requests)
    cost = result.stdout.lines[line + 1]
    dollars = re.search(r"estimated cost — \(\$(\d+\.\d+) for openai/gpt-4o-mini\)", cost)
    assert dollars and float(dollars.group(1)) > 0, cost
    assert "no price for openai/sloppy: a local server" in cost


@pytest.mark.slow
def test_a_rubric_run_whose_answers_are_cached_says_so_from_its_first_seconds_while_its_verdicts_arrive(
        run, server, monkeypatch):
    """SmolLM2 as the judge showed "0/6 model rows" for minutes while every answer came from the cache: a row
    is done when its verdict is, and the progress line said nothing of the answers or of the call on the wire."""
    from pytest_researchqa.reporting import progress

    args = ("--researchqa-family=rubric", "--researchqa-model=openai/good", "--researchqa-sample=6")
    run(*args).assert_outcomes(skipped=6)  # answered and saved, not graded (no judge)
    # The first progress line comes after 0.5 s, not 5, and each verdict takes 0.3 s, one at a time (a local
    # server): the line is written while verdicts are on the way, as at 5 s with 3 s verdicts, in 2 s not 20.
    monkeypatch.setattr(progress, "FIRST_REPORT_S", 0.5)
    server.latency_s = 0.3
    # In-process, with output capture on (as in a user's run) while each row's test waits for its verdict:
    # the progress lines go to pytest's terminal, here pytester's captured output.
    result = run(*args, "--researchqa-judge=openai/judge-a")
    result.assert_outcomes(passed=6)
    lines = [line for line in result.stdout.lines if line.startswith("researchqa: ") and "model rows," in line]
    first, last = lines[0], lines[-1]
    match = re.match(r"researchqa: (\d)/6 model rows, 0 errors, \d from cache, answers 6/6 \(6 from cache\), "
                     r"verdicts (\d) of 6 asked, (1 call|0 calls) in flight, spend —, elapsed \d+s", first)
    assert match, first
    # A loaded machine can sample the line between one verdict's reply and the next request: 0 in flight then.
    assert int(match.group(1)) <= int(match.group(2)) < 6, "a row is done once judged; the rest are on the way"
    assert last.startswith("researchqa: 6/6 model rows, 0 errors, 6 from cache, answers 6/6 (6 from cache), "
                           "verdicts 6 of 6 asked, 0 calls in flight, spend —"), last
    assert server.calls("judge-a") == 6 and server.max_in_flight == 1


def test_an_async_system_of_the_users_answers_research_queries_that_have_no_paper(run, pytester):
    """Pipelined calls were keyed by the row's paper id; a research query has no paper."""
    pytester.makepyfile(asyncquery=(
        "import asyncio\n"
        "async def answer(question, paper, *, row):\n"
        "    await asyncio.sleep(0.01)\n"
        "    assert paper is None\n"
        "    return {'answer': 'On ' + row.query, 'citations': ['Author, A. (2020). A work.']}\n"))
    pytester.syspathinsert()
    result = run("--researchqa-family=rubric", "--researchqa-system=asyncquery:answer", "--researchqa-sample=3")
    result.assert_outcomes(skipped=3)  # answered and saved, not graded: no judge was named


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["project", "paper"])
def test_every_call_to_a_local_server_is_capped_as_its_profile_says_answers_and_verdicts_alike(run, server, protocol):
    """Only the citation family's answers were capped: a small local judge under the paper protocol (plain-text
    ratings, no grammar) wrote until its server's window was full, minutes a verdict (a tester's SmolLM2 run)."""
    common = ("--researchqa-family=rubric", "--researchqa-model=openai/good", "--researchqa-judge=openai/judge-a",
              "--researchqa-sample=2", f"--researchqa-protocol={protocol}")
    run(*common).stdout.fnmatch_lines(["researchqa: 2/2 model rows, 0 errors, *verdicts 2 of 2 asked*"])
    sent = {(r["model"], r.get("max_tokens")) for r in server.requests}
    assert sent == {("good", 768), ("judge-a", 768)}, sent
    server.requests.clear()
    capped = run(*common, "--researchqa-model-param=openai/judge-a:max_tokens=64")  # the user's own cap wins
    capped.stdout.fnmatch_lines(["researchqa: 2/2 model rows, 0 errors, *verdicts 2 of 2 asked*"])
    assert {r.get("max_tokens") for r in server.requests if r["model"] == "judge-a"} == {64}


@pytest.mark.slow
def test_a_yaml_row_with_an_impossible_date_names_the_date_field_and_keeps_its_id(run, pytester):
    """YAML reads 2025-13-45 as a date and fails building the whole row: it was "field '(row)'" and the test
    lost the row's id (a tester's rows.yaml)."""
    (pytester.path / "rows.yaml").write_text(
        "- id: q1\n  field: Ecology\n  general_domain: Life & Earth Sciences\n  subdomain: Ecology\n"
        "  query: How do fires shape savannas?\n  date: 2020-01-01\n"
        "  rubric:\n    - rubric_item: Does the response name grazing?\n"
        "- id: q3\n  query: Something?\n  date: 2025-13-45\n  rubric:\n    - rubric_item: Does it cite work?\n")
    result = run("--researchqa-family=rubric", "--researchqa-dataset=rows.yaml", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*invalid-q3*"])
    errors = run("--researchqa-family=rubric", "--researchqa-dataset=rows.yaml", "-rE")
    errors.stdout.fnmatch_lines(["*rows.yaml, row 2 (line 9), field 'date': not a row: month must be in 1..12*"])



@pytest.mark.slow
def test_a_judge_outage_in_the_pull_request_leaves_its_rows_out_of_the_coverage_regression_gate(
        pytester, server, tmp_path_factory):
    """tester41 T3a: judge-a is unreachable in the PR run, so each row's coverage is judge-flaky's alone while the
    manifest still names both judges: the gate compared one judge's score with two judges' mean (here a gain that
    would hide a drop; the other way round, a false "REGRESSED ... p(worse) <0.001")."""
    judges = ("--researchqa-family=rubric", "--researchqa-model=openai/good", "--researchqa-model=openai/sloppy",
              "--researchqa-judge=openai/judge-a", "--researchqa-judge=openai/judge-flaky", "--researchqa-retries=0")
    base = run_pytest(pytester, *judges, "--researchqa-save=main", cache=tmp_path_factory.mktemp("c1"), server=server)
    assert base.ret == 0
    pr = run_pytest(pytester, *judges, "--researchqa-model-param=openai/judge-a:api_base=http://127.0.0.1:9/v1",
                    "--researchqa-compare=main", "--researchqa-fail-on-regression=coverage",
                    "--researchqa-undecidable=fail", cache=tmp_path_factory.mktemp("c2"), server=server)
    assert leaderboard_table(pr)["openai/good"]["judge err"] == str(SAMPLE_ROWS), "the outage itself"
    left_out = (f"left out {SAMPLE_ROWS} of {SAMPLE_ROWS} paired row(s), not judged by the same judges in both runs "
                f"(judge errors in this run: openai/judge-a on {SAMPLE_ROWS} (*Connection error.))")
    pr.stdout.fnmatch_lines([f"openai/good: {SAMPLE_ROWS} row(s) paired; coverage: {left_out}",
                             f"*openai/good: coverage UNDECIDABLE: no row both runs graded measured it (its "
                             f"{SAMPLE_ROWS} measured paired row(s) were left out, not judged by the same judges in "
                             f"both runs: judge errors in this run: openai/judge-a on {SAMPLE_ROWS} (*))",
                             "*openai/sloppy: coverage UNDECIDABLE: no row both runs graded measured it (its*"])
    assert "REGRESSED" not in pr.stdout.str() and ": no significant drop, ok" not in pr.stdout.str()
    assert pr.ret == 1, "--researchqa-undecidable=fail: an outage is never a pass"


# Ctrl-C while the battles are judged, as a user's: SIGINT at the third battle's verdict (tester41 T1).
CTRL_C_AT_THE_THIRD_BATTLE = """
import os
import signal

from pytest_researchqa.families.rubric import tournament

judged = []
ensemble = tournament.ensemble


def interrupting(*args, **kwargs):
    judged.append(args)
    if len(judged) == 3:
        os.kill(os.getpid(), signal.SIGINT)
    return ensemble(*args, **kwargs)


tournament.ensemble = interrupting
"""


@pytest.mark.slow
def test_ctrl_c_while_the_battles_are_judged_is_an_interrupted_run_in_every_medium_with_the_coverage_kept(
        run, pytester, capsys):
    """tester41 T1: the KeyboardInterrupt escaped as a raw traceback (exit -2); no JSON, Markdown, JUnit or
    manifest, and the saved run read "unfinished"."""
    from pytest_researchqa.__main__ import main

    pytester.makeconftest(CTRL_C_AT_THE_THIRD_BATTLE)
    result = run("--researchqa-family=rubric", "--researchqa-model=openai/good", "--researchqa-model=openai/sloppy",
                 "--researchqa-judge=openai/judge-a", "--researchqa-save=cut", "--researchqa-json=s.json",
                 "--researchqa-markdown=s.md", "--junitxml=s.xml", "--researchqa-fail-under=coverage=0.001",
                 subprocess_=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED, "pytest's own exit status for an interrupt, not a signal death"
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    step = (f"the rubric family's end-of-run step (*) was interrupted (Ctrl-C): the * of {SAMPLE_ROWS} scheduled "
            "battles judged so far are dropped and no Elo is computed")
    headline = f"run INTERRUPTED after {2 * SAMPLE_ROWS} of {2 * SAMPLE_ROWS} selected rows; gates FAILED: 1 of 3 "
    result.stdout.fnmatch_lines([f"❌ {step}", f"researchqa: {headline}*"])
    board = leaderboard_table(result)
    assert board["openai/good"]["Coverage %"] not in ("—", "error"), "the answered rows' coverage is kept"
    assert board["openai/good"]["Elo"] == "—", "the battles judged before the interrupt are dropped"
    data = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    assert (data["interrupted"], data["verdict"], data["passed"]) == (True, "failed", False)
    assert [c["name"] for c in data["checks"] if c["state"] == "failed"] == ["run::family_step"]
    assert f"**{headline}" in (pytester.path / "s.md").read_text(encoding="utf-8")
    junit = (pytester.path / "s.xml").read_text(encoding="utf-8")
    assert 'classname="researchqa.gates.run" name="family_step"' in junit and "judged so far are dropped" in junit
    runs = pytester.path / ".researchqa" / "runs"
    [cut] = runs.glob("*-cut")
    assert json.loads((cut / "manifest.json").read_text(encoding="utf-8"))["outcome"]["interrupted"] is True
    capsys.readouterr()
    assert main(["--runs", str(runs), "list"]) == 0
    assert f"{cut.name}  (interrupted)" in capsys.readouterr().out.splitlines()


@pytest.mark.slow
def test_a_pairwise_judge_that_fails_every_battle_fails_the_run_saying_the_elo_could_not_be_computed(
        run, pytester):
    """tester41 T2: 0 of 12 battles judged read "gates passed", exit 0, and blamed a disconnected graph."""
    args = ("--researchqa-family=rubric", "--researchqa-model=openai/good", "--researchqa-model=openai/sloppy",
            "--researchqa-judge=openai/down", "--researchqa-judge=openai/judge-a", "--researchqa-retries=0")
    gated = run(*args, "--researchqa-fail-under=coverage=0.005", "--researchqa-json=s.json", "--junitxml=s.xml")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    lost = (f"the rubric family's end-of-run step (*) failed: the Elo could not be computed: none of the "
            f"{SAMPLE_ROWS} scheduled battles was judged; the pairwise judge failed on {SAMPLE_ROWS}, first: "
            "* openai/good vs openai/sloppy: judge openai/down: *")
    gated.stdout.fnmatch_lines([f"❌ {lost}", "researchqa: gates FAILED: 1 of 3 check(s) failed"])
    assert "not connected" not in gated.stdout.str(), "no battle at all is not a disconnected graph"
    data = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    assert (data["verdict"], data["passed"]) == ("failed", False)
    assert [c["name"] for c in data["checks"] if c["state"] == "failed"] == ["run::family_step"]
    assert data["family_results"]["battles"] == 0 and data["family_results"]["scheduled"] == SAMPLE_ROWS
    junit = (pytester.path / "s.xml").read_text(encoding="utf-8")
    assert 'classname="researchqa.gates.run" name="family_step"' in junit and "the Elo could not be computed" in junit
    ungated = run(*args, "--junitxml=u.xml")
    assert ungated.ret == pytest.ExitCode.TESTS_FAILED
    ungated.stdout.fnmatch_lines([f"researchqa: run FAILED: {lost} (no gate configured)"])
    # tester42 N1: without gates too, the failed step is a testcase of its own: JUnit and pytest's counts say why.
    junit = (pytester.path / "u.xml").read_text(encoding="utf-8")
    assert 'classname="researchqa.gates.run" name="family_step"' in junit and 'failures="1"' in junit
    ungated.assert_outcomes(passed=2 * SAMPLE_ROWS, failed=1)


def test_a_tournament_fails_below_half_of_its_scheduled_battles_judged_and_names_the_judges_first_error():
    from pytest_researchqa.families.rubric.tournament import too_few_judged

    assert too_few_judged(6, 12, ["r1 a vs b: down"] * 6) is None, "half judged is enough"
    assert too_few_judged(12, 12, []) is None and too_few_judged(0, 0, []) is None
    assert too_few_judged(5, 12, ["r1 a vs b: down"] * 7) == (
        "the Elo rests on 5 of the 12 scheduled battles, fewer than half; the pairwise judge failed on 7, first: "
        "r1 a vs b: down")


@pytest.mark.slow
def test_a_one_system_run_says_why_it_has_no_battles_and_no_elo(run):
    """tester41 T10: one system read Elo "—" and battles 0 with no word why."""
    result = run("--researchqa-family=rubric", "--researchqa-judge=openai/judge-a")
    assert result.ret == 0
    board = leaderboard_table(result)["rubric-oracle"]
    assert (board["Elo"], board["battles"]) == ("—", "0")
    result.stdout.fnmatch_lines(["no pairwise battles: only one system (rubric-oracle) has judged answers; battles "
                                 "and Elo need two systems or more"])
    # tester64 LOW: without a judge it read "no answer of rubric-oracle has a coverage verdict", not why.
    unjudged = run("--researchqa-family=rubric")
    unjudged.stdout.fnmatch_lines(["no pairwise battles: no judge given (--researchqa-judge=MODEL), and battles need "
                                   "two systems or more (only rubric-oracle answered)"])


def test_a_run_whose_every_coverage_verdict_failed_says_why_it_has_no_battles(run):
    """tester52 LOW: when every coverage verdict failed, the pairwise section disappeared without a line."""
    result = run("--researchqa-system=rubric-oracle", "--researchqa-model=openai/good", "--researchqa-family=rubric",
                 "--researchqa-judge=openai/down", "--researchqa-retries=0", "-k", "ai-dense-retrieval")
    assert result.ret != 0, "rows whose judges all failed are errors"
    result.stdout.fnmatch_lines(["*no pairwise battles: no answer of openai/good, rubric-oracle has a coverage verdict "
                                 "on every rubric item*"])
