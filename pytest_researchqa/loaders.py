"""Read datasets in the shapes users have.

* ``*.jsonl`` -- the published flat file: one row per line, ``metadata_*`` keys.
* ``*.json`` -- the wrapper ``{"version": ..., "rows": [...]}`` with nested
  metadata, or a bare list of such rows, or the QASPER release (detected).
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
from typing import Any, Iterator

from .dataset import Dataset, DatasetError, DatasetWarning, RowProblem
from .rows import METADATA_FIELDS, Row

__all__ = ["Dataset", "DatasetError", "DatasetWarning", "RowProblem", "load_dataset"]


def load_dataset(path: str | Path) -> Dataset[Row]:
    """Load a dataset file, choosing the reader by its suffix and shape."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: dataset file not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _from_records(path, _jsonl_records(path), flat=True)
    if suffix in (".yaml", ".yml"):
        return _from_records(path, _yaml_records(path), flat=False)
    if suffix == ".json":
        text = _read_text(path)
        data = _read_json(path, text)
        if isinstance(data, dict) and "rows" not in data and _looks_like_qasper(data):
            from .qasper import qasper_dataset

            try:
                return qasper_dataset(path, data)
            except (KeyError, TypeError, AttributeError, ValueError) as error:
                raise DatasetError(f"{path}: looks like a QASPER file but is malformed "
                                   f"({type(error).__name__}: {error})") from None
        return _from_records(path, _wrapper_records(path, data, text), flat=False)
    raise DatasetError(f"{path}: unknown dataset format {suffix!r} (use .jsonl, .json or .yaml)")


def file_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, raw record) for every row of a .jsonl, .json (wrapper or list) or .yaml file.

    For families with row schemas of their own: the same file shapes, locations and hostile-input
    rules as the citation rows; a record that cannot be parsed is an :class:`Unparsable`.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl_records(path)
    if suffix in (".yaml", ".yml"):
        return _yaml_records(path)
    if suffix == ".json":
        text = _read_text(path)
        return _wrapper_records(path, _read_json(path, text), text)
    raise DatasetError(f"{path}: unknown dataset format {suffix!r} (use .jsonl, .json or .yaml)")


def _read_text(path: Path) -> str:
    """The file as UTF-8 text (a byte-order mark is allowed); bad bytes are an error naming the line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DatasetError(f"{path}: line {line}: not UTF-8 text ({error.reason})") from None


def _read_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: line {error.lineno}: not valid JSON: {error.msg}") from None
    except RecursionError:
        raise DatasetError(f"{path}: nested too deeply to be a dataset") from None


def _looks_like_qasper(data: dict) -> bool:
    first = next(iter(data.values()), None)
    return isinstance(first, dict) and "qas" in first and "full_text" in first


def _jsonl_records(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a byte-order mark
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                yield f"line {number}", Unparsable(f"not UTF-8 text ({error.reason} at byte {error.start})")
                continue
            if not line.strip():
                continue
            try:
                yield f"line {number}", json.loads(line)
            except json.JSONDecodeError as error:
                yield f"line {number}", Unparsable(f"not valid JSON: {error.msg} (column {error.colno})")
            except RecursionError:
                yield f"line {number}", Unparsable("nested too deeply to be a row")


def _wrapper_records(path: Path, data: Any, text: str) -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        rows = data.get("rows")
        if not isinstance(rows, list):
            keys = ", ".join(map(repr, list(data)[:5])) or "none"
            raise DatasetError(f'{path}: not a dataset shape this plugin reads: expected {{"version": ..., '
                               f'"rows": [...]}}, a list of rows or the QASPER release; found an object with keys '
                               f"{keys} (see docs/datasets.md)")
    elif isinstance(data, list):
        rows = data
    else:
        raise DatasetError(f"{path}: expected a list of rows, found {type(data).__name__}")
    lines = _json_row_lines(text, in_key="rows" if isinstance(data, dict) else None)
    for index, record in enumerate(rows):
        line = f" (line {lines[index]})" if index < len(lines) else ""
        yield f"row {index + 1}{line}", record


def _json_row_lines(text: str, in_key: str | None) -> list[int]:
    """The line each element of the rows array starts on (the text is already known to be valid JSON)."""
    if "\n" not in text.strip():
        return []  # one line: the row number says it all
    decoder = json.JSONDecoder()

    def skip(at: int) -> int:
        while at < len(text) and text[at] in " \t\r\n,:":
            at += 1
        return at

    at = skip(0)
    if in_key is not None:  # walk the top-level object to the key's value
        at = skip(at + 1)
        while text[at] != "}":
            key, at = decoder.raw_decode(text, at)
            at = skip(at)
            if key == in_key:
                break
            _, at = decoder.raw_decode(text, at)
            at = skip(at)
        else:
            return []
    if text[at] != "[":
        return []
    lines, at = [], skip(at + 1)
    line, counted = 1, 0
    while text[at] != "]":
        line, counted = line + text.count("\n", counted, at), at
        lines.append(line)
        _, at = decoder.raw_decode(text, at)
        at = skip(at)
    return lines


def _yaml_records(path: Path) -> Iterator[tuple[str, Any]]:
    import yaml

    try:
        root = yaml.compose(_read_text(path), Loader=_loader())
    except RecursionError:
        raise DatasetError(f"{path}: nested too deeply to be a dataset") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise DatasetError(f"{path}: {where}not valid YAML: {getattr(error, 'problem', error)}") from None
    if root is None:
        return
    if isinstance(root, yaml.MappingNode):
        nodes = [value for key, value in root.value if key.value == "rows"]
        if not nodes or not isinstance(nodes[0], yaml.SequenceNode):
            raise DatasetError(f"{path}: expected a list of rows or a mapping with 'rows:'")
        root = nodes[0]
    if not isinstance(root, yaml.SequenceNode):
        raise DatasetError(f"{path}: expected a list of rows")
    for index, node in enumerate(root.value):
        location = f"row {index + 1} (line {node.start_mark.line + 1})"
        try:
            record = yaml.load(yaml.serialize(node), Loader=_loader())
        except (yaml.YAMLError, RecursionError) as error:
            yield location, Unparsable(f"not a row: {getattr(error, 'problem', None) or error}")
            continue
        yield location, record


def _loader() -> type:
    """A safe loader that refuses aliases: a 1 KB file of nested aliases expands to gigabytes."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in a dataset", event.start_mark)
            return super().compose_node(parent, index)

    return NoAliases


