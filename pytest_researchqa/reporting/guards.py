"""The judges' reliability guards, as structured findings. Pure.

Each guard is a (kind, severity, message): same-family judging, the flip rate
of re-judged verdicts, saturation (the judges separate systems far less than
the deterministic metrics do) and contradictions (a high factual score on a
row with a fabricated citation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Sequence

from ..families import Family
from ..records import RowRecord
from .summaries import by_system, spread

# A judge dimension whose spread across systems (rescaled to 0-1) is under this share of
# the deterministic metrics' spread is reported as saturated.
SATURATION_RATIO = 0.5


@dataclass(frozen=True)
class Guard:
    kind: str  # "same_family", "flip_rate", "saturation", "contradiction"
    severity: str  # "warning" or "info"
    message: str


def judge_guards(records: Sequence[RowRecord], family: Family, local_models: AbstractSet[str] = frozenset()
                 ) -> list[Guard]:
    """``local_models``: the run's models served on this machine, whose family is unknown unless their served
    name says it (``llm_params.model_family``): no same-family warning for them."""
    from ..llm_params import model_family, same_family

    judged = [r for r in records if r.judge and r.graded]
    if not judged:
        return []
    dimensions = [d.name for d in family.judge_dimensions]
    guards = []
    pairs = sorted({(r.system or "", judge) for r in judged if r.judge for judge in r.judge.by_judge})
    for system, judge in pairs:
        judge_family = model_family(judge, local=judge in local_models)
        if same_family(model_family(system, local=system in local_models), judge_family):
            guards.append(Guard("same_family", "warning",
                                f"warning: judge {judge} grades {system}, a model of the same family "
                                f"({judge_family}): same-family judges tend to over-rate their own"))
    probes = [verdicts for r in judged if r.judge and r.judge.repeats for verdicts in r.judge.repeats.values()
              if verdicts]
    if probes:
        flips = total = 0
        for verdicts in probes:
            for d in dimensions:
                seen = {score for verdict in verdicts if (score := verdict.score(d)) is not None}
                if seen:
                    total += 1
                    flips += len(seen) > 1
        if total:
            repeats = max(len(verdicts) for verdicts in probes) - 1
            guards.append(Guard("flip_rate", "info",
                                f"flip rate: {flips}/{total} judge scores ({flips / total:.1%}) changed when "
                                f"{len(probes)} sampled verdicts were re-judged {repeats} more time(s)"))
    summaries = by_system(records, family.metrics, dimensions)
    if len(summaries) >= 2:
        deterministic = max((v for m in family.metric_names
                             if (v := spread(s.means[m] for s in summaries)) is not None), default=None)
        for dimension in family.judge_dimensions:
            judge_spread = spread(s.judge_means.get(dimension.name) for s in summaries)
            if judge_spread is None or deterministic is None:
                continue
            rescaled = judge_spread / (dimension.high - dimension.low)
            if rescaled < SATURATION_RATIO * deterministic:
                guards.append(Guard("saturation", "warning",
                                    f"saturation: the judges' {dimension.label} separates the systems by "
                                    f"{judge_spread:.3f} on {dimension.low}-{dimension.high} ({rescaled:.3f} "
                                    f"rescaled to 0-1), the citation metrics by {deterministic:.3f}: "
                                    "read the deterministic columns first"))
    for r in judged:
        factual = r.judge.consensus.get("factual_accuracy") if r.judge else None
        accuracy = r.metrics.get("citation_accuracy")
        if factual is not None and factual >= 4 and accuracy is not None and accuracy < 1:
            guards.append(Guard("contradiction", "warning",
                                f"contradiction: {r.nodeid or r.row_id}: judged factual {factual:.1f} although a "
                                f"citation is fabricated (citation accuracy {accuracy:.2f})"))
    return guards
