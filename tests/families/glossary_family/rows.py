"""The glossary family's rows and their loader (JSONL: one ``{"id", "term", "keywords"}`` a line)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pytest_researchqa.dataset import Dataset, RowProblem


@dataclass(frozen=True)
class TermRow:
    row_id: str
    term: str
    keywords: tuple[str, ...]
    question_type: str = "definition"
    domain: Optional[str] = None
    paper_id: Optional[str] = None

    @property
    def question(self) -> str:
        return f"What is {self.term}?"


def load_terms(path: Path) -> Dataset[Any]:
    rows: list[Any] = []
    problems = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        data = json.loads(line)
        if not data.get("keywords"):
            problems.append(RowProblem(path.name, f"line {number}", "keywords", "no keywords", data.get("id")))
            continue
        rows.append(TermRow(str(data["id"]), data["term"], tuple(data["keywords"]), data.get("type", "definition")))
    return Dataset(path, rows, problems)
