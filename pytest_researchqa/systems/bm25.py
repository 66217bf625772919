"""A naive-retrieval baseline: rank passages by BM25, cite the best verbatim.

The paper is cut into passages of a few sentences; BM25 (Okapi, as rank_bm25's ``BM25Okapi``
scores it, to the last bit) scores them against the question; the answer is the top passage and the
citations are the top passages, copied from the paper text exactly.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Sequence

from ..answers import Answer

if TYPE_CHECKING:  # pragma: no cover
    from ..families.citation.rows import Row
    from ..papers import Paper


PASSAGE_WORDS = 60
CITED_PASSAGES = 2
# Indexes kept at once (about 100 KB each for a 45 KB paper: its passages, its words and a few
# arrays). Rows of one paper run together (grouped in the file, or sent to one xdist worker by
# paper), so a few suffice; an evicted index is rebuilt from the paper's text in about 2 ms.
KEPT_INDEXES = 16
# BM25Okapi's parameters (rank_bm25's defaults).
K1, B, EPSILON = 1.5, 0.75, 0.25
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
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
    return [w for w in words if w not in _STOPWORDS]


def passages(text: str) -> list[str]:
    """Consecutive sentences grouped to about PASSAGE_WORDS words, cut from the text by position."""
    return [text[start:end] for start, end in passage_spans(text)]


def passage_spans(text: str) -> list[tuple[int, int]]:
    """Where each of :func:`passages` lies in the text (its surrounding whitespace left out)."""
    found, start, words = [], 0, 0
    ends = [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    sentence_start = 0
    for end in ends:
        words += len(text[sentence_start:end].split())
        sentence_start = end
        if words >= PASSAGE_WORDS or end == len(text):
            passage = text[start:end]
            kept = passage.strip()
            if kept:
                first = start + len(passage) - len(passage.lstrip())
                found.append((first, first + len(kept)))
            start, words = end, 0
    return found


def passage_tokens(text: str, spans: list[tuple[int, int]]) -> list[list[str]]:
    """:func:`tokens` of each passage; ASCII text is lower-cased and split into words once, not per passage."""
    if not text.isascii():
        return [tokens(text[start:end]) for start, end in spans]
    words = text.lower().translate(_NOT_WORD)
    return [[w for w in words[start:end].split() if w not in _STOPWORDS] for start, end in spans]


class Bm25Index:
    """One paper's passages and their BM25 index: words as ids, postings in numpy arrays.

    Scores are rank_bm25's ``BM25Okapi`` scores bit for bit (the same operations on the same
    values in the same order; ``tests/test_metrics.py`` compares them), so rankings and ties are
    unchanged; the index is a few arrays instead of a dict per passage, about 20x cheaper to build.
    """

    __slots__ = ("passages", "_words", "_idf", "_starts", "_docs", "_counts", "_norm")

    def __init__(self, chunks: list[str], chunk_tokens: "list[list[str]] | None" = None) -> None:
        import numpy as np

        self.passages = chunks
        words: dict[str, int] = {}  # word -> id, in order of first use (the order BM25Okapi sums idf in)
        ids: list[int] = []
        lengths: list[int] = []
        for found in chunk_tokens if chunk_tokens is not None else map(tokens, chunks):
            found = found or ["_"]
            lengths.append(len(found))
            ids += [words.setdefault(w, len(words)) for w in found]
        n = len(chunks)
        word_ids = np.array(ids, dtype=np.int64)
        doc_ids = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, counts = np.unique(word_ids * n + doc_ids, return_counts=True)  # by word, then passage
        per_word = np.bincount(pairs // n, minlength=len(words))  # passages holding each word
        logs = np.array([math.log(k + 0.5) for k in range(n + 1)])  # math.log, as BM25Okapi takes it
        idf = logs[n - per_word] - logs[per_word]
        average = float(np.add.accumulate(idf)[-1]) / len(words)  # summed in order, one by one
        idf[idf < 0] = EPSILON * average
        doc_len = np.array(lengths)
        self._words = words
        self._idf = idf
        self._starts = np.concatenate(([0], np.cumsum(per_word)))
        self._docs = pairs % n
        self._counts = counts
        self._norm = K1 * (1 - B + B * doc_len / (sum(lengths) / n))

    @classmethod
    def of_text(cls, text: str) -> "Bm25Index":
        """The index of a paper's text: its :func:`passages` (the whole text when it has none)."""
        spans = passage_spans(text)
        if not spans:
            return cls([text])
        return cls([text[start:end] for start, end in spans], passage_tokens(text, spans))

    def scores(self, query: list[str]) -> Any:
        """BM25Okapi's ``get_scores(query)``: one score per passage (a numpy array)."""
        import numpy as np

        score = np.zeros(len(self.passages))
        for word in query:
            found = self._words.get(word)
            if found is None:
                continue  # BM25Okapi adds 0 for it
            low, high = self._starts[found], self._starts[found + 1]
            docs, freq = self._docs[low:high], self._counts[low:high]
            score[docs] += self._idf[found] * (freq * (K1 + 1) / (freq + self._norm[docs]))
        return score


class Bm25System:
    """One BM25 index per paper, built on the paper's first row; the least recently used go first."""

    def __init__(self, kept: int = KEPT_INDEXES) -> None:
        self.kept = kept
        self.built = 0  # indexes built over the run (a rebuilt one counts again)
        self._indexes: OrderedDict[str, Bm25Index] = OrderedDict()

    def _index(self, paper: "Paper") -> Bm25Index:
        key = paper.content_hash or paper.paper_id
        found = self._indexes.get(key)
        if found is not None:
            self._indexes.move_to_end(key)
            return found
        found = self._indexes[key] = Bm25Index.of_text(paper.text)
        self.built += 1
        while len(self._indexes) > self.kept:
            self._indexes.popitem(last=False)
        return found

    def ranked_passages(self, row: "Row", paper: "Paper") -> list[str]:
        """The paper's passages, best first for the row's question."""
        index = self._index(paper)
        return ranked(index.passages, index.scores(tokens(row.question) or ["_"]))

    def __call__(self, row: "Row", paper: "Paper") -> Answer:
        cited = self.ranked_passages(row, paper)[:CITED_PASSAGES]
        return Answer(text=" ".join(" ".join(c.split()) for c in cited[:1]), citations=cited)


def ranked(chunks: list[str], scores: Sequence[float]) -> list[str]:
    """The passages by score, best first; ties in the paper's order."""
    return [chunks[i] for i in sorted(range(len(chunks)), key=lambda i: (-scores[i], i))]
