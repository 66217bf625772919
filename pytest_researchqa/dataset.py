"""What loading a dataset gives: its rows, the rows that failed, and the errors and warnings.

Shared by every reader (``loaders``, ``qasper``), so none of them imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Optional, Protocol, TypeVar

RowT = TypeVar("RowT")


class FamilyRow(Protocol):
    """What the plugin reads of any family's row (records, sampling, ids); the rest is the family's."""

    @property
    def row_id(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def question_type(self) -> str: ...  # a marker; sampling is stratified by it

    @property
    def domain(self) -> Optional[str]: ...

    @property
    def paper_id(self) -> Optional[str]: ...  # None for a family whose rows are not about one paper


class DatasetError(Exception):
    """The dataset as a whole cannot be read (missing file, broken syntax)."""


class DatasetWarning(UserWarning):
    """Something in a dataset file was ignored (an unknown key): the rows still load."""


@dataclass(frozen=True)
class RowProblem:
    """A row that failed validation, located precisely."""

    file: str
    location: str  # "line 12" or "row 3"
    field: str
    message: str
    row_id: str | None = None

    def __str__(self) -> str:
        return f"{self.file}, {self.location}, field {self.field!r}: {self.message}"


MORE_FIELDS_NAMED = 4  # other fields' errors a row's problem names after its first


def every_field(found: "list[tuple[str, str]]") -> tuple[str, str]:
    """A row's first bad field and a message naming the others too (up to a few): fixing one and meeting the next
    on each re-run wastes runs."""
    (where, message), others = found[0], found[1:]
    if others:
        message += "; also " + "; ".join(f"field {name!r}: {said}" for name, said in others[:MORE_FIELDS_NAMED])
        if len(others) > MORE_FIELDS_NAMED:
            message += f" (and {len(others) - MORE_FIELDS_NAMED} more)"
    return where, message


@dataclass
class Dataset(Generic[RowT]):
    """Rows in file order, the rows that failed, and where papers live (any family's rows)."""

    path: Path
    rows: list[RowT]
    problems: list[RowProblem] = field(default_factory=list)
    # paper_id -> text for datasets that carry their papers inline (QASPER).
    inline_papers: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent
