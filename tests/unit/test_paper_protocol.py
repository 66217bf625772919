"""--researchqa-protocol=paper reproduces the seeds' published procedures on the same inputs."""

import itertools
import math
import random

import pytest

from pytest_researchqa.families.rubric.bradley_terry import bootstrap, fit
from pytest_researchqa.families.rubric.tournament import Contender, Rules, ensemble, paper_schedule


def reference_bradley_terry(systems, battles, steps=4000, rate=0.5):
    """An independent plain Bradley-Terry fit: gradient ascent on the log-likelihood of the logistic model
    P(i beats j) = 1 / (1 + 10 ** ((r_j - r_i) / 400)), a tie half a win each way, mean rating 1000."""
    import numpy as np

    index = {s: n for n, s in enumerate(systems)}
    first = np.array([index[a] for a, _, _ in battles])
    second = np.array([index[b] for _, b, _ in battles])
    score = np.array([s for _, _, s in battles], dtype=float)
    theta = np.zeros(len(systems))  # natural-log strengths
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(theta[second] - theta[first]))
        gradient = np.zeros(len(systems))
        np.add.at(gradient, first, score - p)
        np.add.at(gradient, second, p - score)
        theta += rate * gradient / len(battles) * len(systems)
        theta -= theta.mean()
    return {s: 1000 + 400 * theta[index[s]] / math.log(10) for s in systems}


def simulated_tournament(systems=18, per_pair=50, seed=7):
    """Battles among systems whose true Elo spans 500-1500 (ties 3%), as in the seed's Table 3."""
    rng = random.Random(seed)
    names = [f"s{n:02d}" for n in range(systems)]
    truth = {name: 500 + 1000 * n / (systems - 1) for n, name in enumerate(names)}
    battles = []
    for a, b in itertools.combinations(names, 2):
        p = 1 / (1 + 10 ** ((truth[b] - truth[a]) / 400))
        for _ in range(per_pair):
            roll = rng.random()
            battles.append((a, b, 0.5 if roll < 0.03 else 1.0 if roll < p else 0.0))
    return names, battles


@pytest.mark.slow
def test_the_paper_protocols_elo_is_within_5_of_a_plain_bradley_terry_fit_at_18_systems_and_50_battles_per_pair():
    systems, battles = simulated_tournament()
    reference = reference_bradley_terry(systems, battles)
    plain = fit(systems, battles, prior_draws=0.0)
    assert max(abs(plain[s] - reference[s]) for s in systems) < 5
    ratings = {r.system: r for r in bootstrap(systems, battles, rounds=200, prior_draws=0.0)}
    assert max(abs(ratings[s].mean - reference[s]) for s in systems) < 5
    # The project's one drawn battle per pair pulls the extremes inwards by far more than that.
    with_prior = fit(systems, battles)
    assert max(abs(with_prior[s] - reference[s]) for s in systems) > 10


def test_paper_rules_fit_without_prior_and_report_the_bootstrap_mean_as_table_3_does():
    class Paper:
        protocol = "paper"
        ensemble = "eq1"

    class Notebook:
        protocol = "project"
        ensemble = "notebook"

    assert Rules.of(Paper()) == Rules(direct_points=4.0, prior_draws=0.0, by_domain=True, reported="mean")
    assert Rules.of(Notebook()).direct_points == 5.0 and Rules.of(Notebook()).prior_draws == 1.0


def _answer(system, row, coverage, domain="Health"):
    return Contender(system, row, "q", "text", tuple(coverage), domain)


def test_eq1_gives_4_points_per_direct_vote_and_the_notebooks_variant_5():
    a, b = _answer("a", "r", [4, 4, 4]), _answer("b", "r", [4, 4, 0])  # coverage sums 12 and 8
    assert ensemble(a, b, "B", "A") == 0.0  # both votes to b: 12 vs 8 + 8
    assert ensemble(a, b, "A", "A") == 1.0  # one vote each: 16 vs 12
    assert ensemble(a, b, "tie", "tie") == 1.0  # coverage alone
    # One vote for b against a's 4-point coverage lead: a tie at 4 points a vote, b's win at 5.
    assert ensemble(a, b, "B", "tie", direct_points=4.0) == 0.5
    assert ensemble(a, b, "B", "tie", direct_points=5.0) == 0.0


