"""Read datasets in the shapes users have.

* ``*.jsonl`` -- the published flat file: one row per line, ``metadata_*`` keys.
* ``*.json`` -- the wrapper ``{"version": ..., "rows": [...]}`` with nested
  metadata, or a bare list of such rows, or the QASPER release or a SQuAD-format file such as COVID-QA
  (detected).
* ``*.yaml`` / ``*.yml`` -- hand-written rows: a list, or ``{rows: [...]}``.

Every shape goes through one normalization, so the files the original harness
writes load whole: its generator puts ``required_sections``, ``reasoning_chain``
and ``false_premise`` at the top of a row, its download script leaves
``metadata_*`` keys at the top of wrapper rows, and rows written before their
domain is backfilled carry ``domain: null`` (read as ``unknown``). A key the
schema does not know is dropped and reported once per file as a
:class:`DatasetWarning` (the row still runs: a new field in someone's export
must not cost a benchmark its rows).

A malformed row never stops the others: it becomes a :class:`RowProblem` that
names the file, the line (or row index) and the field, and the plugin turns it
into one erroring test while every other row runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ...dataset import Dataset, DatasetError, DatasetWarning, RowProblem, every_field
from ...dataset_files import (
    Unparsable,
    is_json_lines,
    jsonl_records,
    pandas_hint,
    pandas_orientation,
    read_json,
    read_text,
    wrapper_records,
    yaml_records,
)
from .rows import METADATA_FIELDS, Row, RowMetadata

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

__all__ = ["Dataset", "DatasetError", "DatasetWarning", "RowProblem", "load_dataset"]


def load_dataset(path: str | Path) -> Dataset[Row]:
    """Load a dataset file, choosing the reader by its suffix and shape."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: dataset file not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _from_records(path, jsonl_records(path), flat=True)
    if suffix in (".yaml", ".yml"):
        return _from_records(path, yaml_records(path), flat=False)
    if suffix == ".json":
        text = read_text(path)
        if is_json_lines(text):  # Hugging Face's Dataset.to_json writes JSON Lines under .json by default
            return _from_records(path, jsonl_records(path), flat=True)
        data = read_json(path, text)
        if isinstance(data, dict) and "rows" not in data and _looks_like_qasper(data):
            from .qasper import qasper_dataset

            try:
                return qasper_dataset(path, data)
            except (KeyError, TypeError, AttributeError, ValueError) as error:
                raise DatasetError(f"{path}: looks like a QASPER file but is malformed "
                                   f"({type(error).__name__}: {error})") from None
        from .squad import looks_like_squad

        if looks_like_squad(data):
            from .squad import squad_dataset

            try:
                return squad_dataset(path, data)
            except (KeyError, TypeError, AttributeError, ValueError) as error:
                raise DatasetError(f"{path}: looks like a SQuAD-format file but is malformed "
                                   f"({type(error).__name__}: {error})") from None
        return _from_records(path, wrapper_records(path, data, text), flat=False)
    raise DatasetError(f"{path}: unknown dataset format {suffix!r} (use .jsonl, .json or .yaml)")


def _looks_like_qasper(data: dict[str, Any]) -> bool:
    first = next(iter(data.values()), None)
    return isinstance(first, dict) and "qas" in first and "full_text" in first


def _from_records(path: Path, records: Iterable[tuple[str, Any]], flat: bool) -> Dataset[Row]:
    from pydantic import ValidationError

    rows: list[Row] = []
    problems: list[RowProblem] = []
    seen: dict[str, str] = {}
    shared = _Shared()
    unknown: dict[str, str] = {}  # key -> where it was first seen
    for location, record in records:
        if isinstance(record, Unparsable):
            problems.append(RowProblem(str(path), location, record.field, record.message, record.row_id))
            continue
        if flat and not rows and not problems and isinstance(record, dict) and (frame := pandas_orientation(record)):
            raise DatasetError(pandas_hint(path, frame))  # one line: the whole frame
        if not isinstance(record, dict):
            found = type(record).__name__
            problems.append(RowProblem(str(path), location, "(row)", f"expected an object, found {found}"))
            continue
        row_id = record.get("row_id")
        normalized = _normalize(record)
        for key in set(normalized) - _ROW_FIELDS:
            unknown.setdefault(key, location)
            del normalized[key]
        try:
            row = Row.model_validate(normalized)
        except ValidationError as error:
            fields = [(_field_name(each["loc"], flat), each["msg"] + _yaml_hint(each.get("input"), path))
                      for each in error.errors()]
            where, message = every_field(fields)
            problems.append(RowProblem(str(path), location, where, message, str(row_id) if row_id else None))
            continue
        if row.row_id in seen:
            problems.append(
                RowProblem(str(path), location, "row_id", f"duplicate of {seen[row.row_id]}", row.row_id)
            )
            continue
        seen[row.row_id] = location
        rows.append(shared.lighter(row))
    if unknown:
        import warnings

        listed = ", ".join(f"{key!r} (first at {where})" for key, where in sorted(unknown.items()))
        warnings.warn(DatasetWarning(f"{path}: ignored keys the row schema does not have: {listed}"), stacklevel=2)
    return Dataset(path=path, rows=rows, problems=problems)


