"""Results that last: saved runs, the manifest, Markdown, and rendering saved runs (pytester)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import leaderboard_table


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


def test_a_serial_and_a_parallel_run_save_the_same_rows(pytester, tmp_path):
    args = ("--researchqa-system=oracle", "--researchqa-system=bm25", f"--researchqa-cache-dir={tmp_path}",
            "-p", "no:cacheprovider")
    pytester.runpytest_subprocess(*args, "--researchqa-save=serial", "-p", "no:xdist")
    pytester.runpytest_subprocess(*args, "--researchqa-save=parallel", "-n", "2")
    folders = list((pytester.path / ".researchqa" / "runs").iterdir())
    assert len(folders) == 2, "one folder a run: xdist workers save nothing of their own"
    runs = {p.name.rsplit("-", 1)[1]: p for p in folders}

    def comparable(folder):
        return [{k: v for k, v in row.items() if k != "usage"} for row in rows_of(folder)]

    assert comparable(runs["serial"]) == comparable(runs["parallel"])
    assert len(comparable(runs["serial"])) == 54


def test_saving_can_be_turned_off(pytester, tmp_path):
    pytester.runpytest("--researchqa-system=oracle", "--researchqa-results=off", "-k", "edu-lookup",
                       f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    assert not (pytester.path / ".researchqa").exists()


def test_model_parameters_that_look_like_secrets_never_reach_the_manifest():
    from pytest_researchqa.runs import redact_params

    assert redact_params({"m": {"api_key": "sk-1", "api_base": "http://x", "Authorization": "Bearer t"}}) == {
        "m": {"api_key": "<redacted>", "api_base": "http://x", "Authorization": "<redacted>"}}


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


def test_a_saved_run_renders_without_rerunning(pytester, tmp_path):
    live = pytester.runpytest("--researchqa-system=oracle", "--researchqa-system=bm25",
                              f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider")
    shown = subprocess.run([sys.executable, "-m", "pytest_researchqa", "show", "last"], cwd=pytester.path,
                           capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    live_table = {k: {c: v for c, v in cells.items() if c != "latency s"} for k, cells in leaderboard_table(live).items()}
    assert pytester_table(shown.stdout) == live_table
    assert set(live_table) == {"oracle", "bm25"}


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
