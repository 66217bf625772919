"""--researchqa-sample: stratified, deterministic, the requested size."""

from __future__ import annotations

from collections import Counter

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


@given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=200), st.integers(min_value=1, max_value=250))
def test_a_sample_has_the_requested_size_distinct_rows_in_file_order_and_every_type_it_can(strata, size):
    picked = stratified_sample(strata, size)
    assert picked == sorted(set(picked)) and len(picked) == min(size, len(strata))
    if size >= len(set(strata)):
        assert {strata[p] for p in picked} == set(strata)
    assert picked == stratified_sample(strata, size), "deterministic"


def test_shares_follow_each_question_types_size_with_largest_remainders():
    # The QASPER test split's mix: 796 lookup, 265 comprehension, 251 multi-hop, 139 adversarial.
    strata = ["lookup"] * 796 + ["comprehension"] * 265 + ["multi_hop"] * 251 + ["adversarial"] * 139
    for size, expected in [(10, {"lookup": 5, "comprehension": 2, "multi_hop": 2, "adversarial": 1}),
                           (100, {"lookup": 55, "comprehension": 18, "multi_hop": 17, "adversarial": 10})]:
        chosen = [strata[i] for i in stratified_sample(strata, size)]
        assert {name: chosen.count(name) for name in expected} == expected
