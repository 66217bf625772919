"""Round 3 of the attack pass (issue 22): credentials in any parameter shape, loopback spellings,
judge and answer cache keys, booleans as scores, run names. Each failed before its fix."""

from __future__ import annotations

import json

import pytest

from pytest_researchqa.llm_params import Secret, is_loopback_url, known_secrets, parse_model_params, redact
from pytest_researchqa.runs import redact_params

TOKEN = "sk-live-7f3a9c1e5b2d4f60"


@pytest.mark.parametrize("entry", [
    f'openai/m:extra_headers={{"Authorization": "Bearer {TOKEN}"}}',
    f'openai/m:extra_headers={{"x-api-key": "{TOKEN}"}}',
    f"openai/m:api_base=https://user:{TOKEN}@proxy.example/v1",
    f'openai/m:vertex_credentials={{"type": "service_account", "private_key": "{TOKEN}"}}',
    f"openai/m:aws_access_key_id={TOKEN}",
    f"openai/m:aws_secret_access_key={TOKEN}",
    f"openai/m:my_password={TOKEN}",
])
def test_every_credential_a_user_can_pass_is_known_redacted_and_hidden_from_reprs(entry):
    params = parse_model_params([entry], ["openai/m"])
    assert TOKEN not in repr(params), "a traceback with locals shows reprs"
    assert TOKEN not in json.dumps(redact_params(params), default=str), "the manifest"
    secrets = known_secrets(params, environ={})
    assert redact(f"provider said: bad key {TOKEN}", secrets) == "provider said: bad key <redacted>"


def test_parameters_that_only_sound_alike_are_kept():
    params = parse_model_params(["openai/m:max_tokens=4096", "openai/m:top_k=40", "openai/m:api_base=http://127.0.0.1:8000/v1"],
                                ["openai/m"])
    assert redact_params(params) == {"openai/m": {"max_tokens": 4096, "top_k": 40, "api_base": "http://127.0.0.1:8000/v1"}}
    assert not any(isinstance(v, Secret) for v in params["openai/m"].values())


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:1/v1", "http://[::1]:8080/v1",
                                 "http://0.0.0.0:8080/v1", "http://[::]:8080/v1", "http://[::ffff:127.0.0.1]:8080/v1",
                                 "http://127.8.9.10/v1", "http://2130706433:8080/v1"])
def test_every_spelling_of_this_machine_is_local(url):
    assert is_loopback_url(url)


@pytest.mark.parametrize("url", ["http://10.0.0.1/v1", "https://api.openai.com/v1", "http://[::ffff:10.0.0.1]/v1"])
def test_other_hosts_are_not_local(url):
    assert not is_loopback_url(url)


def test_a_boolean_is_not_a_coverage_score():
    from pytest_researchqa.families.citation.judges import parse_verdict
    from pytest_researchqa.families.rubric.judges import parse_coverage
    from pytest_researchqa.llm.contract import MalformedReply

    with pytest.raises(MalformedReply, match="not true/false"):
        parse_coverage(json.dumps({"items": [{"item": 1, "justification": "j", "coverage": True}]}), 1)
    graded = {"justification": "j", "score": True}
    with pytest.raises(MalformedReply):
        parse_verdict(json.dumps({"factual_accuracy": graded, "completeness": graded}), "rubric")


def test_editing_a_rows_judge_criteria_or_false_premise_changes_its_judge_cache_key():
    from pytest_researchqa import Answer, Row
    from pytest_researchqa.families.citation.judges import CitationJudge

    base = {"row_id": "r", "paper_id": "p", "question_type": "lookup", "question": "Q?", "expected_answer": "A."}
    answer = Answer("A.", [])
    plain = CitationJudge.key_parts(None, Row(**base), answer)  # type: ignore[arg-type]
    criteria = CitationJudge.key_parts(None, Row(**base, judge_rubric="Must name the cohort."), answer)  # type: ignore[arg-type]
    premise = CitationJudge.key_parts(None, Row(**{**base, "question_type": "adversarial"},  # type: ignore[arg-type]
                                                 metadata={"false_premise": "There was no placebo arm."}), answer)
    assert plain != criteria and plain != premise and "judge_rubric" not in plain, "unchanged rows keep their keys"


def test_a_run_name_too_long_for_a_folder_is_a_usage_error(pytester, tmp_path):
    result = pytester.runpytest("-p", "no:cacheprovider", "--researchqa-system=oracle", "--researchqa-save=" + "x" * 300,
                                f"--researchqa-cache-dir={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--researchqa-save: 300 characters; a run's name has at most 100*"])


GOOD = {"row_id": "r1", "system": "bm25", "paper_id": "p", "metrics": {"citation_accuracy": 1.0}}


@pytest.mark.parametrize(("line", "says"), [
    ("[]", "a row record is a JSON object, not list"), ('"x"', "not str"), ("null", "not NoneType"), ("42", "not int"),
    (json.dumps({**GOOD, "usage": {"latency_s": "fast"}}), "usage.latency_s"),
    (json.dumps({**GOOD, "usage": {"prompt_tokens": 1.5}}), "usage.prompt_tokens"),
    (json.dumps({**GOOD, "paper_id": ["a", "b"]}), "field 'paper_id'"),
    (json.dumps({**GOOD, "judge": "great"}), "field 'judge'"),
    (json.dumps({**GOOD, "metrics": {"citation_accuracy": "high"}}), "metrics.citation_accuracy"),
    (json.dumps({**GOOD, "metrics": []}), "field 'metrics'"),
    (json.dumps({**GOOD, "version": 99}), "version 99 is newer than this pytest-researchqa reads"),
    ("[" * 100_000 + "]" * 100_000, "not a row record"),
])
def test_a_malformed_saved_run_is_one_clear_error_naming_file_and_line(tmp_path, capsys, line, says):
    from pytest_researchqa.__main__ import main

    folder = tmp_path / "runs" / "20261125-120000-bad"
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text(json.dumps(GOOD) + "\n" + line + "\n")
    for command in (["show", "bad"], ["compare", "bad", "bad"], ["view", "bad"], ["show", "bad", "--json"]):
        assert main(["--runs", str(tmp_path / "runs"), *command]) == 2
        err = capsys.readouterr().err
        assert "rows.jsonl, line 2: " in err and says in err, err


def test_a_manifest_that_is_not_an_object_is_named(tmp_path, capsys):
    from pytest_researchqa.__main__ import main

    folder = tmp_path / "runs" / "20261125-120000-bad"
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text(json.dumps(GOOD) + "\n")
    (folder / "manifest.json").write_text("[1, 2]")
    assert main(["--runs", str(tmp_path / "runs"), "show", "bad"]) == 2
    assert "manifest.json: a manifest is a JSON object, not list" in capsys.readouterr().err


def test_a_bad_baseline_stops_the_run_before_any_row_is_answered(pytester, tmp_path):
    folder = pytester.path / ".researchqa" / "runs" / "20261125-120000-main"
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text(json.dumps({**GOOD, "usage": {"cost_usd": "free"}}) + "\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path}",
                                "--researchqa-system=bm25", "--researchqa-compare=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--researchqa-compare: *rows.jsonl, line 1: not a row record*usage.cost_usd*"])
    assert "researchqa leaderboard" not in result.stdout.str()
