"""The citation family's task for a litellm model: answer a question about one paper with verbatim quotes
(or, in baseline mode, in prose without a citation contract).

For each row the system decides what the model sees (the whole paper when it fits the context window,
else the best BM25 passages; the choice is recorded) and asks for a structured cited answer; when and how
often it asks is :class:`~pytest_researchqa.llm.system.ModelSystem`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol

from ...llm.cache import AnswerCache, cache_key
from ...llm.engine import ModelRunner
from ...llm.prompts import load_prompt
from ...llm.system import (
    CHARS_PER_TOKEN,
    LOCAL_CHARS_PER_TOKEN,
    LOCAL_OUTPUT_TOKENS,
    ModelSpec,
    ModelSystem,
)
from .rows import Row

if TYPE_CHECKING:  # pragma: no cover
    from ...papers import Paper


class AnswerSettings(Protocol):
    """What of the run's settings (``settings.Settings``, which a family does not import) a system reads."""

    @property
    def baseline(self) -> bool: ...
    @property
    def refresh(self) -> bool: ...
    @property
    def retries(self) -> int: ...

PROMPTS = Path(__file__).resolve().parent / "prompts"
BASELINE_PROMPT, CITED_PROMPT = "baseline", "cited_answer"
PROMPT_RESERVE_TOKENS = 2000  # the prompt around the paper, and the reply
# A local server's window: room for the prompt around the paper and a repair turn (the bad reply echoed,
# the schema); the output has its own reserve.
LOCAL_PROMPT_RESERVE_TOKENS = 1400


class CitedAnswerSystem(ModelSystem[Row]):
    """A litellm model answering a row's question from its paper, citing it verbatim."""

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *, baseline: bool = False,
                 refresh: bool = False, timeout_s: float = 120.0, retries: int = 3) -> None:
        super().__init__(spec, runner, cache, refresh=refresh, timeout_s=timeout_s, retries=retries)
        self.baseline = baseline
        self.cites = not baseline
        self.prompt = load_prompt(PROMPTS, BASELINE_PROMPT if baseline else CITED_PROMPT)

    @classmethod
    def for_run(cls, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, settings: AnswerSettings, *,
                timeout_s: float) -> "CitedAnswerSystem":
        """As a run builds it: its baseline mode, refresh, deadline and retries."""
        return cls(spec, runner, cache, baseline=settings.baseline, refresh=settings.refresh, timeout_s=timeout_s,
                   retries=settings.retries)

    def key(self, row: Row, paper: "Optional[Paper]") -> str:
        paper = _needed(paper)
        return cache_key(
            model=self.spec.name,
            params=self.spec.cache_params,
            prompt=self.prompt.sha,
            mode="baseline" if self.baseline else "cited",
            question=row.question,
            row=row.row_id,
            paper=paper.content_hash or paper.paper_id,
            # Whole paper or retrieved passages: a different window is a different question asked.
            **({"max_input_tokens": window} if (window := self.spec.params.get("max_input_tokens")) else {}),
        )

    def render(self, row: Row, paper: "Optional[Paper]") -> tuple[str, dict[str, Any]]:
        paper = _needed(paper)
        context, mode = self._context(row, paper)
        return self.prompt.render(paper=context, question=row.question, source=paper.paper_id), {"context": mode}

    def prompt_chars(self, row: Row, paper: "Optional[Paper]") -> int:
        """Estimated without ranking passages: the paper up to what the window holds, the prompt, the question."""
        paper = _needed(paper)
        return min(len(paper.text), self._context_chars()) + len(self.prompt.template) + len(row.question)

    def _context_chars(self) -> int:
        """How much of a paper fits the prompt: the whole paper when it is shorter."""
        limit = self.context_tokens
        if self.spec.local:
            output = self.spec.params.get("max_tokens") or LOCAL_OUTPUT_TOKENS
            return max(0, (limit - LOCAL_PROMPT_RESERVE_TOKENS - output) * LOCAL_CHARS_PER_TOKEN)
        return max(0, (limit - PROMPT_RESERVE_TOKENS) * CHARS_PER_TOKEN)

    def _context(self, row: Row, paper: "Paper") -> tuple[str, str]:
        budget_chars = self._context_chars()
        if len(paper.text) <= budget_chars:
            return paper.text, "full"
        from .bm25 import Bm25System

        ranked = Bm25System().ranked_passages(row, paper)
        chosen, used = [], 0
        for passage in ranked:
            if used + len(passage) > budget_chars:
                break
            chosen.append(passage)
            used += len(passage) + 8
        return "\n\n[...]\n\n".join(chosen), "bm25"


# The name it had in llm.system (kept there for one release, with a warning).
LlmSystem = CitedAnswerSystem


def _needed(paper: "Optional[Paper]") -> "Paper":
    if paper is None:  # the family's rows are about a paper: the plugin always hands one over
        raise TypeError("a citation row's model system needs the row's paper")
    return paper
