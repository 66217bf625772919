"""The matcher's index of a key's stretches (GramIndex) and its other look-up helpers answer what scans of the key would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_researchqa.families.citation.matcher import GRAM, GramIndex
from pytest_researchqa.families.citation.matcher.textkey import (
    common_prefix_length,
    key_offsets,
    mark_context,
    text_key,
)

# Few distinct characters: stretches repeat, buckets crowd, and look-ups meet many candidates.
_ALPHABET = "abc1.%"
_keys = st.text(alphabet=_ALPHABET, max_size=400)
_WIDE = "ab\u03b1\u4e2d\u00e9"  # Latin-1 and wider characters: stretches coded both ways


def _all_starts(key: str, text: str, low: int, high: int) -> list[int]:
    found, starts = key.find(text, low, high), []
    while found >= 0:
        starts.append(found)
        found = key.find(text, found + 1, high)
    return starts


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(key=_keys, data=st.data())
def test_a_look_up_agrees_with_str_find_on_random_keys_and_bounds(key: str, data: st.DataObject) -> None:
    index = GramIndex(key)
    if key and data.draw(st.booleans()):
        start = data.draw(st.integers(0, len(key) - 1))
        text = key[start : start + data.draw(st.integers(1, 40))]  # a string that occurs
    else:
        text = data.draw(st.text(alphabet=_ALPHABET, min_size=1, max_size=40))
    low = data.draw(st.integers(0, len(key) + 3))
    high = data.draw(st.integers(0, len(key) + 3))
    assert index.find(text) == key.find(text)
    assert index.find(text, low, high) == key.find(text, low, high)
    assert index.rfind(text, low, high) == key.rfind(text, low, high)
    assert list(index.occurrences(text, low, high)) == _all_starts(key, text, low, high)
    most = data.draw(st.integers(1, 30))
    assert index.starts(text, most) == _all_starts(key, text, 0, len(key))[:most]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(key=st.one_of(_keys, st.text(alphabet=_WIDE, max_size=200)), data=st.data())
def test_a_look_up_that_misses_gives_every_start_of_the_strings_head_as_str_find_finds_them(
        key: str, data: st.DataObject) -> None:
    index = GramIndex(key)
    alphabet = _WIDE if not set(key) <= set(_ALPHABET) else _ALPHABET
    if key and data.draw(st.booleans()):
        start = data.draw(st.integers(0, len(key) - 1))
        text = key[start : start + data.draw(st.integers(GRAM, 40))] + data.draw(st.text(alphabet=alphabet, max_size=4))
    else:
        text = data.draw(st.text(alphabet=alphabet, min_size=GRAM, max_size=40))
    if len(text) < GRAM:
        return
    anchor = data.draw(st.integers(GRAM, 14))
    found, starts = index.find_or_starts(text, anchor)
    assert found == key.find(text)
    if found >= 0:
        assert starts is None
    elif starts is not None:  # (None: a crowded bucket, left to starts())
        assert starts == _all_starts(key, text[:anchor], 0, len(key))
    assert index.find(text) == key.find(text)  # what it remembered of the look-up agrees too


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(key=st.text(alphabet=_WIDE, max_size=200), data=st.data())
def test_stretches_with_characters_beyond_latin_1_are_found_as_str_find_finds_them(key: str, data: st.DataObject) -> None:
    index = GramIndex(key)
    start = data.draw(st.integers(0, max(0, len(key) - 1)))
    for text in (key[start : start + GRAM + data.draw(st.integers(0, 12))], data.draw(st.text(alphabet=_WIDE, min_size=GRAM))):
        if text:
            assert index.find(text) == key.find(text)
            assert list(index.occurrences(text)) == _all_starts(key, text, 0, len(key))
            assert index.starts(text, 25) == _all_starts(key, text, 0, len(key))[:25]


def test_a_string_in_a_crowded_bucket_is_found_through_a_rarer_stretch_of_it() -> None:
    # "abababab" starts at hundreds of places; the string's last stretch occurs once.
    key = "ab" * 300 + "abababxyzuvwrst" + "ab" * 300
    index = GramIndex(key)
    text = "abababababxyzuvwrst"
    assert index.find(text) == key.find(text) == 596
    assert list(index.occurrences("abababab", 10, 40)) == _all_starts(key, "abababab", 10, 40)
    # Shorter than two stretches: its last stretch (four characters on) is the rarer one; no start
    # is taken before the string's own start (a negative index would read the key from its end).
    assert index.starts("abababxyzuvw", 3) == [600] and index.starts("bxyzuvwrst", 3) == [605]
    assert index.starts("abababababab", 5) == [0, 2, 4, 6, 8]


def test_keys_shorter_than_a_stretch_and_strings_shorter_than_one_are_answered_by_a_scan() -> None:
    assert GramIndex("").find("abcdefghij") == -1
    assert GramIndex("abc").find("abc") == 0
    assert GramIndex("abcabcabc").find("bca", 2) == 4
    assert list(GramIndex("aaaa").occurrences("aa")) == [0, 1, 2]


def test_the_index_holds_about_five_or_six_bytes_a_key_character() -> None:
    key = "".join(f"word{number}x" for number in range(20_000))
    assert 0 < GramIndex(key).nbytes() <= 6 * len(key)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(a=st.text(alphabet="ab\xe9\u03b1", max_size=40), b=st.text(alphabet="ab\xe9\u03b1", max_size=40),
       i=st.integers(0, 45), j=st.integers(0, 45))
def test_the_common_prefix_of_two_keys_agrees_with_a_comparison_character_by_character(a: str, b: str, i: int, j: int) -> None:
    expected = 0
    while i + expected < len(a) and j + expected < len(b) and a[i + expected] == b[j + expected]:
        expected += 1
    assert common_prefix_length(a, i, b, j) == expected


_QUOTE_CHARACTERS = "aZ5 .,-\u2212\u2013\u00b7%\u2264\ufb01\u03b1\u00e9\u2019\n"


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=_QUOTE_CHARACTERS, max_size=40), data=st.data())
def test_the_key_of_a_marked_texts_start_is_as_long_as_the_key_offsets_before_it_say(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    assert len(text_key(mark_context(text)[:cut])) == int(key_offsets(text).searchsorted(cut))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(key=_keys, data=st.data())
def test_a_lazy_index_answers_by_scans_as_the_built_one_does_and_builds_once_they_have_read_enough(
        key: str, data: st.DataObject) -> None:
    lazy, built = GramIndex(key, lazy=True), GramIndex(key)
    assert not lazy.built and built.built
    for _ in range(6):
        text = data.draw(st.text(alphabet=_ALPHABET, min_size=1, max_size=3 * GRAM))
        low, high = data.draw(st.integers(0, len(key) + 3)), data.draw(st.integers(0, len(key) + 3))
        assert lazy.find(text) == built.find(text) == key.find(text)
        assert lazy.find(text, low, high) == built.find(text, low, high)
        assert lazy.rfind(text, low, high) == built.rfind(text, low, high)
        assert list(lazy.occurrences(text, low, high)) == list(built.occurrences(text, low, high))


def test_a_lazy_index_builds_its_table_when_its_scans_have_read_the_key_enough_times_and_drop_frees_it() -> None:
    from pytest_researchqa.families.citation.matcher.grams import SCANS_BEFORE_BUILDING

    key = "".join(f"word{number}x" for number in range(2_000))
    index = GramIndex(key, lazy=True)
    assert index.nbytes() == 0
    for number in range(SCANS_BEFORE_BUILDING):
        assert index.find(f"not in the key at all {number}") == -1  # each reads the whole key
    assert not index.built, "scans that read the key fewer times than the budget build nothing"
    index.find("still not in the key")
    assert index.built and 0 < index.nbytes() <= 6 * len(key)
    assert index.find("word1999x") == key.find("word1999x")
    index.drop()
    assert not index.built and index.nbytes() == 0
    assert index.find("word1999x") == key.find("word1999x")