def test_the_paper_schedule_gives_each_domain_its_minimum_and_represents_every_matchup_evenly():
    systems = [f"s{n}" for n in range(6)]  # 15 pairs
    by_row = {}
    for domain, count in (("Health", 120), ("Economics", 40)):
        for n in range(count):
            by_row[f"{domain}-{n}"] = {s: _answer(s, f"{domain}-{n}", [2], domain) for s in systems}
    battles = paper_schedule(by_row, per_domain=300)
    per_domain = {d: [b for b in battles if b[0].startswith(d)] for d in ("Health", "Economics")}
    assert len(per_domain["Health"]) == 300 and len(per_domain["Economics"]) == 300
    for chosen in per_domain.values():
        counts = {}
        for _, first, second in chosen:
            counts[(first, second)] = counts.get((first, second), 0) + 1
        assert len(counts) == 15 and max(counts.values()) - min(counts.values()) <= 1
    assert battles == paper_schedule(by_row, per_domain=300)  # seeded: the same every run
    assert len(set(battles)) == len(battles)  # a pair never meets twice on one query


def test_the_paper_schedule_takes_every_battle_a_small_domain_offers():
    by_row = {f"r{n}": {s: _answer(s, f"r{n}", [1]) for s in ("a", "b", "c")} for n in range(4)}
    assert len(paper_schedule(by_row)) == 4 * 3


@pytest.mark.parametrize("total", [100, 653, 1000, 1234, 20001])
def test_the_paper_protocols_100_citation_rows_are_the_seeds_evenly_spaced_positions(total):
    from pytest_researchqa.sampling import paper_sample

    assert paper_sample(total, 100) == [int(i * total / 100) for i in range(100)]


def _settings(**fields):
    from pytest_researchqa.settings import Settings

    base = dict(active=True, requested=True, dataset=None, papers=None, systems=(), sample=None, gates=(),
                cache_dir=None, download_papers=False, audit=False, defect_policy="xfail")
    return Settings(**{**base, **fields})


def test_judge_auto_grades_every_rubric_system_with_one_coverage_judge():
    from pytest_researchqa.services import Services

    services = Services(_settings(family="rubric", models=("gpt-5.4", "anthropic/claude-opus-4-7"),
                                  judges=("auto",)))
    chosen = {services.judge_names_for(m)[0] for m in ("gpt-5.4", "anthropic/claude-opus-4-7")}
    assert chosen == {"gemini/gemini-3.1-pro-preview"}
    # The citation family keeps one judge of another family than each system.
    citation = Services(_settings(models=("gpt-5.4", "anthropic/claude-opus-4-7"), judges=("auto",)))
    assert citation.judge_names_for("gpt-5.4") != citation.judge_names_for("anthropic/claude-opus-4-7")


PENN_SCORE = {"Not at all": 1, "Barely": 2, "Moderately": 3, "Mostly": 4, "Completely": 5}


def penn_coverage_percent(labels_per_answer):
    """Coverage % as the seed defines it: each label 1-5 normalized by (x - 1) / 4, averaged over an answer's
    items, then over answers, x 100."""
    per_answer = [sum((PENN_SCORE[label] - 1) / 4 for label in labels) / len(labels) for labels in labels_per_answer]
    return 100 * sum(per_answer) / len(per_answer)


def test_paper_coverage_percent_is_identical_to_the_seeds_aggregation_of_the_same_labels():
    import statistics

    from pytest_researchqa.families.rubric.judges import coverage_consensus, parse_paper_coverage

    rng = random.Random(3)
    labels_per_answer = [[rng.choice(list(PENN_SCORE)) for _ in range(rng.randint(1, 8))] for _ in range(40)]
    # The plugin's path: parse the judge's reply, combine (one judge), record coverage / 4, mean over rows.
    row_coverage = []
    for labels in labels_per_answer:
        scores = parse_paper_coverage("\n".join(labels), len(labels))
        row_coverage.append(coverage_consensus({"judge": scores})["consensus"]["coverage"] / 4)
    assert 100 * statistics.fmean(row_coverage) == pytest.approx(penn_coverage_percent(labels_per_answer), abs=1e-9)


