"""--researchqa-sample: stratified, deterministic, the requested size."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_researchqa.sampling import stratified_sample

BUNDLED = ["lookup"] * 6 + ["comprehension"] * 6 + ["multi_hop"] * 6 + ["adversarial"] * 9


def test_a_sample_of_nine_of_the_bundled_rows_has_every_question_type():
    picked = stratified_sample(BUNDLED, 9)
    assert len(picked) == 9
    assert set(Counter(BUNDLED[p] for p in picked)) == {"lookup", "comprehension", "multi_hop", "adversarial"}


def test_no_sample_or_a_large_one_runs_every_row():
    assert stratified_sample(BUNDLED, None) == list(range(27))
    assert stratified_sample(BUNDLED, 100) == list(range(27))


@pytest.mark.slow
@given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=200), st.integers(min_value=1, max_value=250))
def test_a_sample_has_the_requested_size_distinct_rows_in_file_order_and_every_type_it_can(strata, size):
    picked = stratified_sample(strata, size)
    assert picked == sorted(set(picked)) and len(picked) == min(size, len(strata))
    if size >= len(set(strata)):
        assert {strata[p] for p in picked} == set(strata)
    else:  # fewer rows than types: each of another type
        assert len({strata[p] for p in picked}) == size
    assert picked == stratified_sample(strata, size), "deterministic"


# The bundled sample's layout: each type laid out paper by paper (2, 2, 2 and 3 rows of each of 3 papers).
BUNDLED_PAPERS = [paper for rows in (2, 2, 2, 3) for paper in ("edu", "env", "ml") for _ in range(rows)]
BUNDLED_TYPES = [kind for kind, rows in (("lookup", 2), ("comprehension", 2), ("multi_hop", 2), ("adversarial", 3))
                 for _ in range(3 * rows)]


def test_a_small_sample_spreads_over_the_papers_as_well_as_the_types():
    """tester37 F23: the middle row of every type was the same paper's; one row per type now covers all three."""
    picked = stratified_sample(BUNDLED_TYPES, 4, BUNDLED_PAPERS)
    assert [BUNDLED_TYPES[p] for p in picked] == ["lookup", "comprehension", "multi_hop", "adversarial"]
    assert {BUNDLED_PAPERS[p] for p in picked} == {"edu", "env", "ml"}
    assert Counter(BUNDLED_PAPERS[p] for p in stratified_sample(BUNDLED_TYPES, 9, BUNDLED_PAPERS)) == {
        "edu": 3, "env": 3, "ml": 3}
    assert {BUNDLED_PAPERS[p] for p in stratified_sample(BUNDLED_TYPES, 4)} == {"env"}, "by type alone: one paper"


@pytest.mark.slow
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("pqrstu")), min_size=1, max_size=120),
       st.integers(min_value=1, max_value=150))
def test_a_sample_over_papers_keeps_its_size_and_types_and_covers_every_paper_it_can(rows, size):
    strata, papers = [r[0] for r in rows], [r[1] for r in rows]
    picked = stratified_sample(strata, size, papers)
    assert picked == sorted(set(picked)) and len(picked) == min(size, len(rows))
    assert Counter(strata[p] for p in picked) == Counter(strata[p] for p in stratified_sample(strata, size))
    assert picked == stratified_sample(strata, size, papers), "deterministic"
    every_type_has_every_paper = all({p for s, p in rows if s == kind} == set(papers) for kind in set(strata))
    if size >= len(set(strata)) and every_type_has_every_paper:
        assert len({papers[p] for p in picked}) == min(len(picked), len(set(papers)))


def test_shares_follow_each_question_types_size_with_largest_remainders():
    # The QASPER test split's mix: 796 lookup, 265 comprehension, 251 multi-hop, 139 adversarial.
    strata = ["lookup"] * 796 + ["comprehension"] * 265 + ["multi_hop"] * 251 + ["adversarial"] * 139
    for size, expected in [(10, {"lookup": 5, "comprehension": 2, "multi_hop": 2, "adversarial": 1}),
                           (100, {"lookup": 55, "comprehension": 18, "multi_hop": 17, "adversarial": 10})]:
        chosen = [strata[i] for i in stratified_sample(strata, size)]
        assert {name: chosen.count(name) for name in expected} == expected


def test_a_sample_smaller_than_the_number_of_types_takes_one_row_of_each_of_the_largest_types_over_the_papers():
    """tester38 F8: --researchqa-sample=3 of the bundled rows took the three papers' lookup rows."""
    picked = stratified_sample(BUNDLED_TYPES, 3, BUNDLED_PAPERS)
    assert [BUNDLED_TYPES[p] for p in picked] == ["lookup", "comprehension", "adversarial"]
    assert {BUNDLED_PAPERS[p] for p in picked} == {"edu", "env", "ml"}
