"""Types of the package's public names, which ``__init__.py`` imports on first use (``exports``)."""

from .answers import Answer as Answer
from .families.citation.assertions import check_answer as check_answer
from .families.citation.assertions import cited_verbatim as cited_verbatim
from .families.citation.assertions import covers_sections as covers_sections
from .families.citation.assertions import flags_premise as flags_premise
from .families.citation.assertions import grounded_refusal as grounded_refusal
from .families.citation.assertions import judged as judged
from .families.citation.loaders import load_dataset as load_dataset
from .families.citation.matcher import CitationMatch as CitationMatch
from .families.citation.matcher import MatchIndex as MatchIndex
from .families.citation.matcher import match_citation as match_citation
from .families.citation.matcher import match_index as match_index
from .families.citation.rows import Row as Row
from .families.citation.rows import SectionEvidence as SectionEvidence
from .papers import Paper as Paper
from .papers import PaperUnavailable as PaperUnavailable
from .records import Recorder as Recorder
from .records import RowRecord as RowRecord

__version__: str
__all__: list[str]
