"""The task the systems answer: a citation-supported answer to a research query under a date cutoff and
a length guidance (both on by default, both switchable, recorded per row), and the systems that answer it.

``ResearchAnswerSystem`` is a litellm model under this task (the shared runner,
cache, retries and structured output of ``llm.system.ModelSystem``). The family's
self-test, ``rubric-oracle``, is a built-in system (``systems/rubric_oracle.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ...answers import Answer
from ...llm.cache import AnswerCache, cache_key
from ...llm.engine import ModelRunner
from ...llm.prompts import load_prompt
from ...llm.system import ModelSpec, ModelSystem
from .rows import ResearchRow

if TYPE_CHECKING:  # pragma: no cover
    from ...papers import Paper

PROMPTS = Path(__file__).resolve().parent / "prompts"
TASK_PROMPT = "research_answer"

DEFAULT_LENGTH_WORDS = 250


@dataclass(frozen=True)
class TaskOptions:
    """What the task instruction says beyond the query (the seed's D and L)."""

    date_cutoff: bool = True
    length_words: Optional[int] = DEFAULT_LENGTH_WORDS  # None or 0: no length guidance

    def for_row(self, row: ResearchRow) -> dict[str, Any]:
        """The task as given for this row: recorded with its answer."""
        return {"date_cutoff": row.date if self.date_cutoff else None,
                "length_words": self.length_words or None}


def task_prompt(row: ResearchRow, options: TaskOptions) -> str:
    task = options.for_row(row)
    date_rule = (f"\nUse only work published on or before {task['date_cutoff']}: answer as a researcher would have "
                 "on that date, and cite nothing published later.\n" if task["date_cutoff"] else "")
    length_rule = (f"\nAim for about {task['length_words']} words in the answer (not counting the list of "
                   "citations).\n" if task["length_words"] else "")
    values = {"date_rule": date_rule, "length_rule": length_rule, "field": row.field or "(not given)",
              "query": row.query}
    return re.sub(r"\{(date_rule|length_rule|field|query)\}", lambda m: values[m.group(1)],
                  load_prompt(PROMPTS, TASK_PROMPT).template)


def answer_words(text: str) -> int:
    return len(re.findall(r"\w+(?:[-'’]\w+)*", text or ""))


# A heading over the list of cited works: "References", "## Sources", "**Sources:**", "__Bibliography__:".
_REFERENCES_HEADING = re.compile(r"^\s*(?:#+\s*)?[*_]{0,3}\s*(?:references|sources|bibliography|works cited|citations)"
                                 r"\s*(?:(?::[*_]{0,3}|[*_]{0,3}\s*:)[ \t]*(?P<rest>.*)|[*_]{0,3}\s*)$",
                                 re.IGNORECASE | re.MULTILINE)
_NUMBERED = re.compile(r"^\s*(?:[-*]\s*)?(?:\[(\d+)\]|(\d+)[.)])\s+\S")
_LOOKS_CITED = re.compile(r"\b(?:19|20)\d\d\b|et al|arxiv|doi|https?://", re.IGNORECASE)


def references(answer: Answer) -> list[str]:
    """The works an answer cites: its citation list, else the entries under a References (or Sources) heading
    in its text, else the numbered list that ends it when that list is one of cited works (see
    ``_trailing_numbered``)."""
    if answer.citations:
        return [c for c in answer.citations if c.strip()]
    text = answer.text or ""
    headings = list(_REFERENCES_HEADING.finditer(text))
    if headings:
        last = headings[-1]  # a references list ends an answer
        lines = [last.group("rest") or "", *text[last.end():].splitlines()]
        return [entry for line in lines if (entry := line.strip(" -*\t"))]
    return _trailing_numbered(text)


def _trailing_numbered(text: str) -> list[str]:
    """A numbered list with no heading that ends the answer, when it lists cited works: its numbers are the
    ``[n]`` markers of the text above it, or most of its entries look like citations (a year, et al, a DOI,
    an arXiv id or a link). A numbered list of the answer's own points is neither."""
    lines = text.splitlines()
    start = len(lines)
    while start > 0 and (not lines[start - 1].strip() or _NUMBERED.match(lines[start - 1])):
        start -= 1
    entries = [line.strip(" -*\t") for line in lines[start:] if line.strip()]
    if not entries:
        return []
    numbers = {int(m.group(1) or m.group(2)) for line in entries if (m := _NUMBERED.match(line))}
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", "\n".join(lines[:start]))}
    cited_like = sum(1 for entry in entries if _LOOKS_CITED.search(entry))
    return entries if numbers <= markers or 2 * cited_like >= len(entries) else []


class ResearchAnswerSystem(ModelSystem[ResearchRow]):
    """A litellm model answering research queries (no paper: the model's own knowledge or tools)."""

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, settings: Any, *,
                 timeout_s: Optional[float] = None) -> None:
        super().__init__(spec, runner, cache, refresh=settings.refresh,
                         timeout_s=settings.timeout_s if timeout_s is None else timeout_s, retries=settings.retries)
        self.options = TaskOptions(date_cutoff=settings.date_cutoff, length_words=settings.length_words)
        self.prompt = load_prompt(PROMPTS, TASK_PROMPT)

    @classmethod
    def for_run(cls, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, settings: Any, *,
                timeout_s: float) -> "ResearchAnswerSystem":
        """The family's ``model_system``: the run's task options, refresh and retries."""
        return cls(spec, runner, cache, settings, timeout_s=timeout_s)

    def key(self, row: ResearchRow, paper: "Optional[Paper]") -> str:
        return cache_key(model=self.spec.name, params=self.spec.cache_params, prompt=self.prompt.sha,
                         mode="research", row=row.row_id, query=row.query, task=self.options.for_row(row))

    def render(self, row: ResearchRow, paper: "Optional[Paper]") -> tuple[str, dict[str, Any]]:
        return task_prompt(row, self.options), {"context": "none (research query)"}
