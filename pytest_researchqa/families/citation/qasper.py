"""Import the QASPER release (Dasigi et al., 2021) as rows over text papers.

Each paper's text is its title, abstract, every section heading and paragraph,
and the figure and table captions, so the human evidence can be matched. One
row per question; the first annotator's evidence decides the required
sections, and every annotator's evidence paragraphs in those sections are
alternatives. The question-type mapping is documented in docs/datasets.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...dataset import Dataset, RowProblem
from .rows import Row

FLOAT_PREFIX = "FLOAT SELECTED:"
FIGURES_SECTION = "Figures and tables"
UNLOCATED_SECTION = "(evidence not in the paper text)"
DOMAIN = "natural language processing"


def paper_text(paper: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The paper as text, and which section each paragraph (or heading) belongs to."""
    blocks: list[str] = [paper.get("title") or "", "Abstract", paper.get("abstract") or ""]
    section_of: dict[str, str] = {paper.get("abstract") or "": "Abstract"}
    for section in paper.get("full_text") or []:
        name = section.get("section_name") or "Body"
        blocks.append(name)
        section_of.setdefault(name, name)
        for paragraph in section.get("paragraphs") or []:
            blocks.append(paragraph)
            section_of.setdefault(paragraph, name)
    captions = [f.get("caption") or "" for f in paper.get("figures_and_tables") or []]
    if captions:
        blocks.append(FIGURES_SECTION)
        blocks.extend(captions)
    return "\n\n".join(b for b in blocks if b), section_of


def _evidence_section(evidence: str, section_of: dict[str, str]) -> tuple[str, str]:
    if evidence.startswith(FLOAT_PREFIX):
        return FIGURES_SECTION, evidence[len(FLOAT_PREFIX) :].strip()
    return section_of.get(evidence, UNLOCATED_SECTION), evidence


def _answer_text(answer: dict[str, Any]) -> str:
    if answer.get("unanswerable"):
        return "The paper does not answer this question."
    if answer.get("free_form_answer"):
        return str(answer["free_form_answer"])
    if answer.get("extractive_spans"):
        return "; ".join(s.strip() for s in answer["extractive_spans"])
    if answer.get("yes_no") is not None:
        return "Yes." if answer["yes_no"] else "No."
    return ""


def qasper_dataset(path: Path, data: dict[str, Any]) -> Dataset[Row]:
    rows: list[Row] = []
    problems: list[RowProblem] = []
    inline: dict[str, str] = {}
    for paper_id, paper in data.items():
        text, section_of = paper_text(paper)
        inline[paper_id] = text
        for number, qa in enumerate(paper.get("qas") or []):
            answers = [a.get("answer") or {} for a in qa.get("answers") or []]
            if not answers:
                problems.append(RowProblem(str(path), f"paper {paper_id} question {number}", "answers", "no answers"))
                continue
            first = answers[0]
            required: dict[str, list[str]] = {}
            for evidence in first.get("evidence") or []:
                label, passage = _evidence_section(evidence, section_of)
                required.setdefault(label, [])
                if passage not in required[label]:
                    required[label].append(passage)
            for other in answers[1:]:
                for evidence in other.get("evidence") or []:
                    label, passage = _evidence_section(evidence, section_of)
                    if label in required and passage not in required[label]:
                        required[label].append(passage)
            if first.get("unanswerable"):
                question_type = "adversarial"
            elif len(required) >= 2:
                question_type = "multi_hop"
            elif first.get("extractive_spans") or first.get("yes_no") is not None:
                question_type = "lookup"
            else:
                question_type = "comprehension"
            references = [
                {"section_label": label, "alternatives": alternatives}
                for label, alternatives in required.items()
                if alternatives
            ]
            rows.append(
                Row(
                    row_id=qa.get("question_id") or f"{paper_id}-q{number}",
                    paper_id=paper_id,
                    domain=DOMAIN,
                    question_type=question_type,  # type: ignore[arg-type]  # one of the four, by construction
                    question=qa.get("question") or "",
                    expected_answer=_answer_text(first),
                    expected_references=[] if question_type == "adversarial" else references,  # type: ignore[arg-type]
                    expected_refusal=True if question_type == "adversarial" else None,
                )
            )
    return Dataset(path=path, rows=rows, problems=problems, inline_papers=inline)
