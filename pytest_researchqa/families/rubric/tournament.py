"""Pairwise battles once every row of every system is answered, judged by the seed's ensemble rule.

Runs on the controller at the end of the session (under xdist too: records
carry each answer and its item coverages as plain data). For every pair of
systems the battles are the queries both answered and had judged, all of them
or ``--researchqa-battles=N`` drawn per pair (the same draw every run), so the
pairs are represented uniformly and the comparison graph is complete whenever
every pair shares a query. Each battle is put to the direct pairwise judge in
both orders; the ensemble then gives each answer 4 points per direct-judge vote
it won plus the sum of its rubric items' coverages (0-4 each): the larger sum
wins, equal sums tie. A battle whose judge failed is left out and counted,
never scored as a tie. Judging goes through the run's model runner (slots,
pacing, retries) and the judge cache (a re-run makes no call).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ...records import RowRecord
from .bradley_terry import Battle, bootstrap, connected, win_rates

DIRECT_WIN_POINTS = 4.0


@dataclass(frozen=True)
class Contender:
    """One system's answer to one query, as the battle needs it."""

    system: str
    row_id: str
    query: str
    text: str  # the answer with its references
    item_coverage: tuple[float, ...]

    @property
    def coverage_points(self) -> float:
        return sum(self.item_coverage)


def contenders(records: Sequence[RowRecord]) -> dict[str, dict[str, Contender]]:
    """By row id, by system: every answer that was judged for coverage."""
    found: dict[str, dict[str, Contender]] = {}
    for record in records:
        details = record.details
        items = [i.get("coverage") for i in details.get("items") or []]
        if (not record.system or record.error or record.row_id is None or details.get("answer") is None
                or not items or any(c is None for c in items)):
            continue
        references = details.get("references") or []
        text = details["answer"] + ("\n\nReferences:\n" + "\n".join(f"- {r}" for r in references)
                                    if references else "")
        found.setdefault(record.row_id, {})[record.system] = Contender(
            record.system, record.row_id, details.get("query") or "", text, tuple(float(c) for c in items))
    return found


def schedule(by_row: dict[str, dict[str, Contender]], per_pair: Optional[int]) -> list[tuple[str, str, str]]:
    """(row id, first system, second system) for every battle: per pair, all shared queries or N of them."""
    systems = sorted({s for answers in by_row.values() for s in answers})
    battles: list[tuple[str, str, str]] = []
    for first, second in itertools.combinations(systems, 2):
        shared = sorted(row for row, answers in by_row.items() if first in answers and second in answers)
        if per_pair is not None and len(shared) > per_pair:
            shared = sorted(random.Random(f"{first}\0{second}").sample(shared, per_pair))
        battles.extend((row, first, second) for row in shared)
    return battles


def ensemble(first: Contender, second: Contender, forward: str, backward: str) -> float:
    """The ensemble's verdict for ``first``: 1 win, 0 loss, 0.5 tie.

    ``forward`` is the direct judge's choice with ``first`` shown as A, ``backward``
    with ``second`` shown as A ("A", "B" or "tie").
    """
    first_votes = (forward == "A") + (backward == "B")
    second_votes = (forward == "B") + (backward == "A")
    first_total = DIRECT_WIN_POINTS * first_votes + first.coverage_points
    second_total = DIRECT_WIN_POINTS * second_votes + second.coverage_points
    if abs(first_total - second_total) < 1e-9:
        return 0.5
    return 1.0 if first_total > second_total else 0.0


def run_tournament(records: Sequence[RowRecord], services: Any, settings: Any,
                   say: Callable[[str], None]) -> dict[str, Any]:
    """Schedule, judge and rate the battles; plain data for the renderer, the manifest and saved runs."""
    from ...llm.engine import ProviderError

    by_row = contenders(records)
    systems = sorted({s for answers in by_row.values() for s in answers})
    if len(systems) < 2:
        return {}
    if not settings.judges:
        return {"note": "no pairwise battles: no judge given (--researchqa-judge=MODEL)"}
    planned = schedule(by_row, settings.battles)
    if not planned:
        return {"note": "no pairwise battles: no query was answered and judged by two systems"}
    say(f"researchqa: {len(planned)} pairwise battle(s) over {len(systems)} systems, each judged in both orders")
    pending = []
    for row_id, first, second in planned:
        a, b = by_row[row_id][first], by_row[row_id][second]
        judge = services.pairwise_judge(first, second)
        pending.append((a, b, judge.name, judge.submit(a.query, a.text, b.text), judge.submit(a.query, b.text, a.text)))
    battles: list[Battle] = []
    errors: list[str] = []
    consistent = 0
    step = max(1, -(-len(pending) // 4))  # progress at each quarter
    for done, (a, b, _, forward, backward) in enumerate(pending, start=1):
        try:
            there = forward.result()["scores"]["preferred"]
            back = backward.result()["scores"]["preferred"]
        except ProviderError as error:
            errors.append(f"{a.row_id} {a.system} vs {b.system}: {error}")
            continue
        finally:
            if done % step == 0 or done == len(pending):
                say(f"researchqa: battles judged {done}/{len(pending)}")
        consistent += (there, back) in (("A", "B"), ("B", "A"), ("tie", "tie"))
        battles.append((a.system, b.system, ensemble(a, b, there, back)))
    ratings = bootstrap(systems, battles) if battles else []
    judges = sorted({p[2] for p in pending})
    return {
        "systems": systems,
        "judges": judges,
        "battles": len(battles),
        "scheduled": len(planned),
        "per_pair": settings.battles,
        "errors": errors,
        "connected": connected(systems, battles),
        "order_consistent": consistent / len(battles) if battles else None,
        "elo": {r.system: {"median": r.median, "sd": r.sd, "point": r.point} for r in ratings},
        "win_rates": {a: {b: list(v) for b, v in row.items()} for a, row in win_rates(battles).items()},
        "outcomes": [list(b) for b in battles],
    }
