"""Bradley-Terry strengths from pairwise battles, on the Elo scale, with a bootstrap. Pure.

A battle is ``(first, second, score)`` with ``score`` 1 when ``first`` won, 0
when ``second`` won and 0.5 for a tie (a tie is half a win for each, as in the
seed). The model: P(i beats j) = p_i / (p_i + p_j); it is fitted by the
minorization-maximization iteration (Hunter, 2004), and reported as
``400 * log10(p_i)`` shifted so the systems' mean is 1000 -- the Elo scale,
where a 400-point gap means 10:1 odds.

An unbeaten system has no finite maximum-likelihood strength, so by default
(the project protocol) every pair that met gets one virtual drawn battle (half a
win each way): a prior that keeps scores finite. It is not negligible: at the
paper's scale (18 systems, ~50 battles per pair) it pulls the extremes inwards
by ~30 Elo. The paper protocol fits plain Bradley-Terry (``prior_draws=0``), as
the seed's leaderboard does; where it has no finite fit (a group of systems won
every battle against the rest, :func:`runaway`), the largest group of at least two
systems that can be rated among themselves is (:func:`finite_core`), and the others
are +inf above it, -inf below it and nan where they cannot be placed. Systems
in separate components of the comparison graph share no scale; :func:`connected`
says whether they do.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

ELO_SCALE = 400.0
ELO_MEAN = 1000.0
PRIOR_DRAWS = 1.0  # virtual drawn battles per pair that met


@dataclass(frozen=True)
class Rating:
    system: str
    median: float  # over the bootstrap
    sd: float
    point: float  # the fit on all battles
    mean: float = 0.0  # over the bootstrap (what the seed's Table 3 prints)
    # Resamples with no finite fit (without a prior, one where a system wins or loses every battle it has: its
    # strength runs off to 0 or infinity); the same count on every system's rating.
    diverged: int = 0


Battle = tuple[str, str, float]


def connected(systems: Sequence[str], battles: Iterable[Battle]) -> bool:
    """Whether every system is linked to every other by a chain of battles."""
    if len(systems) < 2:
        return True
    links: dict[str, set[str]] = {s: set() for s in systems}
    for first, second, _ in battles:
        links[first].add(second)
        links[second].add(first)
    seen, todo = {systems[0]}, [systems[0]]
    while todo:
        for other in links[todo.pop()] - seen:
            seen.add(other)
            todo.append(other)
    return len(seen) == len(systems)


def _scored(systems: Sequence[str], battles: Iterable[Battle]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Who scored (won or tied) against whom, and who met whom."""
    scored: dict[str, set[str]] = {s: set() for s in systems}
    met: dict[str, set[str]] = {s: set() for s in systems}
    for first, second, score in battles:
        met[first].add(second)
        met[second].add(first)
        if score > 0:
            scored[first].add(second)
        if score < 1:
            scored[second].add(first)
    return scored, met


