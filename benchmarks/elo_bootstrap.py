"""The rubric family's leaderboard at the seed's scale: Bradley-Terry with a 1,000-round bootstrap.

Simulates a tournament shaped like the published one (18 systems, ~7.6K battles
spread uniformly over the pairs, strengths spaced over ~700 Elo points, ties at
10%), fits it as the plugin does at the end of a run, and prints the wall time
and how well the known strengths are recovered.

    python benchmarks/elo_bootstrap.py [--systems 18] [--battles 7600] [--rounds 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time

from pytest_researchqa.families.rubric.bradley_terry import bootstrap, expected_score


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--systems", type=int, default=18)
    parser.add_argument("--battles", type=int, default=7600)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    true_elo = {f"s{n:02d}": 1000 + 700 * (n / (args.systems - 1) - 0.5) for n in range(args.systems)}
    pairs = list(itertools.combinations(sorted(true_elo), 2))
    battles = []
    for n in range(args.battles):
        a, b = pairs[n % len(pairs)]
        if rng.random() < 0.1:
            battles.append((a, b, 0.5))
        else:
            battles.append((a, b, 1.0 if rng.random() < expected_score(true_elo[a], true_elo[b]) else 0.0))
    started = time.perf_counter()
    ratings = bootstrap(sorted(true_elo), battles, rounds=args.rounds)
    elapsed = time.perf_counter() - started
    order = [r.system for r in ratings]
    truth = sorted(true_elo, key=lambda s: -true_elo[s])
    swaps = sum(1 for i, j in itertools.combinations(range(len(order)), 2) if truth.index(order[i]) > truth.index(order[j]))
    print(f"{args.systems} systems, {len(battles)} battles, {args.rounds} bootstrap rounds: {elapsed:.1f} s")
    print(f"median SD {statistics.median(r.sd for r in ratings):.1f} Elo; rank inversions against the truth: {swaps} "
          f"(adjacent true gap {700 / (args.systems - 1):.0f} Elo)")


if __name__ == "__main__":
    main()
