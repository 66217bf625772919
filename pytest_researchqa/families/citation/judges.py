"""The citation family's judges: the anchored 1-5 rubric (``rubric``), claim enumeration (``claims``) and
whether an answer flags a false premise (``premise``), over the shared judge base of ``llm.judges``."""

from __future__ import annotations

import statistics
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field, ValidationError

from ...answers import Answer
from ...llm.contract import MalformedReply, json_object, schema_of, validation_problem
from ...llm.judges import (
    JudgePrompt,
    Justification,
    ModelJudge,
    Score,
    answer_as_data,
    fill,
    is_score,
    neutralize,
    own_words,
    small_model_schema,
    validated_verdict,
)
from .rows import Row

DIMENSIONS = ("factual_accuracy", "completeness")


class Graded(BaseModel):
    justification: Justification
    score: Score = Field(ge=1, le=5)


class RubricVerdict(BaseModel):
    factual_accuracy: Graded
    completeness: Graded


CLAIM_STATUSES = ("verified", "extra", "contradicted", "fabricated")


class Claim(BaseModel):
    claim: Justification
    status: Literal["verified", "extra", "contradicted", "fabricated"]


class ClaimsVerdict(BaseModel):
    claims: list[Claim]
    missed_points: list[Justification] = Field(default_factory=list)


def claims_scores(verdict: ClaimsVerdict) -> dict[str, int]:
    """The claims mode's deterministic scores (docs/judges.md).

    factual_accuracy = max(1, 5 - 2 x contradicted - 1 x fabricated), and 1 when
    the answer makes no claim; completeness = max(1, 5 - missed key points).
    A correct detail the short expected answer does not state ("extra") costs
    nothing: only claims that contradict it, or specifics it gives no ground for
    and that the answer presents as the paper's, do.
    """
    counts = {status: sum(1 for c in verdict.claims if c.status == status) for status in CLAIM_STATUSES}
    factual = 1 if not verdict.claims else max(1, 5 - 2 * counts["contradicted"] - counts["fabricated"])
    return {"factual_accuracy": factual, "completeness": max(1, 5 - len(verdict.missed_points))}


def claims_justifications(verdict: ClaimsVerdict) -> dict[str, str]:
    """What the claims mode's scores rest on, in words, for the record and failure messages."""
    counts = {status: [c.claim for c in verdict.claims if c.status == status] for status in CLAIM_STATUSES}
    factual = ", ".join(f"{len(v)} {k}" for k, v in counts.items()) or "no claims"
    for status in ("contradicted", "fabricated"):
        if counts[status]:
            factual += f"; {status}: " + "; ".join(counts[status])
    missed = "; ".join(verdict.missed_points)
    return {"factual_accuracy": factual,
            "completeness": f"missed: {missed}" if missed else "every key point addressed"}


def parse_verdict(text: Optional[str], mode: str) -> dict[str, Any]:
    """Scores by dimension, and under ``justifications`` the judge's reasons by dimension."""
    data = json_object(text, "verdict")
    try:
        if mode == "claims":
            claims = ClaimsVerdict.model_validate(data)
            return {**claims_scores(claims), "justifications": claims_justifications(claims)}
        verdict = RubricVerdict.model_validate(data)
    except ValidationError as error:
        raise MalformedReply(f"verdict {validation_problem(error)}") from None
    scores: dict[str, Any] = {
        "factual_accuracy": verdict.factual_accuracy.score, "completeness": verdict.completeness.score,
        "justifications": {"factual_accuracy": verdict.factual_accuracy.justification,
                           "completeness": verdict.completeness.justification}}
    return scores


def verdict_schema(mode: str) -> dict[str, Any]:
    """The JSON schema a judge's verdict must follow (for providers' structured-output modes)."""
    model = ClaimsVerdict if mode == "claims" else RubricVerdict
    schema: dict[str, Any] = small_model_schema(schema_of(model))
    return schema


def render_row_prompt(prompt: JudgePrompt, row: Row, answer: Answer) -> str:
    """The citation kinds' prompt for one row and answer: the row's notes and its type's guidance."""
    row_notes: list[str] = []
    if row.judge_rubric:
        row_notes.append(f"Criteria for this question: {row.judge_rubric}")
    if row.metadata.false_premise:
        row_notes.append(f"The question's false premise: {row.metadata.false_premise}")
    if row.metadata.required_sections:
        row_notes.append(f"Sections the answer must draw on: {', '.join(row.metadata.required_sections)}")
    if row.metadata.reasoning_chain:
        row_notes.append(f"How the required facts connect: {row.metadata.reasoning_chain}")
    values = {
        "type_guidance": prompt.guidance.get(row.question_type, ""),
        "row_guidance": "\n".join(row_notes),
        "question": row.question,
        "expected_answer": row.expected_answer,
        "answer": neutralize(answer_as_data(answer)),
    }
    return fill(prompt.template, values)


