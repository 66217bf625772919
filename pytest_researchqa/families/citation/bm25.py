"""A naive-retrieval baseline: rank passages by BM25, cite the best verbatim.

The paper is cut into passages of a few sentences; BM25 (Okapi, as rank_bm25's ``BM25Okapi``
scores it, to the last bit) scores them against the question; the answer is the top passage and the
citations are the top passages, copied from the paper text exactly.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import OrderedDict
from itertools import chain, count, filterfalse
from typing import TYPE_CHECKING, Any

from ...answers import Answer

if TYPE_CHECKING:  # pragma: no cover
    from ...papers import Paper
    from .rows import Row


PASSAGE_WORDS = 60
CITED_PASSAGES = 2
# What one process keeps of bm25 indexes, in bytes: every paper's compact index (about 30 KB for a
# 45 KB paper: where its passages lie and its postings, not the text) and the words they share
# (a process-wide vocabulary). 32 MiB hold the indexes of about 1,000 such papers, so rows in any
# order build each paper's index once (the seed's 494 papers: about 15 MiB); beyond it the least
# recently used go first (an index is rebuilt from the paper's text in a few ms), and memory stays
# flat in the number of papers. Under xdist each worker keeps the indexes of the papers it is sent.
KEPT_BYTES = 32 * 2**20
# The budget on an xdist worker handed each paper's rows together, once (xdist_compat.handed_whole_papers):
# the index in use and the vocabulary (dropped with it beyond half of this, as under KEPT_BYTES).
WHOLE_PAPERS_BYTES = 8 * 2**20
# What a word of the shared vocabulary costs, about: the string, its dict slot and its id.
VOCABULARY_WORD_BYTES = 120
# What an index costs beyond its arrays' data: the object and the arrays' headers.
INDEX_OVERHEAD_BYTES = 800
# BM25Okapi's parameters (rank_bm25's defaults).
K1, B, EPSILON = 1.5, 0.75, 0.25
_WORD = re.compile(r"\w+")
# A sentence ends at the whitespace after . ! or ? that runs up to a capital or an opening bracket. The
# punctuation is matched (not looked behind at), so the engine jumps from one candidate to the next.
_SENTENCE_END = re.compile(r"[.!?](\s+)(?=[A-Z(\[])")
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its of on or "
    "that the their this to was were what when where which who why with".split()
)


# ASCII text: every character \w does not match becomes a space, so ``split`` finds \w's words (faster).
_NOT_WORD = str.maketrans({chr(c): " " for c in range(128) if not re.match(r"\w", chr(c))})


def tokens(text: str) -> list[str]:
    r"""The text's words (``\w+``), lower-cased, without stop words."""
    lowered = text.lower()
    words = lowered.translate(_NOT_WORD).split() if lowered.isascii() else _WORD.findall(lowered)
    return list(filterfalse(_STOPWORDS.__contains__, words))


def passages(text: str) -> list[str]:
    """Consecutive sentences grouped to about PASSAGE_WORDS words, cut from the text by position."""
    return [text[start:end] for start, end in passage_spans(text)]


