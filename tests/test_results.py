"""Results that last: saved runs, the manifest, Markdown, and rendering saved runs (pytester)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from xml.etree import ElementTree

import pytest
from helpers import WITHOUT_HYPOTHESIS, leaderboard_table


def saved_run(pytester: pytest.Pytester) -> "Path":  # noqa: F821
    [folder] = (pytester.path / ".researchqa" / "runs").iterdir()
    return folder


def rows_of(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]


def test_every_run_leaves_its_rows_and_a_manifest(pytester, tmp_path):
    result = pytester.runpytest("--researchqa-system=oracle", "--researchqa-save=nightly", "-k", "edu",
                                f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    folder = saved_run(pytester)
    assert folder.name.endswith("-nightly")
    result.stdout.fnmatch_lines([f"researchqa: results saved in {folder}"])
    rows = rows_of(folder)
    assert len(rows) == 9 and {r["system"] for r in rows} == {"oracle"}
    first = rows[0]
    assert first["metrics"] and first["citations"][0]["verdict"] == "verbatim" and first["citations"][0]["pages"]
    assert {"row_id", "paper_id", "question_type", "domain", "usage", "error", "outcome"} <= set(first)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["dataset"]["sha256"] and manifest["selection"]["keyword"] == "edu"
    assert manifest["environment"]["pytest"] == pytest.__version__
    assert manifest["outcome"]["measured"] == 9
    assert not (folder / "rows.partial.jsonl").exists()


@pytest.mark.slow
def test_a_rows_report_sheds_its_record_once_every_plugin_has_seen_it_and_the_item_keeps_none(pytester, tmp_path):
    """pytest's terminal reporter keeps every report to the end of the run (issue 24 item 3): a report
    carries the row's record only while the hooks run, and the item forgets its record after teardown."""
    pytester.makepyfile(seer="""
        from pytest_researchqa.stash import RECORD
        SEEN = []

        def pytest_runtest_logreport(report):
            if report.when == "call":
                SEEN.append(hasattr(report, "researchqa"))

        def pytest_terminal_summary(terminalreporter):
            kept = [r for reports in terminalreporter.stats.values() for r in reports if hasattr(r, "when")]
            items = terminalreporter.config.pluginmanager.get_plugin("session").items
            print("SEEN", sum(SEEN), "KEPT", sum(hasattr(r, "researchqa") for r in kept), "REPORTS", len(kept),
                  "ITEMS", sum(RECORD in item.stash for item in items))
    """)
    pytester.syspathinsert()
    result = pytester.runpytest("--researchqa-system=oracle", "-k", "edu", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider", "-s", "-p", "seer")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(["SEEN 9 KEPT 0 REPORTS 27 ITEMS 0"])
    assert len(rows_of(saved_run(pytester))) == 9


@pytest.mark.slow
def test_under_xdist_the_leaderboard_the_saved_rows_and_the_regression_gate_are_those_of_a_serial_run(
        pytester, tmp_path):
    """One xdist scenario for everything that crosses from workers to the controller (syrupy's way: the
    same run with ``-n 2`` and without xdist, compared). The serial run is in-process: only xdist needs
    a fresh interpreter."""
    args = ("--researchqa-system=bm25", "--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}", *RUN)
    serial = pytester.runpytest(*args, "--researchqa-save=serial", "-p", "no:xdist", "--junitxml=serial.xml")
    pytester.makeconftest("""
        from pytest_researchqa.stash import run_state

        LEFT = []

        def pytest_runtest_logreport(report):  # as --report-log reads a report: the record once, as data
            LEFT.extend(name for name in ("researchqa_json", "researchqa_report") if name in report.__dict__)

        def pytest_terminal_summary(terminalreporter, config):
            if not hasattr(config, "workerinput"):
                terminalreporter.write_line(f"controller holds the dataset: {'dataset' in run_state(config).__dict__}")
                terminalreporter.write_line(f"wire texts left on reports: {len(LEFT)}")
    """)
    parallel = pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, *args, "--researchqa-save=parallel", "-n", "2", "-v",
                                             "--researchqa-compare=serial",
                                             "--researchqa-fail-on-regression=section_coverage",
                                             "--junitxml=parallel.xml")
    assert "2 workers" in parallel.stdout.str()
    assert "controller holds the dataset: False" in parallel.stdout.str(), "it reads the rows to schedule them only"
    assert "wire texts left on reports: 0" in parallel.stdout.str(), "a report-log would carry each record twice"
    workers: dict[str, set[str]] = {}  # "[gw0] [ 3%] PASSED researchqa::test_question[oracle-lookup-edu-lookup-1]"
    for line in parallel.stdout.lines:
        if line.startswith("[gw") and "test_question[" in line:
            paper = line.split("[")[-1].split("-")[2]  # the sample's row ids start with their paper's name
            workers.setdefault(paper, set()).add(line.split("]", 1)[0])
    assert sorted(workers) == ["edu", "env", "ml"]
    assert all(len(ran_on) == 1 for ran_on in workers.values()), f"each paper's rows go to one worker: {workers}"

    def stable(result):
        return {system: {k: v for k, v in cells.items() if "latency" not in k}
                for system, cells in leaderboard_table(result).items()}

    serial_board, parallel_board = stable(serial), stable(parallel)
    assert serial_board == {s: {k: v for k, v in cells.items() if k in serial_board[s]}
                            for s, cells in parallel_board.items()}

    folders = list((pytester.path / ".researchqa" / "runs").iterdir())
    assert len(folders) == 2, "one folder a run: xdist workers save nothing of their own"
    runs = {p.name.rsplit("-", 1)[1]: p for p in folders}

    def comparable(folder):  # the gate turns rows below their bar into expected failures: outcomes differ
        return [{k: v for k, v in row.items() if k not in ("usage", "outcome")} for row in rows_of(folder)]

    assert comparable(runs["serial"]) == comparable(runs["parallel"])
    assert len(comparable(runs["serial"])) == 54

    def junit(name):  # each testcase: its properties (latency aside) and what it says beyond passing
        cases = {}
        for case in ElementTree.parse(pytester.path / name).getroot().iter("testcase"):
            properties = sorted((p.get("name"), p.get("value")) for p in case.iter("property")
                                if "latency" not in p.get("name"))
            cases[case.get("name")] = (properties, sorted((c.tag, c.get("type"), c.get("message"))
                                                          for c in case if c.tag != "properties"))
        return cases

    serial_cases = junit("serial.xml")
    assert any(said for _, said in serial_cases.values()) and any(p for p, _ in serial_cases.values())
    rows = {name: case for name, case in junit("parallel.xml").items() if name.startswith("test_question")}
    assert rows == serial_cases, "a row's reports cross from the workers as JSON text: JUnit says what it said"

    assert parallel.ret == pytest.ExitCode.OK, "rows below their bar are expected failures: the gate decides"
    parallel.assert_outcomes(passed=27 + 13 + 2, xfailed=14)  # the rows, and one gate testcase a system
    parallel.stdout.fnmatch_lines(["✅ bm25: section_coverage: 0.583 vs 0.583, delta +0.000, *: no drop on any paired "
                                   "row (too few papers (3) for the clustered test to reach alpha 0.05*"])


