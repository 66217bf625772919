"""Quotes the plugin's reader did not make: pdfminer.six lays out the two-column pages of real PDFs on
its own (columns by position, not by either extractor's reading order) and the quotes cut from its
text, cleaned the way models quote, must be grounded in the plugin's pypdf text; the same quotes with
one symbol of a number changed never are. The full measurement is benchmarks/matcher_accuracy.py."""

from __future__ import annotations

import random

import pytest
from helpers import needs_shared, shared_path
from independent_quotes import genuine, layout, symbol_edit

from pytest_researchqa.families.citation.matcher import match_index

TWO_COLUMN = [("papers", "publicusegeneralhealthchatbots.pdf"), ("pdf-edge-cases", "multicolumn.pdf")]


@pytest.fixture(scope="module", params=TWO_COLUMN, ids=lambda where: where[1])
def two_column(request, read_once):
    pdf = shared_path(*request.param)
    return match_index(read_once(pdf)), genuine(layout(pdf), random.Random(3), 12)


@needs_shared
def test_sentences_running_from_one_column_into_the_next_are_grounded(two_column):
    index, quotes = two_column
    crossings = quotes.get("column crossing", [])
    assert crossings, "a two-column paper has sentences that run on into the next column"
    missed = [quote for quote in crossings if not index.match(quote).grounded]
    assert missed == []


@needs_shared
def test_every_kind_of_genuine_quote_from_the_second_extractor_is_grounded(two_column):
    index, quotes = two_column
    for kind, found in quotes.items():
        missed = [quote for quote in found if not index.match(quote).grounded]
        assert len(missed) <= 0.02 * len(found), (kind, missed[:3])


@needs_shared
def test_the_same_quotes_with_one_symbol_of_a_number_changed_are_never_grounded(two_column):
    index, quotes = two_column
    rng = random.Random(5)
    edited = [symbol_edit(quote, rng) for found in quotes.values() for quote in found]
    accepted = [quote for kind_and_quote in edited if kind_and_quote for quote in kind_and_quote[1:]
                if index.match(quote).grounded]
    assert accepted == []
