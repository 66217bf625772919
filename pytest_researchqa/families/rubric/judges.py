"""The rubric family's judges: rubric-item coverage on 0-4 (``coverage``), the direct pairwise judge
(``pairwise``), and the rubric seed's own released prompts for both (``coverage-paper``, ``pairwise-paper``,
under ``--researchqa-protocol=paper``), over the shared judge base of ``llm.judges``."""

from __future__ import annotations

import json
import re
import statistics
from typing import Any, Literal, Optional, Sequence

from pydantic import BaseModel, Field

from ...answers import Answer
from ...bundled import bundled_path
from ...llm.contract import MalformedReply
from ...llm.judges import Justification, ModelJudge, Score, fill, is_score, neutralize, own_words, validated_verdict
from .rows import ResearchRow

# ---- rubric-item coverage (0-4) -----------------------------------------------------


def generic_rubric() -> tuple[str, ...]:
    """The eight query-independent criteria (judges/generic_rubric.yaml)."""
    import yaml

    data = yaml.safe_load(bundled_path("judges", "generic_rubric.yaml").read_text(encoding="utf-8")) or {}
    return tuple(str(text) for text in data.values())


def answer_with_references(answer: "Answer") -> str:
    """A long-form answer as judges see it: its text, then the works it lists."""
    listed = "\n".join(f"- {c}" for c in answer.citations if c.strip())
    return str(answer.text) + (f"\n\nReferences:\n{listed}" if listed else "")


COVERAGE_MAX = 4


class ItemCoverage(BaseModel):
    item: int = Field(ge=1)
    justification: Justification
    coverage: Score = Field(ge=0, le=COVERAGE_MAX)


class CoverageVerdict(BaseModel):
    items: list[ItemCoverage]


def parse_coverage(text: Optional[str], item_count: int) -> dict[str, Any]:
    """Scores for exactly ``item_count`` items: {'items': [0-4...], 'justifications': [...], 'coverage': mean}.

    Every item must be scored once (numbered from 1); a missing, repeated or
    extra item makes the verdict malformed (retried, then a judge error).
    """
    verdict = validated_verdict(CoverageVerdict, text)
    numbers = sorted(i.item for i in verdict.items)
    if numbers != list(range(1, item_count + 1)):
        raise MalformedReply(f"the verdict scores items {numbers}; expected each of 1-{item_count} once")
    ordered = sorted(verdict.items, key=lambda i: i.item)
    scores = [i.coverage for i in ordered]
    return {"items": scores, "justifications": [i.justification for i in ordered],
            "coverage": statistics.fmean(scores)}


class RubricCoverageJudge(ModelJudge):
    """One call per answer: every rubric item scored 0 (not at all) to 4 (completely), with reasons.

    ``submit(query, items, answer)``: ``query`` is the research query, ``items``
    the rubric items' texts, ``answer`` the answer's text with its references.
    """

    kind = "coverage"
    paper_kind = "coverage-paper"
    same_judge_for_every_system = True
    verdict_model = CoverageVerdict
    cached_as_kind = True
    generic_rubric = False  # rows without items are judged on the generic criteria (set from the options)

    def take_settings(self, settings: Any) -> None:
        self.generic_rubric = settings.generic_rubric

    def subject(self, row: "ResearchRow", answer: "Answer") -> Optional[tuple[Any, ...]]:
        items = [item.text for item in row.rubric] or (list(generic_rubric()) if self.generic_rubric else [])
        return (row.query, tuple(items), answer_with_references(answer)) if items else None

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return coverage_consensus(by_judge)

    def key_parts(self, query: str, items: Sequence[str], answer: str) -> dict[str, Any]:
        return {"query": query, "items": list(items), "answer": answer}

    def render(self, query: str, items: Sequence[str], answer: str) -> str:
        numbered = "\n".join(f"{n}. {item}" for n, item in enumerate(items, 1))
        return fill(self.prompt.template, {"query": query, "items": numbered, "count": str(len(items)),
                                         "answer": neutralize(answer)})

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_coverage(text, len(subject[1]))

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        items, reasons = scores.get("items"), scores.get("justifications", [])
        return (isinstance(items, list) and len(items) == len(subject[1]) and all(is_score(v, 0, 4) for v in items)
                and isinstance(reasons, list) and all(map(own_words, reasons)))

    def schema(self, *subject: Any) -> dict[str, Any]:
        """Exactly one entry per rubric item (numbered 1-N), each coverage one of 0-4: the verdict's whole
        contract in the schema, so a grammar-constrained small model cannot score one item or a 7."""
        schema = super().schema()
        if subject:
            count = len(subject[1])
            item = schema["$defs"]["ItemCoverage"]
            item["properties"]["item"]["enum"] = list(range(1, count + 1))
            item["properties"]["justification"]["minLength"] = 1
            schema["properties"]["items"].update(minItems=count, maxItems=count)
            if self.spec.local:
                # A local server's grammar: one entry per item in order, each carrying its own number (a
                # 135M model held only to "N entries numbered 1-N" scored items [1, 1, 2, 3, 6, 7, 8, 8]).
                entries = []
                for number in range(1, count + 1):
                    entry = json.loads(json.dumps(item))
                    entry["properties"]["item"] = {"type": "integer", "enum": [number]}
                    entries.append(entry)
                listed = schema["properties"]["items"]
                listed.pop("items", None)
                listed["prefixItems"] = entries
        return schema


# ---- the direct pairwise judge --------------------------------------------------------

_PAIR_BLOCKS = ("RESPONSE_A", "RESPONSE_B")


