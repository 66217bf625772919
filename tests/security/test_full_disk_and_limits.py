"""Resource faults: a full disk, the open-file limit, a slow-drip server, huge schedules and replies.

A real full disk needs a mount this machine's tests cannot make, so the runs below stand for one in
two ways: ``/dev/full`` (every write fails with ENOSPC, as on a full disk) where the plugin appends
to a file it is given, and a path under a regular file where it makes folders (every write fails
with ENOTDIR at the same places a full disk fails with ENOSPC: the code takes the same path for any
OSError). The pure cache module is also tested with ENOSPC itself.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import run_pytest  # noqa: E402

from pytest_researchqa.llm import cache as cache_module  # noqa: E402
from pytest_researchqa.llm.cache import AnswerCache  # noqa: E402

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _disk_full(*args, **kwargs):
    raise ENOSPC


# ------------------------------------------------------------------ item 2: a full disk


def test_a_claim_on_a_full_disk_returns_at_once_instead_of_recursing(tmp_path, monkeypatch):
    AnswerCache(tmp_path).claim("00" * 32).release()  # the claims file exists (made before the disk filled)
    monkeypatch.setattr(os, "pwrite", _disk_full)
    monkeypatch.setattr(os, "write", _disk_full)
    claim = AnswerCache(tmp_path).claim("ab" * 32)
    assert claim is not None and claim.fd is not None, "a claim is a lock: it writes nothing"
    claim.release()


def test_a_full_disk_turns_caching_off_after_one_warning(tmp_path, monkeypatch):
    cache = AnswerCache(tmp_path)
    cache.put("aa" * 32, {"answer": "first", "citations": []})
    monkeypatch.setattr(cache_module, "atomic_write", _disk_full)
    with pytest.warns(UserWarning, match="No space left on device.*caching is off"):
        cache.put("bb" * 32, {"answer": "second", "citations": []})
    monkeypatch.setattr(cache_module, "atomic_write", lambda *a: pytest.fail("written after caching was off"))
    cache.put("cc" * 32, {"answer": "third", "citations": []})  # no second warning (pytest would show it)
    claim = cache.claim("dd" * 32)
    assert claim is not None and claim.fd is None, "no lock files once caching is off"
    assert cache.get("aa" * 32) == {"answer": "first", "citations": []}, "what was cached is still read"
    note = cache.off_note()
    assert note is not None
    assert "after 1 entries were written" in note and "No space left on device" in note and "2 later" in note


def test_without_fcntl_claims_coordinate_nothing_and_answers_are_still_cached(tmp_path, monkeypatch):
    """Windows has no record locks: every call gets a claim that holds nothing (two runs may pay twice for a
    key, never lose an answer), with no error at import or at the claim."""
    monkeypatch.setattr(cache_module, "_fcntl", lambda: None)
    cache = AnswerCache(tmp_path)
    first, second = cache.claim("ab" * 32), cache.claim("ab" * 32)
    assert first is not None and second is not None and first.fd is None and second.fd is None
    cache.put("ab" * 32, {"answer": "x", "citations": []})
    first.release()
    second.release()
    assert cache.get("ab" * 32) == {"answer": "x", "citations": []} and cache.off is None


def test_running_out_of_file_descriptors_does_not_turn_caching_off(tmp_path, monkeypatch):
    cache = AnswerCache(tmp_path)
    monkeypatch.setattr(cache_module, "atomic_write", lambda *a: (_ for _ in ()).throw(OSError(errno.EMFILE, "")))
    cache.put("aa" * 32, {"answer": "x", "citations": []})
    assert cache.off is None and cache.off_note() is None


@pytest.mark.slow
def test_a_full_disk_loses_no_row_and_the_leaderboard_still_prints(pytester, server, tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"  # a path under a regular file: every write there fails (see the module doc)
    blocked.write_text("not a folder")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/dev/full")  # a real ENOSPC on every write
    result = run_pytest(
        pytester, "--researchqa-model=openai/good", "--researchqa-judge=openai/judge-overlap", "-k", "edu-lookup",
        f"--researchqa-results={blocked}/runs", f"--researchqa-markdown={blocked}/summary.md",
        f"--researchqa-json={blocked}/summary.json", f"--researchqa-html={blocked}/report.html",
        f"--researchqa-plots={blocked}/plots", cache=blocked / "cache", server=server)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines([
        f"researchqa: results were not saved in {blocked}/runs/*-run: Not a directory",
        f"researchqa: could not write the JSON summary to {blocked}/summary.json: *",
        f"researchqa: could not write the Markdown summary to {blocked}/summary.md: *",
        "researchqa: could not write the GitHub step summary to /dev/full: No space left on device",
        f"researchqa: could not write the figures to {blocked}/plots: *",
        f"researchqa: could not write the HTML report to {blocked}/report.html: *",
        "*researchqa leaderboard*",
        "*openai/good*",
    ])
    result.stdout.fnmatch_lines(["*the answer cache was off after 0 entries were written: a write failed "
                                 f"({blocked}/cache/answers: Not a directory); 4 later answers and verdicts*"])
    assert out.count("cannot write the answer cache") == 1, "one warning, not one per write"
    assert "HTML report in" not in out


# ------------------------------------------------------------------ item 3: the open-file limit


def test_calls_queued_for_a_slot_hold_no_claim(tmp_path):
    """A key waiting for one of this run's slots is not claimed: another run with a free slot can ask it."""
    import asyncio

    from pytest_researchqa.llm.engine import ModelRunner
    from pytest_researchqa.llm.system import ModelCaller, ModelSpec

    runner = ModelRunner(concurrency=2)
    cache = AnswerCache(tmp_path)
    caller = ModelCaller(ModelSpec("openai/good", {"max_input_tokens": 1000}), runner, cache)
    held: list[int] = []

    async def call() -> dict:
        held.append(cache.claims_held())  # claims held right now, this call's included
        await asyncio.sleep(0.02)
        return {"answer": "x", "citations": []}

    try:
        for future in [caller._start(f"{i:064x}", call) for i in range(40)]:
            future.result(timeout=30)
    finally:
        runner.close()
    assert len(held) == 40 and max(held) <= 2, f"claims bounded by the 2 slots, not the 40 rows: {max(held)}"


