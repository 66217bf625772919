"""LLM judges: the anchored rubric, claim enumeration, consensus and model families.

Judges share the model runner (slots, pacing, retries) and the on-disk cache
with the systems under test. A verdict that never parses is a judge *error*
for that row: never a score of 0, never silently dropped.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import re
import secrets
import statistics
from typing import Literal, Optional

from pydantic import BaseModel, Field, ValidationError

from ..bundled import bundled_path
from ..llm_params import model_family  # noqa: F401  (re-exported)
from .cache import AnswerCache, cache_key
from .contract import MalformedReply
from .engine import CallResult, ModelRunner, ProviderError, with_retries
from .system import ModelCaller, ModelSpec, _acompletion, _structured_output

DIMENSIONS = ("factual_accuracy", "completeness")
JUDGE_MODES = ("rubric", "claims")
DEFAULT_POOL = ("gpt-5.4", "anthropic/claude-opus-4-7", "gemini/gemini-3.1-pro-preview")
# Judges run at temperature 0 with a fixed seed where the provider honours one.
JUDGE_CALL_PARAMS = {"temperature": 0, "seed": 20260101}

class Graded(BaseModel):
    justification: str = Field(min_length=1)
    score: int = Field(ge=1, le=5)


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


def _parse_json_object(text: Optional[str]) -> dict:
    if not text or "{" not in text:
        raise MalformedReply(f"no JSON object in the verdict; it began: {(text or '').strip()[:120]!r}")
    body = text[text.find("{") : text.rfind("}") + 1]
    try:
        return json.loads(body, strict=False)
    except json.JSONDecodeError as error:
        raise MalformedReply(f"the verdict is not valid JSON ({error.msg}); it began: {text.strip()[:120]!r}") from None


def parse_verdict(text: Optional[str], mode: str) -> dict:
    """Scores by dimension, and under ``justifications`` the judge's reasons by dimension."""
    data = _parse_json_object(text)
    try:
        if mode == "claims":
            claims = ClaimsVerdict.model_validate(data)
            return {**claims_scores(claims), "justifications": claims_justifications(claims)}
        verdict = RubricVerdict.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise MalformedReply(f"verdict field {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return {"factual_accuracy": verdict.factual_accuracy.score, "completeness": verdict.completeness.score,
            "justifications": {"factual_accuracy": verdict.factual_accuracy.justification,
                               "completeness": verdict.completeness.justification}}


def verdict_schema(mode: str) -> dict:
    """The JSON schema a judge's verdict must follow (for providers' structured-output modes)."""
    return (ClaimsVerdict if mode == "claims" else RubricVerdict).model_json_schema()


# ------------------------------------------------------------------ prompts


_PLACEHOLDER = re.compile(r"\{(type_guidance|row_guidance|question|expected_answer|answer)\}")
_MARKERS = ("<<<ANSWER", "ANSWER>>>")


def _load_guidance() -> tuple[dict[str, str], str]:
    import yaml

    text = bundled_path("judges", "guidance.yaml").read_text(encoding="utf-8")
    return {k: (v or "") for k, v in (yaml.safe_load(text) or {}).items()}, text


class JudgePrompt:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.template = bundled_path("judges", f"{mode}.md").read_text(encoding="utf-8")
        self.guidance, guidance_text = _load_guidance()
        self.sha = hashlib.sha256((self.template + guidance_text).encode()).hexdigest()[:16]

    def render(self, row, answer) -> str:
        """Fill the template in one pass: nothing inserted is ever read as a placeholder."""
        row_notes = []
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
        # The answer's delimiters carry a fresh random nonce on every call: an answer cannot close
        # its block with a lookalike (lowercase, spaced, full-width, zero-width-joined...) because
        # it cannot know the marker. The nonce is not part of the cache key.
        nonce = secrets.token_hex(6)
        template = self.template.replace("<<<ANSWER", f"<<<ANSWER {nonce}").replace(
            "ANSWER>>>", f"ANSWER {nonce}>>>")
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def answer_as_data(answer) -> str:
    quoted = "\n".join(f"- {c}" for c in answer.citations)
    return answer.text + (f"\n\nQuoted evidence:\n{quoted}" if quoted else "")


def neutralize(text: str) -> str:
    """An answer cannot close (or reopen) its own delimiters."""
    for marker in _MARKERS:
        text = text.replace(marker, marker.replace("<", "‹").replace(">", "›"))
    return text


