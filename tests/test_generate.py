"""``python -m pytest_researchqa generate``: rows from papers, every expected passage verified.

Generation runs for real through litellm against the scripted server (tests/llm_server.py),
whose ``gen-mixed`` model writes verbatim, paraphrased, altered and fabricated quotes and
answers repair requests from the diagnosis they carry. Papers are the bundled sample PDFs,
a text paper written here, and (shared_data) a real PDF with real pypdf noise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import SAMPLE, leaderboard_table, shared_path
from llm_server import FABRICATED, REJECTED_PAPER
from test_e2e_small_model import llama_server  # noqa: F401  (the opt-in real-model test's server)

from pytest_researchqa.__main__ import main
from pytest_researchqa.families.citation.loaders import load_dataset
from pytest_researchqa.families.citation.matcher import match_index
from pytest_researchqa.families.citation.metrics import check_expected_passages
from pytest_researchqa.generation.checking import DEFAULT_COUNTS
from pytest_researchqa.generation.reply import parse_generation, reply_tokens
from pytest_researchqa.llm.contract import MalformedReply
from pytest_researchqa.papers import PaperStore

TIDES = """Tidal Mixing and Juvenile Oyster Growth in Two Estuaries

Abstract
We measured the growth of juvenile oysters on 64 rafts placed in two estuaries with contrasting tidal regimes over one full season.
Oysters on rafts in the strongly mixed estuary grew 2.4 millimetres per month on average, compared with 1.7 millimetres in the weakly mixed one.

Methods
Each raft carried 150 hatchery-reared spat of the same cohort, weighed and measured at deployment in early May.
Rafts were anchored at four stations per estuary, with eight rafts per station, so that depth and distance from shore matched across sites.
Salinity, temperature and chlorophyll were logged every ten minutes by a sonde fixed to the central raft of each station.
Shell height was measured with digital calipers on a random subsample of thirty oysters per raft every four weeks until October.

Results
Mean chlorophyll concentration was higher in the strongly mixed estuary, at 6.8 micrograms per litre against 4.1 in the other.
Survival to October was 81 percent in the strongly mixed estuary and 77 percent in the weakly mixed estuary, a difference that was not significant.
Growth differences between the estuaries appeared within the first four weeks and persisted through the rest of the season.
Within each estuary, stations closer to the mouth showed faster growth than stations further upstream.

