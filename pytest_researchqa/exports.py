"""The package's public names and the modules that define them: ``pytest_researchqa.__getattr__`` imports
each on first use, so importing the package (which pytest does at every start-up once the plugin is installed)
stays free. Their types are in ``__init__.pyi``."""

from __future__ import annotations

import importlib
import sys
from typing import Any

EXPORTS = {
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


def export(name: str) -> Any:
    """The package's attribute ``name``: a public name (imported from its module, then kept on the package)
    or ``__all__``."""
    package = sys.modules["pytest_researchqa"]
    if name == "__all__":
        value: Any = sorted(EXPORTS)
    elif name in EXPORTS:
        value = getattr(importlib.import_module(f"pytest_researchqa.{EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module 'pytest_researchqa' has no attribute {name!r}")
    setattr(package, name, value)
    return value
