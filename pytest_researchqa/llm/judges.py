"""LLM judges: one small class per kind over the shared model caller.

Kinds: the anchored 1-5 rubric (``rubric``), claim enumeration (``claims``) and
whether an answer flags a false premise (``premise``) for the citation family;
rubric-item coverage on 0-4 (``coverage``) and the direct pairwise judge
(``pairwise``) for the rubric family. Every kind shares the model runner (slots,
pacing, retries), the on-disk cache (a re-run makes no call; the prompt's hash is
in every key, so editing a prompt re-judges) and the structured-output path with
the systems under test. A verdict that never
parses is a judge *error* for that row: never a score of 0, never dropped.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import re
import secrets
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, ClassVar, Literal, Optional, Protocol, Sequence, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from ..bundled import bundled_path
from ..dataset import FamilyRow
from ..llm_params import model_family  # noqa: F401  (re-exported)
from ..records import JudgeResult, JudgeScores
from .cache import AnswerCache, cache_key
from .contract import MalformedReply, json_object, validation_problem
from .engine import CallResult, ModelRunner, ProviderError, with_retries
from .prompts import fill as fill_placeholders
from .system import ModelCaller, ModelSpec, _acompletion, _structured_output

if TYPE_CHECKING:  # pragma: no cover
    from ..answers import Answer


class RowNotes(Protocol):
    """The notes of a row that the anchored judges pass on (the citation family's row metadata)."""

    @property
    def false_premise(self) -> Optional[str]: ...

    @property
    def required_sections(self) -> Sequence[str]: ...

    @property
    def reasoning_chain(self) -> Optional[str]: ...


class Row(FamilyRow, Protocol):
    """What the anchored (1-5) and claims judges read of a row: a question with an expected answer."""

    @property
    def expected_answer(self) -> str: ...

    @property
    def judge_rubric(self) -> Optional[str]: ...

    @property
    def metadata(self) -> RowNotes: ...


class RubricItem(Protocol):
    @property
    def text(self) -> str: ...


class ResearchRow(Protocol):
    """What the coverage judge reads of a row: a research query and its rubric items."""

    @property
    def query(self) -> str: ...

    @property
    def rubric(self) -> Sequence[RubricItem]: ...

DIMENSIONS = ("factual_accuracy", "completeness")
DEFAULT_POOL = ("gpt-5.4", "anthropic/claude-opus-4-7", "gemini/gemini-3.1-pro-preview")
# Judges run at temperature 0 with a fixed seed where the provider honours one.
JUDGE_CALL_PARAMS = {"temperature": 0, "seed": 20260101}

def _not_a_boolean(value: Any) -> Any:
    # JSON true would pass as 1 (pydantic reads bools as ints): a boolean is not a score.
    if isinstance(value, bool):
        raise ValueError("a score is a whole number, not true/false")
    return value


Score = Annotated[int, BeforeValidator(_not_a_boolean)]


class Graded(BaseModel):
    justification: str = Field(min_length=1)
    score: Score = Field(ge=1, le=5)


class RubricVerdict(BaseModel):
    factual_accuracy: Graded
    completeness: Graded


CLAIM_STATUSES = ("verified", "extra", "contradicted", "fabricated")


class Claim(BaseModel):
    claim: str
    status: Literal["verified", "extra", "contradicted", "fabricated"]


class ClaimsVerdict(BaseModel):
    claims: list[Claim]
    missed_points: list[str] = Field(default_factory=list)


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


_Verdict = TypeVar("_Verdict", bound=BaseModel)


def _validated(model: type[_Verdict], text: Optional[str]) -> _Verdict:
    """The reply's JSON object as ``model``; a reply that does not fit is malformed, naming the field."""
    try:
        return model.model_validate(json_object(text, "verdict"))
    except ValidationError as error:
        raise MalformedReply(f"verdict {validation_problem(error)}") from None


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
    schema: dict[str, Any] = small_model_schema(model.model_json_schema())
    return schema


def small_model_schema(schema: Any) -> Any:
    """A schema a small model's grammar can hold it to: every bounded integer (a 1-5 score, a 0-4
    coverage) spelled out as an ``enum`` of its values, and every string that must not be empty
    given ``minLength``. llama.cpp turns an enum into a grammar that admits only those numbers;
    ``minimum``/``maximum`` alone let a 135M model answer 0 on a 1-5 scale. A copy; pure."""
    if isinstance(schema, list):
        return [small_model_schema(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: small_model_schema(value) for key, value in schema.items()}
    low, high = copy.get("minimum"), copy.get("maximum")
    if copy.get("type") == "integer" and isinstance(low, int) and isinstance(high, int) and high - low <= 10:
        copy["enum"] = list(range(low, high + 1))
    return copy


# ------------------------------------------------------------------ prompts


def _load_guidance() -> tuple[dict[str, str], str]:
    import yaml

    text = bundled_path("judges", "guidance.yaml").read_text(encoding="utf-8")
    return {k: (v or "") for k, v in (yaml.safe_load(text) or {}).items()}, text


def fill(template: str, values: dict[str, str], blocks: Sequence[str] = ("ANSWER",)) -> str:
    """Fill ``{name}`` placeholders in one pass and put a fresh nonce on each data block's markers.

    Nothing inserted is ever read as a placeholder. Each ``<<<NAME`` / ``NAME>>>`` pair gets a
    random nonce on every call, so data inside a block cannot close it with a lookalike marker:
    it cannot know the nonce. The nonce is never part of a cache key.
    """
    for block in blocks:
        nonce = secrets.token_hex(6)
        template = template.replace(f"<<<{block}", f"<<<{block} {nonce}").replace(f"{block}>>>", f"{block} {nonce}>>>")
    return fill_placeholders(template, values)


def judge_prompt_path(mode: str, folder: Optional[Path] = None) -> Path:
    """The user's own prompt file for a judge kind (--researchqa-judge-prompts) when the folder has one,
    else the bundled one."""
    if folder is not None and (folder / f"{mode}.md").is_file():
        return folder / f"{mode}.md"
    return bundled_path("judges", f"{mode}.md")


class JudgePrompt:
    """A judge prompt file under judges/ and its hash (with guidance.yaml, which the citation kinds use)."""

    def __init__(self, mode: str, folder: Optional[Path] = None) -> None:
        self.mode = mode
        self.path = judge_prompt_path(mode, folder)
        self.template = self.path.read_text(encoding="utf-8")
        self.guidance, guidance_text = _load_guidance()
        self.sha = hashlib.sha256((self.template + guidance_text).encode()).hexdigest()[:16]

    def render(self, row: "Row", answer: "Answer") -> str:
        """The citation kinds' prompt for one row and answer."""
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
            "type_guidance": self.guidance.get(row.question_type, ""),
            "row_guidance": "\n".join(row_notes),
            "question": row.question,
            "expected_answer": row.expected_answer,
            "answer": neutralize(answer_as_data(answer)),
        }
        return fill(self.template, values)


def answer_as_data(answer: "Answer") -> str:
    quoted = "\n".join(f"- {c}" for c in answer.citations)
    return str(answer.text) + (f"\n\nQuoted evidence:\n{quoted}" if quoted else "")


def neutralize(text: str, blocks: Sequence[str] = ("ANSWER",)) -> str:
    """Data cannot close (or reopen) its own delimiters."""
    for block in blocks:
        for marker in (f"<<<{block}", f"{block}>>>"):
            text = text.replace(marker, marker.replace("<", "‹").replace(">", "›"))
    return text


# ------------------------------------------------------------------ the judge kinds


class ModelJudge(ModelCaller):
    """What every judge kind shares: its prompt file, cache keys, the call with retries and validation.

    A kind says how to render its prompt, which schema its verdict follows, how
    to parse a reply into scores (raising ``MalformedReply``), and what its cache
    key covers. ``submit(*subject)`` returns the verdict's future: from the cache,
    from a call already in flight, or a new call through the runner.
    """

    kind: ClassVar[str] = ""
    activity_kind = "verdict"
    prompt_file: ClassVar[str] = ""
    verdict_model: ClassVar[type[BaseModel]]
    # Verdicts whose scores are not 1-5 dimensions carry their kind in the cache, validated by it.
    cached_as_kind: ClassVar[bool] = False

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *,
                 timeout_s: float = 120.0, retries: int = 3, prompt_folder: Optional[Path] = None) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.prompt = JudgePrompt(self.prompt_file or self.kind, prompt_folder)
        self.family = model_family(spec.name)

    @property
    def mode(self) -> str:
        return self.kind

    # -- what a kind defines ---------------------------------------------------------
    def key_parts(self, *subject: Any) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, *subject: Any) -> str:
        raise NotImplementedError

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        raise NotImplementedError

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        """Whether cached scores have the shape this kind's readers need for this subject (an entry of
        another plugin version, or a damaged one, is a miss: judged again, never a row error)."""
        raise NotImplementedError

    def _accepts(self, subject: tuple[Any, ...]) -> Callable[[dict[str, Any]], bool]:
        return lambda entry: isinstance(entry.get("scores"), dict) and self.reusable(entry["scores"], *subject)

    def schema(self, *subject: Any) -> dict[str, Any]:
        """The verdict's JSON schema for one subject (sent in JSON-schema mode and in the repair turn)."""
        schema: dict[str, Any] = small_model_schema(self.verdict_model.model_json_schema())
        return schema

    def subject(self, row: Any, answer: Any) -> Optional[tuple[Any, ...]]:
        """What this kind judges of one row's answer (None: nothing to judge). Each family's rows and
        answers are its own types, so the shared base takes any."""
        return (row, answer)

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The judges' scores of one answer combined: consensus and spread."""
        return consensus(by_judge)

    # -- shared -----------------------------------------------------------------------
    def key(self, *subject: Any, repeat: int = 0) -> str:
        return cache_key(judge=self.spec.name, params=self.spec.call_params, prompt=self.prompt.sha, mode=self.kind,
                         repeat=repeat, **self.key_parts(*subject))

    def submit(self, *subject: Any, repeat: int = 0) -> concurrent.futures.Future[Any]:
        """The verdict's future: from the cache, from a call already in flight, or a new call."""
        key = self.key(*subject, repeat=repeat)
        with self._lock:
            accept = self._accepts(subject)
            cached = None if key in self._pending else self.cache.get(key, accept)
            if cached is not None:
                self._found(key)
                done: concurrent.futures.Future[Any] = concurrent.futures.Future()
                done.set_result(cached)
                return done
            return self._in_flight(key, lambda: self._call(subject, key), accept)

    async def _call(self, subject: tuple[Any, ...], key: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": self.render(*subject)}]
        params = {**JUDGE_CALL_PARAMS, **self.spec.call_params}
        schema = self.schema(*subject)
        if "response_format" not in params and schema:
            # The same structured_output parameter as systems: JSON-schema mode where supported.
            params.update(_structured_output(self.spec, schema, f"{self.kind}_verdict"))

        async def attempt() -> CallResult:
            await self.runner.pace(self.spec.provider)
            return await self.runner.send(_acompletion(self.spec.name, messages, self.timeout_s, params,
                                                       priced=False, router=self.router))

        result, scores = await with_retries(attempt, retries=self.retries, describe=f"judge {self.name}",
                                            validate=lambda r: self.parse(r.content, *subject),
                                            schema=schema)
        entry = {"judge": self.name, "prompt_sha": self.prompt.sha, "mode": self.kind, "scores": scores,
                 "latency_s": result.latency_s, "repaired": result.repaired}
        if self.cached_as_kind:
            entry["kind"] = self.kind
        self.cache.put(key, entry)
        return entry


class _CitationJudge(ModelJudge):
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
        return self.prompt.render(row, answer)

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        return parse_verdict(text, self.kind)

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        reasons = scores.get("justifications", {})
        return all(_is_score(scores.get(d), 1, 5) for d in DIMENSIONS) and isinstance(reasons, dict)

    def schema(self, *subject: Any) -> dict[str, Any]:
        return verdict_schema(self.kind)


class AnchoredRubricJudge(_CitationJudge):
    """factual_accuracy and completeness on anchored 1-5 scales (judges/rubric.md)."""

    kind = "rubric"
    verdict_model = RubricVerdict


class ClaimsJudge(_CitationJudge):
    """Claims listed and marked; the 1-5 scores computed from the lists (judges/claims.md)."""

    kind = "claims"
    verdict_model = ClaimsVerdict


# ---- does the answer flag the false premise (yes/no) ------------------------------------

_PREMISE_REASON_CHARS = 400


class PremiseVerdict(BaseModel):
    reason: str = Field(min_length=1, max_length=_PREMISE_REASON_CHARS)
    flagged: bool


def parse_premise(text: Optional[str]) -> dict[str, Any]:
    """{'flagged': bool, 'reason': str}: whether the answer refuses or corrects the premise, and why."""
    verdict = _validated(PremiseVerdict, text)
    return {"flagged": verdict.flagged, "reason": verdict.reason.strip()}


class PremiseJudge(ModelJudge):
    """Does an answer to a false-premise question refuse or correct the premise? (judges/premise.md)

    ``submit(question, false_premise, answer_text)``; the verdict is ``{'flagged': bool, 'reason': str}``.
    premise_flagged comes from it under ``--researchqa-flagged-judge`` instead of the text heuristic.
    """

    kind = "premise"
    verdict_model = PremiseVerdict
    cached_as_kind = True

    def subject(self, row: "Row", answer: "Answer") -> Optional[tuple[Any, ...]]:
        """Nothing to judge on a row not graded by refusal, nor when the system itself said it refused."""
        graded = (getattr(row, "question_type", None) == "adversarial"
                  and getattr(row, "expected_refusal", None) is not False)
        if not graded or answer.refused is True:
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
        return isinstance(scores.get("flagged"), bool) and isinstance(scores.get("reason"), str)


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
    justification: str = Field(min_length=1)
    coverage: Score = Field(ge=0, le=COVERAGE_MAX)


class CoverageVerdict(BaseModel):
    items: list[ItemCoverage]


def parse_coverage(text: Optional[str], item_count: int) -> dict[str, Any]:
    """Scores for exactly ``item_count`` items: {'items': [0-4...], 'justifications': [...], 'coverage': mean}.

    Every item must be scored once (numbered from 1); a missing, repeated or
    extra item makes the verdict malformed (retried, then a judge error).
    """
    verdict = _validated(CoverageVerdict, text)
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
    verdict_model = CoverageVerdict
    cached_as_kind = True
    generic_rubric = False  # rows without items are judged on the generic criteria (set from the options)

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
        return (isinstance(items, list) and len(items) == len(subject[1]) and all(_is_score(v, 0, 4) for v in items)
                and isinstance(reasons, list))

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
    justification: str = Field(min_length=1)
    preferred: Literal["A", "B", "tie"]


def parse_preference(text: Optional[str]) -> dict[str, Any]:
    verdict = _validated(PairwiseVerdict, text)
    return {"preferred": verdict.preferred, "justifications": verdict.justification}


class PairwiseJudge(ModelJudge):
    """Which of two answers to a research query is better: ``submit(query, first, second)``.

    It sees the answers in the order given; the tournament asks in both orders
    (positional bias) and combines the votes with coverage (the ensemble rule).
    """

    kind = "pairwise"
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
        return scores.get("preferred") in ("A", "B", "tie")


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

    def schema(self, *subject: Any) -> dict[str, Any]:
        return {}


# The kind each rubric-family kind becomes under --researchqa-protocol=paper.
PAPER_KINDS = {"coverage": PaperCoverageJudge.kind, "pairwise": PaperPairwiseJudge.kind}

JUDGE_KINDS: dict[str, type[ModelJudge]] = {
    kind.kind: kind for kind in (AnchoredRubricJudge, ClaimsJudge, PremiseJudge, RubricCoverageJudge, PairwiseJudge,
                                 PaperCoverageJudge, PaperPairwiseJudge)}


def make_judge(kind: str, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *,
               timeout_s: float = 120.0, retries: int = 3, prompt_folder: Optional[Path] = None) -> ModelJudge:
    if kind not in JUDGE_KINDS:
        raise ValueError(f"unknown judge kind {kind!r}; choose from {', '.join(JUDGE_KINDS)}")
    return JUDGE_KINDS[kind](spec, runner, cache, timeout_s=timeout_s, retries=retries, prompt_folder=prompt_folder)


class JudgePanel(list["ModelJudge"]):
    """The judges of one row, and how many extra times to re-judge sampled rows (flip-rate probe)."""

    def __init__(self, judges: Sequence["ModelJudge"], repeats: int = 0) -> None:
        super().__init__(judges)
        self.repeats = repeats


def in_flip_sample(row_id: str) -> bool:
    """A deterministic quarter of the rows, the same in every run and on every worker."""
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 4 == 0


def judge_all(judges: Sequence[ModelJudge], row: "FamilyRow", answer: "Answer", timeout_s: Optional[float] = None, *,
              combine: Optional[Callable[[dict[str, dict[str, Any]]], dict[str, Any]]] = None) -> JudgeResult:
    """Every judge's scores for one answer, and their consensus and spread (a :class:`JudgeResult`).

    Each judge is given its kind's ``subject(row, answer)``; ``combine`` turns the
    judges' scores into the consensus (default: the kind's own). With a panel's
    ``repeats`` and a row in the flip sample, each judge also re-judges the same
    answer that many times (``repeats``: judge -> [its verdicts]).
    """
    repeats = getattr(judges, "repeats", 0) if in_flip_sample(row.row_id) else 0
    subjects = {judge.name: judge.subject(row, answer) or () for judge in judges}
    futures = {judge.name: judge.submit(*subjects[judge.name]) for judge in judges}
    extra = {judge.name: [judge.submit(*subjects[judge.name], repeat=repeat) for repeat in range(1, repeats + 1)]
             for judge in judges}
    by_judge: dict[str, dict[str, Any]] = {}
    for name, future in futures.items():
        try:
            by_judge[name] = dict(future.result(timeout=timeout_s)["scores"])
        except ProviderError as error:
            by_judge[name] = {"error": str(error)}
    combine = combine or (type(judges[0]).combine if judges else consensus)
    combined = combine(by_judge)
    again: Optional[dict[str, list[JudgeScores]]] = None
    if repeats:
        again = {}
        for name, pending in extra.items():
            try:
                verdicts = [dict(f.result(timeout=timeout_s)["scores"]) for f in pending]
                again[name] = [JudgeScores(by_judge[name]), *map(JudgeScores, verdicts)]
            except ProviderError:
                pass  # a probe that errors tells nothing about flips
    return JudgeResult(by_judge={name: JudgeScores(scores) for name, scores in by_judge.items()},
                       consensus=combined["consensus"], spread=combined["spread"], items=combined.get("items"),
                       repeats=again)


def _is_score(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def consensus(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
    scored = [s for s in by_judge.values() if "error" not in s]
    result: dict[str, Any] = {"consensus": {}, "spread": {}}
    for dimension in DIMENSIONS:
        values = [s[dimension] for s in scored]
        result["consensus"][dimension] = statistics.fmean(values) if values else None
        result["spread"][dimension] = (max(values) - min(values)) if len(values) > 1 else None
    return result


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