# The user's `ulimit -n 128`, set before any row runs. The run is in-process (a fresh interpreter would
# cost a second litellm import): the descriptors this test process holds already are added to the 128,
# and the limit is lifted again at the run's end.
FD_LIMIT_CONFTEST = """
import os
import resource

_GIVEN = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 128, _GIVEN[1]))


def pytest_unconfigure(config):
    resource.setrlimit(resource.RLIMIT_NOFILE, _GIVEN)
"""


@pytest.mark.slow
def test_more_model_rows_than_the_open_file_limit_run_clean(pytester, server, tmp_path):
    import json

    from helpers import SAMPLE

    rows = 160
    pytester.makeconftest(FD_LIMIT_CONFTEST)
    (pytester.path / "papers").mkdir()
    paper = (SAMPLE / "sources" / "sample-edu.md").read_text(encoding="utf-8")
    (pytester.path / "papers" / "p.md").write_text(paper, encoding="utf-8")
    quote = "Across two semesters, 412 students in 18 course sections took part."
    assert quote in paper
    dataset = {"version": "1", "rows": [
        {"row_id": f"r{i}", "paper_id": "p", "domain": "education", "question_type": "lookup",
         "question": f"How many students took part in the study, and in how many sections? (variant {i})",
         "expected_answer": "412 students in 18 sections.",
         "expected_references": [{"section_label": "Abstract", "alternatives": [quote]}]}
        for i in range(rows)]}
    (pytester.path / "rows.json").write_text(json.dumps(dataset), encoding="utf-8")
    result = run_pytest(pytester, "--researchqa-model=openai/good", "--researchqa-dataset=rows.json", "-q",
                        "--researchqa-concurrency=8", cache=tmp_path / "cache", server=server)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Too many open files" not in out
    outcomes = result.parseoutcomes()  # graded rows pass or fall below their bar; none errors
    assert outcomes.get("passed", 0) + outcomes.get("xfailed", 0) == rows and "errors" not in outcomes, outcomes
    assert len(list((tmp_path / "cache" / "answers").rglob("*.json"))) == rows, "every answer cached"
    assert server.calls() == rows


# ------------------------------------------------------------------ item 18: odd verdicts in the cache


