"""``--researchqa-sample=N``: which rows, the same on every run and every worker. Pure."""

from __future__ import annotations

from typing import Optional, Sequence


def evenly_spaced(total: int, count: int) -> list[int]:
    """``count`` positions spread evenly over ``range(total)`` (row ``i * total // count``)."""
    return [i * total // count for i in range(count)]


def centred(total: int, count: int) -> list[int]:
    """``count`` positions spread evenly over ``range(total)``, each in the middle of its share."""
    return [(2 * i + 1) * total // (2 * count) for i in range(count)]


def stratified_sample(strata: Sequence[str], size: Optional[int]) -> list[int]:
    """Positions of a sample that represents every stratum (question type) present.

    Each stratum gets a share proportional to its size, at least one row while the
    sample can afford one per stratum (largest remainders settle the rest); within
    a stratum the rows are evenly spaced, each in the middle of its share (so one row of
    six is the fourth, not always the first paper's). Returned in file order.
    """
    total = len(strata)
    if size is None or size >= total:
        return list(range(total))
    groups: dict[str, list[int]] = {}
    for position, stratum in enumerate(strata):
        groups.setdefault(stratum, []).append(position)
    names = list(groups)  # first-seen order: deterministic
    if size < len(names):  # too small for one row per stratum: plain even spacing
        return evenly_spaced(total, size)
    quotas = {name: 1 for name in names}
    spare = size - len(names)
    exact = {name: spare * len(groups[name]) / total for name in names}
    for name in names:
        quotas[name] += min(int(exact[name]), len(groups[name]) - 1)
    left = size - sum(quotas.values())
    by_remainder = sorted(names, key=lambda n: (-(exact[n] - int(exact[n])), names.index(n)))
    while left > 0:
        grew = False
        for name in by_remainder:
            if left and quotas[name] < len(groups[name]):
                quotas[name] += 1
                left -= 1
                grew = True
        if not grew:
            break
    chosen = [groups[name][i] for name in names for i in centred(len(groups[name]), quotas[name])]
    return sorted(chosen)
