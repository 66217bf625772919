"""Research-query rows and the files they come from. Problems are located by file, row and field.

Shapes read:

* the benchmark's files (``test.json``, ``valid.json``, ``full.json``): a JSON list of
  ``{id, general_domain, subdomain, field, query, date, rubric: [{rubric_item, type,
  citation_metadata}]}``;
* the JSONL shape of published query lists (``{question, task_id, metadata: {field,
  general_domain, subdomain}}``, no rubric, no date): such rows are answered and saved,
  and their grading is skipped with the reason;
* hand-written YAML or JSONL rows in either spelling (a list, or ``{rows: [...]}``);
  rubric items may be plain strings. ``survey_title`` (optional) enables the leakage check.
"""

from __future__ import annotations

import datetime
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ...dataset import Dataset, DatasetError, DatasetWarning, RowProblem, every_field
from .kinds import classify_item

# Keys each shape carries that this family reads nowhere (kept quiet, not warned about).
_IGNORED = {"answer", "bench", "metric", "medical_reason", "reference_answer"}
_ROW_KEYS = {"id", "task_id", "row_id", "query", "question", "general_domain", "subdomain", "field", "date",
             "date_cutoff", "rubric", "survey_title", "metadata"}
_ITEM_KEYS = {"rubric_item", "item", "text", "type", "citation_metadata"}


@dataclass(frozen=True)
class RubricItem:
    text: str
    source_type: Optional[str] = None  # the file's ``type``: how the benchmark generated the item
    citation: Optional[dict[str, Any]] = None  # the file's ``citation_metadata``

    @property
    def kind(self) -> str:
        """One of citation, limitation, comparison, example, impact, other (rules: ``kinds.py``)."""
        return classify_item(self.text)


@dataclass(frozen=True)
class ResearchRow:
    row_id: str
    query: str
    field: Optional[str] = None
    subdomain: Optional[str] = None
    general_domain: Optional[str] = None
    date: Optional[str] = None  # the date cutoff, ISO (YYYY-MM-DD or YYYY)
    rubric: tuple[RubricItem, ...] = ()
    survey_title: Optional[str] = None

    # What the plugin's shared code reads off any row.
    @property
    def question(self) -> str:
        return self.query

    @property
    def question_type(self) -> str:
        from . import domain_marker

        return domain_marker(self.general_domain)

    @property
    def domain(self) -> Optional[str]:
        return self.general_domain

    @property
    def paper_id(self) -> None:
        return None  # a research query is about a field, not one paper

    @property
    def paper_s3_url(self) -> None:
        return None

    @property
    def date_year(self) -> Optional[int]:
        return int(self.date[:4]) if self.date else None


