"""Dataset files in the shapes users have, read into (location, raw record) pairs for any family.

``.jsonl`` (one record a line), ``.json`` (a wrapper ``{"rows": [...]}`` or a bare list, or JSON
Lines, as Hugging Face's ``Dataset.to_json`` writes by default: :func:`is_json_lines`) and
``.yaml``/``.yml`` (a list, or ``{rows: [...]}``), with one set of hostile-input rules: bad bytes,
bad JSON or YAML, deep nesting and YAML aliases are an error naming the file and line, or an
:class:`Unparsable` record that costs only its own row. Each family validates the records
against its own row schema (``families/citation/loaders.py``, ``families/rubric/rows.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from .dataset import DatasetError


def file_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, raw record) for every row of a .jsonl, .json (wrapper or list) or .yaml file.

    For families with row schemas of their own: the same file shapes, locations and hostile-input
    rules as the citation rows; a record that cannot be parsed is an :class:`Unparsable`.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return jsonl_records(path)
    if suffix in (".yaml", ".yml"):
        return yaml_records(path)
    if suffix == ".json":
        text = read_text(path)
        if is_json_lines(text):
            return jsonl_records(path)
        return wrapper_records(path, read_json(path, text), text)
    raise DatasetError(f"{path}: unknown dataset format {suffix!r} (use .jsonl, .json or .yaml)")


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a byte-order mark is allowed); bad bytes are an error naming the line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DatasetError(f"{path}: line {line}: not UTF-8 text ({error.reason})") from None


def is_json_lines(text: str) -> bool:
    """Whether a ``.json`` file's text is JSON Lines: its first line that is not blank is a whole JSON object
    and another line follows it. Such text is never valid JSON (the second value is extra data), so reading it
    a line a row, as a ``.jsonl`` file, takes nothing a JSON reader would have read otherwise."""
    found = _NOT_BLANK.search(text)
    start = found.start() if found else len(text)
    end = text.find("\n", start)
    if text[start:start + 1] != "{" or end < 0 or _NOT_BLANK.search(text, end) is None:
        return False
    try:
        return isinstance(json.loads(text[start:end]), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


_NOT_BLANK = re.compile(r"\S")


def read_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: line {error.lineno}: not valid JSON: {error.msg}") from None
    except RecursionError:
        raise DatasetError(f"{path}: nested too deeply to be a dataset") from None


def jsonl_records(path: Path) -> Iterator[tuple[str, Any]]:
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


def pandas_hint(path: Path, orientation: str) -> str:
    """What to do with a file pandas wrote in an orientation other than rows."""
    shape = "rows keyed by their index" if orientation == "index" else "columns"
    return (f"{path}: looks like pandas' DataFrame.to_json(orient='{orientation}'): one object of {shape}, not a "
            "list of rows: write df.to_json('rows.jsonl', orient='records', lines=True) and read that "
            "(see docs/datasets.md)")


def pandas_orientation(data: dict[str, Any]) -> str | None:
    """Which of pandas' to_json orientations other than rows wrote ``data``, if one did: ``columns`` (its
    default: each key a column, each value an object from row index to value), ``split`` or ``index``."""
    values = list(data.values())
    if {"columns", "data"} <= set(data) and isinstance(data["columns"], list) and isinstance(data["data"], list):
        return "split"
    if not values or not all(isinstance(v, dict) for v in values):
        return None
    if "question" in data and all(isinstance(k, str) and k.isdigit() for v in values for k in v):
        return "columns"
    if all(k.isdigit() for k in data) and all("question" in v for v in values):
        return "index"
    return None


def wrapper_records(path: Path, data: Any, text: str) -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        rows = data.get("rows")
        if not isinstance(rows, list):
            keys = ", ".join(map(repr, list(data)[:5])) or "none"
            orientation = pandas_orientation(data)
            if orientation is not None:
                raise DatasetError(pandas_hint(path, orientation))
            # One row as a JSON Lines file of one line (Hugging Face's to_json): say how to make it read.
            one_row = " (a single row? put it in a list, or name the file .jsonl)" if "question" in data else ""
            raise DatasetError(f'{path}: not a dataset shape this plugin reads: expected {{"version": ..., '
                               f'"rows": [...]}}, a list of rows, the QASPER release or a SQuAD-format file; found an '
                               f"object with keys {keys}{one_row} (see docs/datasets.md)")
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


def yaml_records(path: Path) -> Iterator[tuple[str, Any]]:
    import yaml

    try:
        root = yaml.compose(read_text(path), Loader=_loader())
    except RecursionError:
        raise DatasetError(f"{path}: nested too deeply to be a dataset") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        hint = (" (several YAML documents, '---' between them, as yaml.safe_dump_all writes: a dataset is one "
                "document holding a list of rows, as yaml.safe_dump(rows) writes)"
                if "another document" in str(problem) else "")
        raise DatasetError(f"{path}: {where}not valid YAML: {problem}{hint}") from None
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
        try:  # built from the node composed above: neither written out nor parsed again (a fresh builder a row)
            record = _loader()("").construct_document(node)
        except (yaml.YAMLError, RecursionError, ValueError) as error:  # ValueError: a date like 2018-13-45
            field, row_id = _failing_field(node)
            yield location, Unparsable(f"not a row: {getattr(error, 'problem', None) or error}", field, row_id)
            continue
        yield location, record


_ID_KEYS = ("id", "row_id", "task_id")


def _failing_field(node: Any) -> tuple[str, Optional[str]]:
    """A YAML row that could not be built: the key whose value failed (a date like 2025-13-45), and the row's id
    where it is a plain scalar, so the error names the field and the test keeps the row's id."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return "(row)", None
    field = "(row)"
    row_id = None
    for key, value in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) else None
        if name in _ID_KEYS and isinstance(value, yaml.ScalarNode) and row_id is None:
            row_id = str(value.value)
        if field == "(row)":
            try:
                _loader()("").construct_document(value)
            except (yaml.YAMLError, RecursionError, ValueError):
                field = str(name)
    return field, row_id


def _loader() -> type:
    """A safe loader that refuses aliases: a 1 KB file of nested aliases expands to gigabytes."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in a dataset", event.start_mark)
            return super().compose_node(parent, index)

    return NoAliases


class Unparsable:
    def __init__(self, message: str, field: str = "(row)", row_id: Optional[str] = None) -> None:
        self.message = message
        self.field = field  # the key whose value could not be read, where known
        self.row_id = row_id
