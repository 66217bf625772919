"""How often the regression gate cries wolf, and how often it catches a real drop.

Simulates pairs of runs on a benchmark shaped like a real one: 300 rows over 60
papers (2 to 9 rows a paper), each paper with its own difficulty and each row its
own, three citations a row, citation accuracy the share of them that are grounded.
A run re-draws every answer, and a run also has a shock per paper (a model that
misreads a paper's layout today misreads all its questions): answer noise is
correlated within a paper, as it is with real systems.

* A/A: two runs of the same system. The gate (``--researchqa-fail-on-regression=
  citation_accuracy``, the plugin's own code: records, pairing, sign-flip test) should
  fail at most 5% of them at alpha 0.05.
* A/B: the second run's system is worse by 0.05 in expected citation accuracy. The
  share of runs the gate fails is its power.

For contrast, the same pairs are also tested the two ways the plugin does not use:
a paired t-test over rows (ignores papers) and a paired bootstrap over papers read as
a test (the share of resampled deltas at or above zero).

    python benchmarks/compare_power.py [--repetitions 2000] [--papers 60] [--rows 300] [--drop 0.05]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.records import RowRecord
from pytest_researchqa.reporting.compare import Baseline, compare
from pytest_researchqa.reporting.gates import ALPHA, evaluate_regressions, parse_regression_gate
from pytest_researchqa.stats import RESAMPLES, SEED

CITATIONS_PER_ROW = 3
PAPER_SD = 1.0  # logit-scale spread of paper difficulty
ROW_SD = 0.8  # ... of row difficulty within a paper
RUN_PAPER_SD = 0.5  # ... of a run's shock on one paper (correlated answer noise)
TARGET_ACCURACY = 0.80


class Benchmark:
    """One fixed benchmark: papers, rows and their difficulties."""

    def __init__(self, rng: np.random.Generator, papers: int, rows: int) -> None:
        sizes = 2 + rng.multinomial(rows - 2 * papers, np.full(papers, 1 / papers))
        sizes = np.minimum(sizes, 9)
        while sizes.sum() < rows:  # top up papers below the cap until the row count is exact
            sizes[rng.choice(np.flatnonzero(sizes < 9))] += 1
        self.paper_of_row = np.repeat(np.arange(papers), sizes)
        self.paper_effect = rng.normal(0, PAPER_SD, papers)
        self.row_effect = rng.normal(0, ROW_SD, len(self.paper_of_row))
        self.papers = papers

    def logits(self, shift: float) -> np.ndarray:
        logits: np.ndarray = self.paper_effect[self.paper_of_row] + self.row_effect + shift
        return logits

    def expected_accuracy(self, shift: float, rng: np.random.Generator) -> float:
        shocks = rng.normal(0, RUN_PAPER_SD, (4000, self.papers))[:, self.paper_of_row]
        return float((1 / (1 + np.exp(-(self.logits(shift) + shocks)))).mean())

    def shift_for(self, accuracy: float, rng: np.random.Generator) -> float:
        low, high = -6.0, 6.0
        for _ in range(50):
            middle = (low + high) / 2
            low, high = (middle, high) if self.expected_accuracy(middle, rng) < accuracy else (low, middle)
        return (low + high) / 2

    def run(self, shift: float, rng: np.random.Generator) -> np.ndarray:
        """One run's citation accuracy per row."""
        shock = rng.normal(0, RUN_PAPER_SD, self.papers)[self.paper_of_row]
        p = 1 / (1 + np.exp(-(self.logits(shift) + shock)))
        accuracy: np.ndarray = rng.binomial(CITATIONS_PER_ROW, p) / CITATIONS_PER_ROW
        return accuracy

    def records(self, system: str, accuracy: np.ndarray) -> tuple[RowRecord, ...]:
        return tuple(RowRecord(row_id=f"r{n}", system=system, paper_id=f"paper-{paper}", question_type="lookup",
                               metrics={"citation_accuracy": float(value)})
                     for n, (paper, value) in enumerate(zip(self.paper_of_row, accuracy)))