@pytest.mark.slow
def test_a_verdict_of_another_shape_in_the_cache_is_judged_again(pytester, server, tmp_path):
    import json

    args = ("--researchqa-model=openai/good", "--researchqa-judge=openai/judge-overlap", "-k", "edu-lookup")
    run_pytest(pytester, *args, cache=tmp_path, server=server).assert_outcomes(passed=2)
    verdicts = [p for p in (tmp_path / "answers").rglob("*.json") if "scores" in json.loads(p.read_text())]
    assert len(verdicts) == 2
    # An answer where a verdict belongs, and a verdict of a version with other dimensions: both pass
    # the cache's generic check, and each used to error its row (KeyError in the consensus).
    verdicts[0].write_text(json.dumps({"answer": "a verdict of an older version", "citations": []}))
    verdicts[1].write_text(json.dumps({"scores": {"accuracy": 4, "justifications": "one string"}}))
    calls = server.calls("judge-overlap")
    result = run_pytest(pytester, *args, cache=tmp_path, server=server)
    result.assert_outcomes(passed=2)
    assert server.calls("judge-overlap") == calls + 2, "each odd verdict was a miss, judged again"
    assert all(json.loads(p.read_text())["scores"].get("factual_accuracy") for p in verdicts), "and rewritten"


def test_a_cached_coverage_verdict_for_another_number_of_items_is_a_miss(tmp_path):
    from pytest_researchqa.families.rubric.judges import RubricCoverageJudge

    judge = RubricCoverageJudge.__new__(RubricCoverageJudge)  # only its check of cached scores is used
    subject = ("query", ("item one", "item two", "item three"), "answer")
    assert judge.reusable({"items": [4, 3, 0], "justifications": ["a", "b", "c"]}, *subject)
    assert not judge.reusable({"items": [4, 3], "justifications": ["a", "b"]}, *subject), "an edited rubric"
    assert not judge.reusable({"items": [4, 3, 9]}, *subject)
    cache = AnswerCache(tmp_path)
    cache.put("ab" * 32, {"kind": "coverage", "scores": {"items": [4]}})
    assert cache.get("ab" * 32, judge._accepts(subject)) is None and cache.invalid == 1


# ------------------------------------------------------------------ item 11: huge pairwise schedules


def test_a_thousand_system_schedule_is_counted_not_listed():
    import tracemalloc

    from pytest_researchqa.families.rubric.tournament import judge_calls_refusal, planned_judge_calls

    tracemalloc.start()
    calls = planned_judge_calls(1000, [100], per_pair=None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert calls == 2 * 499_500 * 100 and peak < 100_000, "99.9 million calls counted in constant memory"
    assert planned_judge_calls(3, [10, 20], per_pair=5) == 2 * 3 * 5
    assert planned_judge_calls(3, [10, 2000], per_pair=None, by_domain=True) == 2 * (30 + 2000)
    refusal = judge_calls_refusal(calls, 20_000)
    assert refusal is not None and "99,900,000 judge calls" in refusal and "--researchqa-max-judge-calls" in refusal
    assert judge_calls_refusal(calls, 0) is None and judge_calls_refusal(20_000, 20_000) is None


@pytest.mark.parametrize("extra", [(), pytest.param(("-n", "2"), marks=pytest.mark.slow, id="xdist")],
                         ids=["serial", "xdist"])
def test_a_rubric_run_over_the_judge_call_cap_refuses_to_start(pytester, tmp_path, extra):
    """Under xdist too: a worker's refusal reaches its controller (tester45: INTERNALERROR, the message lost)."""
    args = ("--researchqa-system=rubric-oracle", "--researchqa-model=openai/good", "--researchqa-family=rubric",
            "--researchqa-judge=openai/judge-a", "--researchqa-model-param=openai/good:api_base=http://127.0.0.1:9",
            "--researchqa-model-param=openai/judge-a:api_base=http://127.0.0.1:9")  # nothing listens: no call made
    result = run_pytest(pytester, *args, "--researchqa-max-judge-calls=20", *extra, cache=tmp_path,
                        subprocess_=bool(extra))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
    result.stderr.fnmatch_lines(["ERROR: researchqa: the pairwise schedule needs 24 judge calls, more than the "
                                 "cap of 20; to run it, pass --researchqa-max-judge-calls=24 (or 0 for no cap)*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert not (tmp_path / "answers").exists(), "refused before any row ran"


# ------------------------------------------------------------------ item 12: a slow-drip local server


def test_a_local_server_that_drips_its_context_window_cannot_hang_the_run(server):
    import time

    from pytest_researchqa.llm.server_info import reported_context_tokens

    server.drip_gets = True  # one byte every 0.1 s, headers included: no per-read timeout ever fires
    started = time.monotonic()
    assert reported_context_tokens(server.url, "openai/good", deadline_s=1.0) is None
    assert time.monotonic() - started < 2.5, "one deadline for the whole probe, not ~20 s of drip"
    assert server.gets, "the server was asked"