Discussion
We attribute the faster growth mainly to the greater supply of suspended food that vigorous tidal mixing brings to the rafts.
Because temperatures in the two estuaries differed by less than one degree, temperature is unlikely to explain the growth difference.
A limitation of the design is that only two estuaries were compared, so estuary identity and tidal regime cannot be fully separated.
Future work should replicate the comparison across several estuaries of each type before the result is used to site new farms.
"""
ROWS_PER_PAPER = sum(DEFAULT_COUNTS.values())
ONE_LOOKUP = ("--count", "lookup=1", "--count", "comprehension=0", "--count", "multi_hop=0", "--count", "adversarial=0")


pytestmark = pytest.mark.usefixtures("litellm_loaded")


@pytest.fixture
def tides(tmp_path) -> Path:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "tides.txt").write_text(TIDES)
    return folder


@pytest.fixture
def generate(server, tmp_path, capsys):
    """Run the subcommand in-process; returns (exit status, printed lines, report)."""

    # A server on this machine gets the local-server profile: this one reports a window, as llama.cpp's
    # llama-server does, large enough for the default dozen questions.
    server.props = {"default_generation_settings": {"n_ctx": 32768}}

    def run(papers: Path, out: Path, *extra: str, model: str = "gen-mixed", params: tuple[str, ...] = ()):
        argv = ["generate", str(papers), "--model", f"openai/{model}", "--out", str(out),
                "--param", f"api_base={server.url}", "--param", "api_key=test-key", *[f"--param={p}" for p in params],
                "--cache-dir", str(tmp_path / "cache"), "--retries", "1", "--timeout", "20", *extra]
        status = main(argv)
        printed = capsys.readouterr().out
        report_file = out.with_name(out.name.rsplit(".", 1)[0] + ".report.json")
        report = json.loads(report_file.read_text()) if report_file.exists() else None
        return status, printed, report

    return run


def paper_report(report: dict, paper_id: str) -> dict:
    return next(p for p in report["papers"] if p["paper_id"] == paper_id)


def assert_every_passage_verbatim(rows_file: Path, papers: Path, cache: Path) -> int:
    """Every expected passage of the written file is in its paper, as the plugin reads it."""
    dataset = load_dataset(rows_file)
    assert not dataset.problems
    store = PaperStore(papers, cache)
    found = total = 0
    for row in dataset.rows:
        check = check_expected_passages(row, match_index(store.get(row.paper_id)))
        assert not check.missing_sections, (row.row_id, check.missing_sections)
        hits, count = check.counts
        found, total = found + hits, total + count
    assert found == total
    return total


# --------------------------------------------------------------------------- repair and drop


@pytest.mark.slow
def test_paraphrased_and_altered_quotes_are_repaired_from_the_matchers_diagnosis(generate, tides, tmp_path, server):
    status, printed, report = generate(tides, tmp_path / "rows.yaml")
    assert status == 0
    tides_report = paper_report(report, "tides")
    repaired = {p["row_id"]: p for p in tides_report["repaired_passages"]}
    assert repaired["tides-comprehension-1"]["verdict"] == "paraphrase"
    assert repaired["tides-lookup-2"]["verdict"] == "altered"
    assert repaired["tides-lookup-2"]["now"].endswith(
        "150 hatchery-reared spat of the same cohort, weighed and measured at deployment in early May.")
    # One repair call carried the diagnosis: the nearest passage of a paraphrase, the departure point of an edit.
    repair_prompts = [r["messages"][-1]["content"] for r in server.requests if "<<<PASSAGES" in r["messages"][-1]["content"]]
    assert len(repair_prompts) == 1
    items = {i["id"]: i for i in json.loads(repair_prompts[0].split("<<<PASSAGES", 1)[1].split("PASSAGES>>>", 1)[0])}
    assert "Oysters on rafts in the strongly mixed estuary grew 2.4" in items["tides-comprehension-1#1"]["nearest_passage"]
    altered = items["tides-lookup-2#1"]
    assert altered["quotation_goes_on"].startswith("remarkably")
    assert altered["paper_goes_on"].startswith("weighed and measured")
    # A quote the paper does not contain at all gets no "nearest passage": that would invite any verbatim text.
    assert "nearest_passage" not in items["tides-lookup-1#2"]
    assert "2 repaired" in printed


@pytest.mark.slow
def test_fabricated_quotes_are_dropped_with_the_reason_and_rows_keep_only_covered_sections(generate, tides, tmp_path):
    status, printed, report = generate(tides, tmp_path / "rows.yaml")
    tides_report = paper_report(report, "tides")
    dropped = {p["passage"]: p for p in tides_report["dropped_passages"]}
    assert dropped[FABRICATED[0]]["reason"] == ("not found: no passage of the paper says this; "
                                               "on repair the model found no passage")
    assert dropped[FABRICATED[1]]["reason"].startswith("not found: no passage of the paper says this; "
                                                      "the repair is still not verbatim (not found")
    # The lookup row loses its fabricated alternative and keeps its verbatim one ...
    rows = {row.row_id: row for row in load_dataset(tmp_path / "rows.yaml").rows}
    assert [len(s.alternatives) for s in rows["tides-lookup-1"].expected_references] == [1]
    # ... the multi-hop row whose 'Results' section kept nothing is dropped, and says why.
    assert "tides-multi_hop-1" not in rows
    assert tides_report["dropped_rows"] == [{
        "row_id": "tides-multi_hop-1", "question_type": "multi_hop",
        "question": tides_report["dropped_rows"][0]["question"],
        "reason": "section(s) 'Results' kept no verbatim passage"}]
    assert tides_report["passages"] == {"checked": 14, "verbatim": 10, "repaired": 2, "dropped": 2}
    assert tides_report["rows_kept"] == ROWS_PER_PAPER - 1 == len(rows)
    assert "dropped row tides-multi_hop-1: section(s) 'Results' kept no verbatim passage" in printed
    assert_every_passage_verbatim(tmp_path / "rows.yaml", tides, tmp_path / "cache")


@pytest.mark.slow
def test_the_rows_carry_each_type_s_own_fields(generate, tides, tmp_path):
    generate(tides, tmp_path / "rows.yaml")
    rows = {row.row_id: row for row in load_dataset(tmp_path / "rows.yaml").rows}
    hop = rows["tides-multi_hop-2"]
    assert hop.metadata.required_sections == ["Methods", "Results"] == [s.section_label for s in hop.expected_references]
    assert hop.metadata.reasoning_chain and hop.judge_rubric
    adversarial = rows["tides-adversarial-1"]
    assert adversarial.expected_refusal is True and adversarial.metadata.false_premise
    assert adversarial.expected_references == []
    lookup = rows["tides-lookup-3"]
    assert lookup.metadata.section == "Part 3" and lookup.metadata.source_text
    assert {row.domain for row in rows.values()} == {"test studies"}


# --------------------------------------------------------------------------- the self-test


@pytest.mark.slow
def test_the_oracle_scores_one_and_the_audit_finds_every_passage_on_generated_rows(
        generate, tmp_path, pytester: pytest.Pytester):
    papers = pytester.path / "papers"
    shutil.copytree(SAMPLE / "papers", papers)
    status, printed, report = generate(papers, pytester.path / "rows.yaml")
    assert status == 0 and report["totals"]["failed"] == 0
    assert report["totals"]["repaired"] > 0 and report["totals"]["dropped"] > 0, "the mixed model needs repairs"
    kept = report["totals"]["rows_kept"]
    assert kept >= 3 * (ROWS_PER_PAPER - 2)
    assert "self-test: python -m pytest --researchqa-dataset=" in printed

    common = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={tmp_path / 'plugin-cache'}",
              "--researchqa-dataset=rows.yaml")
    result = pytester.runpytest(*common, "--researchqa-system=oracle")
    result.assert_outcomes(passed=kept)
    oracle = leaderboard_table(result)["oracle"]
    assert [oracle[c] for c in ("cite prec", "sect cov", "cite acc", "refusal", "flagged")] == ["1.000"] * 5
    assert oracle["rows"] == str(kept)

    audit = pytester.runpytest(*common, "--researchqa-audit")
    total = report["totals"]["passages_written"]
    audit.stdout.fnmatch_lines(["*researchqa dataset audit*", f"| (all) * | {total}/{total} * | 1.000 * | 0 *"])


def test_jsonl_and_json_outputs_are_the_published_shapes_and_load_whole(generate, tides, tmp_path):
    status, _, report = generate(tides, tmp_path / "rows.jsonl")
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert "metadata" not in first and first["metadata_section"] == "Part 1"
    assert len(lines) == report["totals"]["rows_kept"] == len(load_dataset(tmp_path / "rows.jsonl").rows)
    assert_every_passage_verbatim(tmp_path / "rows.jsonl", tides, tmp_path / "cache")
    generate(tides, tmp_path / "rows.json")
    wrapper = json.loads((tmp_path / "rows.json").read_text())
    assert wrapper["generated"]["counts"] == DEFAULT_COUNTS and len(wrapper["rows"]) == len(lines)
    assert [r.row_id for r in load_dataset(tmp_path / "rows.json").rows] == [json.loads(line)["row_id"] for line in lines]


# --------------------------------------------------------------------------- runs, cache, failures


def test_a_rerun_makes_no_call_and_writes_the_same_rows(generate, tides, tmp_path, server):
    generate(tides, tmp_path / "rows.yaml")
    calls = server.calls()
    assert calls == 2, "one generation call and one repair call for the paper"
    first = (tmp_path / "rows.yaml").read_bytes()
    status, printed, report = generate(tides, tmp_path / "rows.yaml")
    assert server.calls() == calls, "the cached replies answer everything"
    assert (tmp_path / "rows.yaml").read_bytes() == first
    assert report["totals"]["usage"]["calls"] == 0 and report["totals"]["usage"]["from_cache"] == 2
    assert "0 calls, 2 from cache" in printed
    generate(tides, tmp_path / "rows.yaml", "--refresh")
    assert server.calls() == 2 * calls


def test_a_changed_question_mix_asks_again_and_writes_that_mix(generate, tides, tmp_path, server):
    generate(tides, tmp_path / "rows.yaml", "--count", "lookup=2", "--count", "comprehension=0",
             "--count", "multi_hop=1", "--count", "adversarial=1")
    rows = load_dataset(tmp_path / "rows.yaml").rows
    assert sorted(r.row_id for r in rows) == ["tides-adversarial-1", "tides-lookup-1", "tides-lookup-2"]
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "- 2 chunks" in prompt and '"comprehension": null' in prompt and "- 1 multi-hop questions" in prompt
    # multi_hop-1 was asked for but its Results quote is fabricated: dropped, so one row fewer.
    _, printed, report = generate(tides, tmp_path / "rows.yaml", "--count", "lookup=6")
    assert "note: asked for 6 lookup questions, the reply had 4 usable" in printed
    assert paper_report(report, "tides")["notes"]["shortfalls"] == ["asked for 6 lookup questions, the reply had 4 usable"]


def test_a_broken_json_reply_is_retried_and_a_reply_that_never_parses_fails_only_its_paper(generate, tides, tmp_path,
                                                                                            server):
    status, _, report = generate(tides, tmp_path / "rows.yaml", model="gen-truncated")
    assert status == 0 and report["totals"]["rows_kept"] == ROWS_PER_PAPER
    assert server.calls("gen-truncated") == 2, "a reply cut off halfway, then a whole one"
    status, printed, report = generate(tides, tmp_path / "garbage.yaml", model="garbage")
    assert status == 1
    assert paper_report(report, "tides")["status"] == "failed"
    error = paper_report(report, "tides")["error"]
    assert "malformed reply after one repair follow-up: no JSON object in the reply" in error
    assert "--param max_tokens=N" in error
    assert "[1/1] tides: FAILED: openai/garbage (tides): malformed reply after one repair follow-up" in printed
    assert server.calls("garbage") == 2, "one call, one repair follow-up, then the paper fails"


@pytest.mark.slow
def test_an_unreadable_pdf_and_a_provider_error_are_reported_and_the_other_papers_go_on(generate, tides, tmp_path):
    (tides / "damaged.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<")
    (tides / "rejected.txt").write_text(f"{TIDES}\n{REJECTED_PAPER}\n")
    (tides / "Upper.PDF").write_bytes(b"%PDF-1.7")
    status, printed, report = generate(tides, tmp_path / "rows.yaml")
    assert status == 1
    assert paper_report(report, "damaged")["error"].startswith("paper 'damaged' (damaged.pdf): pypdf cannot read it")
    assert "this document violates the usage policy" in paper_report(report, "rejected")["error"]
    assert paper_report(report, "tides")["status"] == "ok"
    assert {r.paper_id for r in load_dataset(tmp_path / "rows.yaml").rows} == {"tides"}
    assert "skipped Upper.PDF: rename it to Upper.pdf" in printed
    assert "wrote 11 rows from 1 of 3 papers" in printed


def test_a_key_echoed_back_by_the_provider_is_never_printed_or_written(generate, tides, tmp_path):
    status, printed, report = generate(tides, tmp_path / "rows.yaml", model="echo-key",
                                       params=("api_key=sk-generate-secret-123",))
    assert status == 1
    text = printed + (tmp_path / "rows.report.json").read_text()
    assert "sk-generate-secret-123" not in text and "<redacted>" in text


def test_the_json_schema_mode_sends_the_reply_schema(generate, tides, tmp_path, server):
    generate(tides, tmp_path / "rows.yaml", params=("structured_output=json_schema",))
    first, repair = server.requests[0], server.requests[1]
    assert first["response_format"]["type"] == "json_schema"
    schema = first["response_format"]["json_schema"]
    assert schema["name"] == "generate_rows" and "multi_hop_questions" in schema["schema"]["properties"]
    assert repair["response_format"]["json_schema"]["name"] == "repair_passages"


def test_usage_errors_exit_2_before_any_call(generate, tmp_path, server, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert generate(empty, tmp_path / "rows.yaml")[0] == 2
    assert generate(tmp_path / "missing", tmp_path / "rows.yaml")[0] == 2
    assert generate(empty, tmp_path / "rows.csv")[0] == 2
    assert generate(empty, tmp_path / "rows.yaml", "--count", "trivia=3")[0] == 2
    with pytest.raises(SystemExit) as exit_:
        main(["generate", str(empty), "--model", "m", "--out", "x.yaml", "--count", "lookup=many"])
    assert exit_.value.code == 2 and "expected TYPE=N" in capsys.readouterr().err
    nothing = [f"--count={kind}=0" for kind in ("lookup", "comprehension", "multi_hop", "adversarial")]
    for counts, message in [(nothing, "every question type is 0"), (["--count", "lookup=100000"], "at most 50")]:
        with pytest.raises(SystemExit) as exit_:
            main(["generate", str(empty), "--model", "m", "--out", "x.yaml", *counts])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert server.calls() == 0


def test_an_empty_text_paper_fails_alone_before_any_call(generate, tides, tmp_path, server):
    (tides / "blank.txt").write_text("  \n")
    status, printed, report = generate(tides, tmp_path / "rows.yaml")
    assert status == 1 and "no text (the file is empty)" in paper_report(report, "blank")["error"]
    assert paper_report(report, "tides")["status"] != "failed"
    assert not any("blank" in str(r) for r in server.requests), "the empty paper never reached the provider"


def test_help_lists_the_generate_subcommand(capsys):
    # In-process (the command line's entry, `python -m pytest_researchqa`, is run by tests/test_results.py).
    for argv in (["--help"], ["generate", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert "generate PAPERS_DIR --model MODEL --out rows.yaml" in shown
    detail = shown.split("usage: python -m pytest_researchqa generate", 1)[1]
    assert "--count TYPE=N" in detail and "--param KEY=VALUE" in detail


# --------------------------------------------------------------------------- parsing


def test_one_malformed_question_costs_only_that_question():
    reply = json.dumps({"domain": "Ecology", "chunks": [{"section": "Results", "page_hint": "two",
                                                         "lookup": {"question": "Q?", "expected_answer": "A",
                                                                    "expected_references": []}}],
                        "multi_hop_questions": [{"expected_answer": "no question"},
                                                {"question": "Q2?", "expected_references": []}],
                        "adversarial_questions": "none"})
    parsed = parse_generation(f"```json\n{reply}\n```")
    assert parsed.domain == "ecology"
    chunk, problems = parsed.chunks[0]
    assert chunk.lookup is not None and chunk.lookup.question == "Q?"
    assert problems == ["its description: field page_hint: Input should be a valid integer, unable to parse string "
                        "as an integer"]
    assert isinstance(parsed.multi_hop[0], str) and "field question: Field required" in parsed.multi_hop[0]
    assert not isinstance(parsed.multi_hop[1], str)
    assert parsed.adversarial == []


def test_an_over_long_reply_field_is_rejected_with_its_reason_and_never_becomes_every_row_s():
    from pytest_researchqa.generation.checking import candidates_from

    huge = "x" * 3_000_000  # 3 MB (a reply once carried 60 MB): once the domain of every row of the dataset
    reply = json.dumps({"domain": huge, "chunks": [
        {"section": "Results", "lookup": {"question": "Q?", "expected_answer": huge, "expected_references": []}},
        {"section": "Methods", "lookup": {"question": "Q2?", "expected_answer": "A", "expected_references": []}}]})
    parsed = parse_generation(reply)
    assert parsed.domain is None, "the paper's domain falls back to unknown (or --domain)"
    long_answer, problems = parsed.chunks[0]
    assert long_answer.lookup is None
    assert problems == ["its lookup question: field expected_answer: String should have at most 20000 characters"]
    assert parsed.chunks[1][0].lookup is not None, "the other question stays"
    chosen, notes = candidates_from(parsed, "p", {"lookup": 1})
    assert [c.question for c in chosen] == ["Q2?"]
    assert "domain: 3,000,000 characters, over the 200 a label may have; not used" in notes["malformed"]


@pytest.mark.parametrize("reply", ["", "Here are your questions!", '{"chunks": [', "[1, 2]", '{"answer": "x"}'])
def test_a_reply_that_is_no_generation_is_malformed_and_retried(reply):
    with pytest.raises(MalformedReply):
        parse_generation(reply)


# --------------------------------------------------------------------------- a real paper


@pytest.mark.slow
@pytest.mark.shared_data
def test_passages_from_a_real_pdf_survive_pypdf_noise(generate, tmp_path):
    source = shared_path("papers", "chain_of_thought.pdf")
    papers = tmp_path / "papers"
    papers.mkdir()
    shutil.copy(source, papers / source.name)
    status, printed, report = generate(papers, tmp_path / "rows.yaml", model="gen-good")
    entry = paper_report(report, "chain_of_thought")
    assert status == 0 and entry["rows_kept"] == ROWS_PER_PAPER
    # The scripted model copies sentences from pypdf's text, line breaks, hyphenation and all.
    assert entry["passages"]["verbatim"] == entry["passages"]["checked"]
    assert assert_every_passage_verbatim(tmp_path / "rows.yaml", papers, tmp_path / "cache") == entry["passages"]["checked"]
    status, _, report = generate(papers, tmp_path / "mixed.yaml", model="gen-mixed")
    mixed = paper_report(report, "chain_of_thought")
    assert mixed["passages"]["dropped"] >= 2 and mixed["passages"]["repaired"] >= 1
    assert_every_passage_verbatim(tmp_path / "mixed.yaml", papers, tmp_path / "cache")


# --------------------------------------------------------------------------- checking, without a model


def test_a_failed_repair_call_drops_the_passages_with_its_cause_and_a_false_premise_row_stays_without_evidence():
    from pytest_researchqa.families.citation.matcher import MatchIndex
    from pytest_researchqa.generation import checking

    verbatim = "Survival to October was 81 percent in the strongly mixed estuary and 77 percent in the weakly mixed estuary"
    reply = json.dumps({"chunks": [{"section": "Results", "source_text": "A summary in the model's own words here.",
                                    "lookup": {"question": "What was survival?", "expected_answer": "81 and 77 percent",
                                               "expected_references": [{"section_label": "Results",
                                                                        "alternatives": [verbatim, FABRICATED[0]]}]}}],
                        "adversarial_questions": [{"question": "Why was the placebo raft better?",
                                                   "false_premise": "There was no placebo raft.",
                                                   "expected_answer": "There was no placebo raft.",
                                                   "expected_references": [{"section_label": "Methods",
                                                                            "alternatives": [FABRICATED[1]]}]}]})
    index = MatchIndex(TIDES)
    counts = {"lookup": 1, "comprehension": 0, "multi_hop": 0, "adversarial": 1}
    candidates, notes = checking.candidates_from(parse_generation(reply), "tides", counts)
    assert notes == {"shortfalls": [], "malformed": []}
    checking.check_passages(candidates, index)
    assert [item["quotation"] for item in checking.repair_requests(candidates)] == list(FABRICATED)
    checking.apply_repairs(candidates, None, index, failure="openai/x (tides): failed after 4 attempts")
    result = checking.finish(candidates, "tides", "ecology", index)
    rows = {row["row_id"]: row for row in result.rows}
    assert rows["tides-lookup-1"]["expected_references"][0]["alternatives"] == [verbatim]
    assert "source_text" not in rows["tides-lookup-1"]["metadata"] and result.report["excerpts_left_out"] == 1
    assert rows["tides-adversarial-1"]["expected_references"] == []
    assert rows["tides-adversarial-1"]["expected_refusal"] is True
    assert [p["reason"] for p in result.report["dropped_passages"]] == [
        "not found: no passage of the paper says this; not repaired: openai/x (tides): failed after 4 attempts"] * 2
    assert result.report["passages"] == {"checked": 3, "verbatim": 1, "repaired": 0, "dropped": 2}


def test_a_multi_hop_question_without_evidence_for_a_required_section_is_dropped_before_any_check():
    from pytest_researchqa.generation import checking

    block = {"section_label": "Methods", "alternatives": ["Each raft carried 150 hatchery-reared spat of the same cohort"]}
    reply = json.dumps({"multi_hop_questions": [
        {"question": "Q1?", "required_sections": ["Methods", "Discussion"], "expected_references": [block]},
        {"question": "Q2?", "required_sections": [], "expected_references": [block, block]},
        {"question": "Q3?", "required_sections": ["Methods", "Results"],
         "expected_references": [block, {**block, "section_label": "Results (Table 2)"}]}]})
    candidates, _ = checking.candidates_from(parse_generation(reply), "tides", {"multi_hop": 3})
    assert [c.dropped for c in candidates] == [
        "required section(s) 'Discussion' have no evidence block",
        "a multi-hop question needs evidence from two distinct sections",
        None]  # a required section worded differently from its block's label still has its block


# --------------------------------------------------------------------------- opt-in: a real small model


@pytest.mark.e2e
@pytest.mark.slow
def test_a_real_small_model_generates_a_verified_row_per_real_pdf_on_the_local_profile(request, tmp_path):
    """``python -m pytest -m e2e``: the llama.cpp server of test_e2e_small_model (skips when it or the model file
    is not installed), two real PDFs (skips without shared data), nothing set but the server and the counts: the
    local-server profile does the rest (one call at a time, the reply capped, the paper fitted to the window, the
    quotations held to the paper's sentences). docs/models.md records what it measured."""
    papers = tmp_path / "papers"
    papers.mkdir()
    for name in ("chain_of_thought.pdf",
                 "refusal-in-language-models-is-mediated-by-a-single-direction-Paper-Conference.pdf"):
        shutil.copy(shared_path("papers", name), papers)
    url, _, _ = request.getfixturevalue("llama_server")
    argv = ["generate", str(papers), "--model", "openai/smollm2", "--out", str(tmp_path / "rows.yaml"),
            "--param", f"api_base={url}", "--cache-dir", str(tmp_path / "cache"), *ONE_LOOKUP]
    status = main(argv)
    report = json.loads((tmp_path / "rows.report.json").read_text())
    print(json.dumps(report["papers"], indent=1)[:6000])
    assert status == 0 and report["totals"]["failed"] == 0
    for entry in report["papers"]:
        passages = entry["passages"]
        assert passages["checked"] == passages["verbatim"] + passages["repaired"] + passages["dropped"]
        assert entry["rows_kept"] >= 1, f"{entry['paper_id']}: no row passed its own verification"
        assert entry["usage"]["calls"] >= 1 and entry["usage"]["cost_usd"] is None
    assert_every_passage_verbatim(tmp_path / "rows.yaml", papers, tmp_path / "cache")


def test_a_multi_hop_row_whose_sections_quote_the_same_passage_is_dropped():
    from pytest_researchqa.families.citation.matcher import MatchIndex
    from pytest_researchqa.generation import checking

    same = "Each raft carried 150 hatchery-reared spat of the same cohort, weighed and measured at deployment"
    overlapping = "spat of the same cohort, weighed and measured at deployment in early May."
    other = "Growth differences between the estuaries appeared within the first four weeks"
    reply = json.dumps({"multi_hop_questions": [
        {"question": "Q1?", "expected_references": [{"section_label": "Methods", "alternatives": [same]},
                                                    {"section_label": "Setup", "alternatives": [overlapping]}]},
        {"question": "Q2?", "expected_references": [{"section_label": "Methods", "alternatives": [same]},
                                                    {"section_label": "Results", "alternatives": [other]}]}]})
    index = MatchIndex(TIDES)
    candidates, _ = checking.candidates_from(parse_generation(reply), "tides", {"multi_hop": 2})
    checking.check_passages(candidates, index)
    result = checking.finish(candidates, "tides", "ecology", index)
    assert [row["row_id"] for row in result.rows] == ["tides-multi_hop-2"]
    assert result.report["dropped_rows"][0]["reason"] == (
        "sections 'Methods' and 'Setup' quote the same passage: it is no multi-hop question")


def test_a_paper_longer_than_the_context_window_is_cut_and_the_report_says_so(generate, tides, tmp_path, server):
    appendix = "\n".join(f"Appendix note {n} repeats that raft {n} was inspected weekly by two observers." for n in range(400))
    (tides / "tides.txt").write_text(TIDES + "\nAppendix\n" + appendix)
    _, printed, report = generate(tides, tmp_path / "rows.yaml", *ONE_LOOKUP, model="gen-good",
                                  params=("max_input_tokens=3000",))
    note = paper_report(report, "tides")["notes"]["cut"]
    assert note.startswith("the model saw the first ") and note.endswith("(the context window is smaller than the "
                                                                          "paper; --param max_input_tokens=N sets it)")
    seen = int(note.split()[5])
    assert 2000 <= seen < 3000 * 3, "the window less the prompt's text and the reply's cap, three characters a token"
    sent = server.requests[0]["messages"][-1]["content"]
    assert "Tidal Mixing" in sent and "Appendix note 399" not in sent


def test_on_a_local_server_generate_sends_one_call_at_a_time_capped_and_held_to_the_papers_sentences(
        generate, tides, tmp_path, server):
    server.props = None  # llama-cpp-python's server reports no window: the profile assumes 4,096 tokens
    argv = ["generate", str(tides), "--model", "openai/gen-good", "--out", str(tmp_path / "rows.yaml"),
            "--param", f"api_base={server.url}", "--cache-dir", str(tmp_path / "cache"), *ONE_LOOKUP]
    assert main(argv) == 0
    [request] = server.requests
    assert request["max_tokens"] == reply_tokens({"lookup": 1}), "an abandoned request ends at the cap too"
    schema = request["response_format"]["schema"]
    assert request["response_format"]["type"] == "json_object"
    chunks = schema["properties"]["chunks"]
    assert chunks["minItems"] == chunks["maxItems"] == 1 and schema["properties"]["multi_hop_questions"]["maxItems"] == 0
    quotes = chunks["items"]["properties"]["lookup"]["properties"]["expected_references"]["items"]["properties"][
        "alternatives"]["items"]["enum"]
    assert "Mean chlorophyll concentration was higher in the strongly mixed estuary, at 6.8 micrograms per litre " \
           "against 4.1 in the other." in quotes
    assert all(sentence in " ".join(TIDES.split()) for sentence in quotes), "every quotation the grammar allows is verbatim"


def test_a_context_window_too_small_for_even_one_question_a_call_fails_before_any_call_saying_what_to_do(
        generate, tides, tmp_path, server, capsys):
    server.props = {"default_generation_settings": {"n_ctx": 2500}}
    argv = ["generate", str(tides), "--model", "openai/gen-good", "--out", str(tmp_path / "rows.yaml"),
            "--param", f"api_base={server.url}", "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "a context window of 2500 tokens cannot hold the prompt" in error and "even one question" in error
    assert "--n_ctx 8192" in error
    assert server.calls() == 0 and not (tmp_path / "rows.yaml").exists()


def test_the_default_dozen_questions_on_a_4096_token_server_are_planned_as_calls_that_each_fit_the_window(
        generate, tides, tmp_path, server):
    """SmolLM2's llama-cpp-python server at --n_ctx 4096: the dozen questions need a 6,025-token reply alone. The
    run asks them in calls of fewer questions, says the plan before the first call, and every request it
    counts is one the server received."""
    from pytest_researchqa.generation.pipeline import split_counts

    appendix = "\n".join(f"Appendix note {n} repeats that raft {n} was inspected weekly by two observers on "
                         "each of the four stations." for n in range(120))
    (tides / "tides.txt").write_text(TIDES + "\nAppendix\n" + appendix)
    server.props = {"default_generation_settings": {"n_ctx": 4096}}
    status, printed, report = generate(tides, tmp_path / "rows.yaml", model="gen-good")
    assert status == 0, printed
    plan = report["plan"]
    calls = plan["calls_per_paper"]
    assert calls > 1 and plan["questions_per_call"] == split_counts(DEFAULT_COUNTS, 3)
    assert sum(sum(c.values()) for c in plan["questions_per_call"]) == ROWS_PER_PAPER
    assert (f"generate: plan: {ROWS_PER_PAPER} question(s) a paper in {calls} call(s) of at most 3 "
            "(a 4096-token window holds the prompt") in printed
    assert f"1 paper(s): {calls} generation call(s), then at most one repair call after each" in printed
    generation = [r for r in server.requests if '"multi_hop_questions"' in r["messages"][0]["content"]]
    assert len(generation) == calls
    for request in generation:
        prompt = request["messages"][0]["content"]
        assert len(prompt) / 3 + request["max_tokens"] <= 4096, "prompt, excerpt and reply fit the window"
    starts = {r["messages"][0]["content"].split("<<<PAPER", 1)[1][:80] for r in generation}
    assert len(starts) == calls, "each call is shown its own part of the paper"
    usage = report["totals"]["usage"]
    assert usage["calls"] == server.calls() and usage["failed_calls"] == 0, "every request accounted, exactly"
    entry = paper_report(report, "tides")
    assert entry["rows_generated"] == ROWS_PER_PAPER
    ids = [row.row_id for row in load_dataset(tmp_path / "rows.yaml").rows]
    assert sorted(ids) == sorted(f"tides-{kind}-{n}" for kind, count in DEFAULT_COUNTS.items()
                                 for n in range(1, count + 1)), "row numbers follow on from one call to the next"
    assert entry["notes"]["cut"].startswith(f"each of the {calls} calls saw up to ")
    again_status, again_printed, again_report = generate(tides, tmp_path / "rows.yaml", model="gen-good")
    assert server.calls() == usage["calls"] and again_report["totals"]["usage"]["from_cache"] == calls, \
        "a re-run takes every call of the plan from the cache"


def test_one_failed_call_of_a_papers_several_costs_only_its_own_questions_and_is_counted(generate, tides, tmp_path,
                                                                                       server):
    """The provider refuses the part of the paper the last call shows: that call's questions are missing (a note
    says so), the other calls' rows are written, and the refused request is counted."""
    appendix = "\n".join(f"Appendix note {n} repeats that raft {n} was inspected weekly by two observers on "
                         "each of the four stations." for n in range(30))  # the last call reaches the end
    (tides / "tides.txt").write_text(TIDES + "\nAppendix\n" + appendix + f"\n{REJECTED_PAPER}\n")
    server.props = {"default_generation_settings": {"n_ctx": 4096}}
    status, printed, report = generate(tides, tmp_path / "rows.yaml", model="gen-good")
    calls = report["plan"]["calls_per_paper"]
    assert status == 0 and report["totals"]["failed"] == 0, "the paper gave the rows of its other calls"
    assert f"    note: call {calls} of {calls} failed, its questions are missing: " in printed, printed
    kept = [row.row_id for row in load_dataset(tmp_path / "rows.yaml").rows]
    assert kept and "tides-adversarial-2" not in kept, "the last call asked for the false-premise questions"
    usage = report["totals"]["usage"]
    refused = printed.count("failed, its questions are missing: ")  # the calls shown the paper's end
    assert usage["calls"] == server.calls() and usage["failed_calls"] == refused >= 1


def test_every_request_is_accounted_failed_ones_included_and_unpriced_spend_is_a_dash(generate, tides, tmp_path,
                                                                                      server):
    status, printed, report = generate(tides, tmp_path / "garbage.yaml", model="garbage")
    assert status == 1 and server.calls("garbage") == 2
    usage = report["totals"]["usage"]
    assert (usage["calls"], usage["failed_calls"], usage["cost_usd"]) == (2, 2, None)
    assert "2/1 papers" not in printed and "1 failed, 2 calls (2 failed)" in printed and "spend —" in printed
    status, _, report = generate(tides, tmp_path / "rows.yaml", model="gen-truncated")
    usage = report["totals"]["usage"]
    assert server.calls("gen-truncated") == 2 and (usage["calls"], usage["failed_calls"]) == (2, 1), \
        "a reply cut off, then its repair: two requests, the first of them gave nothing"


def test_placeholder_questions_and_passages_are_rejected_with_a_reason_and_make_way_for_real_ones():
    from pytest_researchqa.generation import checking

    passage = "Each raft carried 150 hatchery-reared spat of the same cohort"
    template = 'Write questions. {"question": "...", "expected_answer": "..."} Ask about the methods of the paper.'
    chunks = [{"lookup": {"question": "...", "expected_answer": "...",
                          "expected_references": [{"section_label": "Methods", "alternatives": [passage]}]}},
              {"lookup": {"question": "Ask about the methods of the paper.", "expected_answer": "150",
                          "expected_references": [{"section_label": "Methods", "alternatives": [passage]}]}},
              {"lookup": {"question": "How many spat did each raft carry?", "expected_answer": "150",
                          "expected_references": [{"section_label": "Methods", "alternatives": [passage, "..."]}]}}]
    candidates, notes = checking.candidates_from(parse_generation(json.dumps({"chunks": chunks})), "tides",
                                                 {"lookup": 1}, template=template)
    assert [c.question for c in candidates] == ["How many spat did each raft carry?"]
    assert notes["malformed"] == [
        "lookup question '...': the question is no content: '...' is template filler, not content",
        "lookup question 'Ask about the methods of the paper.': the question is no content: "
        "'Ask about the methods of the paper.' is copied from the prompt"]
    [_, placeholder] = candidates[0].passages
    assert placeholder[1].status == "dropped" and "template filler" in placeholder[1].reason


def test_a_question_or_answer_with_an_unfilled_template_slot_is_rejected_with_the_slot_named():
    """SmolLM2-135M wrote "How do you think [X] contributes to [Y], ...?" answered "Based on your understanding
    [relation]" (docs/models.md): a template, not a question."""
    from pytest_researchqa.generation import checking

    passage = "Each raft carried 150 hatchery-reared spat of the same cohort"
    evidence = [{"section_label": "Methods", "alternatives": [passage]}]
    chunks = [{"lookup": {"question": "How do you think [X] contributes to [Y]?", "expected_answer": "150",
                          "expected_references": evidence}},
              {"lookup": {"question": "How many spat did each raft carry?", "expected_answer": "Based on [relation]",
                          "expected_references": evidence}},
              {"lookup": {"question": "What does the [CLS] token of BERT [12] encode?", "expected_answer": "150",
                          "expected_references": evidence}}]
    candidates, notes = checking.candidates_from(parse_generation(json.dumps({"chunks": chunks})), "tides",
                                                 {"lookup": 3})
    assert [c.question for c in candidates] == ["What does the [CLS] token of BERT [12] encode?"]
    assert notes["malformed"] == [
        "lookup question 'How do you think [X] contributes to [Y]?': the question is no content: "
        "'[X]' is a template slot, not content",
        "lookup question 'How many spat did each raft carry?': the expected answer is no content: "
        "'[relation]' is a template slot, not content"]



@pytest.mark.slow
def test_on_a_local_server_a_call_past_its_deadline_fails_its_paper_at_once_instead_of_queueing_a_retry(
        generate, tides, tmp_path, server):
    server.timeout_sleep_s = 5.0
    status, printed, report = generate(tides, tmp_path / "rows.yaml", "--timeout", "2", *ONE_LOOKUP,
                                       model="fault-timeout")
    assert status == 1 and server.calls("fault-timeout") == 1, "the server is still busy with the first request"
    entry = paper_report(report, "tides")
    assert "not retried: the server may still be working on the abandoned request" in entry["error"]
    assert (entry["usage"]["calls"], entry["usage"]["failed_calls"]) == (1, 1)


def _tides_chunk(question: str, passage: str, kind: str = "lookup") -> dict:
    return {kind: {"question": question, "expected_answer": "an answer",
                   "expected_references": [{"section_label": "Methods", "alternatives": [passage]}]}}


def test_the_same_question_asked_again_in_another_question_type_of_a_paper_is_dropped_naming_the_first():
    """SmolLM2-135M asked "In what year did you last see this?" as the lookup, comprehension and false-premise
    question of one paper (docs/models.md): one question, not three."""
    from pytest_researchqa.families.citation.matcher import MatchIndex
    from pytest_researchqa.generation import checking

    methods = "Each raft carried 150 hatchery-reared spat of the same cohort, weighed and measured at deployment"
    results = "Growth differences between the estuaries appeared within the first four weeks"
    reply = {"chunks": [{**_tides_chunk("How many spat did each raft carry?", methods),
                         **_tides_chunk("  how many SPAT did each raft carry ", results, "comprehension")},
                        {**_tides_chunk("When did growth differences appear?", results)}],
             "adversarial_questions": [{"question": "How many spat, did each raft carry?!",
                                        "false_premise": "The rafts carried no spat at all.",
                                        "expected_answer": "They carried 150.", "expected_references": []}]}
    index = MatchIndex(TIDES)
    candidates, _ = checking.candidates_from(parse_generation(json.dumps(reply)), "tides",
                                             {"lookup": 2, "comprehension": 1, "adversarial": 1})
    checking.check_passages(candidates, index)
    result = checking.finish(candidates, "tides", "ecology", index)
    assert [row["row_id"] for row in result.rows] == ["tides-lookup-1", "tides-lookup-2"]
    reasons = {d["row_id"]: d["reason"] for d in result.report["dropped_rows"]}
    assert reasons == {
        "tides-comprehension-1": "the same question as tides-lookup-1 (lookup): 'How many spat did each raft carry?'",
        "tides-adversarial-1": "the same question as tides-lookup-1 (lookup): 'How many spat did each raft carry?'"}


@pytest.mark.parametrize(("premise", "reason"), [
    ("", "an adversarial question needs its false premise stated"),
    ("   ", "an adversarial question needs its false premise stated"),
    ("...", "the false premise is no content: '...' is template filler, not content"),
    ("Did the authors include a placebo arm?", "the false premise 'Did the authors include a placebo arm?' is a "
                                               "question, not a statement of what is false"),
    ("why did the authors include a placebo arm", "the false premise 'why did the authors include a placebo arm' "
                                                  "is a question, not a statement of what is false"),
    ("Amazon Mechanical Turk", "the false premise 'Amazon Mechanical Turk' is a fragment (3 word(s)), not a "
                               "statement of what is false"),
    ("The way you make things work. ...", "the false premise 'The way you make things work. ...' is cut off, not a "
                                          "whole statement of what is false"),
    ("The authors trained the model because of", "the false premise 'The authors trained the model because of' "
                                                 "is cut off, not a whole statement of what is false"),
    ("You are a [AI model] that uses [mental operations] in the analysis of [data].",
     "the false premise is no content: '[AI model]' is a template slot, not content"),
])
def test_a_false_premise_that_is_no_statement_drops_its_question_with_the_reason(premise, reason):
    from pytest_researchqa.generation import checking

    reply = {"adversarial_questions": [{"question": "Why did the authors include a placebo arm?",
                                        "false_premise": premise, "expected_answer": "There is none.",
                                        "expected_references": []}]}
    [candidate], _ = checking.candidates_from(parse_generation(json.dumps(reply)), "tides", {"adversarial": 1})
    assert candidate.dropped == reason


@pytest.mark.parametrize(("text", "slot"), [
    ("You are a [AI model] that uses [mental operations].", "[AI model]"),
    ("Compare [Author Name] with [Paper_Title].", "[Author Name]"),
    ("What does <Method Name> do?", "<Method Name>"),
    ("How does [X] affect [Y]?", "[X]"),
    ("Based on [relation].", "[relation]"),
    ("The survey [12] and [1, 2] agree.", None),
    ("As [Smith et al., 2020] and [Smith 2020] report.", None),
    ("The [CLS] token and [NaCl] in Table [3].", None),
])
def test_a_template_slot_is_found_in_any_case_and_a_bracketed_citation_is_not_one(text, slot):
    from pytest_researchqa.generation import checking

    found = checking.TEMPLATE_SLOT.search(text)
    assert (found.group() if found else None) == slot


def test_a_false_premise_that_repeats_its_question_is_a_question_and_a_stated_premise_is_kept():
    from pytest_researchqa.generation import checking

    assert checking.premise_problem("Why did the authors include a placebo arm.",
                                    "Why did the authors include a placebo arm?") == (
        "the false premise 'Why did the authors include a placebo arm.' is a question, not a statement of what is "
        "false")
    for stated in ("The paper describes no placebo arm.", "The authors state it; they do not deny it.",
                   "Growth was measured in three estuaries", "The survey [12] reports a placebo arm.",
                   "As [Smith et al., 2020] report, the trial had a placebo arm."):
        assert checking.premise_problem(stated, "Why did the authors include a placebo arm?") is None, stated


def test_generate_prints_each_row_dropped_for_a_repeated_question_or_a_premise_that_is_no_statement(
        generate, tides, tmp_path):
    """``gen-repeats`` asks its lookup questions again as comprehension questions and states a question as a
    false premise: the user reads why those rows are not in the file."""
    status, printed, report = generate(tides, tmp_path / "rows.yaml", "--count", "lookup=1", "--count",
                                       "comprehension=1", "--count", "multi_hop=0", "--count", "adversarial=1",
                                       model="gen-repeats")
    assert status == 0
    assert "    dropped row tides-comprehension-1: the same question as tides-lookup-1 (lookup): " in printed
    assert ("    dropped row tides-adversarial-1: the false premise 'Did the authors include a placebo arm?' is a "
            "question, not a statement of what is false") in printed
    assert [row.row_id for row in load_dataset(tmp_path / "rows.yaml").rows] == ["tides-lookup-1"]
    assert {d["row_id"] for d in paper_report(report, "tides")["dropped_rows"]} == {"tides-comprehension-1",
                                                                                  "tides-adversarial-1"}