class Unparsable:
    def __init__(self, message: str) -> None:
        self.message = message


def _from_records(path: Path, records, flat: bool) -> Dataset[Row]:
    from pydantic import ValidationError

    rows: list[Row] = []
    problems: list[RowProblem] = []
    seen: dict[str, str] = {}
    unknown: dict[str, str] = {}  # key -> where it was first seen
    for location, record in records:
        if isinstance(record, Unparsable):
            problems.append(RowProblem(str(path), location, "(row)", record.message))
            continue
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
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(row)"
            if flat and where.startswith("metadata."):
                where = "metadata_" + where.split(".", 1)[1]
            more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
            problems.append(
                RowProblem(str(path), location, where, first["msg"] + more, str(row_id) if row_id else None)
            )
            continue
        if row.row_id in seen:
            problems.append(
                RowProblem(str(path), location, "row_id", f"duplicate of {seen[row.row_id]}", row.row_id)
            )
            continue
        seen[row.row_id] = location
        rows.append(row)
    if unknown:
        import warnings

        listed = ", ".join(f"{key!r} (first at {where})" for key, where in sorted(unknown.items()))
        warnings.warn(DatasetWarning(f"{path}: ignored keys the row schema does not have: {listed}"), stacklevel=2)
    return Dataset(path=path, rows=rows, problems=problems)


_ROW_FIELDS = frozenset(Row.model_fields)


def _normalize(record: dict) -> dict:
    """One row in the schema's shape, whichever file shape it came in (see the module docstring)."""
    nested = {k: v for k, v in record.items() if not k.startswith("metadata_") and k not in METADATA_FIELDS}
    metadata = dict(record["metadata"]) if isinstance(record.get("metadata"), dict) else {}
    if "metadata" in record and not isinstance(record["metadata"], dict) and record["metadata"] is not None:
        nested["metadata"] = record["metadata"]  # not a mapping: validation names the field
    flat = {k[len("metadata_"):]: v for k, v in record.items() if k.startswith("metadata_")}
    top = {k: v for k, v in record.items() if k in METADATA_FIELDS}
    for source in (flat, top):
        for key, value in source.items():
            # The flat file writes absent sparse fields as null or empty strings.
            if value in (None, "") and key in METADATA_FIELDS:
                continue
            metadata.setdefault(key, value)
    for key in set(metadata) - set(METADATA_FIELDS):
        nested[f"metadata_{key}"] = metadata.pop(key)  # unknown: dropped and reported by the caller
    if metadata or isinstance(record.get("metadata"), dict):
        nested["metadata"] = metadata
    elif record.get("metadata") is None:
        nested.pop("metadata", None)
    if isinstance(nested.get("expected_references"), str):
        try:
            nested["expected_references"] = json.loads(nested["expected_references"])
        except json.JSONDecodeError:
            pass  # validation reports the field
    return nested
