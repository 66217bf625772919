"""Import a SQuAD-format file (``{"data": [{"paragraphs": [{"context", "qas"}]}]}``) as rows over text
papers: COVID-QA (Möller et al., 2020), whose every context is a whole open-access article, is the case
it is for.

Each context is a paper (its ``document_id`` when it has one, else the file's stem and the context's
number), each question a row. An answerable question is a ``lookup`` whose one required section,
``Answer``, has every annotator's answer span as an alternative (verbatim in the context; a span under
the coverage floor, a year or a number, widened to its sentence); an unanswerable one (SQuAD 2.0's
``is_impossible``) is ``adversarial``. The domain is the file's stem: the format has none.
docs/datasets.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...dataset import Dataset, RowProblem
from .matcher.textkey import text_key
from .metrics import MIN_COVERING_KEY
from .rows import Row

ANSWER_SECTION = "Answer"
UNANSWERABLE = "The paper does not answer this question."


def looks_like_squad(data: Any) -> bool:
    entries = data.get("data") if isinstance(data, dict) else None
    first = entries[0] if isinstance(entries, list) and entries else None
    return isinstance(first, dict) and isinstance(first.get("paragraphs"), list)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def _answer(qa: dict[str, Any]) -> str:
    return next((text for a in qa.get("answers") or [] if (text := str(a.get("text") or "").strip())), "")


def _evidence(answer: dict[str, Any], context: str) -> str:
    """The answer's span as evidence; a span too short to stand for a passage (a year, a number: under the
    coverage floor's letters) is widened to the sentence of the context that holds it."""
    text = str(answer.get("text") or "").strip()
    if not text or len(text_key(text)) >= MIN_COVERING_KEY:
        return text
    start = answer.get("answer_start")
    if not (isinstance(start, int) and context[start:].lstrip().startswith(text)):
        start = context.find(text)  # some answer_start offsets are off: the first place instead
    if start < 0:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(context, 0, start)]
    after = _SENTENCE_END.search(context, start + len(text))
    return context[ends[-1] if ends else 0 : after.start() if after else len(context)].strip()


def squad_dataset(path: Path, data: dict[str, Any]) -> Dataset[Row]:
    from pydantic import ValidationError

    rows: list[Row] = []
    problems: list[RowProblem] = []
    inline: dict[str, str] = {}
    for article, entry in enumerate(data["data"]):
        for number, paragraph in enumerate(entry["paragraphs"]):
            document = paragraph.get("document_id")
            paper_id = f"{path.stem}-{document if document is not None else f'{article}-{number}'}"
            inline[paper_id] = str(paragraph["context"])
            for qa in paragraph.get("qas") or []:
                where = f"paper {paper_id} question {qa.get('id', '?')}"
                context = inline[paper_id]
                texts = list(dict.fromkeys(t for a in qa.get("answers") or [] if (t := _evidence(a, context))))
                impossible = bool(qa.get("is_impossible"))
                if not texts and not impossible:
                    problems.append(RowProblem(str(path), where, "answers", "no answer text", None))
                    continue
                row_id = f"{path.stem}-{qa.get('id', f'{paper_id}-{len(rows)}')}"
                record = {
                    "row_id": row_id, "paper_id": paper_id,
                    "domain": path.stem, "question_type": "adversarial" if impossible else "lookup",
                    "question": str(qa.get("question") or ""),
                    "expected_answer": UNANSWERABLE if impossible else _answer(qa),
                    "expected_references": [] if impossible else [
                        {"section_label": ANSWER_SECTION, "alternatives": texts}],
                    "expected_refusal": True if impossible else None}
                try:
                    rows.append(Row.model_validate(record))
                except ValidationError as error:  # one bad question, not the file
                    first = error.errors()[0]
                    field = ".".join(str(part) for part in first["loc"]) or "(row)"
                    problems.append(RowProblem(str(path), where, field, first["msg"], row_id))
    return Dataset(path=path, rows=rows, problems=problems, inline_papers=inline)