def test_saving_can_be_turned_off(pytester, tmp_path):
    pytester.runpytest("--researchqa-system=oracle", "--researchqa-results=off", "-k", "edu-lookup",
                       f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert not (pytester.path / ".researchqa").exists()


def test_model_parameters_that_look_like_secrets_never_reach_the_manifest():
    from pytest_researchqa.runs import redact_params

    assert redact_params({"m": {"api_key": "sk-1", "api_base": "http://x", "Authorization": "Bearer t"}}) == {
        "m": {"api_key": "<redacted>", "api_base": "http://x", "Authorization": "<redacted>"}}


@pytest.mark.slow
def test_markdown_goes_to_a_file_and_to_the_github_job_summary(pytester, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--researchqa-system=bm25", "--researchqa-fail-under=multi_hop.section_coverage=0.9",
                       "--researchqa-markdown=report.md", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    report = (pytester.path / "report.md").read_text()
    assert report.startswith("## researchqa — gates FAILED ❌")
    assert "| system | cite prec | sect cov | cite acc | refusal | flagged |" in report
    assert "- ❌ bm25: multi_hop.section_coverage>=0.9:" in report
    assert "<summary>By question type</summary>" in report
    assert summary.read_text() == "earlier step\n" + report + "\n"


def show(*argv: str) -> tuple[int, str, str]:
    """``python -m pytest_researchqa ARGV`` in this process, from pytester's folder: exit status, stdout, stderr.
    (The command's own entry, with its pipes, is run in a fresh interpreter below.)"""
    import contextlib
    import io

    from pytest_researchqa.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_a_saved_run_renders_without_rerunning(pytester, tmp_path):
    live = pytester.runpytest("--researchqa-system=oracle", "--researchqa-system=bm25",
                              f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    status, shown, errors = show("show", "last")
    assert status == 0, errors
    live_table = {k: {c: v for c, v in cells.items() if c != "latency s"} for k, cells in leaderboard_table(live, intervals=True).items()}
    assert pytester_table(shown) == live_table
    assert set(live_table) == {"oracle", "bm25"}


@pytest.mark.slow
def test_show_takes_runs_after_the_command_and_stops_quietly_when_its_reader_closes(pytester, tmp_path):
    runs = tmp_path / "runs"
    pytester.runpytest("--researchqa-system=oracle", f"--researchqa-results={runs}", f"--researchqa-cache-dir={tmp_path}",
                       "-p", "no:cacheprovider")
    piped = subprocess.run(f"{sys.executable} -m pytest_researchqa show last --runs {runs} | head -n 1",
                           shell=True, cwd=pytester.path, capture_output=True, text=True)
    assert piped.stdout.strip()
    # `true` never reads: the whole leaderboard meets a closed pipe when Python flushes it.
    closed = subprocess.run(f"{sys.executable} -m pytest_researchqa show last --runs {runs} | true",
                            shell=True, cwd=pytester.path, capture_output=True, text=True)
    assert "Traceback" not in closed.stderr and "BrokenPipe" not in closed.stderr, closed.stderr


@pytest.mark.slow
def test_an_audit_saves_no_run_so_last_stays_the_last_run_that_answered(pytester, tmp_path):
    pytester.runpytest("--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    pytester.runpytest("--researchqa-audit", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert len(list((pytester.path / ".researchqa" / "runs").iterdir())) == 1
    shown = show("show", "last")[1]
    assert "oracle" in shown and "(dataset)" not in shown


def pytester_table(text: str) -> dict[str, dict[str, str]]:
    lines = [l for l in text.splitlines() if l.startswith("|")]
    headers = [c.strip() for c in lines[0].strip("|").split("|")]
    table = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(headers):
            break
        table[cells[0]] = {h: c for h, c in zip(headers, cells) if h != "latency s"}
    return table


def test_an_unknown_saved_run_is_named_with_the_latest(pytester):
    shown = subprocess.run([sys.executable, "-m", "pytest_researchqa", "show", "yesterday"], cwd=pytester.path,
                           capture_output=True, text=True)
    assert shown.returncode == 2 and "no saved run 'yesterday'" in shown.stderr


# -- intervals, comparisons, regression gates, plots ------------------------------------------------

RUN = ("-p", "no:cacheprovider")


@pytest.mark.slow
def test_each_mean_in_the_leaderboard_carries_its_interval_over_papers(pytester, tmp_path):
    result = pytester.runpytest("--researchqa-system=bm25", f"--researchqa-cache-dir={tmp_path}", *RUN)
    bm25 = leaderboard_table(result, intervals=True)["bm25"]
    assert re.fullmatch(r"0\.\d{3} ±0\.\d{3}", bm25["sect cov"]), bm25
    result.stdout.fnmatch_lines(["±: half-width of a 95% bootstrap interval over papers (a paper's rows resampled "
                                 "together; 2,000 resamples, fixed seed); [[]low–high]: the interval itself where it is "
                                 "lopsided; over only 3 papers the interval is rough*"])
    # bm25 answers with retrieved passages; 4 of 9 state what refutes the premise ("We had no data on humidity"): 0.444,
    # and over three papers its interval runs from 0 to 0.667.
    assert bm25["flagged"] == "0.444 [0.000–0.667]", bm25
    again = pytester.runpytest("--researchqa-system=bm25", f"--researchqa-cache-dir={tmp_path}", *RUN)
    assert leaderboard_table(again, intervals=True)["bm25"]["sect cov"] == bm25["sect cov"], "a fixed seed"


@pytest.mark.slow
def test_compare_last_adds_a_delta_per_metric_and_names_the_rows_only_one_run_has(pytester, tmp_path):
    args = ("--researchqa-system=oracle", "--researchqa-system=bm25", f"--researchqa-cache-dir={tmp_path}", *RUN)
    pytester.runpytest(*args, "--researchqa-save=base")
    result = pytester.runpytest(*args, "-k", "edu", "--researchqa-compare=last", "--researchqa-markdown=pr.md")
    board = leaderboard_table(result)
    assert board["bm25"]["Δ cite prec"] == "+0.000" and board["oracle"]["Δ flagged"] == "+0.000"
    result.stdout.fnmatch_lines([
        "*researchqa comparison*",
        "against *-base:",
        "| system * | metric * | this run * | baseline * | Δ * | 95% CI of Δ * | p (worse) * | papers/rows *|",
        "bm25: 9 row(s) paired; only in the baseline: 18 row(s): env-adv-1, env-adv-2, *, ml-adv-1 and 8 more",
        "oracle: 9 row(s) paired; only in the baseline: 18 row(s)*"])
    markdown = (pytester.path / "pr.md").read_text()
    assert "| system | cite prec | Δ cite prec |" in markdown and "### Against " in markdown
    assert "- bm25: 9 row(s) paired; only in the baseline: 18 row(s)" in markdown


def test_a_regression_gate_without_a_baseline_and_an_unknown_baseline_are_usage_errors(pytester):
    result = pytester.runpytest("--researchqa-fail-on-regression=citation_precision", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--researchqa-fail-on-regression compares with a saved run: add "
                                 "--researchqa-compare=RUN*"])
    result = pytester.runpytest("--researchqa-compare=main", "--researchqa-fail-on-regression=citation_precision",
                                *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--researchqa-compare: no saved run 'main' in *"])
    result = pytester.runpytest("--researchqa-compare=last", "--researchqa-fail-on-regression=cite_prec", *RUN)
    result.stderr.fnmatch_lines(["*--researchqa-fail-on-regression 'cite_prec': unknown metric*"])


def test_two_runs_started_in_the_same_second_keep_two_folders_and_last_is_the_later(tmp_path):
    import datetime

    from pytest_researchqa.runs import ROWS_FILE, new_run_folder, resolve_run

    moment = datetime.datetime(2026, 1, 2, 3, 4, 5)
    first = new_run_folder(tmp_path, "ci", moment)
    (first / ROWS_FILE).write_text("")
    second = new_run_folder(tmp_path, "ci", moment)
    (second / ROWS_FILE).write_text("")
    assert first != second and resolve_run("last", tmp_path) == second == resolve_run("ci", tmp_path)


def test_the_final_rows_file_copies_final_lines_from_the_partial_file_and_makes_the_others_again(tmp_path):
    """Each record is serialized once when its line is final (issue 24 item 2); a record added as not final
    (a test's fixture may still record into it) is saved as it is at the end; the bytes are the same either way."""
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.runs import PARTIAL_FILE, ROWS_FILE, RunWriter, saved_line

    writer = RunWriter(tmp_path / "run")
    final = RowRecord(row_id="r2", system="oracle", metrics={"citation_accuracy": 1.0}, details={"quote": "ü \ud83d"})
    later = RowRecord(row_id="r1", system="oracle")
    writer.add(final, final.to_plain(copy=False), final=True)
    writer.add(later, later.to_plain(copy=False))
    later.metrics["citation_accuracy"] = 0.5  # recorded after its line was written (a fixture's teardown)
    partial = (tmp_path / "run" / PARTIAL_FILE).read_bytes()
    assert partial == saved_line(final.to_plain()) + saved_line({**later.to_plain(), "metrics": {}})
    writer.finish([final, later], {"name": "run"})
    assert (tmp_path / "run" / ROWS_FILE).read_bytes() == saved_line(later.to_plain()) + saved_line(final.to_plain())
    assert not (tmp_path / "run" / PARTIAL_FILE).exists()


def test_the_final_rows_file_is_written_whole_when_the_partial_file_is_gone(tmp_path):
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.runs import PARTIAL_FILE, ROWS_FILE, RunWriter, saved_line

    writer = RunWriter(tmp_path / "run")
    record = RowRecord(row_id="r1", system="oracle")
    writer.add(record, record.to_plain(copy=False), final=True)
    (tmp_path / "run" / PARTIAL_FILE).unlink()
    writer.finish([record], {"name": "run"})
    assert writer.failed is None and (tmp_path / "run" / ROWS_FILE).read_bytes() == saved_line(record.to_plain())


def test_a_rows_teardown_recording_reaches_the_saved_rows_of_a_test_of_ones_own(pytester, tmp_path):
    """A project's test whose fixture holds the row's recorder may record after the row's report: the saved
    rows say what the summary says (its line of the partial file is not taken as final)."""
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def late(researchqa_recorder):
            yield
            researchqa_recorder.detail("late", "after the report")
    """)
    pytester.makepyfile(test_own="""
        def test_row(researchqa_row, late):
            assert researchqa_row.row_id
    """)
    result = pytester.runpytest("--researchqa-system=oracle", "-k", "edu", f"--researchqa-cache-dir={tmp_path}",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    assert [row["details"].get("late") for row in rows_of(saved_run(pytester))] == ["after the report"] * 9


def test_runs_saving_in_the_same_second_into_one_folder_never_share_a_run_folder(tmp_path):
    """Each run's folder is taken (made) when it is named: runs (separate processes) that name theirs in
    the same second, before any of them has written a row, still get one folder each (issue 22 item 22)."""
    import datetime

    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.runs import RunWriter, load_run, new_run_folder

    moment = datetime.datetime(2026, 1, 2, 3, 4, 5)
    writers = [RunWriter(new_run_folder(tmp_path, "ci", moment)) for _ in range(3)]  # all named, none written
    for number, writer in enumerate(writers):
        writer.add(RowRecord(row_id=f"r{number}", system="oracle"))
        writer.finish([RowRecord(row_id=f"r{number}", system="oracle")], {"name": "ci"})
    assert [w.folder.name for w in writers] == ["20260102-030405-ci", "20260102-030405.2-ci", "20260102-030405.3-ci"]
    assert [[r.row_id for r in load_run(w.folder).records] for w in writers] == [["r0"], ["r1"], ["r2"]]


def test_last_is_the_run_that_finished_last_even_when_two_names_start_in_one_second(tmp_path):
    import datetime
    import os

    from pytest_researchqa.runs import ROWS_FILE, new_run_folder, resolve_run

    moment = datetime.datetime(2026, 1, 2, 3, 4, 5)
    for order, name in enumerate(["old", "new"]):  # "new" sorts before "old" by name
        folder = new_run_folder(tmp_path, name, moment)
        (folder / ROWS_FILE).write_text("")
        os.utime(folder / ROWS_FILE, ns=(order * 10**9, order * 10**9))
    assert resolve_run("last", tmp_path).name.endswith("-new")

DEGRADED_SYSTEM = '''
import types

from pytest_researchqa import Answer
from pytest_researchqa.families.citation.bm25 import CITED_PASSAGES, Bm25System

_BM25 = Bm25System()


def short_query(question, paper, *, row):
    """bm25 with a query-truncation bug: only the question's first three words are searched."""
    truncated = types.SimpleNamespace(question=" ".join(question.split()[:3]))
    cited = _BM25.ranked_passages(truncated, paper)[:CITED_PASSAGES]
    return Answer(text=" ".join(cited[:1]), citations=cited)
'''


@pytest.fixture
def qasper_sixty_papers(pytester):
    """The first 60 papers (188 questions) of the real QASPER test split, as the release writes them."""
    from helpers import shared_path

    data = json.loads(shared_path("external-datasets", "qasper-test-v0.3", "qasper-test-v0.3.json").read_text())
    subset = pytester.path / "qasper-60.json"
    subset.write_text(json.dumps({key: data[key] for key in sorted(data)[:60]}))
    return subset


@pytest.mark.shared_data
@pytest.mark.slow
def test_a_degraded_system_fails_the_regression_gate_and_an_identical_rerun_does_not(pytester, tmp_path,
                                                                                      qasper_sixty_papers):
    pytester.makepyfile(degraded=DEGRADED_SYSTEM)
    pytester.syspathinsert()
    common = (f"--researchqa-dataset={qasper_sixty_papers}", f"--researchqa-cache-dir={tmp_path}", *RUN)
    gate = ("--researchqa-compare=bm25-main", "--researchqa-fail-on-regression=citation_precision")
    pytester.runpytest(*common, "--researchqa-system=bm25", "--researchqa-save=bm25-main")

    same = pytester.runpytest(*common, "--researchqa-system=bm25", "--researchqa-save=rerun", *gate)
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["✅ bm25: citation_precision: 0.133 vs 0.133, delta +0.000, *, p(worse) 1.000 over "
                               "60 papers / 188 rows: no significant drop, ok"])

    worse = pytester.runpytest(*common, "--researchqa-system=degraded:short_query", "--researchqa-save=pr", *gate,
                               "--researchqa-compare-map=degraded:short_query=bm25", "--researchqa-markdown=pr.md")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    worse.stdout.fnmatch_lines(["❌ degraded:short_query: citation_precision REGRESSED: 0.080 vs 0.133, delta -0.053, "
                                "95% CI -0.* to -0.*, p(worse) 0.0* over 60 papers / 188 rows: significant at alpha "
                                "0.05: FAILED"])
    assert leaderboard_table(worse)["degraded:short_query"]["Δ cite prec"] == "-0.053 ▼"
    markdown = (pytester.path / "pr.md").read_text()
    assert markdown.startswith("## researchqa — gates FAILED ❌")
    assert "- ❌ degraded:short_query: citation_precision REGRESSED" in markdown

    # The same verdict from the saved runs alone, without re-running anything.
    status, replay, errors = show("compare", "bm25-main", "pr", "--map", "degraded:short_query=bm25",
                                  "--fail-on-regression", "citation_precision")
    assert status == 1, errors
    assert "degraded:short_query: citation_precision REGRESSED: 0.080 vs 0.133, delta -0.053" in replay
    status, rerun, errors = show("compare", "bm25-main", "rerun", "--fail-on-regression", "citation_precision")
    assert status == 0, rerun + errors


@pytest.mark.slow
def test_compare_from_the_command_line_renders_markdown_and_refuses_a_run_against_itself(pytester, tmp_path):
    args = ("--researchqa-system=bm25", f"--researchqa-cache-dir={tmp_path}", *RUN)
    pytester.runpytest(*args, "--researchqa-save=old")
    pytester.runpytest(*args, "--researchqa-save=new", "-k", "not adv")
    status, shown, errors = show("compare", "old", "--markdown")
    assert status == 0, errors
    assert "## researchqa run " in shown and "| Δ cite prec |" in shown
    assert "- bm25: 18 row(s) paired; only in the baseline: 9 row(s): edu-adv-1" in shown
    assert "18 of 18 selected rows measured (0 errors)" in shown, "as the run printed it (tester41 T10)"
    status, _, errors = show("compare", "new", "new")
    assert status == 2 and "compared with itself" in errors


def test_plots_without_matplotlib_are_a_usage_error_naming_the_extra(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = pytester.runpytest("--researchqa-plots=figures", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--researchqa-plots draws with matplotlib, which is not installed: "
                                 "pip install 'pytest-researchqa?plots?'*"])


@pytest.mark.slow
def test_the_pull_request_markdown_renders_on_githubs_renderer_with_deltas_and_failed_gates(pytester, tmp_path):
    import html

    import cmarkgfm

    args = (f"--researchqa-cache-dir={tmp_path}", *RUN)
    pytester.runpytest("--researchqa-system=bm25", "--researchqa-save=main", *args)
    result = pytester.runpytest("--researchqa-system=bm25", "--researchqa-system=oracle", "-k", "not ml-",
                                "--researchqa-compare=main", "--researchqa-fail-on-regression=citation_precision",
                                "--researchqa-markdown=pr.md", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "oracle has no baseline to be compared with"
    markdown = (pytester.path / "pr.md").read_text()
    page = cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) == 4, "leaderboard, comparison, by question type, by domain"
    for table in tables:
        header = len(re.findall(r"<th[ >]", table.split("</thead>")[0]))
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], re.S):
            assert len(re.findall(r"<td[ >]", row)) == header, "no cell lost or split by a stray pipe"
    leaderboard = html.unescape(tables[0])
    assert "<th align=\"right\">Δ cite prec</th>" in leaderboard and "<td align=\"right\">+0.000</td>" in leaderboard
    assert "<td align=\"right\">new</td>" in leaderboard, "oracle is not in the baseline"
    items = [html.unescape(i) for i in re.findall(r"<li>(.*?)</li>", page, re.S)]
    assert any(i.startswith("❌ oracle: citation_precision FAILED: the baseline ") and "has no system 'oracle'" in i
               for i in items)
    assert any(i.startswith("✅ bm25: citation_precision: 0.417 vs 0.417, delta +0.000") for i in items)
    assert any(i.startswith("bm25: 18 row(s) paired; only in the baseline: 9 row(s): ml-adv-1") for i in items)
    assert "<details><summary>By question type</summary>" in page


def test_a_run_is_named_by_its_save_name_exactly_not_by_a_suffix_of_another(tmp_path):
    import datetime

    from pytest_researchqa.runs import ROWS_FILE, new_run_folder, resolve_run

    for second, name in enumerate(["main", "hotfix-main", "pr-42"]):
        folder = new_run_folder(tmp_path, name, datetime.datetime(2026, 1, 2, 3, 4, second))
        (folder / ROWS_FILE).write_text("")
    assert resolve_run("main", tmp_path).name == "20260102-030400-main"
    assert resolve_run("hotfix-main", tmp_path).name == "20260102-030401-hotfix-main"
    with pytest.raises(LookupError, match="no saved run '42'"):
        resolve_run("42", tmp_path)


@pytest.mark.slow
def test_a_baseline_of_another_family_is_a_usage_error_not_a_wrong_reason(pytester, tmp_path):
    pytester.runpytest("--researchqa-family=rubric", "--researchqa-save=rub", f"--researchqa-cache-dir={tmp_path}", *RUN)
    result = pytester.runpytest("--researchqa-system=bm25", "--researchqa-compare=rub",
                                f"--researchqa-cache-dir={tmp_path}", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is a run of the rubric family; this run is of the citation family*"])


CRASHES_ON_ONE_ROW = '''
from pytest_researchqa import Answer

def answer(question, paper, *, row):
    if row.row_id == "edu-lookup-1":
        raise RuntimeError("the index is down")
    return Answer(text="no idea", citations=[])
'''


@pytest.mark.slow
def test_a_run_without_gates_whose_row_errors_says_it_failed_in_every_medium(pytester, tmp_path):
    pytester.makepyfile(crashy=CRASHES_ON_ONE_ROW)
    pytester.syspathinsert()
    result = pytester.runpytest("--researchqa-system=crashy:answer", "-k", "edu", "-p", "no:cacheprovider",
                                f"--researchqa-cache-dir={tmp_path}", "--researchqa-json=s.json",
                                "--researchqa-markdown=s.md", "--junitxml=j.xml")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["researchqa: run FAILED: 1 row(s) errored (no gate configured)"])
    summary = json.loads((pytester.path / "s.json").read_text())
    assert (summary["verdict"], summary["passed"], summary["gated"]) == ("failed", False, False)
    assert [c["name"] for c in summary["checks"]] == ["run::no_errors"]
    markdown = (pytester.path / "s.md").read_text()
    assert markdown.startswith("## researchqa — FAILED ❌")
    assert "<summary>Rows in error (1)</summary>" in markdown
    assert "- crashy:answer · edu-lookup-1: " in markdown and "the index is down" in markdown
    [saved] = (pytester.path / ".researchqa" / "runs").glob("*/rows.jsonl")
    crashed = next(r for r in map(json.loads, saved.read_text().splitlines()) if r.get("error"))
    assert crashed["details"]["question"] and crashed["details"]["expected"], "the report shows what the row asked"
    junit = (pytester.path / "j.xml").read_text()
    assert 'errors="1"' in junit and "researchqa.gates" not in junit, "the erroring row is the testcase"


@pytest.mark.slow
def test_a_run_whose_dataset_rows_are_invalid_says_it_failed_in_every_medium_gated_or_not(pytester, tmp_path):
    pytester.makefile(".jsonl", rows='{"row_id": "r1", "paper_id": "p1"}\n{not json\n')
    common = ("--researchqa-dataset=rows.jsonl", "--researchqa-system=oracle", "-p", "no:cacheprovider",
              f"--researchqa-cache-dir={tmp_path}", "--researchqa-json=s.json", "--researchqa-markdown=s.md")
    for gate in ((), ("--researchqa-fail-under=citation_accuracy=0.5",)):
        result = pytester.runpytest(*common, *gate)
        assert result.ret == 1
        summary = json.loads((pytester.path / "s.json").read_text())
        assert (summary["verdict"], summary["passed"]) == ("failed", False), gate
        assert "run::valid_rows" in [c["name"] for c in summary["checks"]]
        assert (pytester.path / "s.md").read_text().startswith("## researchqa — FAILED ❌")
        result.stdout.fnmatch_lines(["researchqa: run FAILED: 2 invalid dataset row(s) errored*"])


@pytest.mark.slow
def test_show_and_view_of_a_saved_gated_run_say_what_its_run_decided(pytester, tmp_path, capsys):
    from pytest_researchqa.__main__ import _replayed, main
    from pytest_researchqa.reporting.html import page_data
    from pytest_researchqa.runs import load_run, resolve_run

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}", "-k", "edu or env or ml")
    pytester.runpytest(*common, "--researchqa-system=oracle", "--researchqa-save=main")
    regressed = pytester.runpytest(*common, "--researchqa-system=bm25", "--researchqa-save=pr",
                                   "--researchqa-compare=main", "--researchqa-compare-map=bm25=oracle",
                                   "--researchqa-fail-on-regression=citation_precision")
    assert regressed.ret == 1
    runs = pytester.path / ".researchqa" / "runs"
    capsys.readouterr()
    assert main(["--runs", str(runs), "show", "pr"]) == 0
    shown = capsys.readouterr().out
    assert "researchqa: gates FAILED: 1 of 1 check(s) failed" in shown and "REGRESSED" in shown
    saved = load_run(resolve_run("pr", runs))
    outcome = _replayed(saved, runs).outcome()
    data = page_data(outcome, _replayed(saved, runs).family, "t")
    assert data["verdict"] == "failed" and data["headline"].startswith("gates FAILED")
    assert outcome.comparison is not None and outcome.comparison.baseline.endswith("main"), "the changes, too"


@pytest.mark.parametrize("command", ["show", "view"])
def test_show_and_view_help_says_what_their_run_argument_is(command, capsys):
    """tester39 G11d: the positional run had no help text under show --help and view --help."""
    from pytest_researchqa.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert ("RUN the saved run: a run folder, a folder name, its name suffix (--researchqa-save=NAME) or 'last' "
            "(default: last)") in shown


@pytest.mark.slow
def test_show_and_compare_read_no_rows_details_the_citation_familys_text_never_shows(pytester, tmp_path, capsys):
    """Issue 24 keeps `compare A B` / `show last` at 1.5 s / 0.8 s: with each row's citation views saved (most of a
    row's bytes) they read 56 MB into 288 MiB. The text they print is the same without them."""
    from pytest_researchqa.__main__ import main
    from pytest_researchqa.runs import load_run, read_manifest, reads_details, resolve_run

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}", "--researchqa-system=bm25")
    pytester.runpytest(*common, "--researchqa-save=base")
    pytester.runpytest(*common, "--researchqa-system=oracle", "--researchqa-save=pr", "--researchqa-compare=base")
    runs = pytester.path / ".researchqa" / "runs"
    folder = resolve_run("pr", runs)
    whole, lean = load_run(folder), load_run(folder, details=False)
    assert any(r.details for r in whole.records) and not any(r.details for r in lean.records)
    assert [r.metrics for r in whole.records] == [r.metrics for r in lean.records]
    assert reads_details(read_manifest(folder)) is False, "the citation family's board reads no details"
    capsys.readouterr()
    assert main(["--runs", str(runs), "compare", "base", "pr"]) == 0 and main(["--runs", str(runs), "show", "pr"]) == 0
    printed = capsys.readouterr().out
    assert "| oracle " in printed and "base" in printed, printed


def test_compare_fails_on_a_gate_it_cannot_decide_when_told_to_as_a_live_run_does(pytester, tmp_path, capsys):
    """tester65 LOW: compare printed '--researchqa-undecidable=fail to fail on them', an option it lacked."""
    from pytest_researchqa.__main__ import main

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}", "--researchqa-system=oracle")
    pytester.runpytest(*common, "-k", "lookup", "--researchqa-save=base")
    pytester.runpytest(*common, "-k", "comprehension", "--researchqa-save=pr")  # no row in both: undecidable
    runs = str(pytester.path / ".researchqa" / "runs")
    gate = ["--runs", runs, "compare", "base", "pr", "--fail-on-regression", "citation_precision"]
    capsys.readouterr()
    assert main(gate) == 0
    assert "(--researchqa-undecidable=fail, or compare's --undecidable fail, to fail on them)" in capsys.readouterr().out
    assert main([*gate, "--undecidable", "fail"]) == 1
