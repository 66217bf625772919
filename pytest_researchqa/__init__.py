"""pytest-researchqa: citation-grounded paper-QA benchmark rows as pytest tests.

The public names below load on first use, so importing the package (which
pytest does at every start-up once the plugin is installed) stays free.

PYTEST_DONT_REWRITE: pytest loads this module at every start-up; it holds no test's asserts, so
pytest compiles it as Python does instead of rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "match_citation": "families.citation.matcher",
    "match_index": "families.citation.matcher",
    "CitationMatch": "families.citation.matcher",
    "MatchIndex": "families.citation.matcher",
    "cited_verbatim": "families.citation.assertions",
    "covers_sections": "families.citation.assertions",
    "grounded_refusal": "families.citation.assertions",
    "flags_premise": "families.citation.assertions",
    "judged": "families.citation.assertions",
    "check_answer": "families.citation.assertions",
    "Answer": "answers",
    "Row": "families.citation.rows",
    "SectionEvidence": "families.citation.rows",
    "Paper": "papers",
    "PaperUnavailable": "papers",
    "load_dataset": "families.citation.loaders",
    "Recorder": "records",
    "RowRecord": "records",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .families.citation.assertions import (
        check_answer,
        cited_verbatim,
        covers_sections,
        flags_premise,
        grounded_refusal,
        judged,
    )
    from .families.citation.loaders import load_dataset
    from .families.citation.matcher import CitationMatch, MatchIndex, match_citation, match_index
    from .families.citation.rows import Row, SectionEvidence
    from .papers import Paper, PaperUnavailable
    from .records import Recorder, RowRecord


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_researchqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
