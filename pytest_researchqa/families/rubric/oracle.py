"""The rubric oracle: answers a research query with its rubric items' own content.

Each item's statement becomes a sentence and its cited work a reference, so a coverage
judge should find every item completely covered: the rubric family's self-test.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from ...answers import Answer

if TYPE_CHECKING:  # pragma: no cover
    from ...papers import Paper
    from .rows import ResearchRow

_ITEM_LEAD = re.compile(r"^(?:does|do|did|is|are|has|have)\s+the\s+(?:response|answer)\s+", re.IGNORECASE)


def rubric_oracle(row: "ResearchRow", paper: "Optional[Paper]" = None) -> Answer:
    """An answer made of the rubric items' own content, and their cited works as references."""
    sentences, cited = [], []
    for item in row.rubric:
        statement = _ITEM_LEAD.sub("", item.text).rstrip(" ?")
        sentences.append(statement[:1].upper() + statement[1:] + ".")
        if item.citation:
            title = item.citation.get("title") or item.citation.get("name")
            year = item.citation.get("year")
            if title:
                cited.append(f"{item.citation.get('authors', 'Authors')} ({year or 'n.d.'}). {title}.")
            elif item.citation.get("text"):  # a citation given as text (the released files' string form)
                cited.append(str(item.citation["text"]))
    return Answer(text=" ".join(sentences) or row.query, citations=cited)