class CitationJudge(ModelJudge):
    """The citation family's kinds: one answer to a row, against its expected answer."""

    def key_parts(self, row: "Row", answer: "Answer") -> dict[str, Any]:
        parts = {"row": row.row_id, "question": row.question, "expected": row.expected_answer,
                 "answer": answer.text, "citations": answer.citations}
        # What else the prompt shows the judge: an edited criterion or premise is a new verdict.
        # Added only when set, so the keys of rows without them (and their cached verdicts) stay.
        premise = getattr(getattr(row, "metadata", None), "false_premise", None)
        extra = {"judge_rubric": getattr(row, "judge_rubric", None), "false_premise": premise}
        return {**parts, **{k: v for k, v in extra.items() if v}}

    def render(self, row: "Row", answer: "Answer") -> str:
        return render_row_prompt(self.prompt, row, answer)

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_verdict(text, self.kind)

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        reasons = scores.get("justifications", {})
        return (all(is_score(scores.get(d), 1, 5) for d in DIMENSIONS) and isinstance(reasons, dict)
                and all(map(own_words, reasons.values())))

    def schema(self, *subject: Any) -> dict[str, Any]:
        return verdict_schema(self.kind)

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return consensus(by_judge)


class AnchoredRubricJudge(CitationJudge):
    """factual_accuracy and completeness on anchored 1-5 scales (judges/rubric.md)."""

    kind = "rubric"
    verdict_model = RubricVerdict


class ClaimsJudge(CitationJudge):
    """Claims listed and marked; the 1-5 scores computed from the lists (judges/claims.md)."""

    kind = "claims"
    verdict_model = ClaimsVerdict


# ---- does the answer flag the false premise (yes/no) ------------------------------------

_PREMISE_REASON_CHARS = 400


class PremiseVerdict(BaseModel):
    reason: Justification = Field(max_length=_PREMISE_REASON_CHARS)
    flagged: bool


def parse_premise(text: Optional[str]) -> dict[str, Any]:
    """{'flagged': bool, 'reason': str}: whether the answer refuses or corrects the premise, and why."""
    verdict = validated_verdict(PremiseVerdict, text)
    return {"flagged": verdict.flagged, "reason": verdict.reason.strip()}


class PremiseJudge(ModelJudge):
    """Does an answer to a false-premise question refuse or correct the premise? (judges/premise.md)

    ``submit(question, false_premise, answer_text)``; the verdict is ``{'flagged': bool, 'reason': str}``.
    premise_flagged comes from it under ``--researchqa-flagged-judge`` instead of the text heuristic.
    """

    kind = "premise"
    verdict_model = PremiseVerdict
    cached_as_kind = True

    def judges_row(self, row: Any) -> bool:
        """Only rows graded by refusal: false-premise questions (adversarial, unless expected_refusal is false)."""
        return (getattr(row, "question_type", None) == "adversarial"
                and getattr(row, "expected_refusal", None) is not False)

    def subject(self, row: "Row", answer: "Answer") -> Optional[tuple[str, str, str]]:
        """Nothing to judge on a row not graded by refusal, nor when the system itself said it refused."""
        if not self.judges_row(row) or answer.refused is True:
            return None
        premise = getattr(getattr(row, "metadata", None), "false_premise", None) or ""
        return (row.question, premise, answer.text)

    def key_parts(self, question: str, premise: str, answer: str) -> dict[str, Any]:
        return {"question": question, "false_premise": premise, "answer": answer}

    def render(self, question: str, premise: str, answer: str) -> str:
        return fill(self.prompt.template, {"question": question, "false_premise": premise or "(not stated)",
                                           "answer": neutralize(answer)})

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_premise(text)

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        return isinstance(scores.get("flagged"), bool) and own_words(scores.get("reason"))


def consensus(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
    scored = [s for s in by_judge.values() if "error" not in s]
    result: dict[str, Any] = {"consensus": {}, "spread": {}}
    for dimension in DIMENSIONS:
        values = [s[dimension] for s in scored]
        result["consensus"][dimension] = statistics.fmean(values) if values else None
        result["spread"][dimension] = (max(values) - min(values)) if len(values) > 1 else None
    return result


KINDS: dict[str, type[ModelJudge]] = {kind.kind: kind for kind in (AnchoredRubricJudge, ClaimsJudge, PremiseJudge)}
