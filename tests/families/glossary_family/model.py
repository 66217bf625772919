"""The glossary family's model system and judge kind: what a third party writes to let a model answer and grade
its rows (docs/extending.md). Loaded only when a run names a model or a judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

from pytest_researchqa.answers import Answer
from pytest_researchqa.llm.cache import cache_key
from pytest_researchqa.llm.judges import ModelJudge, fill, neutralize, validated_verdict
from pytest_researchqa.llm.prompts import load_prompt
from pytest_researchqa.llm.system import ModelSystem

from .rows import TermRow

PROMPTS = Path(__file__).resolve().parent / "prompts"


class DefinitionModel(ModelSystem[TermRow]):
    """A model asked for a term's definition (the plugin caches, pipelines and retries its calls)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompt = load_prompt(PROMPTS, "define")

    def key(self, row: TermRow, paper: None) -> str:
        return cache_key(model=self.spec.name, params=self.spec.cache_params, prompt=self.prompt.sha, term=row.term)

    def render(self, row: TermRow, paper: None) -> tuple[str, dict[str, Any]]:
        return fill(self.prompt.template, {"term": row.term}), {"context": "none"}


class Graded(BaseModel):
    justification: str = Field(min_length=1)
    score: int = Field(ge=1, le=5)


class DefinitionVerdict(BaseModel):
    factual_accuracy: Graded


class DefinitionJudge(ModelJudge):
    """How accurate a definition is, 1-5, against the row's keywords (prompt: prompts/definition.md)."""

    kind = "definition"
    prompts = PROMPTS
    verdict_model = DefinitionVerdict

    def subject(self, row: TermRow, answer: Answer) -> Optional[tuple[Any, ...]]:
        return (row.term, ", ".join(row.keywords), answer.text)

    def key_parts(self, term: str, keywords: str, answer: str) -> dict[str, Any]:
        return {"term": term, "keywords": keywords, "answer": answer}

    def render(self, term: str, keywords: str, answer: str) -> str:
        return fill(self.prompt.template, {"term": term, "keywords": keywords, "answer": neutralize(answer)})

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        verdict = validated_verdict(DefinitionVerdict, text)  # a reply that does not fit is repaired once
        return {"accuracy": verdict.factual_accuracy.score,
                "justifications": {"accuracy": verdict.factual_accuracy.justification}}

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        return isinstance(scores.get("accuracy"), int)

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        scores = [s["accuracy"] for s in by_judge.values() if "error" not in s]
        return {"consensus": {"accuracy": sum(scores) / len(scores) if scores else None},
                "spread": {"accuracy": max(scores) - min(scores) if len(scores) > 1 else None}}


KINDS = {DefinitionJudge.kind: DefinitionJudge}