# ------------------------------------------------------------------ the judge


class LlmJudge(ModelCaller):
    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *, mode: str = "rubric",
                 timeout_s: float = 120.0, retries: int = 3) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.mode = mode
        self.prompt = JudgePrompt(mode)
        self.family = model_family(spec.name)

    def key(self, row, answer, repeat: int = 0) -> str:
        return cache_key(judge=self.spec.name, params=self.spec.call_params, prompt=self.prompt.sha, mode=self.mode,
                         row=row.row_id, question=row.question, expected=row.expected_answer,
                         answer=answer.text, citations=answer.citations, repeat=repeat)

    def submit(self, row, answer, repeat: int = 0) -> concurrent.futures.Future:
        """The verdict's future: from the cache, from a call already in flight, or a new call."""
        key = self.key(row, answer, repeat)
        with self._lock:
            cached = None if key in self._pending else self.cache.get(key)
            if cached is not None:
                done: concurrent.futures.Future = concurrent.futures.Future()
                done.set_result(cached)
                return done
            return self._in_flight(key, lambda: self._call(row, answer, key))

    async def _call(self, row, answer, key: str) -> dict:
        messages = [{"role": "user", "content": self.prompt.render(row, answer)}]
        params = {**JUDGE_CALL_PARAMS, **self.spec.call_params}
        if "response_format" not in params:
            # The same structured_output parameter as systems: JSON-schema mode where supported.
            params.update(_structured_output(self.spec, verdict_schema(self.mode), f"{self.mode}_verdict"))

        async def attempt() -> CallResult:
            await self.runner.pace(self.spec.provider)
            return await _acompletion(self.spec.name, messages, self.timeout_s, params, priced=False)

        result, scores = await with_retries(attempt, retries=self.retries, describe=f"judge {self.name}",
                                            validate=lambda r: parse_verdict(r.content, self.mode),
                                            schema=verdict_schema(self.mode))
        entry = {"judge": self.name, "prompt_sha": self.prompt.sha, "mode": self.mode, "scores": scores,
                 "latency_s": result.latency_s}
        self.cache.put(key, entry)
        return entry


class JudgePanel(list):
    """The judges of one row, and how many extra times to re-judge sampled rows (flip-rate probe)."""

    def __init__(self, judges, repeats: int = 0) -> None:
        super().__init__(judges)
        self.repeats = repeats


def in_flip_sample(row_id: str) -> bool:
    """A deterministic quarter of the rows, the same in every run and on every worker."""
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 4 == 0


def judge_all(judges: list[LlmJudge], row, answer, timeout_s: Optional[float] = None) -> dict:
    """Every judge's scores for one answer, and their consensus: {'by_judge', 'consensus', 'spread'}.

    With a panel's ``repeats`` and a row in the flip sample, each judge also
    re-judges the same answer that many times: {'repeats': {judge: [scores, ...]}}.
    """
    repeats = getattr(judges, "repeats", 0) if in_flip_sample(row.row_id) else 0
    futures = {judge.name: judge.submit(row, answer) for judge in judges}
    extra = {judge.name: [judge.submit(row, answer, repeat) for repeat in range(1, repeats + 1)] for judge in judges}
    by_judge: dict[str, dict] = {}
    for name, future in futures.items():
        try:
            by_judge[name] = dict(future.result(timeout=timeout_s)["scores"])
        except ProviderError as error:
            by_judge[name] = {"error": str(error)}
    result = {"by_judge": by_judge, **consensus(by_judge)}
    if repeats:
        result["repeats"] = {}
        for name, pending in extra.items():
            try:
                again = [dict(f.result(timeout=timeout_s)["scores"]) for f in pending]
                result["repeats"][name] = [by_judge[name], *again]
            except ProviderError:
                pass  # a probe that errors tells nothing about flips
    return result


def consensus(by_judge: dict[str, dict]) -> dict:
    scored = [s for s in by_judge.values() if "error" not in s]
    result: dict = {"consensus": {}, "spread": {}}
    for dimension in DIMENSIONS:
        values = [s[dimension] for s in scored]
        result["consensus"][dimension] = statistics.fmean(values) if values else None
        result["spread"][dimension] = (max(values) - min(values)) if len(values) > 1 else None
    return result
