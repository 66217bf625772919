"""Pairwise battles once every row of every system is answered, judged by the seed's ensemble rule.

Runs on the controller at the end of the session (under xdist too: records
carry each answer and its item coverages as plain data). For every pair of
systems the battles are the queries both answered and had judged, all of them
or ``--researchqa-battles=N`` drawn per pair (the same draw every run), so the
pairs are represented uniformly and the comparison graph is complete whenever
every pair shares a query. Each battle is put to the direct pairwise judge in
both orders; the ensemble then gives each answer 4 points per direct-judge vote
it won plus the sum of its rubric items' coverages (0-4 each): the larger sum
wins, equal sums tie (Eq. 1; ``--researchqa-ensemble=notebook`` gives 5 points per
vote, as the notebook that produced the seed's Table 3 does). Under
``--researchqa-protocol=paper`` the schedule is the paper's instead: per domain,
at least ``PAPER_BATTLES_PER_DOMAIN`` battles (or every battle the domain
offers), spread evenly over the pairs, each pair's queries a seeded draw from
the domain; Bradley-Terry is fitted without a prior and the bootstrap mean is
reported, as Table 3 prints. A battle whose judge failed is left out and counted,
never scored as a tie; fewer than half of the scheduled battles judged fails the run
(``too_few_judged``). Judging goes through the run's model runner (slots,
pacing, retries) and the judge cache (a re-run makes no call).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ...records import RowRecord
from .bradley_terry import PRIOR_DRAWS, Battle, bootstrap, connected, win_rates
from .details import details_of

if TYPE_CHECKING:  # pragma: no cover
    from .rows import ResearchRow

DIRECT_WIN_POINTS = 4.0  # Eq. 1 of the seed
ENSEMBLE_POINTS = {"eq1": DIRECT_WIN_POINTS, "notebook": 5.0}  # the notebook behind Table 3 adds 5 per vote
# A tournament that judged fewer than this share of its scheduled battles fails the run (too_few_judged).
MIN_JUDGED_SHARE = 0.5
PAPER_BATTLES_PER_DOMAIN = 1000  # "each domain consists of a minimum of 1K battles" (seed 004, 4.2)


@dataclass(frozen=True)
class Rules:
    """How a tournament is scheduled, scored and rated: the project's choices or the paper's."""

    direct_points: float = DIRECT_WIN_POINTS
    prior_draws: float = PRIOR_DRAWS
    by_domain: bool = False  # the paper's schedule
    reported: str = "median"  # the bootstrap statistic shown as Elo

    @classmethod
    def of(cls, settings: Any) -> "Rules":
        points = ENSEMBLE_POINTS[getattr(settings, "ensemble", "eq1")]
        if getattr(settings, "protocol", "project") == "paper":
            return cls(direct_points=points, prior_draws=0.0, by_domain=True, reported="mean")
        return cls(direct_points=points)


@dataclass(frozen=True)
class Contender:
    """One system's answer to one query, as the battle needs it."""

    system: str
    row_id: str
    query: str
    text: str  # the answer with its references
    item_coverage: tuple[float, ...]
    domain: str = ""

    @property
    def coverage_points(self) -> float:
        return sum(self.item_coverage)


def contenders(records: Sequence[RowRecord]) -> dict[str, dict[str, Contender]]:
    """By row id, by system: every answer that was judged for coverage."""
    found: dict[str, dict[str, Contender]] = {}
    for record in records:
        details = details_of(record)
        given = [i.get("coverage") for i in details.get("items") or []]
        items = [c for c in given if c is not None]
        if (not record.system or record.error or record.row_id is None or details.get("answer") is None
                or not items or len(items) < len(given)):
            continue
        found.setdefault(record.row_id, {})[record.system] = Contender(
            record.system, record.row_id, details.get("query") or "",
            battle_text(details["answer"], details.get("references") or []), tuple(float(c) for c in items),
            record.domain or "")
    return found


def battle_text(answer: str, references: Sequence[str]) -> str:
    """An answer as the pairwise judge reads it: its text, then the works it cites (as recorded)."""
    return answer + ("\n\nReferences:\n" + "\n".join(f"- {r}" for r in references) if references else "")


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


