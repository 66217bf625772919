"""``--researchqa-sample=N``: which rows, the same on every run and every worker. Pure."""

from __future__ import annotations

from typing import Hashable, Optional, Sequence


def centred(total: int, count: int) -> list[int]:
    """``count`` positions spread evenly over ``range(total)``, each in the middle of its share."""
    return [(2 * i + 1) * total // (2 * count) for i in range(count)]


def stratified_sample(strata: Sequence[str], size: Optional[int],
                      clusters: Optional[Sequence[Hashable]] = None) -> list[int]:
    """Positions of a sample that represents every stratum (question type) present and, given each row's
    cluster (its paper), as many clusters as it can.

    Each stratum gets a share proportional to its size (largest remainders settle the
    rounding), at least one row while the sample can afford one per stratum (a smaller sample takes one row
    of each of the largest strata); within
    a stratum the rows are evenly spaced, each in the middle of its share (so one row of
    six is the fourth, not always the first paper's). With ``clusters``, each row taken is of the cluster
    the sample has taken fewest rows of so far (strata in first-seen order, so the second type's row comes
    from another paper than the first's), the nearest to that middle among them: a sample of one row per type
    spreads over the papers instead of taking the same paper for every type (a dataset lays each type out
    paper by paper). Returned in file order.
    """
    total = len(strata)
    if size is None or size >= total:
        return list(range(total))
    groups: dict[str, list[int]] = {}
    for position, stratum in enumerate(strata):
        groups.setdefault(stratum, []).append(position)
    names = list(groups)  # first-seen order: deterministic
    if size < len(names):  # too small for one row per stratum: one row of each of the largest strata
        largest = sorted(names, key=lambda n: -len(groups[n]))[:size]  # stable: first seen among equals
        names = [n for n in names if n in largest]
        quotas = dict.fromkeys(names, 1)
    else:
        quotas = _shares(groups, names, size, total)
    if clusters is None:
        chosen = [groups[name][i] for name in names for i in centred(len(groups[name]), quotas[name])]
        return sorted(chosen)
    taken: dict[Hashable, int] = {}
    chosen = []
    for name in names:
        rows = groups[name]
        left = set(range(len(rows)))
        for target in centred(len(rows), quotas[name]):
            pick = min(left, key=lambda i: (taken.get(clusters[rows[i]], 0), abs(i - target), i))
            left.discard(pick)
            chosen.append(rows[pick])
            taken[clusters[rows[pick]]] = taken.get(clusters[rows[pick]], 0) + 1
    return sorted(chosen)


def _shares(groups: dict[str, list[int]], names: list[str], size: int, total: int) -> dict[str, int]:
    """Hamilton's method on the whole sample: floor of each exact share (at least one row), then the largest
    remainders; a stratum lifted to one row is paid for by the stratum furthest over its exact share."""
    exact = {name: size * len(groups[name]) / total for name in names}
    quotas = {name: max(1, int(exact[name])) for name in names}
    while sum(quotas.values()) > size:
        over = max((n for n in names if quotas[n] > 1), key=lambda n: (quotas[n] - exact[n], -names.index(n)))
        quotas[over] -= 1
    while sum(quotas.values()) < size:
        room = [n for n in names if quotas[n] < len(groups[n])]
        under = max(room, key=lambda n: (exact[n] - quotas[n], -names.index(n)))
        quotas[under] += 1
    return quotas


def paper_sample(total: int, count: int) -> list[int]:
    """The seed's evenly spaced sample, row for row: ``all_rows[int(i * total / count)]``
    (``--researchqa-protocol=paper``)."""
    return [int(i * total / count) for i in range(min(count, total))]
