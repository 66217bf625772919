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
from typing import Any, Optional, Sequence

from ...records import RowRecord
from ...stats import pearson

_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d])")
NGRAM = 6


def cited_years(reference: str) -> list[int]:
    """Publication years a reference gives (four-digit 19xx/20xx numbers)."""
    return [int(y) for y in _YEAR.findall(reference)]


def violates_cutoff(reference: str, cutoff_year: int) -> Optional[bool]:
    """Whether a cited work is dated after the cutoff (its earliest year given: a reference's first year
    is nearly always its publication year); None when it gives no year."""
    years = cited_years(reference)
    return min(years) > cutoff_year if years else None


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
        details: dict[str, Any] = record.details
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
