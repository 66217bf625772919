"""Small statistics for the rubric family's checks: a correlation. Pure.

Intervals come from ``reporting.stats`` (each query its own cluster)."""

from __future__ import annotations

import statistics
from typing import Optional, Sequence


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return statistics.correlation(xs, ys)
