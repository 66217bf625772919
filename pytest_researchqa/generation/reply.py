"""What the generating model must reply, and lenient parsing of it.

The reply's question items use the row schema's own field names
(``expected_answer``, ``expected_references`` of ``section_label`` and
``alternatives``, ``judge_rubric``, ``reasoning_chain``, ``false_premise``),
so a parsed item becomes a row with no renaming. The whole reply must be one
JSON object (else it is malformed and the call is retried); each question
item is validated on its own, so one bad item costs that question only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional, Sequence, Union

from pydantic import BaseModel, Field, ValidationError

from ..llm.contract import MalformedReply, json_object, schema_of, validation_problem

# The longest text a reply field may hold (characters): a field over its cap is rejected with that
# reason (costing its question or chunk), never copied into every row (a 60 MB "domain").
MAX_LABEL_CHARS = 200  # domain, section labels
MAX_QUESTION_CHARS = 2_000  # a question, a false premise
MAX_TEXT_CHARS = 20_000  # an expected answer, a passage, a rubric, a reasoning chain, a chunk's description or text

Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]

# An expected passage is one to three sentences of at least twelve words (the prompt's rule); the
# grammar's bounds on it, in characters.
PASSAGE_MIN_CHARS, PASSAGE_MAX_CHARS = 60, 500
QUOTABLE_LIMIT = 120
HEADING_MAX_WORDS = 6
_PLAIN = r'[^"\\\[\]<>{}\n]'  # no quote or backslash (the grammar writes JSON), no bracket, no line break
QUESTION_PATTERN = rf"^[A-Z]{_PLAIN}{{10,250}}\?$"
ANSWER_PATTERN = rf"^{_PLAIN}{{1,300}}$"


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


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def generation_schema(counts: Optional[dict[str, int]] = None, passages: Sequence[str] = ()) -> dict[str, Any]:
    """The reply's JSON schema; with ``counts``, one a grammar holds a small model to.

    A local server turns the schema into a grammar (JSON-object mode), so the schema is what the
    model can write at all: with counts, every list has exactly the number of items asked for,
    every field is present (a model may not drop a question's evidence), and every string is
    bounded, so a model that starts repeating itself ends its string instead of the output budget.
    ``passages`` (the paper's quotable sentences, :func:`quotable_sentences`) makes every quotation one
    of them: a model too small to copy text letter by letter still quotes only what the paper says.
    """
    if counts is None:
        return schema_of(GenerationReply)
    lookup, comprehension = counts.get("lookup", 0), counts.get("comprehension", 0)
    chunk_items = max(lookup, comprehension)

    def text(most: int, least: int = 1) -> dict[str, Any]:
        return {"type": "string", "minLength": least, "maxLength": most}

    def listed(item: dict[str, Any], number: int) -> dict[str, Any]:
        return {"type": "array", "items": item, "minItems": number, "maxItems": number}

    def strict(properties: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": list(properties),
                "additionalProperties": False}

    quote = {"type": "string", "enum": list(passages)} if passages else text(PASSAGE_MAX_CHARS, PASSAGE_MIN_CHARS)
    block = strict({"section_label": text(80), "alternatives": {"type": "array", "items": quote,
                                                                "minItems": 1, "maxItems": 2}})
    # A question the grammar can write starts with a capital and ends with "?"; neither it nor an answer
    # holds a bracket: "[X]", "<answer>" and "{y}" are template slots, not content.
    question = {"question": {"type": "string", "pattern": QUESTION_PATTERN},
                "expected_answer": {"type": "string", "pattern": ANSWER_PATTERN}}
    one_block = {"expected_references": {"type": "array", "items": block, "minItems": 1, "maxItems": 1}}
    lookup_item = strict({**question, **one_block})
    comprehension_item = strict({**question, **one_block, "judge_rubric": text(400)})

    def slot(item: dict[str, Any], wanted: int) -> dict[str, Any]:
        if wanted == 0:
            return {"type": "null"}
        return item if wanted == chunk_items else {"anyOf": [item, {"type": "null"}]}

    chunk = strict({"section": text(80), "source_text": quote,
                    "lookup": slot(lookup_item, lookup), "comprehension": slot(comprehension_item, comprehension)})
    hops = counts.get("multi_hop", 0)
    multi_hop = strict({**question, "required_sections": listed(text(80), 2),
                        "expected_references": listed(block, 2), "reasoning_chain": text(300),
                        "judge_rubric": text(400)})
    adversarial = strict({**question, "false_premise": text(300),
                          "expected_references": {"type": "array", "items": block, "maxItems": 1},
                          "judge_rubric": text(400)})
    return strict({"domain": text(40), "chunks": listed(chunk, chunk_items),
                   "multi_hop_questions": listed(multi_hop, hops),
                   "adversarial_questions": listed(adversarial, counts.get("adversarial", 0))})


def reply_tokens(counts: dict[str, int]) -> int:
    """Output tokens a reply with ``counts`` questions needs at most (strings at their bounds, ~4 characters
    a token): the output cap a local server gets, and what the context window must leave free."""
    chunk_items = max(counts.get("lookup", 0), counts.get("comprehension", 0))
    chars = (100 + chunk_items * (200 + PASSAGE_MAX_CHARS) + counts.get("lookup", 0) * (800 + PASSAGE_MAX_CHARS)
             + counts.get("comprehension", 0) * (1200 + PASSAGE_MAX_CHARS)
             + counts.get("multi_hop", 0) * (1600 + 2 * PASSAGE_MAX_CHARS)
             + counts.get("adversarial", 0) * (1500 + PASSAGE_MAX_CHARS))
    return chars // 4


def repair_schema(ids: Sequence[str] = (), passages: Sequence[str] = ()) -> dict[str, Any]:
    """The repair reply's schema; with ``ids``, one item for each of them (a grammar holds a small model to
    it), and with ``passages`` each new passage one of them or null."""
    if not ids:
        return schema_of(RepairReply)
    quote = ({"type": "string", "enum": list(passages)} if passages
             else {"type": "string", "minLength": PASSAGE_MIN_CHARS, "maxLength": PASSAGE_MAX_CHARS})
    item = {"type": "object", "properties": {"id": {"type": "string", "enum": list(ids)},
                                             "passage": {"anyOf": [quote, {"type": "null"}]}},
            "required": ["id", "passage"], "additionalProperties": False}
    return {"type": "object", "properties": {"repairs": {"type": "array", "items": item, "minItems": len(ids),
                                                         "maxItems": len(ids)}},
            "required": ["repairs"], "additionalProperties": False}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])")


def quotable_sentences(text: str, *, limit: int = QUOTABLE_LIMIT) -> list[str]:
    """Sentences of ``text`` that make an expected passage on their own: at least twelve words, within the
    passage bounds, each once, in the paper's order (at most ``limit``: the grammar stays small)."""
    found: list[str] = []
    seen: set[str] = set()
    # A short line without end punctuation is a heading ("Results", "4.2 Setup"): it ends what came before.
    pieces: list[list[str]] = [[]]
    for line in text.splitlines():
        words = line.split()
        if words and len(words) <= HEADING_MAX_WORDS and not line.rstrip().endswith((".", ",", ";", ":", "-")):
            pieces.append([])
            continue
        pieces[-1].append(line)
    sentences = [s for piece in pieces for s in _SENTENCE_END.split("\n".join(piece))]
    for raw in sentences:
        sentence = " ".join(raw.split())
        if (len(sentence.split()) >= 12 and PASSAGE_MIN_CHARS <= len(sentence) <= PASSAGE_MAX_CHARS
                and sentence not in seen):
            seen.add(sentence)
            found.append(sentence)
            if len(found) >= limit:
                break
    return found