def gate_state(bench: Benchmark, new: np.ndarray, old: np.ndarray) -> str:
    """passed, failed or undecidable (a drop beyond 0.05 the test cannot tell from noise: shown ⚠️, exit 0)."""
    gate = parse_regression_gate("citation_accuracy", CITATION)
    comparison = compare(bench.records("sys", new), Baseline("old", bench.records("sys", old)), CITATION)
    [result] = evaluate_regressions([gate], comparison)
    return result.state


def row_t_test_fails(new: np.ndarray, old: np.ndarray) -> bool:
    """Paired t-test over rows, one-sided (normal approximation: 300 rows)."""
    d = new - old
    if d.std(ddof=1) == 0:
        return False
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    return 0.5 * math.erfc(-t / math.sqrt(2)) < ALPHA


def bootstrap_test_fails(bench: Benchmark, new: np.ndarray, old: np.ndarray, rng: np.random.Generator) -> bool:
    sums = np.bincount(bench.paper_of_row, weights=new - old, minlength=bench.papers)
    counts = np.bincount(bench.paper_of_row, minlength=bench.papers).astype(float)
    picks = rng.integers(0, bench.papers, size=(RESAMPLES, bench.papers))
    deltas = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return float((deltas >= 0).mean()) < ALPHA


def rate(hits: int, n: int) -> str:
    half = 1.96 * math.sqrt(max(hits, 1) * (n - hits) / n) / n
    return f"{hits / n:6.1%} (±{half:.1%}, {hits}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--papers", type=int, default=60)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--drop", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    bench = Benchmark(rng, args.papers, args.rows)
    base = bench.shift_for(TARGET_ACCURACY, rng)
    worse = bench.shift_for(bench.expected_accuracy(base, rng) - args.drop, rng)
    drop = bench.expected_accuracy(base, rng) - bench.expected_accuracy(worse, rng)
    print(f"benchmark: {args.rows} rows over {args.papers} papers ({CITATIONS_PER_ROW} citations a row), "
          f"expected citation accuracy {bench.expected_accuracy(base, rng):.3f}; "
          f"{args.repetitions} simulated pairs of runs per case; alpha {ALPHA}")
    old_runs = [bench.run(base, rng) for _ in range(args.repetitions)]
    same = [bench.run(base, rng) for _ in range(args.repetitions)]
    dropped = [bench.run(worse, rng) for _ in range(args.repetitions)]
    test_rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    aa = [gate_state(bench, new, old) for new, old in zip(same, old_runs)]
    power = [gate_state(bench, new, old) for new, old in zip(dropped, old_runs)]
    per_gate = (time.perf_counter() - started) / (2 * args.repetitions)
    print(f"\nthe plugin's gate (one-sided sign-flip test over papers, {per_gate * 1000:.1f} ms a comparison):")
    print(f"  A/A false-alarm rate:                     {rate(aa.count('failed'), args.repetitions)}   target <= 5%")
    print(f"  power to detect a drop of {drop:.3f}:          {rate(power.count('failed'), args.repetitions)}")
    print(f"  undecidable (a drop beyond 0.05 not significant): A/A {rate(aa.count('undecidable'), args.repetitions)}, "
          f"with the drop {rate(power.count('undecidable'), args.repetitions)}")
    print("\nfor contrast, on the same pairs:")
    t_aa = sum(row_t_test_fails(new, old) for new, old in zip(same, old_runs))
    t_power = sum(row_t_test_fails(new, old) for new, old in zip(dropped, old_runs))
    print(f"  paired t-test over rows (ignores papers): A/A {rate(t_aa, args.repetitions)}, "
          f"power {rate(t_power, args.repetitions)}")
    b_aa = sum(bootstrap_test_fails(bench, new, old, test_rng) for new, old in zip(same, old_runs))
    b_power = sum(bootstrap_test_fails(bench, new, old, test_rng) for new, old in zip(dropped, old_runs))
    print(f"  paired bootstrap over papers as a test:   A/A {rate(b_aa, args.repetitions)}, "
          f"power {rate(b_power, args.repetitions)}")


if __name__ == "__main__":
    main()