def test_the_released_coverage_reply_needs_one_known_label_per_item():
    from pytest_researchqa.families.rubric.judges import parse_paper_coverage
    from pytest_researchqa.llm.contract import MalformedReply

    assert parse_paper_coverage("Completely\n\n  **barely**\nNot at all\n", 3)["items"] == [4, 1, 0]
    with pytest.raises(MalformedReply, match="2 rating line"):
        parse_paper_coverage("Mostly\nBarely", 3)
    with pytest.raises(MalformedReply, match="'Somewhat' is not one of"):
        parse_paper_coverage("Mostly\nSomewhat", 2)


def test_the_released_pairwise_reply_is_binary():
    from pytest_researchqa.families.rubric.judges import parse_paper_preference
    from pytest_researchqa.llm.contract import MalformedReply

    reply = '**output: {"judgement": "Response 2" }**\nJustification: it cites the studies.'
    assert parse_paper_preference(reply) == {"preferred": "B", "justifications": "Justification: it cites the studies."}
    assert parse_paper_preference('**output: {"judgement": "Response 1"}**')["preferred"] == "A"
    with pytest.raises(MalformedReply):
        parse_paper_preference('**output: {"judgement": "tie"}**')


def test_the_paper_protocol_judges_in_the_seeds_format_and_takes_the_released_wording_from_a_folder(tmp_path):
    from pytest_researchqa.services import Services

    paper = Services(_settings(family="rubric", protocol="paper", judges=("gpt-5.4",)))
    assert paper.judge_kind() == "coverage-paper"
    assert paper.pairwise_judge("a", "b").kind == "pairwise-paper"
    coverage = paper._judge("gpt-5.4")
    prompt = coverage.render("the query", ("Does it cite X?", "Does it compare Y?"), "An answer.")
    assert "Response: An answer.\nQuestions:\nDoes it cite X?\nDoes it compare Y?\n" in prompt
    assert all(label in prompt for label in ("Not at all", "Barely", "Moderately", "Mostly", "Completely"))
    assert "the query" not in prompt  # the seed's coverage prompt shows no query
    assert coverage.schema() == {}  # plain text, as the seed's: no JSON mode

    # The released text is not bundled (it carries no licence): a user's copy in a folder replaces ours.
    (tmp_path / "coverage_paper.md").write_text("RELEASED {answer} // {items} //", encoding="utf-8")
    released = Services(_settings(family="rubric", protocol="paper", judges=("gpt-5.4",), judge_prompts=tmp_path))
    judge = released._judge("gpt-5.4")
    assert judge.render("q", ("A?", "B?"), "An answer.") == "RELEASED An answer. // A?\nB? //"
    assert judge.prompt.sha != coverage.prompt.sha, "another prompt is another cache key"
    assert released.pairwise_judge("a", "b").prompt.path.parent.name == "judges", "no pairwise file: the bundled one"

    project = Services(_settings(family="rubric", judges=("gpt-5.4",)))
    assert project.judge_kind() == "coverage" and project.pairwise_judge("a", "b").kind == "pairwise"