class PairwiseVerdict(BaseModel):
    justification: Justification
    preferred: Literal["A", "B", "tie"]


def parse_preference(text: Optional[str]) -> dict[str, Any]:
    verdict = validated_verdict(PairwiseVerdict, text)
    return {"preferred": verdict.preferred, "justifications": verdict.justification}


class PairwiseJudge(ModelJudge):
    """Which of two answers to a research query is better: ``submit(query, first, second)``.

    It sees the answers in the order given; the tournament asks in both orders
    (positional bias) and combines the votes with coverage (the ensemble rule).
    """

    kind = "pairwise"
    paper_kind = "pairwise-paper"
    verdict_model = PairwiseVerdict
    cached_as_kind = True

    def key_parts(self, query: str, first: str, second: str) -> dict[str, Any]:
        return {"query": query, "first": first, "second": second}

    def render(self, query: str, first: str, second: str) -> str:
        return fill(self.prompt.template, {"query": query, "first": neutralize(first, _PAIR_BLOCKS),
                                           "second": neutralize(second, _PAIR_BLOCKS)}, blocks=_PAIR_BLOCKS)

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_preference(text)

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        reason = scores.get("justifications")
        return scores.get("preferred") in ("A", "B", "tie") and (reason is None or own_words(reason))


# ---- the rubric seed's own judges, as released (--researchqa-protocol=paper) ---------------------

PAPER_COVERAGE_LABELS = ("Not at all", "Barely", "Moderately", "Mostly", "Completely")  # 0-4


def parse_paper_coverage(text: Optional[str], item_count: int) -> dict[str, Any]:
    """The released coverage prompt's reply: one label per line, one line per item, in order.

    Blank lines are dropped and a label is matched without regard to case or surrounding
    whitespace, bullets or asterisks; a reply with another number of lines, or a line that is not
    one of the five labels, is malformed (repaired once, then a judge error; the released script
    asks again up to three times, then skips the answer).
    """
    lines = [line.strip().strip("-*• ").strip() for line in (text or "").splitlines()]
    lines = [line for line in lines if line]
    if len(lines) != item_count:
        raise MalformedReply(f"the verdict has {len(lines)} rating line(s); expected {item_count}, one per question")
    by_label = {label.lower(): n for n, label in enumerate(PAPER_COVERAGE_LABELS)}
    unknown = [line for line in lines if line.lower() not in by_label]
    if unknown:
        raise MalformedReply(f"{unknown[0]!r} is not one of {', '.join(PAPER_COVERAGE_LABELS)}")
    scores = [by_label[line.lower()] for line in lines]
    return {"items": scores, "justifications": [PAPER_COVERAGE_LABELS[n] for n in scores],
            "coverage": statistics.fmean(scores)}


class PaperCoverageJudge(RubricCoverageJudge):
    """The seed's released coverage prompt (judges/coverage_paper.md): the answer and the rubric items
    (no query), a label per item on a five-point scale, plain text (no JSON mode)."""

    kind = "coverage-paper"
    prompt_file = "coverage_paper"

    def render(self, query: str, items: Sequence[str], answer: str) -> str:
        return fill(self.prompt.template, {"items": "\n".join(items), "answer": answer}, blocks=())

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_paper_coverage(text, len(subject[1]))

    def schema(self, *subject: Any) -> dict[str, Any]:
        return {}


_PAPER_JUDGEMENT = re.compile(r'judgement"?\s*:\s*"?\s*Response\s*([12])', re.IGNORECASE)


def parse_paper_preference(text: Optional[str]) -> dict[str, Any]:
    """The released pairwise prompt's reply: ``**output: {"judgement": "Response 1"}**`` then a justification.
    Binary: "Response 1" is A, "Response 2" is B; anything else is malformed."""
    found = _PAPER_JUDGEMENT.search(text or "")
    if not found:
        raise MalformedReply('no "judgement": "Response 1" or "Response 2" in the verdict; '
                             f"it began: {(text or '').strip()[:120]!r}")
    return {"preferred": "A" if found.group(1) == "1" else "B",
            "justifications": (text or "")[found.end():].strip(' "}*\n') or "(none given)"}


class PaperPairwiseJudge(PairwiseJudge):
    """The seed's released binary pairwise prompt (judges/pairwise_paper.md): Response 1 or Response 2."""

    kind = "pairwise-paper"
    prompt_file = "pairwise_paper"

    def render(self, query: str, first: str, second: str) -> str:
        return fill(self.prompt.template, {"query": query, "first": first, "second": second}, blocks=())

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_paper_preference(text)

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        return scores.get("preferred") in ("A", "B", "tie")  # the released format's text after the label is free

    def schema(self, *subject: Any) -> dict[str, Any]:
        return {}


# The kind each rubric-family kind becomes under --researchqa-protocol=paper.


def coverage_consensus(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per item, the judges' mean coverage (0-4); overall, the mean of the items (None when no judge scored)."""
    scored = [s["items"] for s in by_judge.values() if "error" not in s and s.get("items")]
    if not scored:
        return {"consensus": {"coverage": None}, "spread": {"coverage": None}, "items": []}
    items = [statistics.fmean(column) for column in zip(*scored)]
    means = [statistics.fmean(s) for s in scored]
    return {"consensus": {"coverage": statistics.fmean(items)},
            "spread": {"coverage": (max(means) - min(means)) if len(means) > 1 else None},
            "items": items}


KINDS: dict[str, type[ModelJudge]] = {
    kind.kind: kind for kind in (RubricCoverageJudge, PairwiseJudge, PaperCoverageJudge, PaperPairwiseJudge)}
