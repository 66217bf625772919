"""Assertions that record metric values and explain every failure.

Each assertion records its metric (for the leaderboard) before it decides,
so a failing row still counts with its real score: into the recorder passed
as ``recorder=``, else, inside a researchqa test, the row's own recorder (see
:mod:`records`). A passing assertion does no more than the metric needs; the
nearest-passage search and message building run only when it fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from ...records import CitationVerdict, Recorder, current_recorder
from . import metrics
from .answers import Answer
from .details import CitationDetails, PremiseJudgeDetail, record_details
from .matcher import match_index
from .rows import Row, SectionEvidence

if TYPE_CHECKING:  # pragma: no cover
    from ...llm.judges import ModelJudge
    from ...papers import Paper
    from .matcher import MatchIndex

PaperLike = Union[str, "Paper", "MatchIndex"]


def _quote(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return '"' + (flat if len(flat) <= width else flat[:width] + "…") + '"'


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _fmt(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}"


def _record(recorder: Optional[Recorder], metric: str, value: Optional[float]) -> None:
    """Record a metric into the explicit recorder, else the running researchqa test's, else nowhere."""
    target = current_recorder(recorder)
    if target is not None:
        target.metric(metric, value)


def cited_verbatim(answer: Answer, paper: PaperLike, *, min_accuracy: float = 1.0,
                   recorder: Optional[Recorder] = None) -> Optional[float]:
    """Every citation (or ``min_accuracy`` of them) must be grounded in the paper.

    Records ``citation_accuracy``; returns it (None when nothing checkable is
    cited). Citations too short to verify are reported, never counted.
    """
    __tracebackhide__ = True
    index = match_index(paper)
    matches = metrics.match_citations(answer, index)
    accuracy = metrics.citation_accuracy(matches)
    _record(recorder, "citation_accuracy", accuracy)
    if accuracy is None or accuracy >= min_accuracy:
        return accuracy
    counted = metrics.evidence(matches)
    failing = [(n, m) for n, m in enumerate(matches, start=1) if m.is_evidence and not m.grounded]
    lines = [
        f"citation accuracy {_fmt(accuracy)} < {min_accuracy:.2f}: "
        f"{len(failing)} of {len(counted)} citations not grounded in the paper"
    ]
    for number, found in failing:
        lines.append(f"  [{number}] {_quote(found.citation)}")
        lines.append(_indent(found.explain(), "      "))
    raise AssertionError("\n".join(lines))


def covers_sections(
    answer: Answer,
    row: Row,
    paper: PaperLike | None = None,
    *,
    min_coverage: float = 1.0,
    recorder: Optional[Recorder] = None,
) -> Optional[float]:
    """The citations must reach every expected section (AND), any alternative (OR).

    Records ``section_coverage`` and ``citation_precision``; returns coverage
    (None for rows without expected sections, and for false-premise rows, which
    are graded by refusal). With ``paper``, citations and alternatives are
    compared as located passages; without, as texts.
    """
    __tracebackhide__ = True
    if metrics.expects_refusal(row):
        # A false-premise row is graded by refusal; its listed refutation passages are examples.
        return None
    index = match_index(paper) if paper is not None else None
    return _coverage(answer, row, index, metrics.section_report(answer.citations, row, index), min_coverage, recorder)


def _coverage(answer: Answer, row: Row, index: Optional["MatchIndex"], report: metrics.SectionReport,
              min_coverage: float, recorder: Optional[Recorder]) -> Optional[float]:
    """``covers_sections`` on a section report made already (``check_answer`` makes one a row)."""
    __tracebackhide__ = True
    coverage = report.section_coverage
    _record(recorder, "section_coverage", coverage)
    _record(recorder, "citation_precision", report.citation_precision)
    if coverage is None or coverage >= min_coverage:
        return coverage
    sections = row.expected_references
    missed = [s for s, hit in zip(sections, report.covered) if not hit]
    lines = [
        f"section coverage {_fmt(coverage)} < {min_coverage:.2f}: "
        f"missed {len(missed)} of {len(sections)} required sections"
    ]
    for section in missed:
        lines.append(f"  missed {section.section_label!r}, e.g. {_quote(section.alternatives[0], 90)}")
    if not answer.citations:
        lines.append("  the answer cites nothing")
    else:
        lines.append("  cited instead:")
        reached_by = dict(zip(report.counted, report.sections_per_citation))
        for number, citation in enumerate(answer.citations, start=1):
            where = _cited_where(citation, number - 1, reached_by, sections, index)
            lines.append(f"  [{number}] {_quote(citation, 80)}{where}")
    raise AssertionError("\n".join(lines))


