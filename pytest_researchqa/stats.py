"""Uncertainty over papers: bootstrap intervals and the paired regression test. Pure.

Rows of one paper are not independent draws: a paper that extracts badly or is
hard to retrieve from drags all its rows down together. So every resample here
takes whole papers, never single rows:

* :func:`bootstrap_mean` -- a percentile interval of a metric's row-weighted mean,
  resampling papers with replacement (the leaderboard's ``0.812 ±0.031``);
* :func:`pearson` -- a correlation (the rubric family's length-vs-coverage check);
* :func:`paired_test` -- for rows measured by two runs, the row-weighted mean
  difference (new minus old), its paired paper-clustered bootstrap interval, and
  one-sided p-values from a sign-flip permutation test over papers: under "no
  change", swapping the two runs' answers on a paper is as likely as not, so each
  paper's summed difference keeps or flips its sign with probability 1/2. With few
  papers every sign pattern is enumerated (an exact test); with many, a fixed-seed
  Monte Carlo sample is drawn and p = (1 + hits) / (1 + draws), which keeps the
  test's false-alarm rate at or below alpha (docs/gating.md says why this test).

Fixed seeds: the same records give the same numbers on every machine. numpy is
imported when a number is computed, never at import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

SEED = 20_240_611
CONFIDENCE = 0.95
RESAMPLES = 2_000
SIGN_FLIPS = 9_999
# Up to this many papers with a non-zero difference, all 2**n sign patterns are enumerated.
EXACT_UP_TO = 16
_CHUNK = 2_000  # sign patterns per matrix product: bounded memory however many papers


@dataclass(frozen=True)
class Interval:
    """A row-weighted mean and its paper-clustered bootstrap interval (None below two papers)."""

    mean: float
    low: Optional[float]
    high: Optional[float]
    papers: int
    rows: int

    @property
    def half_width(self) -> Optional[float]:
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class PairedTest:
    """New minus old over rows both runs measured, clustered by paper."""

    delta: float  # row-weighted mean difference, new minus old
    new_mean: float
    old_mean: float
    low: Optional[float]  # bootstrap interval of delta (None below two papers)
    high: Optional[float]
    p_lower: float  # one-sided p-value for "new is lower than old"
    p_higher: float  # ... and for "new is higher"
    papers: int  # papers with at least one paired row
    rows: int
    changed: int  # papers whose rows' differences do not sum to zero: only these move the sign-flip test
    exact: bool  # every sign pattern enumerated

    def p_worse(self, higher_is_better: bool) -> float:
        return self.p_lower if higher_is_better else self.p_higher

    def p_better(self, higher_is_better: bool) -> float:
        return self.p_higher if higher_is_better else self.p_lower

    def worse_by(self, higher_is_better: bool) -> float:
        """How much worse the new run is (negative: better), in the metric's units."""
        return -self.delta if higher_is_better else self.delta


def _clusters(papers: Sequence[str], values: Sequence[float]) -> tuple["np.ndarray", "np.ndarray"]:
    """Per-paper sums and row counts, papers in sorted order (so the result never depends on row order)."""
    import numpy as np

    order = sorted(set(papers))
    index = {p: n for n, p in enumerate(order)}
    where = np.fromiter((index[p] for p in papers), dtype=np.int64, count=len(papers))
    sums = np.bincount(where, weights=np.asarray(values, dtype=float), minlength=len(order))
    counts = np.bincount(where, minlength=len(order)).astype(float)
    return sums, counts


def _percentiles(draws: "np.ndarray", confidence: float) -> tuple[float, float]:
    import numpy as np

    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return float(low), float(high)


def _resampled_ratios(sums: "np.ndarray", counts: "np.ndarray", resamples: int, seed: int) -> "np.ndarray":
    import numpy as np

    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(sums), size=(resamples, len(sums)))
    result: np.ndarray = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return result


