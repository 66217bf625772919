"""The rubric family's leaderboard: Coverage % with its interval, Elo, the win-rate matrix, coverage per
general domain, the rubric-kind error table and the bias checks, as lines of text and tables that the
terminal, the Markdown and the HTML report each draw (``Family.board``). Renders only."""

from __future__ import annotations

import statistics
from typing import Any, Optional, Sequence

from ...records import RowRecord, answers_cost, verdicts_cost
from ...stats import bootstrap_mean
from .. import Board, Family, Table
from . import GENERAL_DOMAINS, METRICS, domain_marker
from .checks import system_checks
from .details import details_of
from .kinds import ITEM_KINDS

_SHORT_DOMAINS = {"health_sciences_medicine": "health", "life_earth_sciences": "life/earth",
                  "engineering_computer_science": "eng/CS", "physical_sciences": "physical",
                  "social_sciences": "social", "humanities": "humanities", "economics": "economics",
                  "other_domain": "other"}
LEAKAGE_NOT_CHECKED = ("leakage: not checked: no row names the survey its rubric was mined from (survey_title; the "
                       "released benchmark files do not carry it)")


_UNBOUNDED = {"+": "+∞", "-": "−∞"}  # no finite fit (the paper protocol): a group that won or lost every battle


def no_fit_note(no_fit: dict[str, str], rated: Sequence[str] = ()) -> str:
    """Why the paper protocol prints no finite Elo for some systems (or any), naming those that won or lost every
    battle against the others; ``rated``: the systems still rated among themselves (bradley_terry.finite_core)."""
    won = ", ".join(s for s, side in no_fit.items() if side == "+")
    lost = ", ".join(s for s, side in no_fit.items() if side == "-")
    apart = ", ".join(s for s, side in no_fit.items() if side == "?")
    parts = (f"{won} won every battle against the others (+∞)" if won else "",
             f"{lost} lost every one against the others (−∞)" if lost else "",
             f"{apart} has no finite value either, between them or apart (—)" if apart else "")
    sides = "; ".join(part for part in parts if part)
    head = ("Elo: no finite value for some systems" if rated else "Elo: no finite value") + (
        ": plain Bradley-Terry (the paper protocol, no prior) has none when a group of systems wins every battle "
        f"against the rest: {sides}")
    rest = (f"; {', '.join(rated)} are rated on their battles among themselves" if rated else "")
    return (f"{head}{rest}; the win matrix holds the battles, and the project protocol's virtual draws give finite "
            "scores")


def _pct(value: Optional[float], digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f}"


def _dollars(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.4f}"


def _by_system(records: Sequence[RowRecord]) -> dict[str, list[RowRecord]]:
    grouped: dict[str, list[RowRecord]] = {}
    for record in records:
        if record.system:
            grouped.setdefault(record.system, []).append(record)
    return grouped


def _coverages(records: Sequence[RowRecord]) -> list[float]:
    return [c for r in records if r.graded and (c := r.metrics.get("coverage")) is not None]


def _reported(results: Optional[dict[str, Any]]) -> str:
    """The bootstrap statistic shown as Elo: the median (project), or the mean Table 3 prints (paper protocol)."""
    return str(((results or {}).get("rules") or {}).get("reported", "median"))


def system_order(grouped: dict[str, list[RowRecord]], results: Optional[dict[str, Any]]) -> list[str]:
    """Best first: by Elo when battles were rated, else by Coverage %; ties by name."""
    elo = (results or {}).get("elo") or {}
    unbounded = {"+": float("inf"), "-": -float("inf"), "?": 0.0}
    no_fit = (results or {}).get("no_finite_fit") or {}

    def key(system: str) -> tuple[float, float, str]:
        coverage = _coverages(grouped[system])
        mean = statistics.fmean(coverage) if coverage else -1.0
        rank = (elo[system][_reported(results)] if system in elo
                else unbounded[no_fit[system]] if system in no_fit else float("-inf"))
        return (-rank, -mean, system)

    return sorted(grouped, key=key)