def _yaml_hint(value: Any, path: Path) -> str:
    """YAML 1.1 reads an unquoted yes, no, on or off as a boolean: a question or answer "no" is not text."""
    if isinstance(value, bool) and path.suffix.lower() in (".yaml", ".yml"):
        return f" (YAML read {str(value).lower()} here: quote a yes/no/on/off meant as text)"
    return ""


def _field_name(loc: Sequence[Any], flat: bool) -> str:
    """A validation error's field as the file spells it (``metadata_domain`` in a flat file)."""
    where = ".".join(str(part) for part in loc) or "(row)"
    return "metadata_" + where.split(".", 1)[1] if flat and where.startswith("metadata.") else where


class _Shared:
    """What the rows of one file can share instead of holding a copy each (issue 24 item 2).

    Every row is kept for the whole run, and Python's collector walks each container object it holds at
    every full collection: about a dozen a row as pydantic validates it (the model, its ``__dict__`` and
    its set of the fields given, the same for its metadata and each section, the lists). Rows given the
    same fields get one set of field names between them (``model_fields_set``; pydantic copies it when a
    row is copied, and a frozen row never changes it), and rows with equal metadata one ``RowMetadata``
    (frozen: equal is the same). What a row says, dumps, compares and copies is unchanged.
    """

    def __init__(self) -> None:
        self._fields: list[set[str]] = []  # the distinct sets of field names met (few: compared, not hashed)
        self._metadata: dict[tuple[Any, ...], RowMetadata] = {}

    def _fields_of(self, model: BaseModel) -> set[str]:
        given = model.__pydantic_fields_set__
        for kept in self._fields:
            if kept == given:
                if kept is not given:
                    object.__setattr__(model, "__pydantic_fields_set__", kept)
                return kept
        if len(self._fields) < _DISTINCT_FIELD_SETS:
            self._fields.append(given)
        return given

    def lighter(self, row: Row) -> Row:
        self._fields_of(row)
        metadata = row.metadata
        # Equal metadata: the same values and the same fields given (what ``exclude_unset`` dumps). The set is
        # kept alive by the metadata filed under its id, so no other set takes that id meanwhile.
        key = (id(self._fields_of(metadata)), *metadata.__dict__.values())
        try:
            kept = self._metadata.setdefault(key, metadata)
        except TypeError:  # a list among its values (required_sections): not shared
            kept = metadata
        if kept is not metadata:
            row.__dict__["metadata"] = kept  # frozen: set in place, as pydantic sets it
        for section in row.expected_references:
            self._fields_of(section)
        return row


_DISTINCT_FIELD_SETS = 64  # beyond that many distinct sets in one file, the others are not shared
_ROW_FIELDS = frozenset(Row.model_fields)
_METADATA_KEYS = frozenset(METADATA_FIELDS)


def _normalize(record: dict[str, Any]) -> dict[str, Any]:
    """One row in the schema's shape, whichever file shape it came in (see the module docstring)."""
    # One pass over the keys, and nothing made that a row does not need (issue 24 item 2: a row of the
    # seed's 6,211 is normalized at every collection).
    nested: dict[str, Any] = {}
    given: list[tuple[str, Any]] = []  # metadata_* keys, then the sparse fields at the top of a row
    top: list[tuple[str, Any]] = []
    for k, v in record.items():
        if k.startswith("metadata_"):
            given.append((k[9:], v))
        elif k in _METADATA_KEYS:
            top.append((k, v))
        else:
            nested[k] = v  # a "metadata" that is not a mapping stays: validation names the field
    raw = record.get("metadata")
    metadata: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    for key, value in given + top if top else given:
        # The flat file writes absent sparse fields as null or empty strings.
        if (value is None or value == "") and key in _METADATA_KEYS:
            continue
        metadata.setdefault(key, value)
    if metadata:
        for key in [k for k in metadata if k not in _METADATA_KEYS]:
            nested[f"metadata_{key}"] = metadata.pop(key)  # unknown: dropped and reported by the caller
    if metadata or isinstance(raw, dict):
        nested["metadata"] = metadata
    elif raw is None:
        nested.pop("metadata", None)
    references = nested.get("expected_references")
    if isinstance(references, str):
        try:
            nested["expected_references"] = json.loads(references)
        except json.JSONDecodeError:
            pass  # validation reports the field
    return nested
