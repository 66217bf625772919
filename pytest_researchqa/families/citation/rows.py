"""Typed benchmark rows: the single-paper, citation-grounded schema.

One row is one question about one paper, with the expected answer and the
expected evidence grouped by paper section: a system covers a section by
citing any one of that section's alternatives.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

# The citation family declares the same four (families/citation: QUESTION_TYPES; a unit test holds them equal).
QuestionType = Literal["lookup", "comprehension", "multi_hop", "adversarial"]
METADATA_FIELDS: tuple[str, ...] = (
    "page_hint",
    "section",
    "chunk_description",
    "source_text",
    "required_sections",
    "reasoning_chain",
    "false_premise",
)


class SectionEvidence(BaseModel):
    """Evidence from one section: citing any one alternative satisfies it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    section_label: str
    alternatives: list[str] = Field(min_length=1)

    @field_validator("alternatives")
    @classmethod
    def _no_blank_alternatives(cls, value: list[str]) -> list[str]:
        for position, alternative in enumerate(value):
            if not alternative.strip():
                raise ValueError(f"alternative {position} is blank")
        return value


def reasoning_text(value: object) -> object:
    """A reasoning chain given as a list of steps (natural in YAML) is one text, its steps joined by " -> "."""
    if isinstance(value, (list, tuple)) and all(isinstance(step, str) for step in value):
        return " -> ".join(step.strip() for step in value if step.strip()) or None
    return value


class RowMetadata(BaseModel):
    """The sparse per-type fields (``metadata_*`` in the flat file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    page_hint: Optional[int] = None
    section: Optional[str] = None
    chunk_description: Optional[str] = None
    source_text: Optional[str] = None
    required_sections: Optional[list[str]] = None
    reasoning_chain: Optional[str] = None
    false_premise: Optional[str] = None

    @field_validator("reasoning_chain", mode="before")
    @classmethod
    def _steps_are_one_text(cls, value: object) -> object:
        return reasoning_text(value)


class Row(BaseModel):
    """One benchmark question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row_id: str
    paper_id: str
    paper_doi: Optional[str] = None
    paper_s3_url: Optional[str] = None
    domain: str = "unknown"
    question_type: QuestionType
    question: str = Field(min_length=1)
    expected_answer: str = ""
    expected_references: list[SectionEvidence] = Field(default_factory=list)
    judge_rubric: Optional[str] = None
    expected_refusal: Optional[bool] = None
    metadata: RowMetadata = Field(default_factory=RowMetadata)

    @field_validator("domain", mode="before")
    @classmethod
    def _domain_may_be_missing(cls, value: object) -> object:
        # The original harness writes rows before their domains are backfilled: null.
        return "unknown" if value is None or (isinstance(value, str) and not value.strip()) else value

    @field_validator("expected_answer", mode="before")
    @classmethod
    def _a_numeric_answer_is_text(cls, value: object) -> object:
        # YAML reads `expected_answer: 412` as a number; the answer is its text (as a system's 412 is: docs/systems.md).
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    @field_validator("row_id", "paper_id", mode="before")
    @classmethod
    def _ids_are_text(cls, value: object) -> object:
        # Published ids are sometimes numeric; keep them as text. true/false are no ids.
        if isinstance(value, bool):
            raise ValueError("an id must be text or a number, not true/false")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str) and not value.strip():
            raise ValueError("an id must not be blank")
        return value

    @field_validator("expected_references")
    @classmethod
    def _multi_hop_needs_sections(cls, value: list[SectionEvidence], info: ValidationInfo) -> list[SectionEvidence]:
        if info.data.get("question_type") == "multi_hop" and len(value) < 2:
            raise ValueError("a multi_hop row needs evidence from at least two sections")
        return value

    @property
    def is_adversarial(self) -> bool:
        return self.question_type == "adversarial"