def bootstrap_mean(papers: Sequence[str], values: Sequence[float], *, confidence: float = CONFIDENCE,
                   resamples: int = RESAMPLES, seed: int = SEED) -> Optional[Interval]:
    """The mean of ``values`` (one per row, ``papers[i]`` its paper) with a paper-clustered interval."""
    if not values:
        return None
    sums, counts = _clusters(papers, values)
    mean = float(sums.sum() / counts.sum())
    if len(sums) < 2:
        return Interval(mean, None, None, len(sums), len(values))
    low, high = _percentiles(_resampled_ratios(sums, counts, resamples, seed), confidence)
    # Guard rounding: the interval always contains the estimate.
    return Interval(mean, min(low, mean), max(high, mean), len(sums), len(values))


def _sign_flip_p(paper_sums: "np.ndarray", seed: int, flips: int) -> tuple[float, float, bool]:
    """One-sided p-values (lower, higher) of the summed difference under random sign flips per paper."""
    import numpy as np

    moving = paper_sums[paper_sums != 0]
    observed = float(paper_sums.sum())
    if len(moving) == 0:
        return 1.0, 1.0, True
    tolerance = 1e-9 * float(np.abs(moving).sum())
    exact = len(moving) <= EXACT_UP_TO
    at_or_below = at_or_above = 0
    if exact:
        total = 2 ** len(moving)
        for start in range(0, total, _CHUNK):
            patterns = np.arange(start, min(start + _CHUNK, total))[:, None] >> np.arange(len(moving))
            statistics = ((patterns & 1) * 2 - 1) @ moving
            at_or_below += int((statistics <= observed + tolerance).sum())
            at_or_above += int((statistics >= observed - tolerance).sum())
        return at_or_below / total, at_or_above / total, True
    rng = np.random.default_rng(seed)
    for start in range(0, flips, _CHUNK):
        signs = rng.integers(0, 2, size=(min(_CHUNK, flips - start), len(moving))) * 2 - 1
        statistics = signs @ moving
        at_or_below += int((statistics <= observed + tolerance).sum())
        at_or_above += int((statistics >= observed - tolerance).sum())
    return (1 + at_or_below) / (1 + flips), (1 + at_or_above) / (1 + flips), False


def paired_test(papers: Sequence[str], new: Sequence[float], old: Sequence[float], *,
                confidence: float = CONFIDENCE, resamples: int = RESAMPLES, flips: int = SIGN_FLIPS,
                seed: int = SEED) -> Optional[PairedTest]:
    """Compare two runs' values of the same rows (``papers[i]`` is row i's paper); None without rows."""
    if not new:
        return None
    if not len(papers) == len(new) == len(old):
        raise ValueError("papers, new and old must have one entry per row")
    differences = [a - b for a, b in zip(new, old)]
    sums, counts = _clusters(papers, differences)
    rows = float(counts.sum())
    delta = float(sums.sum() / rows)
    low: Optional[float] = None
    high: Optional[float] = None
    if len(sums) >= 2:
        low, high = _percentiles(_resampled_ratios(sums, counts, resamples, seed), confidence)
        low, high = min(low, delta), max(high, delta)
    p_lower, p_higher, exact = _sign_flip_p(sums, seed, flips)
    return PairedTest(delta=delta, new_mean=sum(new) / rows, old_mean=sum(old) / rows, low=low, high=high,
                      p_lower=p_lower, p_higher=p_higher, papers=len(sums), rows=len(new),
                      changed=int((sums != 0).sum()), exact=exact)


def paper_means(papers: Sequence[str], values: Sequence[float]) -> dict[str, float]:
    """Each paper's mean of its rows' values (for plots of per-paper differences)."""
    totals: dict[str, list[float]] = {}
    for paper, value in zip(papers, values):
        totals.setdefault(paper, []).append(value)
    return {paper: sum(v) / len(v) for paper, v in sorted(totals.items())}


def describe_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


__all__ = ["Interval", "PairedTest", "bootstrap_mean", "paired_test", "paper_means", "describe_p"]


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """Pearson's r, or None where it is undefined (fewer than 3 points, or a constant side)."""
    import statistics

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return statistics.correlation(xs, ys)