def _reached(systems: Sequence[str], scored: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each system's set of systems reached by a chain of "scored against" (itself included)."""
    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for other in scored[todo.pop()] - seen:
                seen.add(other)
                todo.append(other)
        return seen

    return {s: reach(s) for s in systems}


def runaway(systems: Sequence[str], battles: Iterable[Battle]) -> dict[str, float]:
    """Where plain Bradley-Terry (no prior) has no finite fit: +inf for each system of a group that won every
    battle it had against the other systems, -inf for each of a group that lost every such battle, nan for the
    others (their score is unbounded too, the scale having none); empty when the fit is finite.

    The maximum-likelihood fit is finite exactly when, in each connected part of the comparison graph, every
    group of systems scored (a win or a tie) at least once against the rest (Ford, 1957): when the graph of
    "scored against" is strongly connected there.
    """
    scored, met = _scored(systems, battles)
    reached = _reached(systems, scored)
    found: dict[str, float] = {}
    for system in systems:
        group = {o for o in reached[system] if system in reached[o]}  # its strongly connected group
        outside = set().union(*(met[s] for s in group)) - group
        if not outside:
            continue
        beaten_by_outside = any(s in scored[o] for o in outside for s in group)
        scored_outside = any(scored[s] & outside for s in group)
        if not beaten_by_outside:
            found[system] = math.inf
        elif not scored_outside:
            found[system] = -math.inf
        else:
            found[system] = math.nan
    if all(math.isnan(v) for v in found.values()):
        return {}
    return {s: found.get(s, math.nan) for s in systems}


def finite_core(systems: Sequence[str], battles: Sequence[Battle]) -> tuple[list[str], dict[str, float]]:
    """Where plain Bradley-Terry has no finite fit (:func:`runaway`), the largest group of at least two systems
    that can still be rated among themselves (each scored against each by a chain of battles: their fit on their
    own battles is finite), and each other system's place against it: +inf above it (it scored against the group,
    the group never against it), -inf below, nan neither (never compared, or apart from the group). This is the
    limit of the likelihood as the others run off: one system that lost every battle leaves the rest a finite
    Elo among themselves (tester41 T9). ``([], {})`` when no such group exists."""
    scored, _ = _scored(systems, battles)
    reached = _reached(systems, scored)
    groups = {frozenset(o for o in reached[s] if s in reached[o]) for s in systems}
    inner = {g: sum(1 for a, b, _ in battles if a in g and b in g) for g in groups}
    candidates = [g for g in groups if len(g) >= 2]
    if not candidates:
        return [], {}
    core = max(candidates, key=lambda g: (len(g), inner[g], sorted(g)))
    places: dict[str, float] = {}
    anchor = next(iter(core))
    for system in systems:
        if system in core:
            continue
        above, below = anchor in reached[system], system in reached[anchor]
        places[system] = math.inf if above and not below else -math.inf if below and not above else math.nan
    return [s for s in systems if s in core], places


def _tally(systems: Sequence[str], battles: Iterable[Battle], pairs: set[tuple[int, int]],
           prior_draws: float = PRIOR_DRAWS) -> tuple[list[float], list[list[float]]]:
    index = {s: n for n, s in enumerate(systems)}
    wins = [0.0] * len(systems)
    games = [[0.0] * len(systems) for _ in systems]
    for first, second, score in battles:
        i, j = index[first], index[second]
        wins[i] += score
        wins[j] += 1.0 - score
        games[i][j] += 1.0
        games[j][i] += 1.0
    for i, j in pairs if prior_draws else ():
        wins[i] += prior_draws / 2
        wins[j] += prior_draws / 2
        games[i][j] += prior_draws
        games[j][i] += prior_draws
    return wins, games


def fit(systems: Sequence[str], battles: Sequence[Battle], *, pairs: set[tuple[int, int]] | None = None,
        tolerance: float = 1e-10, max_iterations: int = 5000, start: dict[str, float] | None = None,
        prior_draws: float = PRIOR_DRAWS) -> dict[str, float]:
    """Each system's Elo-scale score (mean 1000) from the battles (``pairs``: where the prior applies;
    ``start``: Elo scores to iterate from, e.g. the full fit when bootstrapping; ``prior_draws``: virtual
    drawn battles per pair that met, 0 for plain Bradley-Terry)."""
    if not systems:
        return {}
    if not prior_draws and (unbounded := runaway(systems, battles)):
        core, places = finite_core(systems, battles)
        if not core:
            return unbounded
        fitted = fit(core, [b for b in battles if b[0] not in places and b[1] not in places], tolerance=tolerance,
                     max_iterations=max_iterations, start=start, prior_draws=0)
        return {s: fitted[s] if s in fitted else places[s] for s in systems}
    index = {s: n for n, s in enumerate(systems)}
    if pairs is None:
        pairs = {tuple(sorted((index[a], index[b]))) for a, b, _ in battles}  # type: ignore[misc]
    wins, games = _tally(systems, battles, pairs, prior_draws)
    strength = [10 ** ((start[s] - ELO_MEAN) / ELO_SCALE) if start else 1.0 for s in systems]
    for _ in range(max_iterations):
        updated = []
        for i in range(len(systems)):
            denominator = sum(games[i][j] / (strength[i] + strength[j]) for j in range(len(systems))
                              if j != i and games[i][j])
            updated.append(wins[i] / denominator if denominator else strength[i])
        scale = math.exp(statistics.fmean(math.log(max(p, 1e-300)) for p in updated))
        updated = [p / scale for p in updated]
        change = max(abs(a - b) / b for a, b in zip(updated, strength))
        strength = updated
        if change < tolerance:
            break
    logs = [ELO_SCALE * math.log10(max(p, 1e-300)) for p in strength]
    shift = ELO_MEAN - statistics.fmean(logs)
    return {s: logs[index[s]] + shift for s in systems}


def bootstrap(systems: Sequence[str], battles: Sequence[Battle], *, rounds: int = 1000,
              seed: int = 20260101, prior_draws: float = PRIOR_DRAWS) -> list[Rating]:
    """Median and standard deviation of the scores over ``rounds`` resamplings of the battles (with
    replacement), best first. Deterministic for a seed.

    Battles collapse to kinds (first, second, score); a resample is a multinomial draw of counts
    over the kinds, and each refit is the same iteration as :func:`fit`, on arrays (numpy). A resample
    without a finite fit is counted in ``Rating.diverged`` and left out of the median, SD and mean.
    """
    import numpy as np

    index = {s: n for n, s in enumerate(systems)}
    pairs = {tuple(sorted((index[a], index[b]))) for a, b, _ in battles}
    point = fit(systems, battles, pairs=pairs, prior_draws=prior_draws)  # type: ignore[arg-type]
    if not battles or rounds < 1:
        return sorted((Rating(s, point[s], 0.0, point[s], point[s]) for s in systems),
                      key=lambda r: (-r.median, r.system))
    if not all(math.isfinite(p) for p in point.values()):  # no finite fit: none on any resample either
        core = [s for s in systems if math.isfinite(point[s])]  # rated among themselves (finite_core)
        rated = bootstrap(core, [b for b in battles if b[0] in core and b[1] in core], rounds=rounds, seed=seed,
                          prior_draws=0) if core else []
        diverged = rated[0].diverged if rated else rounds
        unrated = [Rating(s, point[s], math.nan, point[s], point[s], diverged) for s in systems if s not in core]
        return sorted([*rated, *unrated], key=lambda r: (-r.median if not math.isnan(r.median) else 0.0, r.system))
    kinds: dict[Battle, int] = {}
    for battle in battles:
        kinds[battle] = kinds.get(battle, 0) + 1
    distinct = sorted(kinds)
    first = np.array([index[a] for a, _, _ in distinct])
    second = np.array([index[b] for _, b, _ in distinct])
    score = np.array([s for _, _, s in distinct], dtype=float)
    share = np.array([kinds[k] for k in distinct], dtype=float) / len(battles)
    size = len(systems)
    prior_wins = np.zeros(size)
    prior_games = np.zeros((size, size))
    for i, j in pairs if prior_draws else ():
        prior_wins[[i, j]] += prior_draws / 2
        prior_games[i, j] += prior_draws
        prior_games[j, i] += prior_draws
    start = np.array([10 ** ((point[s] - ELO_MEAN) / ELO_SCALE) for s in systems])
    rng = np.random.default_rng(seed)
    samples = np.empty((rounds, size))
    diverged = 0
    # Pairs a resample did not draw meet 0/0 in the iteration's ratios (guarded there): no warning for them.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for n in range(rounds):
            counts = rng.multinomial(len(battles), share).astype(float)
            # Without prior draws a group that won (or lost) every battle drawn against the rest has no finite
            # fit even while each of its systems won something: an iteration would stop at a gap that only
            # tells how long it ran (thousands of Elo). Such a resample is counted and left out, unfitted; with
            # the prior every resample has a finite fit.
            if not prior_draws and runaway(systems, [distinct[k] for k in np.flatnonzero(counts)]):
                samples[n] = np.nan
                diverged += 1
            else:
                samples[n] = _refit(np, start, prior_wins, prior_games, first, second, score, counts)
        kept = samples[~np.isnan(samples).any(axis=1)]
    if not len(kept):
        kept = np.full((1, size), np.nan)
    ratings = [Rating(s, float(np.median(kept[:, index[s]])), float(np.std(kept[:, index[s]])), point[s],
                      float(np.mean(kept[:, index[s]])), diverged) for s in systems]
    return sorted(ratings, key=lambda r: (-r.median, r.system))


def _refit(np: Any, start: Any, prior_wins: Any, prior_games: Any, first: Any, second: Any, score: Any,
           counts: Any) -> Any:
    """One resample's Elo scores (:func:`fit`'s iteration on arrays); the resample has a finite fit."""
    wins = prior_wins.copy()
    np.add.at(wins, first, counts * score)
    np.add.at(wins, second, counts * (1.0 - score))
    games = prior_games.copy()
    np.add.at(games, (first, second), counts)
    np.add.at(games, (second, first), counts)
    strength = start.copy()
    for _ in range(5000):
        denominator = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated = np.where(denominator > 0, wins / np.where(denominator > 0, denominator, 1.0), strength)
        updated = updated / np.exp(np.log(np.maximum(updated, 1e-300)).mean())
        change = np.max(np.abs(updated - strength) / strength)
        strength = updated
        if change < 1e-9:
            break
    logs = ELO_SCALE * np.log10(np.maximum(strength, 1e-300))
    return logs - logs.mean() + ELO_MEAN


def win_rates(battles: Iterable[Battle]) -> dict[str, dict[str, tuple[float, int]]]:
    """rates[a][b] = (a's share of the points against b, battles between them); a tie counts half."""
    points: dict[str, dict[str, list[float]]] = {}
    for first, second, score in battles:
        for me, other, mine in ((first, second, score), (second, first, 1.0 - score)):
            tally = points.setdefault(me, {}).setdefault(other, [0.0, 0.0])
            tally[0] += mine
            tally[1] += 1
    return {a: {b: (won / played, int(played)) for b, (won, played) in row.items()} for a, row in points.items()}


def expected_score(elo_first: float, elo_second: float) -> float:
    """P(first beats second) on the Elo scale."""
    return 1.0 / (1.0 + 10 ** ((elo_second - elo_first) / ELO_SCALE))
