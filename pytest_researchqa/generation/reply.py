"""What the generating model must reply, and lenient parsing of it.

The reply's question items use the row schema's own field names
(``expected_answer``, ``expected_references`` of ``section_label`` and
``alternatives``, ``judge_rubric``, ``reasoning_chain``, ``false_premise``),
so a parsed item becomes a row with no renaming. The whole reply must be one
JSON object (else it is malformed and the call is retried); each question
item is validated on its own, so one bad item costs that question only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Optional, Union

from pydantic import BaseModel, Field, ValidationError

from ..llm.contract import MalformedReply, json_object, validation_problem

# The longest text a reply field may hold (characters): a field over its cap is rejected with that
# reason (costing its question or chunk), never copied into every row (a 60 MB "domain").
MAX_LABEL_CHARS = 200  # domain, section labels
MAX_QUESTION_CHARS = 2_000  # a question, a false premise
MAX_TEXT_CHARS = 20_000  # an expected answer, a passage, a rubric, a reasoning chain, a chunk's description or text

Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class EvidenceBlock(BaseModel):
    section_label: Label = Field(min_length=1)
    alternatives: list[Text] = Field(default_factory=list)


class LookupItem(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    expected_answer: Text = ""
    expected_references: list[EvidenceBlock] = Field(default_factory=list)


class ComprehensionItem(LookupItem):
    judge_rubric: Optional[Text] = None


class Chunk(BaseModel):
    section: Optional[Label] = None
    page_hint: Optional[int] = None
    chunk_description: Optional[Text] = None
    source_text: Optional[Text] = None
    lookup: Optional[LookupItem] = None
    comprehension: Optional[ComprehensionItem] = None


class MultiHopItem(ComprehensionItem):
    required_sections: list[Label] = Field(default_factory=list)
    reasoning_chain: Optional[Union[Text, list[Text]]] = None


class AdversarialItem(ComprehensionItem):
    false_premise: Optional[str] = Field(default=None, max_length=MAX_QUESTION_CHARS)


class GenerationReply(BaseModel):
    """The reply schema as a whole: for providers' JSON-schema modes."""

    domain: Optional[Label] = None
    chunks: list[Chunk] = Field(default_factory=list)
    multi_hop_questions: list[MultiHopItem] = Field(default_factory=list)
    adversarial_questions: list[AdversarialItem] = Field(default_factory=list)


class RepairItem(BaseModel):
    id: str
    passage: Optional[Text] = None


class RepairReply(BaseModel):
    repairs: list[RepairItem] = Field(default_factory=list)


@dataclass
class ParsedGeneration:
    """The items that validated, and a note for each one that did not."""

    domain: Optional[str]
    domain_problem: Optional[str] = None  # why the reply's domain was not used
    chunks: list[tuple[Chunk, list[str]]] = field(default_factory=list)  # (chunk, its own problems)
    multi_hop: list[MultiHopItem | str] = field(default_factory=list)  # an item, or why it is unusable
    adversarial: list[AdversarialItem | str] = field(default_factory=list)


_LISTS = ("chunks", "multi_hop_questions", "adversarial_questions")


def _validated(model: type[BaseModel], value: Any) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as error:
        return validation_problem(error)


def parse_generation(text: Optional[str]) -> ParsedGeneration:
    """A generation reply; raises :class:`MalformedReply` (retried) when it is no usable object."""
    data = json_object(text)
    if not any(isinstance(data.get(name), list) for name in _LISTS):
        raise MalformedReply(f"the reply has none of {', '.join(_LISTS)} as a list; keys: {sorted(data)[:8]}")
    domain = data.get("domain")
    parsed = ParsedGeneration(domain=domain.strip().lower() or None if isinstance(domain, str) else None)
    if parsed.domain is not None and len(parsed.domain) > MAX_LABEL_CHARS:
        parsed.domain_problem = (f"domain: {len(parsed.domain):,} characters, over the {MAX_LABEL_CHARS} a label "
                                 "may have; not used")
        parsed.domain = None
    for raw in _as_list(data.get("chunks")):
        if not isinstance(raw, dict):
            parsed.chunks.append((Chunk(), [f"the chunk is a {type(raw).__name__}, not an object"]))
            continue
        problems = []
        questions = {}
        for name, model in (("lookup", LookupItem), ("comprehension", ComprehensionItem)):
            item = raw.get(name)
            checked = None if item is None else _validated(model, item)
            if isinstance(checked, str):
                problems.append(f"its {name} question: {checked}")
                checked = None
            questions[name] = checked
        rest = {k: v for k, v in raw.items() if k in ("section", "chunk_description", "source_text", "page_hint")}
        chunk = _validated(Chunk, rest)
        if isinstance(chunk, str):  # a page hint that is no number, say: keep the questions
            problems.append(f"its description: {chunk}")
            chunk = Chunk()
        parsed.chunks.append((chunk.model_copy(update=questions), problems))
    parsed.multi_hop = [_validated(MultiHopItem, raw) for raw in _as_list(data.get("multi_hop_questions"))]
    parsed.adversarial = [_validated(AdversarialItem, raw) for raw in _as_list(data.get("adversarial_questions"))]
    return parsed


def parse_repairs(text: Optional[str]) -> dict[str, Optional[str]]:
    """A repair reply: item id -> the new passage (None: the model found none)."""
    data = json_object(text)
    try:
        reply = RepairReply.model_validate(data)
    except ValidationError as error:
        raise MalformedReply(f"repair reply {validation_problem(error)}") from None
    return {item.id: (item.passage if item.passage and item.passage.strip() else None) for item in reply.repairs}


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def generation_schema() -> dict:
    return GenerationReply.model_json_schema()


def repair_schema() -> dict:
    return RepairReply.model_json_schema()
