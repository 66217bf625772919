"""The case one parametrized test runs: plain values, identical on every worker.

Its own module, pytest and the standard library only, so that the run's state (which makes the cases)
and the stash (which names the state's type) need not import each other.

PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

from __future__ import annotations

from typing import NamedTuple, Optional


class Case(NamedTuple):
    """One parametrized test case (a named tuple: cheaper to define at start-up than a dataclass)."""

    kind: str  # "row" or "problem"
    position: int  # index into dataset.rows or dataset.problems
    system: Optional[str]
    repeat: int = 0  # which of the row's answers under --researchqa-repeats
