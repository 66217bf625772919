"""Which systems the frontier keeps, and when a cost figure is drawn (matplotlib's object API, no display)."""

from __future__ import annotations

import pytest

from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.reporting.plots import _frontier, frontier
from pytest_researchqa.reporting.summaries import Summary


def summary(label, quality, latency, cost):
    return Summary(label, 10, 0, 0, {m: quality for m in CITATION.metric_names}, latency_s=latency, cost_usd=cost)


def test_the_frontier_keeps_only_systems_no_other_beats_on_both_speed_and_quality():
    points = [(0.9, 0.81), (1.3, 0.79), (2.5, 0.55), (4.2, 0.86), (6.1, 0.88), (6.1, 0.70)]
    assert _frontier(points) == [(0.9, 0.81), (4.2, 0.86), (6.1, 0.88)]


@pytest.mark.slow
def test_a_cost_figure_needs_every_systems_cost_and_a_latency_figure_any_latency():
    known = [summary("a", 0.8, 1.0, 0.2), summary("b", 0.6, 2.0, 0.1)]
    assert frontier(known, CITATION, "cost") is not None
    assert frontier([*known, summary("c", 0.7, 1.5, None)], CITATION, "cost") is None, "an unknown price is not $0"
    assert frontier([summary("a", 0.8, None, None)], CITATION, "latency") is None


def test_a_run_whose_every_row_errored_draws_nothing_and_makes_no_empty_folder(tmp_path):
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.reporting.plots import write_plots
    from pytest_researchqa.session import ResearchSession

    session = ResearchSession(CITATION)
    for n in range(3):
        session.add(RowRecord(row_id=f"r{n}", system="down", paper_id="p", error="ProviderError: upstream exploded"))
    assert write_plots(session.outcome(), CITATION, tmp_path / "figures") == []
    assert not (tmp_path / "figures").exists()


@pytest.mark.slow
def test_a_metric_where_lower_is_better_says_so_on_its_panel_of_the_question_type_figure():
    """A tester's family drew its word count (fewer is better) beside its exact-match share with nothing to
    tell which way each reads."""
    from dataclasses import replace

    from pytest_researchqa.families import MetricSpec
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.reporting.plots import question_types
    from pytest_researchqa.reporting.summaries import by_system

    family = replace(CITATION, metrics=(MetricSpec("exact", "exact"),
                                        MetricSpec("words", "words", low=0, high=100, higher_is_better=False)))
    records = [RowRecord(row_id=f"r{n}", system="atlas", question_type="lookup", metrics={"exact": 1.0, "words": 9.0})
               for n in range(2)]
    figure = question_types(records, by_system(records, family.metrics), family)
    titles = [ax.get_title() for ax in figure.axes if ax.get_visible()]
    assert titles == ["exact", "words (lower is better)"]
