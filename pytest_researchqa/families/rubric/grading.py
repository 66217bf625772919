"""Grading one research answer: what the row's record keeps of it, and its rubric coverage.

``record_answer`` puts the answer on the record as plain data (text, references,
word count, the task as given): the tournament at the end of the run and saved
runs read it from there, on any process. ``grade_coverage`` has the coverage
judges score every rubric item 0-4 and records Coverage (mean / 4). A row
without rubric items is not graded (the reason is returned); a row whose judges
all fail is an error, never a zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from ...answers import Answer
from ...records import Recorder, current_recorder
from .task import TaskOptions, answer_words, references

if TYPE_CHECKING:  # pragma: no cover
    from ...llm.judges import ModelJudge
    from .rows import ResearchRow


class NotGraded(Exception):
    """The row is answered and saved, but there is nothing to grade it against (the reason)."""


class JudgesFailed(Exception):
    """No judge gave a verdict for this answer."""


def record_answer(answer: Answer, row: "ResearchRow", options: TaskOptions, *,
                  recorder: Optional[Recorder] = None) -> None:
    target = current_recorder(recorder)
    if target is None:
        return
    cited = references(answer)
    target.detail("query", row.query)
    target.detail("field", row.field)
    target.detail("subdomain", row.subdomain)
    target.detail("general_domain", row.general_domain)
    target.detail("answer", answer.text)
    target.detail("references", cited)
    target.detail("words", answer_words(answer.text))
    target.detail("task", options.for_row(row))
    target.detail("date", row.date)
    if row.survey_title:
        target.detail("survey_title", row.survey_title)


def grade_coverage(answer: Answer, row: "ResearchRow", judges: "Optional[Sequence[ModelJudge]]", *,
                   generic_rubric: bool = False, recorder: Optional[Recorder] = None) -> dict[str, Any]:
    """Coverage of every rubric item by every judge, and their consensus; raises NotGraded / JudgesFailed."""
    from ...llm.judges import judge_all
    from .judges import generic_rubric as generic_items
    from .kinds import classify_item

    texts = [item.text for item in row.rubric] or (list(generic_items()) if generic_rubric else [])
    if not texts:
        raise NotGraded("no rubric items: answered and saved, not graded (--researchqa-generic-rubric grades such "
                        "rows on the eight generic criteria)")
    if not judges:
        raise NotGraded("no judge: answered and saved, not graded (--researchqa-judge=MODEL scores rubric coverage)")
    result = judge_all(judges, row, answer)
    target = current_recorder(recorder)
    consensus = result.consensus.get("coverage")
    if target is not None:
        target.judge(result)
        target.detail("rubric", "generic" if not row.rubric else "query")
        target.detail("items", [{"text": text, "kind": classify_item(text),
                                 "coverage": result.items[n] if result.items else None}
                                for n, text in enumerate(texts)])
    if consensus is None:
        failures = "; ".join(f"{name}: {scores.error}" for name, scores in result.by_judge.items())
        raise JudgesFailed(f"no coverage verdict for this answer ({failures})")
    if target is not None:
        target.metric("coverage", consensus / 4)
    return result.to_plain()