def _cited_where(citation: str, position: int, reached_by: dict[int, frozenset[int]], sections: list["SectionEvidence"],
                 index: Optional["MatchIndex"]) -> str:
    """Where one citation is in the paper and which expected sections it reaches, for the failure message."""
    found = index.match(citation) if index is not None else None
    if position not in reached_by:  # left out of coverage: too short to verify, or not evidence at all
        verdict = found.verdict.replace("_", " ") if found is not None else "too short"
        return f" ({verdict}) -> not counted"
    where = ""
    if found is not None:
        if not found.grounded:
            where = " (not in the paper)"
        elif found.pages:
            where = f" (page {', '.join(map(str, found.pages))})"
    hit = reached_by[position]
    if hit:
        return f"{where} -> " + ", ".join(repr(sections[i].section_label) for i in sorted(hit))
    if not metrics.covers_enough(citation):
        return (f"{where} -> too short to cover a section (fewer than {metrics.MIN_COVERING_WORDS} words"
                f" or {metrics.MIN_COVERING_KEY} letters)")
    return f"{where} -> no expected section"


def grounded_refusal(answer: Answer, row: Row, paper: PaperLike, *,
                     recorder: Optional[Recorder] = None) -> Optional[float]:
    """On a false-premise row, the answer may refuse or refute, but never with invented evidence.

    Records ``refusal_correctness`` (None on rows that are not graded by refusal:
    other question types, and adversarial rows with ``expected_refusal: false``).
    """
    __tracebackhide__ = True
    index = match_index(paper)
    matches = metrics.match_citations(answer, index)
    score = metrics.refusal_correctness(row, matches)
    _record(recorder, "refusal_correctness", score)
    if score is None or score >= 1.0:
        return score
    stance = "refused" if answer.is_refusal else "did not refuse"
    lines = [f"refusal correctness 0: the answer {stance} and backed itself with fabricated evidence"]
    if row.metadata.false_premise:
        lines.append(f"  false premise: {row.metadata.false_premise}")
    for number, found in enumerate(matches, start=1):
        if found.is_evidence and not found.grounded:
            lines.append(f"  [{number}] {_quote(found.citation)}")
            lines.append(_indent(found.explain(), "      "))
    raise AssertionError("\n".join(lines))


def flags_premise(answer: Answer, row: Row, *, recorder: Optional[Recorder] = None,
                  judge: "Optional[ModelJudge]" = None) -> Optional[float]:
    """On a false-premise row, the answer must refuse or correct the premise.

    Records ``premise_flagged`` (None on rows that are not graded by refusal).
    The system's own ``refused=True`` counts; otherwise the answer's text is read
    for a refusal or a correction ("there was no placebo arm", "three cities, not five"):
    by the text heuristic, or, given ``judge`` (the ``researchqa_premise_judge`` fixture,
    ``--researchqa-flagged-judge``), by that model, whose reason is recorded. A judge that
    gives no verdict after its retries raises ``ProviderError``, never a 0; a row whose test takes the
    fixture has its verdict asked in its setup already (``row_setup``), so the row errors there in one line.
    """
    __tracebackhide__ = True
    verdict: Optional[PremiseJudgeDetail] = None
    subject = judge.subject(row, answer) if judge is not None else None  # None: refused, or not a false premise
    if judge is not None and subject is not None:
        verdict = premise_verdict(judge, subject)
        if (target := current_recorder(recorder)) is not None:
            record_details(target, {"premise_judge": verdict})
        score: Optional[float] = 1.0 if verdict["flagged"] else 0.0
    else:
        score = metrics.premise_flagged(row, answer)
    _record(recorder, "premise_flagged", score)
    if score is None or score >= 1.0:
        return score
    lines = ["premise not flagged: the answer neither refused nor corrected the question's false premise"]
    if row.metadata.false_premise:
        lines.append(f"  false premise: {row.metadata.false_premise}")
    lines.append(f"  answer: {_quote(answer.text, 160)}")
    if verdict is not None:
        lines.append(f"  judge {verdict['judge']}: {_quote(verdict['reason'], 160)}")
    raise AssertionError("\n".join(lines))