def test_a_coverage_verdicts_schema_fixes_the_item_count_and_bounds_every_score():
    """A small model held to the schema by a grammar (llama.cpp) cannot score one item of three, or a 7."""
    from pytest_researchqa.services import Services

    coverage = Services(_settings(family="rubric", judges=("gpt-5.4",)))._judge("gpt-5.4")
    schema = coverage.schema("the query", ("A?", "B?", "C?"), "An answer.")
    items = schema["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (3, 3)
    item = schema["$defs"]["ItemCoverage"]["properties"]
    assert item["item"]["enum"] == [1, 2, 3]
    assert item["coverage"]["enum"] == [0, 1, 2, 3, 4]
    assert item["justification"]["minLength"] == 1


def test_on_a_local_server_a_coverage_verdict_is_one_entry_per_item_in_order_each_with_its_own_number(tmp_path):
    """SmolLM2-135M held only to "3 entries numbered 1-3" scored items [1, 1, 2, 3, 6, 7, 8, 8] of 8."""
    from pytest_researchqa.families.registry import make_judge
    from pytest_researchqa.llm.cache import AnswerCache
    from pytest_researchqa.llm.engine import ModelRunner
    from pytest_researchqa.llm.system import ModelSpec

    runner = ModelRunner(1)
    try:
        spec = ModelSpec("openai/small", {"api_base": "http://127.0.0.1:9/v1", "max_input_tokens": 4096})
        judge = make_judge("coverage", spec, runner, AnswerCache(tmp_path))
        items = judge.schema("the query", ("A?", "B?", "C?"), "An answer.")["properties"]["items"]
    finally:
        runner.close()
    assert "items" not in items and (items["minItems"], items["maxItems"]) == (3, 3)
    assert [entry["properties"]["item"]["enum"] for entry in items["prefixItems"]] == [[1], [2], [3]]
    assert all(entry["properties"]["coverage"]["enum"] == [0, 1, 2, 3, 4] for entry in items["prefixItems"])


def test_a_citation_judges_scores_are_spelled_out_as_the_values_one_to_five():
    from pytest_researchqa.families.citation.judges import verdict_schema

    scores = [value for value in _walk(verdict_schema("rubric")) if isinstance(value, dict) and "enum" in value]
    assert scores and all(value["enum"] == [1, 2, 3, 4, 5] for value in scores)


def _walk(node):
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _walk(child)


@pytest.mark.slow
def test_a_small_tournament_under_the_paper_rules_counts_its_resamples_without_a_finite_fit_and_warns_nothing_raw():
    """12 battles at 54/46 (a tester's run): without a prior, a resample where one system wins every battle has
    no finite fit, and its clipped strengths made the mean 1137/863 ± 3793 with raw numpy RuntimeWarnings."""
    import warnings

    from pytest_researchqa.families.rubric import RUBRIC
    from pytest_researchqa.records import RowRecord

    battles = [("a", "b", 1.0)] * 6 + [("a", "b", 0.0)] * 5 + [("a", "b", 0.5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's own warnings fail the test
        ratings = bootstrap(["a", "b"], battles, rounds=1000, prior_draws=0.0)
    diverged = ratings[0].diverged
    assert 0 < diverged < 50 and all(r.diverged == diverged for r in ratings)
    steady = bootstrap(["a", "b"], battles, rounds=1000)  # the project's prior keeps every fit finite
    assert steady[0].diverged == 0 and steady[0].sd < 200
    records = [RowRecord(row_id="q1", system=s, metrics={"coverage": 0.5}) for s in ("a", "b")]
    results = {"systems": ["a", "b"], "bootstrap_diverged": diverged, "rules": {"reported": "mean"},
               "elo": {r.system: {"median": r.median, "mean": r.mean, "sd": r.sd, "point": r.point} for r in ratings}}
    shown = RUBRIC.render(records, results)[0] or ""
    assert (f"warning: {diverged} of the bootstrap's resamples have a system (or a group of systems) winning or "
            "losing every battle against the others") in shown
    assert "Elo: Bradley-Terry on ensemble-judged battles, mean of 1,000 bootstraps ± SD" in shown, "as shown"


@pytest.mark.slow
def test_a_resample_where_one_system_beat_both_others_counts_as_without_a_finite_fit_though_each_won_something():
    """Three systems, a ahead of b and c 9 to 1 each, b and c even: a resample that drew neither of a's two
    losses has no finite fit (a beat the group {b, c} every time) while b and c still won against each other.
    Such resamples were counted as fits (1 of 400) because no strength reached 0, and the Elo SD was
    thousands of points with no warning (and each took the iteration's 5,000 steps)."""
    battles = ([("a", "b", 1.0)] * 9 + [("a", "b", 0.0)] + [("a", "c", 1.0)] * 9 + [("a", "c", 0.0)]
               + [("b", "c", 1.0)] * 5 + [("b", "c", 0.0)] * 5)
    ratings = bootstrap(["a", "b", "c"], battles, rounds=400, prior_draws=0.0)
    # P(neither loss drawn) = (1 - 2/30)^30, about 0.127: about 51 of 400 resamples.
    assert 30 < ratings[0].diverged < 75 and all(r.diverged == ratings[0].diverged for r in ratings)
    assert all(r.sd < 200 for r in ratings), "the SD is over the resamples with a fit, not thousands of Elo"
    assert [r.system for r in ratings] == ["a", "b", "c"] or [r.system for r in ratings] == ["a", "c", "b"]
    assert bootstrap(["a", "b", "c"], battles, rounds=400)[0].diverged == 0, "the project's prior keeps fits finite"


def test_without_a_prior_one_system_that_lost_every_battle_leaves_the_others_rated_among_themselves():
    """tester41 T9: a loses to b and c every time; b and c split their battles. The paper protocol showed b and
    c at +∞ with a at −∞, though b's and c's battles give them a finite Elo against each other."""
    from pytest_researchqa.families.rubric.bradley_terry import finite_core
    from pytest_researchqa.families.rubric.render import no_fit_note

    battles = ([("b", "a", 1.0)] * 5 + [("c", "a", 1.0)] * 5 + [("b", "c", 1.0)] * 6 + [("c", "b", 1.0)] * 4)
    assert finite_core(["a", "b", "c"], battles) == (["b", "c"], {"a": -math.inf})
    scores = fit(["a", "b", "c"], battles, prior_draws=0.0)
    assert scores["a"] == -math.inf and scores["b"] + scores["c"] == pytest.approx(2000)
    assert scores["b"] - scores["c"] == pytest.approx(400 * math.log10(6 / 4)), "b's 6-4 over c, as on their own"
    ratings = bootstrap(["a", "b", "c"], battles, rounds=200, prior_draws=0.0)
    assert [r.system for r in ratings] == ["b", "c", "a"]
    assert all(math.isfinite(r.sd) and r.sd > 0 for r in ratings[:2]) and math.isnan(ratings[2].sd)
    note = no_fit_note({"a": "-"}, ["b", "c"])
    assert note.startswith("Elo: no finite value for some systems") and "a lost every one against the others (−∞)" \
        in note and "b, c are rated on their battles among themselves" in note
    # A strict order leaves no group of two to rate: every system stays unbounded, as before.
    chain = [("x", "y", 1.0), ("y", "z", 1.0)]
    assert finite_core(["x", "y", "z"], chain) == ([], {})
    assert fit(["x", "y", "z"], chain, prior_draws=0.0)["x"] == math.inf


def test_without_a_prior_a_system_that_wins_every_battle_has_no_finite_fit_and_the_fit_says_so_instead_of_raising():
    """tester39 G3: the paper protocol's fit divided by a winless system's strength of 0."""
    from pytest_researchqa.families.rubric.bradley_terry import runaway

    swept = [("good", "sloppy", 1.0)] * 6 + [("sloppy", "good", 0.0)] * 6
    assert fit(["good", "sloppy"], swept, prior_draws=0.0) == {"good": math.inf, "sloppy": -math.inf}
    ratings = bootstrap(["good", "sloppy"], swept, rounds=50, prior_draws=0.0)
    assert [(r.system, r.point, r.diverged) for r in ratings] == [("good", math.inf, 50), ("sloppy", -math.inf, 50)]
    # A group that beat the rest: its members split their own battles, each is above; the one between is neither.
    grouped = [("a", "b", 1.0), ("b", "a", 1.0), ("a", "c", 1.0), ("b", "c", 1.0), ("c", "d", 1.0)]
    unbounded = runaway(["a", "b", "c", "d"], grouped)
    assert unbounded["a"] == unbounded["b"] == math.inf and unbounded["d"] == -math.inf
    assert math.isnan(unbounded["c"])
    tied = fit(["good", "sloppy"], swept + [("sloppy", "good", 0.5)], prior_draws=0.0)
    assert all(math.isfinite(v) for v in tied.values()), "a tie is a point each way: a finite fit"
    assert not runaway(["good", "sloppy"], swept + [("sloppy", "good", 0.5)])
    assert all(math.isfinite(v) for v in fit(["good", "sloppy"], swept, prior_draws=1.0).values()), "the prior's"