def paper_schedule(by_row: dict[str, dict[str, Contender]], per_domain: int = PAPER_BATTLES_PER_DOMAIN,
                   seed: int = 20260101) -> list[tuple[str, str, str]]:
    """The paper's battles: per domain, ``per_domain`` of them (at least as many as the domain has queries,
    at most every battle it offers), dealt to the pairs in turn so every matchup is represented evenly;
    each pair's queries a seeded draw without replacement from those both systems answered."""
    systems = sorted({s for answers in by_row.values() for s in answers})
    pairs = list(itertools.combinations(systems, 2))
    domains: dict[str, list[str]] = {}
    for row_id, answers in sorted(by_row.items()):
        domain = next(iter(answers.values())).domain
        domains.setdefault(domain, []).append(row_id)
    battles: list[tuple[str, str, str]] = []
    for domain, rows in sorted(domains.items()):
        rng = random.Random(f"{seed}\0{domain}")
        pools = {pair: [r for r in rows if pair[0] in by_row[r] and pair[1] in by_row[r]] for pair in pairs}
        for pool in pools.values():
            rng.shuffle(pool)
        target = min(max(per_domain, len(rows)), sum(len(p) for p in pools.values()))
        taken = {pair: 0 for pair in pairs}
        while target > 0:
            dealt = False
            for pair in pairs:
                if target and taken[pair] < len(pools[pair]):
                    battles.append((pools[pair][taken[pair]], *pair))
                    taken[pair] += 1
                    target -= 1
                    dealt = True
            if not dealt:
                break
    return battles


def planned_judge_calls(systems: int, rows_by_domain: Sequence[int], per_pair: Optional[int],
                        by_domain: bool = False) -> int:
    """Pairwise judge calls (two a battle) when ``systems`` systems answer every row: counted, not listed,
    so a 1,000-system schedule is refused before it takes any memory."""
    pairs = systems * (systems - 1) // 2
    if by_domain:
        battles = sum(min(max(PAPER_BATTLES_PER_DOMAIN, rows), pairs * rows) for rows in rows_by_domain)
    else:
        rows = sum(rows_by_domain)
        battles = pairs * (min(rows, per_pair) if per_pair is not None else rows)
    return 2 * battles


def judge_calls_refusal(calls: int, cap: int) -> Optional[str]:
    """Why a schedule of ``calls`` pairwise judge calls may not start under ``cap`` (0: no cap), or None."""
    if not cap or calls <= cap:
        return None
    return (f"researchqa: the pairwise schedule needs {calls:,} judge calls, more than the cap of {cap:,}; "
            f"to run it, pass --researchqa-max-judge-calls={calls} (or 0 for no cap), or judge fewer battles "
            "per pair with --researchqa-battles=N")


def schedule_refusal(rows: "Sequence[ResearchRow]", settings: Any) -> Optional[str]:
    """Before any row runs: the battles the selected rows would bring, if every system answers every row,
    against ``--researchqa-max-judge-calls``."""
    systems = len(settings.all_systems)
    if systems < 2 or not settings.judges:
        return None
    domains: dict[str, int] = {}
    for row in rows:
        domains[row.domain or ""] = domains.get(row.domain or "", 0) + 1
    calls = planned_judge_calls(systems, list(domains.values()), settings.battles, Rules.of(settings).by_domain)
    return judge_calls_refusal(calls, settings.max_judge_calls)


def ensemble(first: Contender, second: Contender, forward: str, backward: str,
             direct_points: float = DIRECT_WIN_POINTS) -> float:
    """The ensemble's verdict for ``first``: 1 win, 0 loss, 0.5 tie (Eq. 1 with ``direct_points`` per vote).

    ``forward`` is the direct judge's choice with ``first`` shown as A, ``backward``
    with ``second`` shown as A ("A", "B" or "tie").
    """
    first_votes = (forward == "A") + (backward == "B")
    second_votes = (forward == "B") + (backward == "A")
    first_total = direct_points * first_votes + first.coverage_points
    second_total = direct_points * second_votes + second.coverage_points
    if abs(first_total - second_total) < 1e-9:
        return 0.5
    return 1.0 if first_total > second_total else 0.0


def too_few_judged(judged: int, scheduled: int, errors: Sequence[str]) -> Optional[str]:
    """Why a tournament that judged fewer than half of its scheduled battles (``MIN_JUDGED_SHARE``) has no
    result to report (its judge failed on the rest), or None. The run then fails (``run::family_step``): an
    Elo lost or resting on a few battles must not read as a passed run (tester41 T2)."""
    if not scheduled or judged >= MIN_JUDGED_SHARE * scheduled:
        return None
    cause = f"; the pairwise judge failed on {scheduled - judged}, first: {errors[0]}" if errors else ""
    if not judged:
        return f"the Elo could not be computed: none of the {scheduled} scheduled battles was judged{cause}"
    return (f"the Elo rests on {judged} of the {scheduled} scheduled battles, fewer than half{cause}")