def premise_verdict(judge: "ModelJudge", subject: tuple[str, ...]) -> PremiseJudgeDetail:
    """The premise judge's verdict on one answer: {'judge', 'flagged', 'reason'} (from its cache, or the call
    already in flight, when there is one)."""
    entry = judge.submit(*subject).result()
    scores = entry["scores"]
    return {"judge": judge.name, "flagged": bool(scores["flagged"]), "reason": str(scores.get("reason", ""))}


def judged(answer: Answer, row: Row, judges: "Sequence[ModelJudge]", *, minimum: Optional[dict[str, float]] = None,
           recorder: Optional[Recorder] = None) -> dict[str, Any]:
    """Have every judge score the answer; record the scores and their consensus.

    A judge whose verdict never parses is recorded as an error for this row
    (never a 0). With ``minimum`` ({"factual_accuracy": 3, ...}) the row fails
    when the consensus falls below it.
    """
    __tracebackhide__ = True
    from ...llm.judges import judge_all
    from .judges import consensus

    result = judge_all(judges, row, answer, combine=consensus)
    if (target := current_recorder(recorder)) is not None:
        target.judge(result)
    if minimum:
        low = {d: (score, v) for d, v in minimum.items()
               if (score := result.consensus.get(d)) is not None and score < v}
        if low:
            lines = ["judge consensus below the minimum: " + ", ".join(
                f"{d} {score:.2f} < {v}" for d, (score, v) in low.items())]
            lines += result.reason_lines(dimensions=list(low))
            raise AssertionError("\n".join(lines))
    return result.to_plain()


def check_answer(answer: Answer, row: Row, paper: PaperLike, *, recorder: Optional[Recorder] = None,
                 premise_judge: "Optional[ModelJudge]" = None) -> None:
    """Run every assertion, record all metrics, then fail once with every reason.

    Answerable rows are graded on citation accuracy, section coverage and precision;
    false-premise rows on refusal correctness and whether the premise was flagged
    (see docs/metrics.md; by ``premise_judge`` when given, else by the text heuristic).
    Answers given without a citation contract (baseline mode) are not graded on citations.
    """
    __tracebackhide__ = True
    if not answer.cites:
        return
    index = match_index(paper)
    matches = metrics.match_citations(answer, index)
    target = current_recorder(recorder)
    if target is not None:
        target.citations([CitationVerdict.of(found.verdict, found.grounded, tuple(found.pages)) for found in matches])
    refusal = metrics.expects_refusal(row)
    # Which expected sections each citation reaches, worked out once a row: for each citation's view, the
    # sections shown and the coverage check (a false-premise row, graded by refusal, needs it for the views only).
    report = (metrics.section_report(answer.citations, row, index)
              if not refusal or (target is not None and row.expected_references) else None)
    if target is not None:  # what the HTML report shows of each citation
        from .views import citation_views

        shown: CitationDetails = {"citations": citation_views(matches, index, row, report)}
        if report is not None and not refusal:
            shown["sections"] = [{"section": s.section_label, "covered": hit}
                                 for s, hit in zip(row.expected_references, report.covered)]
        record_details(target, shown)
    checks: list[Callable[[], object]]
    if report is None or refusal:
        checks = [lambda: grounded_refusal(answer, row, index, recorder=recorder),
                  lambda: flags_premise(answer, row, recorder=recorder, judge=premise_judge)]
    else:
        graded = report
        checks = [lambda: cited_verbatim(answer, index, recorder=recorder),
                  lambda: _coverage(answer, row, index, graded, 1.0, recorder)]
    failures = []
    for check in checks:
        try:
            check()
        except AssertionError as failure:
            failures.append(str(failure))
    if failures:
        raise AssertionError("\n".join(failures))