def passage_spans(text: str) -> list[tuple[int, int]]:
    """Where each of :func:`passages` lies in the text (its surrounding whitespace left out)."""
    found, start, words = [], 0, 0
    ends = [m.start(1) for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end, sentence_words in zip(ends, _sentence_words(text, ends)):
        words += sentence_words
        if words >= PASSAGE_WORDS or end == len(text):
            passage = text[start:end]
            kept = passage.strip()
            if kept:
                first = start + len(passage) - len(passage.lstrip())
                found.append((first, first + len(kept)))
            start, words = end, 0
    return found


def _sentence_words(text: str, ends: list[int]) -> list[int]:
    """How many words ``split`` finds between each sentence end and the one before (the text's start first).

    Each end is whitespace (where the sentence-end pattern's ``\\s+`` starts) or the text's end, so no word
    crosses one; in ASCII text the words starting in each stretch are counted in one numpy pass instead of
    splitting every sentence.
    """
    if not text.isascii():
        return [len(text[start:end].split()) for start, end in zip([0, *ends], ends)]
    import numpy as np

    space = _ascii_space(np)[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    starts = ~space
    starts[1:] &= space[:-1]  # a word starts where a non-space follows a space (or the text starts)
    before = np.concatenate(([0], np.cumsum(starts)))  # words started before each position
    counts: list[int] = np.diff(before[[0, *ends]]).tolist()
    return counts


@functools.cache
def _ascii_space(np: Any) -> Any:
    """Which ASCII codes ``str.split`` splits at (``str.isspace``: also the separators 0x1c-0x1f), as a table."""
    return np.array([chr(c).isspace() for c in range(256)])


def passage_tokens(text: str, spans: list[tuple[int, int]]) -> list[list[str]]:
    """:func:`tokens` of each passage; ASCII text is lower-cased and split into words once, not per passage."""
    if not text.isascii():
        return [tokens(text[start:end]) for start, end in spans]
    words = text.lower().translate(_NOT_WORD)
    return [list(filterfalse(_STOPWORDS.__contains__, words[start:end].split())) for start, end in spans]


class Vocabulary(dict):  # type: ignore[type-arg]  # str -> int
    """Words and their ids, shared by indexes. An id is unique but not dense: a new word's id is the running
    count of tokens at its first use, so an index's ids are all found in one pass (``setdefault``)."""

    __slots__ = ("next_id",)

    def __init__(self) -> None:
        super().__init__()
        self.next_id = 0


class Bm25Index:
    """One paper's BM25 index, compact: where its passages lie and its postings, never the text.

    Words are ids of a vocabulary the index may share with other papers' (a process-wide one in
    :class:`Bm25Cache`); the postings are numpy arrays of the smallest fitting types, and a word's idf
    is computed from its passage count when a query asks for it. Scores are rank_bm25's ``BM25Okapi``
    scores bit for bit (the same operations on the same values in the same order; ``tests/test_metrics.py``
    compares them), so rankings and ties are unchanged.
    """

    __slots__ = ("_spans", "_vocabulary", "_words", "_top", "_starts", "_docs", "_counts", "_norm", "_average",
                 "nbytes")

    def __init__(self, spans: "list[tuple[int, int]]", chunk_tokens: "list[list[str]]",
                 vocabulary: "Vocabulary | None" = None) -> None:
        import numpy as np

        vocabulary = Vocabulary() if vocabulary is None else vocabulary
        chunk_tokens = [found or ["_"] for found in chunk_tokens]
        lengths = [len(found) for found in chunk_tokens]
        every = list(chain.from_iterable(chunk_tokens))
        first_id, vocabulary.next_id = vocabulary.next_id, vocabulary.next_id + len(every)
        ids = map(vocabulary.setdefault, every, count(first_id))
        n = len(spans)
        word_ids = np.fromiter(ids, dtype=np.int64, count=len(every))
        doc_ids = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, counts = np.unique(word_ids * n + doc_ids, return_counts=True)  # by word, then passage
        words, first, per_word = np.unique(pairs // n, return_index=True, return_counts=True)
        # BM25Okapi averages the idf over the words in the order of their first use, summed one by one.
        first_use = np.unique(word_ids, return_index=True)[1]
        logs = np.array([math.log(k + 0.5) for k in range(n + 1)])  # math.log, as BM25Okapi takes it
        idf = logs[n - per_word] - logs[per_word]
        self._average = float(np.add.accumulate(idf[np.argsort(first_use, kind="stable")])[-1]) / len(words)
        self._vocabulary = vocabulary
        self._spans = np.array(spans, dtype=_fitting(np, max(spans[-1][1], 1)))
        self._words = words.astype(_fitting(np, vocabulary.next_id))
        self._top = int(words[-1])  # the vocabulary may grow past what this index's id type holds
        self._starts = np.append(first, len(pairs)).astype(_fitting(np, len(pairs)))
        self._docs = (pairs % n).astype(_fitting(np, n))
        self._counts = counts.astype(_fitting(np, int(counts.max())))
        doc_len = np.array(lengths)
        self._norm = K1 * (1 - B + B * doc_len / (sum(lengths) / n))
        arrays = (self._spans, self._words, self._starts, self._docs, self._counts, self._norm)
        self.nbytes = INDEX_OVERHEAD_BYTES + sum(a.nbytes for a in arrays)

    @classmethod
    def of_text(cls, text: str, vocabulary: "Vocabulary | None" = None) -> "Bm25Index":
        """The index of a paper's text: its :func:`passages` (the whole text when it has none)."""
        spans = passage_spans(text) or [(0, len(text))]
        return cls(spans, passage_tokens(text, spans), vocabulary)

    def __len__(self) -> int:
        return len(self._spans)

    def passage(self, text: str, number: int) -> str:
        """Passage ``number`` of ``text``, the text the index was built from."""
        start, end = self._spans[number]
        return text[start:end]

    def passages(self, text: str) -> list[str]:
        """Every passage of ``text``, the text the index was built from, in the paper's order."""
        return [text[start:end] for start, end in self._spans.tolist()]

    def scores(self, query: list[str]) -> Any:
        """BM25Okapi's ``get_scores(query)``: one score per passage (a numpy array)."""
        import numpy as np

        n = len(self._spans)
        score = np.zeros(n)
        words, starts = self._words, self._starts
        for word in query:
            found = self._vocabulary.get(word)
            if found is None or found > self._top:
                continue  # BM25Okapi adds 0 for it
            at = int(words.searchsorted(found))
            if words[at] != found:
                continue  # a word of other papers only
            low, high = int(starts[at]), int(starts[at + 1])
            idf = math.log(n - (high - low) + 0.5) - math.log(high - low + 0.5)
            if idf < 0:
                idf = EPSILON * self._average
            docs, freq = self._docs[low:high], self._counts[low:high]
            score[docs] += idf * (freq * (K1 + 1) / (freq + self._norm[docs]))
        return score

    def ranking(self, query: list[str]) -> list[int]:
        """Passage numbers by score for the query, best first; ties in the paper's order."""
        ranking: list[int] = (-self.scores(query)).argsort(kind="stable").tolist()
        return ranking


def _fitting(np: Any, largest: int) -> Any:
    """The smallest unsigned integer type that holds 0 to ``largest``."""
    for kind in (np.uint8, np.uint16, np.uint32):
        if largest <= np.iinfo(kind).max:
            return kind
    return np.int64


class Bm25Cache:
    """Papers' indexes under a byte budget, the least recently used evicted first, and their shared words.

    The vocabulary only grows while indexes refer to it; when it alone would take half the budget,
    it is dropped with every index, and they are rebuilt as their rows come.
    """

    def __init__(self, budget_bytes: int = KEPT_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self.built = 0  # indexes built (a rebuilt one counts again)
        self._indexes: OrderedDict[str, Bm25Index] = OrderedDict()
        self._index_bytes = 0
        self._vocabulary = Vocabulary()

    @property
    def nbytes(self) -> int:
        """The bytes held, as estimated: the indexes' and the vocabulary's."""
        return self._index_bytes + len(self._vocabulary) * VOCABULARY_WORD_BYTES

    def __len__(self) -> int:
        return len(self._indexes)

    def index(self, paper: "Paper") -> Bm25Index:
        """The paper's index, built on its first use and kept while the budget allows."""
        key = paper.content_hash or "text:" + hashlib.sha256(paper.text.encode(errors="surrogatepass")).hexdigest()
        found = self._indexes.get(key)
        if found is not None:
            self._indexes.move_to_end(key)
            return found
        if len(self._vocabulary) * VOCABULARY_WORD_BYTES > self.budget_bytes // 2:
            self._indexes.clear()
            self._index_bytes = 0
            self._vocabulary = Vocabulary()
        found = self._indexes[key] = Bm25Index.of_text(paper.text, self._vocabulary)
        self.built += 1
        self._index_bytes += found.nbytes
        while self.nbytes > self.budget_bytes and len(self._indexes) > 1:
            self._index_bytes -= self._indexes.popitem(last=False)[1].nbytes
        return found


@functools.cache
def shared_cache() -> Bm25Cache:
    """The process's cache, shared by every :class:`Bm25System` built without one of its own (a cache like
    ``functools``' own: bounded by its budget, and what it holds never changes an answer)."""
    return Bm25Cache()


class Bm25System:
    """Answers a row with its paper's best passages for the question (see the module's docstring)."""

    def __init__(self, cache: "Bm25Cache | None" = None) -> None:
        self._cache = cache

    @property
    def cache(self) -> Bm25Cache:
        return self._cache if self._cache is not None else shared_cache()

    @property
    def built(self) -> int:
        """Indexes built by this system's cache (a rebuilt one counts again)."""
        return self.cache.built

    def _ranking(self, row: "Row", paper: "Paper") -> tuple[Bm25Index, list[int]]:
        index = self.cache.index(paper)
        return index, index.ranking(tokens(row.question) or ["_"])

    def ranked_passages(self, row: "Row", paper: "Paper") -> list[str]:
        """The paper's passages, best first for the row's question; ties in the paper's order."""
        index, order = self._ranking(row, paper)
        return [index.passage(paper.text, i) for i in order]

    def __call__(self, row: "Row", paper: "Paper") -> Answer:
        index, order = self._ranking(row, paper)
        cited = [index.passage(paper.text, i) for i in order[:CITED_PASSAGES]]
        return Answer(text=" ".join(" ".join(c.split()) for c in cited[:1]), citations=cited)
