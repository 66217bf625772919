"""The seed's bias checks, from the records alone. Pure.

* Date cutoff: the share of an answer's cited works dated after the row's
  cutoff year, and Coverage % of answers with and without such a citation.
* Leakage: an answer that lists the survey its rubric was mined from (the row's
  ``survey_title``, matched by any shared 6-gram of lowercased words with
  special characters removed) had the evaluation's source in hand.
* Length vs coverage: Coverage % is recall-like, so longer answers tend to score
  higher; the correlation of words and coverage says how much.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

from ...records import RowRecord
from ...stats import pearson
from .details import details_of

NGRAM = 6
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_Y = r"((?:19|20)\d\d)[a-z]?"  # 2021, or 2021a of author-year styles
# arXiv identifiers: 2107.03374 (YYMM.number, since 2007) and hep-th/9901001 (archive/YYMMnnn, before).
_ARXIV_NEW = re.compile(r"(?<![\d.])(\d\d)(?:0[1-9]|1[0-2])\.\d{4,5}(?:v\d+)?(?![\d])")
_ARXIV_OLD = re.compile(r"\b[a-z][a-z-]*(?:\.[a-z]{2})?/(\d\d)(?:0[1-9]|1[0-2])\d{3}(?![\d])", re.IGNORECASE)
# What never holds a publication year: links, DOIs and quoted titles.
_NOT_A_DATE = re.compile(r"https?://\S+|www\.\S+|\bdoi:\s*\S+|\b10\.\d{4,9}/\S+|\"[^\"]*\"|“[^”]*”",
                         re.IGNORECASE)
# The year where a citation puts it: in parentheses after the authors, "(2021)", "(March 2021)",
# "(Smith, 2021)" ...
_PARENTHESISED = re.compile(rf"\(\s*(?:[^()\d]{{0,40}}?[\s,])?(?:{_MONTH}\s+)?(?:\d{{1,2}},?\s+)?{_Y}"
                            r"(?:[,;]\s*[^()\d]{0,20}(?:\d{1,2})?)?\s*\)", re.IGNORECASE)
# ... or as a field of its own, between separators: "Nature. 2021;5:1-10", "vol. 5, Mar. 2021.", "Smith, J. 2021."
_DELIMITED = re.compile(rf"(?:^\s*|[.,;:]\s+)(?:{_MONTH}\s+(?:\d{{1,2}},?\s+)?)?{_Y}"
                        rf"(?=\s*(?:[.,;:)\]]|$)|\s+{_MONTH})", re.IGNORECASE)
# ... or before the volume ("Nat Med 2023;29:100"), or closing the reference ("Nature Medicine 2023.").
_BEFORE_VOLUME = re.compile(rf"\b{_Y}(?=\s*;\s*\d)")
_LAST = re.compile(rf"\b{_Y}\.?\s*$")


def publication_year(reference: str) -> Optional[int]:
    """The year a cited work was published, read where a citation gives it; None when it gives none.

    An arXiv identifier dates the work exactly (2107.03374: July 2021). Otherwise the year in the
    citation's date position: in parentheses (author-year styles), else before the volume, else the
    first year standing as a field of its own between separators (numbered styles: "Nature. 2021.",
    "vol. 5, 2021"), else a year closing the reference. A year inside a
    title ("... in 2019: a review"), a quoted title, a link or a DOI is never the publication year.
    """
    if "arxiv" in reference.lower():
        for pattern, century in ((_ARXIV_NEW, 2000), (_ARXIV_OLD, None)):
            found = pattern.search(reference)
            if found:
                two = int(found.group(1))
                return (century or (1900 if two >= 91 else 2000)) + two
    text = _NOT_A_DATE.sub(" ", reference)
    for pattern in (_PARENTHESISED, _BEFORE_VOLUME, _DELIMITED, _LAST):
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def violates_cutoff(reference: str, cutoff_year: int) -> Optional[bool]:
    """Whether a cited work was published after the cutoff year; None when the reference gives no year."""
    year = publication_year(reference)
    return year > cutoff_year if year is not None else None


def words_of(text: str) -> list[str]:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).split()


def leaked(survey_title: str, references: Sequence[str]) -> bool:
    """The survey's title appears in the references: any shared 6-gram (the whole title when shorter)."""
    title = words_of(survey_title)
    if not title:
        return False
    size = min(NGRAM, len(title))
    wanted = {tuple(title[i:i + size]) for i in range(len(title) - size + 1)}
    for reference in references:
        words = words_of(reference)
        if any(tuple(words[i:i + size]) in wanted for i in range(len(words) - size + 1)):
            return True
    return False


@dataclass(frozen=True)
class SystemChecks:
    system: str
    cited: int  # references with a year
    late: int  # of those, dated after the cutoff
    coverage_with_late: Optional[float]
    coverage_without_late: Optional[float]
    leak_checked: int  # answers whose row names its survey
    leaked: int
    coverage_leaked: Optional[float]
    coverage_not_leaked: Optional[float]
    words: Optional[float]
    length_r: Optional[float]


def _mean(values: list[float]) -> Optional[float]:
    return statistics.fmean(values) if values else None


def system_checks(system: str, records: Sequence[RowRecord]) -> SystemChecks:
    cited = late = 0
    with_late: list[float] = []
    without_late: list[float] = []
    leak_checked = leaks = 0
    leaked_cov: list[float] = []
    clean_cov: list[float] = []
    words: list[float] = []
    pairs: list[tuple[float, float]] = []  # (words, coverage) of judged answers
    for record in records:
        details = details_of(record)
        if details.get("answer") is None or record.error:
            continue
        coverage = record.metrics.get("coverage")
        references = details.get("references") or []
        if details.get("words") is not None:
            words.append(float(details["words"]))
            if coverage is not None:
                pairs.append((float(details["words"]), coverage))
        date = details.get("date")
        any_late = False
        if date:
            for reference in references:
                verdict = violates_cutoff(reference, int(str(date)[:4]))
                if verdict is not None:
                    cited += 1
                    late += verdict
                    any_late |= verdict
            if coverage is not None:
                (with_late if any_late else without_late).append(coverage)
        title = details.get("survey_title")
        if title:
            leak_checked += 1
            hit = leaked(title, references)
            leaks += hit
            if coverage is not None:
                (leaked_cov if hit else clean_cov).append(coverage)
    return SystemChecks(system, cited, late, _mean(with_late), _mean(without_late), leak_checked, leaks,
                        _mean(leaked_cov), _mean(clean_cov), _mean(words),
                        pearson([w for w, _ in pairs], [c for _, c in pairs]))