class _Bad(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name


def load_queries(path: str | Path) -> "Dataset[ResearchRow]":
    from ... import dataset_files

    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    records = dataset_files.file_records(path)
    rows: list[ResearchRow] = []
    problems: list[RowProblem] = []
    unknown: set[str] = set()
    seen: dict[str, str] = {}
    for location, record in records:
        if isinstance(record, dataset_files.Unparsable):
            problems.append(RowProblem(path.name, location, record.field, record.message, record.row_id))
            continue
        row_id = _text(record.get("id", record.get("task_id", record.get("row_id")))) if isinstance(
            record, dict) else None
        try:
            row = _row(record, unknown)
        except _Bad as bad:
            problems.append(RowProblem(path.name, location, bad.field_name, str(bad), row_id))
            continue
        if row.row_id in seen:
            problems.append(RowProblem(path.name, location, "id", f"duplicate id {row.row_id!r} "
                                       f"(first at {seen[row.row_id]})", row.row_id))
            continue
        seen[row.row_id] = location
        rows.append(row)
    if unknown:
        warnings.warn(DatasetWarning(f"{path.name}: ignored unknown key(s): {', '.join(sorted(unknown))}"),
                      stacklevel=2)
    return Dataset(path, rows, problems)


def _text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value.strip() or None if isinstance(value, str) else None


def _row(record: Any, unknown: set[str]) -> ResearchRow:
    if not isinstance(record, dict):
        raise _Bad("(row)", f"expected a mapping, found {type(record).__name__}")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _Bad("metadata", "expected a mapping")
    unknown |= {k for k in record if k not in _ROW_KEYS | _IGNORED}
    unknown |= {f"metadata.{k}" for k in metadata
                if k not in {"field", "general_domain", "subdomain", "date", "survey_title"} | _IGNORED}
    found: list[tuple[str, str]] = []  # every bad field, said at once (dataset.every_field)

    def read(name: str) -> Optional[str]:
        value = record.get(name, metadata.get(name))
        if value is not None and not isinstance(value, (str, int, float)) or isinstance(value, bool):
            found.append((name, f"expected text, found {type(value).__name__}"))
            return None
        return _text(value)

    raw_id = record.get("id", record.get("task_id", record.get("row_id")))
    if isinstance(raw_id, bool) or _text(raw_id) is None:
        found.append(("id", "missing or blank (an id, task_id or row_id is required)"))
    query = _text(record.get("query", record.get("question")))
    if query is None:
        found.append(("query", "missing or blank"))
    for name in ("date", "date_cutoff"):  # YAML reads an unquoted 2020-10-02 as a date
        if isinstance(record.get(name), datetime.date):
            record = {**record, name: record[name].isoformat()[:10]}
    date_field, date = next(((name, given) for name in ("date", "date_cutoff") if (given := read(name)) is not None),
                            ("date", None))
    if date is not None:
        try:
            date = _iso_date(date)
        except _Bad as bad:
            found.append((date_field, str(bad)))  # the key the file used
    rubric = record.get("rubric") or []
    if not isinstance(rubric, list):
        found.append(("rubric", f"expected a list of items, found {type(rubric).__name__}"))
        rubric = []
    items = []
    for number, item in enumerate(rubric):
        try:
            items.append(_item(number, item, unknown))
        except _Bad as bad:
            found.append((bad.field_name, str(bad)))
    described = {name: read(name) for name in ("field", "subdomain", "general_domain", "survey_title")}
    if found:
        raise _Bad(*every_field(found))
    return ResearchRow(row_id=str(_text(raw_id)), query=str(query), date=date, rubric=tuple(items), **described)


def _iso_date(text: str) -> str:
    """YYYY-MM-DD (or YYYY, or YYYY-MM); anything else is a row problem."""
    for form, width in (("%Y-%m-%d", 10), ("%Y-%m", 7), ("%Y", 4)):
        try:
            datetime.datetime.strptime(text[:width], form)
        except ValueError:
            continue
        if len(text) == width or (width == 10 and text[10:11] in ("T", " ")):
            return text[:width]
    raise _Bad("date", f"{text!r} is not a date (YYYY-MM-DD, YYYY-MM or YYYY)")


def _item(number: int, item: Any, unknown: set[str]) -> RubricItem:
    where = f"rubric[{number}]"
    if isinstance(item, str):
        if not item.strip():
            raise _Bad(where, "a blank rubric item")
        return RubricItem(item.strip())
    if not isinstance(item, dict):
        raise _Bad(where, f"expected text or a mapping, found {type(item).__name__}")
    unknown |= {f"rubric.{k}" for k in item if k not in _ITEM_KEYS}
    text = _text(item.get("rubric_item", item.get("item", item.get("text"))))
    if text is None:
        raise _Bad(f"{where}.rubric_item", "missing or blank")
    return RubricItem(text, _text(item.get("type")), _citation(item.get("citation_metadata"), where))


def _citation(value: Any, where: str) -> Optional[dict[str, Any]]:
    """An item's cited work as a mapping. The released loader types ``citation_metadata`` as an optional
    string: a string holding JSON is read as that JSON, any other string is the citation's text."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = json.loads(text) if text[0] in "[{" else {"text": text}
        except ValueError:
            value = {"text": text}
    if value is not None and not isinstance(value, (dict, list)):
        raise _Bad(f"{where}.citation_metadata", f"expected a mapping or text, found {type(value).__name__}")
    if isinstance(value, list):  # some files list several cited works
        value = {"works": value}
    return value or None
