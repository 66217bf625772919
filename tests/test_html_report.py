"""The HTML report, read the way a person meets it: opened from file:// in real headless Chromium.

Chromium (Debian's package) loads the report of a real run of the bundled sample and the DOM it
builds is read back (``--dump-dom``); the view is chosen through the page's own URL hash, the
same links a reviewer shares. Screenshots are kept under $RESEARCHQA_ARTIFACTS (CI keeps that
folder) or the test's temporary folder.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from pytest_researchqa.reporting.html import word_diff

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# A system whose answers are hostile text, with one altered number in a real quote.
HOSTILE = '''
from pytest_researchqa import Answer

def answer(question, paper, *, row):
    quote = row.expected_references[0].alternatives[0] if row.expected_references else "nothing"
    altered = quote.replace("412", "999").replace("74.2", "79.2")
    text = ("<img src=x onerror=\\"document.title='pwned'\\"></script><script>document.title='pwned'</script>"
            "\\u202e\\x1b[31m " + altered)
    return Answer(text=text, citations=[altered])
'''


def test_a_word_diff_marks_what_only_the_quote_and_what_only_the_paper_says():
    assert word_diff("students numbered 999 in all", "students numbered 412 in all") == [
        ["=", "students numbered"], ["-", "999"], ["+", "412"], ["=", "in all"]]


def test_the_paper_going_on_past_the_quotes_end_is_context_not_something_the_quote_left_out():
    assert word_diff("the rate was 999", "the rate was 412 on average in all sections") == [
        ["=", "the rate was"], ["-", "999"], ["+", "412"], [">", "on average in all sections"]]
    assert word_diff("in 18", "in 18 course sections")[-1] == [">", "course sections"]


def dump(report: Path, fragment: str, tmp_path: Path, screenshot: str | None = None, width: int = 1400) -> str:
    assert CHROMIUM is not None
    url = report.resolve().as_uri() + ("#" + fragment if fragment else "")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", f"--window-size={width},1000",
             "--virtual-time-budget=8000"]
    target = None
    if screenshot is not None:  # in the same launch as the DOM: Chromium's start is most of a view's cost
        target = Path(os.environ.get("RESEARCHQA_ARTIFACTS") or tmp_path) / screenshot
        target.parent.mkdir(parents=True, exist_ok=True)
        flags.append(f"--screenshot={target}")
    done = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=90, check=True)
    assert 'data-ready="1"' in done.stdout, done.stdout[-2000:]
    if target is not None:
        assert target.stat().st_size > 10_000, "a blank screenshot"
    return done.stdout


def row_ids(dom: str) -> list[str]:
    body = dom.split('<table id="rows">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr data-row-id="([^"]+)"', body)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_report_of_a_real_run_opens_offline_filters_and_shows_why_each_row_scored(pytester, tmp_path):
    pytester.makepyfile(hostile=HOSTILE)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}",
                                "--researchqa-system=oracle", "--researchqa-system=bm25",
                                "--researchqa-system=hostile:answer", "--researchqa-html=report.html")
    result.stdout.fnmatch_lines(["researchqa: HTML report in report.html"])
    report = pytester.path / "report.html"
    page = report.read_text(encoding="utf-8")
    assert "<script>document.title" not in page and "pwned" not in page, "data is embedded packed, never as markup"
    assert "http://" not in page and "https://" not in page, "nothing is fetched: no CDN, no network"

    everything = dump(report, "", tmp_path, screenshot="report-leaderboard.png")
    assert len(row_ids(everything)) == 81, "every row of the three systems is listed"
    assert "<title>pwned</title>" not in everything
    lookups = dump(report, "type=lookup", tmp_path)
    assert len(row_ids(lookups)) == 18 and all("lookup" in r for r in row_ids(lookups))
    searched = dump(report, "q=" + urllib.parse.quote("spaced quizzes cost"), tmp_path)
    assert set(row_ids(searched)) and all(r.startswith("edu-") for r in row_ids(searched))

    row = dump(report, "row=" + urllib.parse.quote("hostile:answer\u241fedu-lookup-1"), tmp_path,
               screenshot="report-hostile-row.png")
    aside = row.split('<aside id="row-page">', 1)[1]
    assert 'data-row-id="edu-lookup-1"' in aside
    assert "&lt;img src=x onerror=" in aside and "&lt;/script&gt;&lt;script&gt;" in aside, "hostile text stays text"
    assert "<img src=\"x\"" not in aside and "<title>pwned</title>" not in row
    assert "⟨U+202E⟩⟨U+001B⟩" in aside and "\u202e" not in aside, "a right-to-left override cannot reorder the page"
    assert '<mark class="cite ungrounded"' in aside, "the altered quote is highlighted in the answer"
    assert "<del>999</del>" in aside and "<ins>412</ins>" in aside, "the departure is a word diff"

    bm25 = dump(report, "row=" + urllib.parse.quote("bm25\u241fedu-multihop-1"), tmp_path,
                screenshot="report-bm25-row.png")
    aside = bm25.split('<aside id="row-page">', 1)[1]
    assert '<li class="missed">Results</li>' in aside and '<mark class="cite grounded"' in aside
    assert 'class="context"' in aside, "the paper text around a grounded quote"


@pytest.mark.slow
def test_view_writes_a_saved_runs_report_and_compare_lists_the_rows_that_changed(pytester, tmp_path, capsys):
    from pytest_researchqa.__main__ import main
    from pytest_researchqa.reporting.html import page_data
    from pytest_researchqa.runs import load_run, resolve_run

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}")
    pytester.runpytest(*common, "--researchqa-system=oracle", "--researchqa-save=before")
    pytester.runpytest(*common, "--researchqa-system=bm25", "--researchqa-save=after", "--researchqa-compare=before")
    runs = pytester.path / ".researchqa" / "runs"
    # Pair the two runs' rows by system name: the baseline's oracle is saved as bm25's counterpart here.
    before = load_run(resolve_run("before", runs))
    for record in before.records:
        record.system = "bm25"
    capsys.readouterr()
    assert main(["--runs", str(runs), "view", "after", "--compare", "before", "-o", str(tmp_path / "r.html")]) == 0
    assert "HTML report of" in capsys.readouterr().out and (tmp_path / "r.html").stat().st_size > 10_000
    packed = re.search(r'id="researchqa-data"[^>]*>([^<]+)<', (tmp_path / "r.html").read_text()).group(1)
    shown = json.loads(gzip.decompress(base64.b64decode(packed)))
    before_name = shown["compare"]["baseline"]
    # A review mark names the run by its name, which calibrate --run takes (tester41 T10: it was the page title).
    assert shown["run"].endswith("-after") and shown["title"] == f"researchqa {shown['run']}"
    texts = [part["text"] for part in shown["board"] if "text" in part]
    # The Δ columns are against the run's own baseline, which the page names under its leaderboard (as the
    # terminal and Markdown do) beside the one compared with.
    assert any(n.startswith("Δ: this run minus ") and "before" in n for n in texts), texts
    assert "before" in before_name
    assert shown["gated"] is False, "the page heads a run's checks 'Verdict' without gates, 'Gates' with them"
    assert any(t.startswith("±: half-width of a 95% bootstrap interval") for t in texts), "what ± is, as the terminal"
    if CHROMIUM is not None:  # .ci/run installs it; the page as a reader meets it
        # The oracle's saved rows as bm25's earlier run, so every row pairs and most changed.
        folder = resolve_run("before", runs)
        renamed = folder.with_name(folder.name.replace("before", "renamed"))
        shutil.copytree(folder, renamed)
        rows_file = renamed / "rows.jsonl"
        rows_file.write_text(rows_file.read_text().replace('"system": "oracle"', '"system": "bm25"'))
        assert main(["--runs", str(runs), "view", "after", "--compare", "renamed", "-o", str(tmp_path / "c.html")]) == 0
        dom = dump(tmp_path / "c.html", "", tmp_path, screenshot="report-compare.png")
        changed_table = dom.split('<table id="changed">', 1)[1].split("</table>", 1)[0]
        # Each side shows its citations' verdicts: often all that changed between two runs of a row.
        assert '<ul class="changed-cites">' in changed_table and '<li class="cite grounded">[1] ' in changed_table
        # No system in both runs: no row can have changed, and the page says so rather than draw a bare header.
        unpaired_dom = dump(tmp_path / "r.html", "", tmp_path)
        assert "No row of a system in both runs changed its metrics." in unpaired_dom
        assert '<table id="changed">' not in unpaired_dom

    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.session import ResearchSession

    after = load_run(resolve_run("after", runs))
    session = ResearchSession(CITATION)
    for record in after.records:
        session.add(record)
    data = page_data(session.outcome(), CITATION, "t", other=("before", before.records))
    changed = data["compare"]["changed"]
    unpaired = page_data(session.outcome(), CITATION, "t", other=("before", load_run(resolve_run("before", runs)).records))
    lines = unpaired["compare"]["lines"]  # systems with no counterpart: said, as compare says it
    assert lines[0].startswith("bm25: the baseline before has no system 'bm25' (map it with "), lines
    assert lines[1:] == ["baseline systems nothing was compared with: oracle"]
    capsys.readouterr()  # view --map pairs the renamed system as the rewritten rows did (tester F14)
    assert main(["--runs", str(runs), "view", "after", "--compare", "before", "--map", "bm25=oracle",
                 "-o", str(tmp_path / "m.html")]) == 0
    packed = re.search(r'id="researchqa-data"[^>]*>([^<]+)<', (tmp_path / "m.html").read_text()).group(1)
    mapped = json.loads(gzip.decompress(base64.b64decode(packed)))["compare"]
    assert mapped["lines"] == ["bm25 (as oracle): 27 row(s) paired"]
    assert [c["key"] for c in mapped["changed"]] == [c["key"] for c in changed]
    assert changed and changed[0]["size"] >= changed[-1]["size"], "the largest changes first"
    assert {c["key"].split("\u241f")[1] for c in changed} <= {r["row_id"] for r in data["rows"]}
    row = next(r for r in data["rows"] if r["row_id"] == "edu-multihop-1")
    assert row["details"]["question"].startswith("The discussion says spaced quizzes")
    assert [s["covered"] for s in row["details"]["sections"]] == [False, False]
    assert all(c["grounded"] and c["context"] for c in row["citations"]), "bm25 quotes the paper: its context is kept"


def _pr_against_main(*gates: str):
    """A PR run of one system on 3 rows against main's 5 (two rows deleted from the dataset file since main),
    with question types and domains: what the terminal and Markdown show under a comparison and the board."""
    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.reporting.compare import Baseline
    from pytest_researchqa.reporting.gates import parse_gate
    from pytest_researchqa.session import ResearchSession

    def rows(values, ids):
        return [RowRecord(row_id=row_id, system="my_rag", paper_id=f"p{n}", question_type=("lookup", "multi_hop")[n % 2],
                          domain=("education", "ml")[n % 2], outcome="passed",
                          metrics={"citation_precision": v, "section_coverage": v, "citation_accuracy": v})
                for n, (row_id, v) in enumerate(zip(ids, values))]

    main_rows = rows([1.0, 1.0, 0.5, 1.0, 1.0], ["r1", "r2", "r3", "r4", "r5"])
    session = ResearchSession(CITATION, baseline=Baseline("20261128-main", tuple(main_rows), dataset_sha="aaa"),
                              dataset_sha="bbb", gates=[parse_gate(g, CITATION) for g in gates])
    for record in rows([1.0, 0.5, 0.5], ["r1", "r2", "r3"]):
        session.add(record)
    return session.outcome(), CITATION, main_rows


def test_the_page_says_what_the_markdown_says_under_a_comparison_and_has_its_per_type_and_per_domain_tables():
    """tester41 T5: the page showed none of the rows only the baseline has, the changed dataset file, the
    comparison table or the by-type and by-domain tables; they are the Markdown's own, the same words."""
    from pytest_researchqa.reporting.html import page_data
    from pytest_researchqa.reporting.json_summary import summary
    from pytest_researchqa.reporting.markdown import render

    outcome, family, main_rows = _pr_against_main()
    data = page_data(outcome, family, "t")
    markdown = render(outcome, family)
    lines = data["comparison"]["lines"]
    assert lines[0] == "my_rag: 3 row(s) paired; only in the baseline: 2 row(s): r4, r5"
    assert "the baseline 20261128-main was measured on a different version of the dataset file" in lines[1]
    assert all(f"- {line}" in markdown for line in lines), "the Markdown's own lines"
    table = data["comparison"]["table"]
    assert table["headers"][2:7] == ["this run", "baseline", "Δ", "95% CI of Δ", "p (worse)"]
    assert [row[:5] for row in table["rows"]][1] == ["my_rag", "sect cov", "0.667", "0.833", "-0.167"]
    assert [t["title"] for t in data["breakdowns"]] == ["question type", "domain"]
    assert ["my_rag", "multi_hop", "0.500", "0.500", "0.500", "—", "—", "1", "0"] in data["breakdowns"][0]["rows"]
    assert all(f"<summary>By {t['title']}</summary>" in markdown for t in data["breakdowns"])
    assert summary(outcome, family)["comparison_notes"] == lines, "the run's summary.json carries them too"
    # Against a run that is not the run's own baseline (view --compare OTHER), the changed rows' section says
    # which rows only one of the two has.
    other = page_data(outcome, family, "t", other=("other", main_rows[1:]))["compare"]
    assert other["lines"] == ["my_rag: 2 row(s) paired; only in this run: 1 row(s): r1; "
                              "only in the baseline: 2 row(s): r4, r5"]
    assert page_data(outcome, family, "t", other=("20261128-main", main_rows))["compare"]["lines"] == [], \
        "against the run's own baseline the Against section says it once"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_reader_of_the_page_sees_the_rows_only_the_baseline_has_the_changed_dataset_and_the_breakdowns(tmp_path):
    from pytest_researchqa.reporting.html import render, write_html

    outcome, family, main_rows = _pr_against_main("citation_accuracy=0.9", "multi_hop.section_coverage=0.9")
    write_html(tmp_path / "r.html", render(outcome, family, "researchqa pr", other=("20261128-main", main_rows)))
    dom = dump(tmp_path / "r.html", "", tmp_path, screenshot="report-against.png", width=1280)
    text = re.sub(r"<[^>]+>", " ", dom.split('<section id="rows-section"', 1)[0])
    assert "Against 20261128-main" in text
    assert "only in the baseline: 2 row(s): r4, r5" in text
    assert "was measured on a different version of the dataset file" in text
    comparison = dom.split('<table id="comparison"', 1)[1].split("</table>", 1)[0]
    assert "<th>p (worse)</th>" in comparison and "<th>95% CI of Δ</th>" in comparison
    assert "By question type" in text and "By domain" in text and "multi_hop" in text
    # The failed threshold marks its leaderboard cell; the by-type and by-domain cells of the same metric are not
    # what it measured. A gate on one question type marks that type's cell of the by-type table (tester42 N3).
    marked = re.findall(r'<td class="[^"]*gate-failed[^"]*" title="([^"]*)">(.*?)(?:<div class="delta">|</td>)', dom)
    # The value and its interval each stay on one line (tester42 N4): they break between them, not inside.
    assert [value for _, value in marked] == ['<span class="nowrap">0.667</span> <span class="nowrap">[0.500–1.000]'
                                              '</span>', '<span class="nowrap">0.500</span>'], marked
    assert "citation_accuracy&gt;=0.9" in marked[0][0] and "multi_hop.section_coverage&gt;=0.9" in marked[1][0]
    by_type = dom.split("By question type", 1)[1].split("</table>", 1)[0]
    assert by_type.count("gate-failed") == 1


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_cell_a_failed_gate_and_an_undecidable_one_are_about_is_marked_failed_naming_both(tmp_path, monkeypatch):
    """tester44 MED-1: a failed threshold and an undecidable regression on one metric drew the cell undecidable
    (yellow), its tooltip the undecidable message alone."""
    from pytest_researchqa.reporting import html

    outcome, family, main_rows = _pr_against_main("citation_accuracy=0.9")
    cells = html._gate_cells(outcome, family)
    assert [(c["label"], c["state"]) for c in cells] == [("cite acc", "failed")]
    undecidable = {**cells[0], "delta": True, "state": "undecidable", "message": "my_rag: citation_accuracy UNDECIDABLE"}
    monkeypatch.setattr(html, "_gate_cells", lambda *_: [*cells, undecidable])
    html.write_html(tmp_path / "r.html", html.render(outcome, family, "researchqa pr"))
    board = dump(tmp_path / "r.html", "", tmp_path).split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    marked = re.findall(r'<td class="num (gate-\w+)" title="([^"]*)">', board)
    assert [state for state, _ in marked] == ["gate-failed"], marked
    assert marked[0][1].split("\n") == [cells[0]["message"].replace(">", "&gt;"), undecidable["message"]], marked


