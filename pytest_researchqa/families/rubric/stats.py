"""Small statistics for the rubric family's tables: a bootstrap interval over queries, a correlation. Pure."""

from __future__ import annotations

import math
import random
import statistics
from typing import Optional, Sequence


def bootstrap_interval(values: Sequence[float], *, rounds: int = 1000, level: float = 0.95,
                       seed: int = 20260101) -> Optional[tuple[float, float]]:
    """A percentile bootstrap interval of the mean (resampling the values with replacement).

    The values are sorted first, so the interval does not depend on the order records arrived in
    (serial and xdist runs agree).
    """
    if len(values) < 2:
        return None
    values = sorted(values)
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(rounds))
    tail = (1.0 - level) / 2
    low = means[max(0, math.floor(tail * rounds))]
    high = means[min(rounds - 1, math.ceil((1.0 - tail) * rounds) - 1)]
    return low, high


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return statistics.correlation(xs, ys)