def main_table(records: Sequence[RowRecord], results: Optional[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    grouped = _by_system(records)
    elo = (results or {}).get("elo") or {}
    no_fit = (results or {}).get("no_finite_fit") or {}
    played: dict[str, int] = {}
    for first, second, _ in (results or {}).get("outcomes") or []:
        played[first] = played.get(first, 0) + 1
        played[second] = played.get(second, 0) + 1
    judging = any(r.judge is not None for r in records)
    headers = ["system", METRICS[0].board_label, "95% CI", "Elo", "± SD", "battles", "avg words", "graded",
               "not graded", "errors", "judge err", "latency s", "cost $", *(["judge $"] if judging else [])]
    rows = []
    for system in system_order(grouped, results):
        rs = grouped[system]
        coverage = _coverages(rs)
        graded = [r for r in rs if r.graded and r.metrics.get("coverage") is not None]
        # Each query is its own cluster: the same bootstrap as the citation family's papers.
        found = bootstrap_mean([str(r.row_id) for r in graded], coverage) if coverage else None
        interval = (found.low, found.high) if found is not None and found.low is not None else None
        words = [float(w) for r in rs if (w := details_of(r).get("words")) is not None]
        latencies = [r.usage.latency_s for r in rs if r.usage.latency_s is not None and not r.error]
        rating = elo.get(system)
        rows.append([
            system, _pct(statistics.fmean(coverage) if coverage else None),
            f"{_pct(interval[0])}–{_pct(interval[1])}" if interval else "—",
            f"{rating[_reported(results)]:.0f}" if rating else _UNBOUNDED.get(no_fit.get(system, ""), "—"),
            f"{rating['sd']:.0f}" if rating else "—",
            str(played.get(system, 0)), f"{statistics.fmean(words):.0f}" if words else "—", str(len(coverage)),
            str(sum(1 for r in rs if r.outcome == "skipped")), str(sum(1 for r in rs if r.error)),
            str(sum(1 for r in rs if r.judge_failures)),
            f"{statistics.fmean(latencies):.2f}" if latencies else "—",
            _dollars(answers_cost(rs)), *([_dollars(verdicts_cost(rs))] if judging else []),
        ])
    return headers, rows


def domain_table(records: Sequence[RowRecord], order: list[str]) -> tuple[list[str], list[list[str]]]:
    domains = [d for d in (*GENERAL_DOMAINS, "other_domain")
               if any(domain_marker(details_of(r).get("general_domain") or r.domain) == d and _coverages([r])
                      for r in records)]
    grouped = _by_system(records)
    rows = []
    for system in order:
        cells = [system]
        for domain in domains:
            values = _coverages([r for r in grouped[system]
                                 if domain_marker(details_of(r).get("general_domain") or r.domain) == domain])
            cells.append(_pct(statistics.fmean(values)) if values else "—")
        rows.append(cells)
    return ["system", *(_SHORT_DOMAINS[d] for d in domains)], rows


def kind_table(records: Sequence[RowRecord], order: list[str]) -> tuple[list[str], list[list[str]]]:
    """Per system and rubric-item kind: the share of items not completely covered (coverage below 4)."""
    grouped = _by_system(records)
    rows = []
    for system in order:
        counts = {kind: [0, 0] for kind in ITEM_KINDS}
        for record in grouped[system]:
            if not record.graded:
                continue
            for item in details_of(record).get("items") or []:
                coverage = item.get("coverage")
                if coverage is None or item.get("kind") not in counts:
                    continue
                counts[item["kind"]][1] += 1
                counts[item["kind"]][0] += coverage < 4
        rows.append([system, *(f"{100 * missed / total:.0f}% ({missed}/{total})" if total else "—"
                               for missed, total in counts.values())])
    return ["system", *ITEM_KINDS], rows


def win_table(results: dict[str, Any], order: list[str]) -> tuple[list[str], list[list[str]]]:
    rates = results.get("win_rates") or {}
    systems = [s for s in order if s in rates]
    rows = []
    for a in systems:
        cells = [a]
        for b in systems:
            rate = rates[a].get(b)
            cells.append("·" if a == b else (f"{100 * rate[0]:.0f}% ({rate[1]})" if rate else "—"))
        rows.append(cells)
    return ["row beats column", *systems], rows


def check_lines(records: Sequence[RowRecord], order: list[str]) -> list[str]:
    grouped = _by_system(records)
    lines = []
    for system in order:
        checks = system_checks(system, grouped[system])
        parts = []
        if checks.cited:
            parts.append(f"date cutoff: {checks.late}/{checks.cited} dated citations after the cutoff "
                         f"({100 * checks.late / checks.cited:.0f}%); Coverage % with such a citation "
                         f"{_pct(checks.coverage_with_late)}, without {_pct(checks.coverage_without_late)}")
        else:
            parts.append("date cutoff: no dated citation to check")
        if checks.leak_checked:
            parts.append(f"leakage: the source survey is cited in {checks.leaked}/{checks.leak_checked} answers; "
                         f"Coverage % leaked {_pct(checks.coverage_leaked)}, not leaked "
                         f"{_pct(checks.coverage_not_leaked)}")
        if checks.length_r is not None:
            parts.append(f"length vs coverage: r = {checks.length_r:+.2f} over judged answers "
                         f"(avg {checks.words:.0f} words)")
        lines.append(f"{system}: " + "; ".join(parts))
    if not any(details_of(r).get("survey_title") for r in records):
        lines.append(LEAKAGE_NOT_CHECKED)
    return lines



def audit(records: Sequence[RowRecord]) -> str:
    """The dataset as the rubric family reads it: rows, rubric items and their kinds, dates, survey titles."""
    rows = [r for r in records if not r.error]
    items = [i for r in rows for i in details_of(r).get("items") or []]
    kinds = {kind: sum(1 for i in items if i.get("kind") == kind) for kind in ITEM_KINDS}
    with_items = sum(1 for r in rows if details_of(r).get("items"))
    lines = [f"{len(rows)} row(s) loaded; no system ran",
             f"{with_items} with rubric items ({len(items)} items, {len(items) / with_items:.1f} per row)"
             if with_items else "no row has rubric items: answers can be saved, not graded "
                                "(--researchqa-generic-rubric grades them on generic criteria)",
             f"{sum(1 for r in rows if details_of(r).get('date'))} with a date cutoff, "
             f"{sum(1 for r in rows if details_of(r).get('survey_title'))} naming their source survey"]
    if items:
        lines.append("item kinds: " + ", ".join(f"{kind} {count} ({100 * count / len(items):.0f}%)"
                                                for kind, count in kinds.items()))
    return "\n".join(lines)


def tournament_warnings(results: dict[str, Any]) -> list[str]:
    """What makes the battles' Elo less than it seems: same-family judges, battles left out, resamples with
    no finite fit, groups never compared."""
    from ...llm_params import model_family, same_family

    known = results.get("families")  # the run's own (None: unknown, served on this machine); older runs: the names'

    def family(name: str) -> Optional[str]:
        return known.get(name) if isinstance(known, dict) else model_family(name)

    warnings = []
    for judge in results.get("judges") or []:
        same = [s for s in results.get("systems") or [] if same_family(family(s), family(judge))]
        if same:
            warnings.append(f"warning: pairwise judge {judge} is of the same family ({family(judge)}) as "
                            f"{', '.join(same)}: same-family judges tend to prefer their own (--researchqa-judge=auto "
                            "picks another family)")
    if results.get("errors"):
        warnings.append(f"warning: {len(results['errors'])} battle(s) left out, their judge failed: "
                        + "; ".join(results["errors"][:3]))
    if results.get("no_finite_fit"):
        warnings.append("warning: " + no_fit_note(results["no_finite_fit"], sorted(results.get("elo") or {})))
    elif results.get("bootstrap_diverged"):
        warnings.append(f"warning: {results['bootstrap_diverged']} of the bootstrap's resamples have a system "
                        "(or a group of systems) winning or losing every battle against the others: they have no "
                        "finite Bradley-Terry fit (without the project protocol's prior draws), so the Elo mean and "
                        "± SD are not reliable with this few battles per pair (more queries or --researchqa-battles)")
    if results.get("connected") is False:
        warnings.append("warning: the comparison graph is not connected: Elo scores of separate groups are not "
                        "comparable")
    return warnings


def leaderboard(records: Sequence[RowRecord], family: Family, results: Optional[dict[str, Any]] = None) -> Board:
    """The leaderboard as lines of text and tables, in reading order: each medium (terminal, Markdown, the
    HTML report) draws the same board."""
    grouped = _by_system(records)
    if not grouped:  # --researchqa-audit: what the rows hold; nothing answered
        return [audit(records)]
    order = system_order(grouped, results)
    note = family.scope_note
    if not ((results or {}).get("rules")):  # no tournament ran: no Elo to say how it was made (tester52 LOW-7)
        note = note.split("; Elo:", 1)[0]
    elif _reported(results) != "median":  # the paper protocol shows the bootstrap's mean, as its Table 3 does
        note = note.replace("median of 1,000 bootstraps", f"{_reported(results)} of 1,000 bootstraps")
    parts: Board = [Table("", *main_table(records, results)), note]
    skipped: dict[str, int] = {}
    for record in records:
        reason = details_of(record).get("not_graded")
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
    parts += [f"{count} row(s) not graded: {reason}" for reason, count in skipped.items()]
    if any(_coverages(rs) for rs in grouped.values()):
        parts += [Table("by general domain (Coverage %)", *domain_table(records, order)),
                  Table("rubric items not completely covered (coverage < 4), by kind", *kind_table(records, order))]
    results = results or {}
    if results.get("note"):
        parts.append(str(results["note"]))
    if results.get("win_rates"):
        per_pair = results.get("per_pair")
        parts += [f"pairwise: {results['battles']} battle(s) ({'all shared queries' if per_pair is None else per_pair}"
                  f" per pair), judged by {', '.join(results.get('judges') or [])} in both orders "
                  "(ensemble: 4 points per direct win + the sum of item coverages)",
                  Table("", *win_table(results, order))]
        consistent = results.get("order_consistent")
        if consistent is not None:
            parts.append(f"the direct judge gave the same verdict in both orders in {100 * consistent:.0f}% of "
                         "battles")
    parts += tournament_warnings(results)
    if any(_coverages(rs) for rs in grouped.values()) or any(details_of(r).get("answer") for r in records):
        parts.append("checks:")
        parts += [f"  {line}" for line in check_lines(records, order)]
    return [p for p in parts if p]