def run_tournament(records: Sequence[RowRecord], services: Any, settings: Any,
                   say: Callable[[str], None]) -> dict[str, Any]:
    """Schedule, judge and rate the battles; plain data for the renderer, the manifest and saved runs."""
    from ...llm.engine import ProviderError

    by_row = contenders(records)
    systems = sorted({s for answers in by_row.values() for s in answers})
    answered = sorted({r.system for r in records if r.system})
    if answered and not settings.judges:  # the first reason, and the second when there is one
        alone = f", and battles need two systems or more (only {answered[0]} answered)" if len(answered) == 1 else ""
        return {"note": f"no pairwise battles: no judge given (--researchqa-judge=MODEL){alone}"}
    if len(systems) == 1:  # the board's Elo "—" and battles 0 say why (tester41 T10)
        return {"note": f"no pairwise battles: only one system ({systems[0]}) has judged answers; battles and "
                        "Elo need two systems or more"}
    if not systems:
        if not answered:
            return {}
        # Said, not left out: every answer lacks a coverage verdict (its judges failed, or it had no rubric).
        return {"note": f"no pairwise battles: no answer of {', '.join(answered)} has a coverage verdict on every "
                        "rubric item (rows whose judges failed or that were not graded are not rated)"}
    rules = Rules.of(settings)
    planned = paper_schedule(by_row) if rules.by_domain else schedule(by_row, settings.battles)
    if not planned:
        return {"note": "no pairwise battles: no query was answered and judged by two systems"}
    say(f"researchqa: {len(planned)} pairwise battle(s) over {len(systems)} systems, each judged in both orders")
    pending = []
    for row_id, first, second in planned:
        a, b = by_row[row_id][first], by_row[row_id][second]
        judge = services.pairwise_judge(first, second)
        pending.append((a, b, judge.name, judge.submit(a.query, a.text, b.text), judge.submit(a.query, b.text, a.text)))
    battles: list[Battle] = []
    judged: list[dict[str, Any]] = []  # each battle as judged: which query, the direct judge in each order
    errors: list[str] = []
    consistent = 0
    step = max(1, -(-len(pending) // 4))  # progress at each quarter
    try:
        for done, (a, b, judge_name, forward, backward) in enumerate(pending, start=1):
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
            battles.append((a.system, b.system, ensemble(a, b, there, back, rules.direct_points)))
            judged.append({"row_id": a.row_id, "first": a.system, "second": b.system, "judge": judge_name,
                           "orders": [there, back], "score": battles[-1][2]})
    except KeyboardInterrupt:  # Ctrl-C: the run is interrupted (RunHooks._after_answers); say what is lost
        raise KeyboardInterrupt(f"the {len(battles)} of {len(planned)} scheduled battles judged so far are dropped "
                                "and no Elo is computed") from None
    ratings = bootstrap(systems, battles, prior_draws=rules.prior_draws) if battles else []
    finite = [r for r in ratings if math.isfinite(r.point)]
    judges = sorted({p[2] for p in pending})
    return {
        **({"failed": failed} if (failed := too_few_judged(len(battles), len(planned), errors)) else {}),
        "systems": systems,
        "judges": judges,
        # Each system's and judge's family as the run knows it (None: unknown, a model served on this machine).
        "families": {name: services.family_of(name) if services.is_model(name) or name in judges else None
                     for name in (*systems, *judges)},
        "battles": len(battles),
        "scheduled": len(planned),
        "per_pair": None if rules.by_domain else settings.battles,
        "rules": {"protocol": getattr(settings, "protocol", "project"), "direct_points": rules.direct_points,
                  "prior_draws": rules.prior_draws, "reported": rules.reported},
        "errors": errors,
        "connected": connected(systems, battles) if battles else None,  # no battle: no graph to speak of
        "order_consistent": consistent / len(battles) if battles else None,
        "elo": {r.system: {"median": r.median, "mean": r.mean, "sd": r.sd, "point": r.point} for r in finite},
        "bootstrap_diverged": ratings[0].diverged if finite else 0,  # resamples with no finite fit
        # Without a prior (the paper protocol), no finite fit at all: "+" a system of a group that won every battle
        # against the rest, "-" one that lost every such battle, "?" one between; the Elo table is then empty.
        "no_finite_fit": {r.system: "+" if r.point > 0 else "-" if r.point < 0 else "?"
                          for r in ratings if not math.isfinite(r.point)} if len(finite) < len(ratings) else None,
        "win_rates": {a: {b: list(v) for b, v in row.items()} for a, row in win_rates(battles).items()},
        "outcomes": [list(b) for b in battles],
        # first shown as A in orders[0], second shown as A in orders[1]; score: the ensemble's for first
        "judged": judged,
    }