def rubric_row(n: int, system: str, coverage: float, judges: tuple[str, ...]):
    from pytest_researchqa.records import JudgeResult, JudgeScores, RowRecord

    return RowRecord(row_id=f"q{n}", system=system, question_type="rubric", outcome="passed",
                     metrics={"coverage": coverage},
                     judge=JudgeResult(by_judge={j: JudgeScores({"coverage": coverage}) for j in judges}))


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_changed_rows_leave_out_a_judged_metric_the_comparison_left_out_and_name_this_runs_system(tmp_path):
    """tester44 MED-2: rows the comparison left out (not judged by the same judges in both runs) were listed as
    changed, under the baseline's system name."""
    from pytest_researchqa.families.rubric import RUBRIC
    from pytest_researchqa.reporting.html import page_data, render, write_html
    from pytest_researchqa.session import ResearchSession

    baseline = [rubric_row(n, "openai/sloppy", 0.25, ("judge-a",)) for n in range(3)]
    session = ResearchSession(RUBRIC)
    for n in range(3):  # q0 judged by the same judge in both runs; q1, q2 by another
        session.add(rubric_row(n, "openai/good", 0.5, ("judge-a",) if n == 0 else ("judge-b",)))
    outcome, mapping = session.outcome(), {"openai/good": "openai/sloppy"}
    data = page_data(outcome, RUBRIC, "t", other=("base", baseline), compare_map=mapping)
    assert [(c["key"].split("\u241f")[-1], c["deltas"]) for c in data["compare"]["changed"]] == [("q0", {"coverage": 0.25})]
    assert any("left out 2 of 3 paired row(s)" in line for line in data["compare"]["lines"]), data["compare"]["lines"]
    write_html(tmp_path / "r.html", render(outcome, RUBRIC, "t", other=("base", baseline), compare_map=mapping))
    changed = dump(tmp_path / "r.html", "", tmp_path).split('<table id="changed"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", changed)
    assert re.sub(r"<[^>]+>", "", cells[1]) == "openai/good (baseline: openai/sloppy)", cells[:3]


# Once the page is drawn: whether the page is wider than the window, whether the leaderboard scrolls in its own
# box, and where its system cell is once that box is scrolled to its end (as body attributes --dump-dom shows).
MEASURE = """<script>
(function wait() {
  if (document.body.dataset.ready !== "1") { setTimeout(wait, 20); return; }
  const board = document.getElementById("leaderboard"), box = board.parentElement;
  document.body.dataset.pageOverflow = String(document.documentElement.scrollWidth - document.documentElement.clientWidth);
  document.body.dataset.boxScrolls = String(box.scrollWidth > box.clientWidth);
  box.scrollLeft = box.scrollWidth;
  const cell = board.querySelector("tbody td");
  document.body.dataset.systemShift = String(Math.round(cell.getBoundingClientRect().left - box.getBoundingClientRect().left));
  document.body.dataset.systemCell = cell.textContent;
})();
</script></body>"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_leaderboard_compared_with_a_baseline_fits_1280_px_and_marks_the_cell_of_the_gate_that_failed(
        pytester, tmp_path):
    """tester39 G11a, tester40 H6: with Δ columns and a long system name the page was wider than a 1280-px
    window, then its leaderboard scrolled with the cost column out of view; the failing gate's column had no
    mark. Each Δ now sits under its value, and the cell a failed gate is about is marked."""
    from pytest_researchqa.__main__ import main

    system = "my_rag_pipeline_of_the_team_with_reranking"
    pytester.makepyfile(**{system: HOSTILE.replace("999", "412").replace("79.2", "74.2")})
    pytester.syspathinsert()
    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}",
              f"--researchqa-system={system}:answer")
    pytester.runpytest(*common, "--researchqa-save=main")
    # The pull request alters the numbers it quotes. (A comment makes the file's size differ: the same size in
    # the same second would let Python reuse the first version's byte code.)
    # Its answers end with a long unbroken link (tester50 LOW-7: a 40-digit row id or a link in the table of
    # changed rows widened the page past the window).
    pytester.makepyfile(**{system: HOSTILE.replace("Answer(text=text,", "Answer(text=text + ' https://doi.org/"
                                                   + "x" * 160 + "',") + "# the pull request\n"})
    pytester.runpytest(*common, "--researchqa-save=pr-42", "--researchqa-compare=main",
                       "--researchqa-fail-on-regression=citation_accuracy")
    runs = pytester.path / ".researchqa" / "runs"
    assert main(["--runs", str(runs), "view", "pr-42", "--compare", "main", "-o", str(tmp_path / "r.html")]) == 0
    measured = tmp_path / "measured.html"
    measured.write_text((tmp_path / "r.html").read_text(encoding="utf-8").replace("</body>", MEASURE, 1),
                        encoding="utf-8")
    dom = dump(measured, "", tmp_path, screenshot="report-delta-1280.png", width=1280)
    found = dict(re.findall(r'data-(page-overflow|box-scrolls|system-shift|system-cell)="([^"]*)"', dom))
    assert found["system-cell"] == f"{system}:answer"
    assert found["page-overflow"] == "0", "the page is no wider than the window"
    assert found["box-scrolls"] == "false", "every column, cost $ the last, is in view without scrolling"
    board = dom.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert "<th>Δ cite acc</th>" not in board and '<div class="delta">Δ</div>' in board
    failed = re.findall(r'<td class="num gate-failed" title="([^"]*)">(.*?)<div class="delta">([^<]*)</div>', board)
    assert len(failed) == 1, board
    assert len(re.findall(r'class="[^"]*gate-failed', dom)) == 1, "a by-type cell of the gated metric is not what the gate measured"
    assert "By question type" in dom and "By domain" in dom
    message, value, delta = failed[0]
    assert "citation_accuracy REGRESSED" in message and delta.startswith("-"), (message, value, delta)


@pytest.mark.slow
def test_view_compares_with_the_map_the_run_was_made_with_unless_told_another(pytester, tmp_path, capsys):
    """tester64 MED: a run compared with --researchqa-compare-map bm25=oracle, then `view RUN --compare BASE`: the
    page said "bm25 (as oracle): 27 row(s) paired" and, below, that no row of a system in both runs changed."""
    from pytest_researchqa.__main__ import main

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'cache'}")
    pytester.runpytest(*common, "--researchqa-system=oracle", "--researchqa-save=before")
    pytester.runpytest(*common, "--researchqa-system=bm25", "--researchqa-save=after", "--researchqa-compare=before",
                       "--researchqa-compare-map=bm25=oracle")
    runs = str(pytester.path / ".researchqa" / "runs")

    pytester.runpytest(*common, "--researchqa-system=oracle", "--researchqa-save=other")

    def changed_rows(*extra: str, against: str = "before") -> list:
        page = tmp_path / "v.html"
        assert main(["--runs", runs, "view", "after", "--compare", against, "-o", str(page), *extra]) == 0
        packed = re.search(r'id="researchqa-data"[^>]*>([^<]+)<', page.read_text()).group(1)
        return json.loads(gzip.decompress(base64.b64decode(packed)))["compare"]["changed"]

    capsys.readouterr()
    assert changed_rows(), "bm25 against the baseline's oracle: the rows bm25 answers otherwise changed"
    assert changed_rows("--map", "bm25=bm25") == [], "a map given names the pairing"
    # tester65 MED: the run's map is its baseline's pairing; another run is paired by name (as compare does).
    assert changed_rows(against="other") == [], "no system of the run is in 'other' by name"
    # compare pairs as view does (tester65 LOW: it said the baseline has no system 'bm25').
    capsys.readouterr()
    assert main(["--runs", runs, "compare", "before", "after"]) == 0
    assert "bm25 (as oracle): 27 row(s) paired" in capsys.readouterr().out
    assert main(["--runs", runs, "compare", "other", "after"]) == 0
    assert re.search(r"the baseline \S+-other has no system 'bm25'", capsys.readouterr().out)


def test_the_pages_rows_are_in_one_order_whichever_order_the_run_finished_them_in():
    """tester64 LOW: a live page under -n 2 listed rows in arrival order (changing run to run), a serial one in
    dataset order, and view of the saved run yet another: now the terminal's listing order (system, then row id
    in natural order) everywhere."""
    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.reporting.html import page_data
    from pytest_researchqa.session import ResearchSession

    finished = [RowRecord(row_id=row_id, system=system, paper_id="p", question_type="lookup", outcome="passed",
                          metrics={"citation_precision": 1.0})
                for system, row_id in [("oracle", "r10"), ("bm25", "r2"), ("oracle", "r1"), ("bm25", "r10")]]
    orders = []
    for records in (finished, list(reversed(finished))):
        session = ResearchSession(CITATION)
        for record in records:
            session.add(record)
        orders.append([(row["system"], row["row_id"]) for row in page_data(session.outcome(), CITATION, "t")["rows"]])
    assert orders[0] == orders[1] == [("bm25", "r2"), ("bm25", "r10"), ("oracle", "r1"), ("oracle", "r10")]
