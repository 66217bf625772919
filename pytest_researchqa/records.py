"""One row's result as a typed, versioned record, and the recorder that fills it.

A :class:`RowRecord` is what everything after grading reads: the session
aggregates records, reports render them, saved runs will store them. It
crosses process boundaries (xdist, files) only as plain data, converted here
and nowhere else (:meth:`RowRecord.to_plain` / :meth:`RowRecord.from_plain`).

Assertions record through a :class:`Recorder`. Inside a researchqa test the
plugin makes the item's recorder current (:func:`current_recorder`), so
``cited_verbatim(answer, paper)`` needs no extra argument; outside pytest,
pass ``recorder=Recorder(...)`` explicitly, or record nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .costs import add_cost, total_cost

RECORD_VERSION = 1


class RecordVersionError(ValueError):
    """A record written by a newer pytest-researchqa than this one."""


# version -> the step that turns a plain record of that version into the next one's. A record written
# before records carried a version reads as version 1 (no field of version 1 has gone since).
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: lambda data: {**data, "version": 1},
}


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A plain record in this version's layout: older ones upgraded step by step; a newer one refused."""
    version = data.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"record version {version!r} is not a whole number")
    if version > RECORD_VERSION:
        raise RecordVersionError(f"record version {version} is newer than this pytest-researchqa reads "
                                 f"(up to {RECORD_VERSION}): upgrade pytest-researchqa to read it")
    while version < RECORD_VERSION:
        data = _UPGRADES[version](data)
        version = data["version"]
    return data


class _PlainReads:
    """Reading a typed verdict or judge result as the dict it was before 0.2 (``record.judge["consensus"]``)
    still works for one release, with a DeprecationWarning: read the attributes instead."""

    def to_plain(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        _warn_plain_read(type(self).__name__, key)
        return self.to_plain()[key]

    def get(self, key: str, default: Any = None) -> Any:
        _warn_plain_read(type(self).__name__, key)
        return self.to_plain().get(key, default)


def _warn_plain_read(kind: str, key: str) -> None:
    import warnings

    warnings.warn(f"reading a {kind} as a dict ([{key!r}] or .get) is deprecated: use its attribute .{key} "
                  "(the dict reads go in the next release)", DeprecationWarning, stacklevel=3)


@dataclass(frozen=True)
class CitationVerdict(_PlainReads):
    """How one citation of the answer fared against the paper (the matcher's verdict, in brief)."""

    verdict: str  # "verbatim", "normalized", "fuzzy", "not_found", "too_short", ...
    grounded: bool
    pages: tuple[int, ...] = ()  # pages the matched text lies on (none when the paper has no pages)

    def to_plain(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "grounded": self.grounded, "pages": list(self.pages)}

    @classmethod
    def of(cls, verdict: str, grounded: bool, pages: tuple[int, ...] = ()) -> "CitationVerdict":
        """The verdict, the same object as every equal one made this way before (frozen: equal is the same).
        A run keeps every row's verdicts to its end and Python's collector walks each at every full
        collection; most are one of a few (``verbatim``, grounded, no pages), so they are shared (issue 24
        item 2). At most ``_SHARED_VERDICTS`` distinct ones are kept for sharing."""
        key = (verdict, grounded, pages)
        found = _verdicts.get(key)
        if found is None:
            found = cls(verdict, grounded, pages)
            if cls is CitationVerdict and len(_verdicts) < _SHARED_VERDICTS:
                _verdicts[key] = found
        return found

    @classmethod
    def from_plain(cls, data: Any, where: str = "citations") -> "CitationVerdict":
        """A verdict from plain data; the wrong shape is a ValueError naming the field (``citations[2].pages``)."""
        if isinstance(data, CitationVerdict):
            return data
        data = _object(data, where)
        verdict, grounded, pages = data.get("verdict"), data.get("grounded"), data.get("pages", [])
        if not isinstance(verdict, str):
            raise ValueError(f"field '{where}.verdict': {verdict!r}, not text")
        if not isinstance(grounded, bool):
            raise ValueError(f"field '{where}.grounded': {grounded!r}, not true or false")
        if not isinstance(pages, (list, tuple)) or not all(_whole(p) for p in pages):
            raise ValueError(f"field '{where}.pages': {pages!r}, not a list of page numbers")
        return cls.of(verdict, grounded, tuple(pages))


_SHARED_VERDICTS = 4096
_verdicts: dict[tuple[str, bool, tuple[int, ...]], CitationVerdict] = {}


@dataclass(frozen=True)
class JudgeScores:
    """One judge's verdict on one answer, kept as the judge gave it (the plain data is the saved form): scores
    by dimension (1-5) with a justification each, or per rubric item (0-4) with a reason each; or the error
    that kept the judge from scoring."""

    plain: Mapping[str, Any]

    @property
    def error(self) -> Optional[str]:
        error = self.plain.get("error")
        return str(error) if error else None

    def score(self, dimension: str) -> Optional[float]:
        """The judge's score on ``dimension`` (None when it gave none)."""
        value = self.plain.get(dimension)
        return value if _number(value) else None

    @property
    def scores(self) -> dict[str, float]:
        """Every numeric score, by dimension, in the judge's order."""
        return {k: v for k, v in self.plain.items() if k not in _NOT_DIMENSIONS and _number(v)}

    @property
    def items(self) -> list[float]:
        """Per rubric item, its coverage 0-4 (item-wise kinds; empty otherwise)."""
        return list(self.plain.get("items") or [])

    @property
    def reasons(self) -> Union[dict[str, str], list[str]]:
        """The judge's justifications: by dimension, or (item-wise kinds) one per item."""
        reasons = self.plain.get("justifications") or {}
        return list(reasons) if isinstance(reasons, list) else dict(reasons)

    def redacted(self, redact: Callable[[str], str]) -> "JudgeScores":
        """The same verdict with its error passed through ``redact`` (secrets out of saved runs)."""
        if not self.plain.get("error"):
            return self
        return JudgeScores({**self.plain, "error": redact(str(self.plain["error"]))})

    def to_plain(self) -> dict[str, Any]:
        copied: dict[str, Any] = _plain_copy(dict(self.plain))
        return copied

    @classmethod
    def from_plain(cls, data: Any, where: str) -> "JudgeScores":
        if isinstance(data, JudgeScores):
            return data
        if not isinstance(data, dict):
            raise ValueError(f"field {where!r}: {type(data).__name__}, not an object")
        if "error" in data and not isinstance(data["error"], str):
            raise ValueError(f"field '{where}.error': {data['error']!r}, not text")
        _check_items(data.get("items"), where)
        reasons = data.get("justifications")
        if reasons is not None and not isinstance(reasons, (dict, list)):
            raise ValueError(f"field '{where}.justifications': {type(reasons).__name__}, not an object or a list")
        return cls(data)  # fresh plain data (JSON, xdist): no copy; to_plain copies


@dataclass(frozen=True)
class VerdictCosts:
    """What ``count`` verdicts on one answer cost: ``made_usd`` as their calls cost (a cached verdict's
    included; None when a price is unknown), ``spent_usd`` what this run's own calls cost."""

    count: int = 0
    made_usd: Optional[float] = None
    spent_usd: Optional[float] = None


@dataclass(frozen=True)
class JudgeResult(_PlainReads):
    """Every judge's verdict on one answer and what they agree on: the consensus (mean) and spread (max - min)
    by dimension; for item-wise kinds the judges' mean per rubric item; under --researchqa-judge-repeats, for a
    sampled row, each judge's repeated verdicts (the flip-rate probe)."""

    by_judge: dict[str, JudgeScores] = field(default_factory=dict)
    consensus: dict[str, Optional[float]] = field(default_factory=dict)
    spread: dict[str, Optional[float]] = field(default_factory=dict)
    items: Optional[list[float]] = None
    repeats: Optional[dict[str, list[JudgeScores]]] = None
    # The plain form's keys in the order they came (a saved record writes back exactly as it was read).
    layout: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Kept on the row's usage by Recorder.judge, not in the plain form.
    costs: VerdictCosts = field(default=VerdictCosts(), compare=False, repr=False)

    @property
    def failures(self) -> list[str]:
        """``judge: reason`` for every judge that could not score."""
        return [f"{name}: {scores.error}" for name, scores in self.by_judge.items() if scores.error]

    def reason_lines(self, dimensions: Optional[list[str]] = None) -> list[str]:
        """Each judge's score and justification per dimension (per item, for an item-wise kind), as the lines
        of a failure message or a report's section."""
        lines = []
        for judge, verdict in self.by_judge.items():
            if verdict.error:
                lines.append(f"  {judge}: error: {verdict.error}")
                continue
            reasons = verdict.reasons
            if isinstance(reasons, list):  # an item-wise kind (rubric coverage): one reason per item
                lines += [f"  {judge} item {n} coverage {c}: {r}"
                          for n, (c, r) in enumerate(zip(verdict.items or [], reasons), 1)]
                continue
            scores = verdict.scores
            for dimension in dimensions or list(scores):
                if dimension in scores:
                    reason = reasons.get(dimension)
                    lines.append(f"  {judge} {dimension} {scores[dimension]}" + (f": {reason}" if reason else ""))
        return lines

    def redacted(self, redact: Callable[[str], str]) -> "JudgeResult":
        """The same result with every judge's error passed through ``redact``."""
        return dataclasses.replace(self, by_judge={k: v.redacted(redact) for k, v in self.by_judge.items()})

    def to_plain(self) -> dict[str, Any]:
        """The plain form (what saved runs hold): ``{'by_judge', 'consensus', 'spread'[, 'items'][, 'repeats']}``."""
        plain: dict[str, Any] = {}
        for key in self.layout or _JUDGE_KEYS:
            if key == "by_judge":
                plain[key] = {name: scores.to_plain() for name, scores in self.by_judge.items()}
            elif key in ("consensus", "spread"):
                plain[key] = dict(getattr(self, key))
            elif key == "items" and self.items is not None:
                plain[key] = list(self.items)
            elif key == "repeats" and self.repeats is not None:
                plain[key] = {name: [s.to_plain() for s in again] for name, again in self.repeats.items()}
        return plain

    @classmethod
    def from_plain(cls, data: Any, where: str = "judge") -> "JudgeResult":
        """A result from plain data; the wrong shape is a ValueError naming the field (``judge.consensus.x``)."""
        if isinstance(data, JudgeResult):
            return data
        data = _object(data, where)
        unknown = [key for key in data if key not in _JUDGE_KEYS]
        if unknown:
            raise ValueError(f"field '{where}.{unknown[0]}': not a field of a judge result "
                             f"({', '.join(_JUDGE_KEYS)})")
        by_judge = _object(data.get("by_judge"), f"{where}.by_judge")
        means: dict[str, dict[str, Optional[float]]] = {}
        for key in ("consensus", "spread"):
            values = _object(data.get(key), f"{where}.{key}")
            for name, value in values.items():
                if value is not None and not _number(value):
                    raise ValueError(f"field '{where}.{key}.{name}': {value!r}, not a number")
            means[key] = dict(values)
        items = _check_items(data.get("items"), where)
        repeats = data.get("repeats")
        again: Optional[dict[str, list[JudgeScores]]] = None
        if repeats is not None:
            again = {}
            for name, verdicts in _object(repeats, f"{where}.repeats").items():
                if not isinstance(verdicts, list):
                    raise ValueError(f"field '{where}.repeats.{name}': {type(verdicts).__name__}, not a list")
                again[name] = [JudgeScores.from_plain(v, f"{where}.repeats.{name}[{n}]")
                               for n, v in enumerate(verdicts)]
        return cls(by_judge={name: JudgeScores.from_plain(scores, f"{where}.by_judge.{name}")
                             for name, scores in by_judge.items()},
                   consensus=means["consensus"], spread=means["spread"],
                   items=list(items) if items is not None else None, repeats=again, layout=tuple(data))


@dataclass(slots=True)
class Usage:
    """What answering a row cost, measured by model systems, partly by any system; and what its verdicts
    cost (:class:`VerdictCosts`), where model judges graded it."""

    latency_s: Optional[float] = None
    queue_s: Optional[float] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    cached: bool = False
    context: Optional[str] = None  # "whole paper" or "retrieved passages" for model systems
    prompt_sha: Optional[str] = None
    attempts: Optional[int] = None
    verdicts: int = 0  # model judges' verdicts given on the answer, whose costs the two fields below sum
    judge_cost_usd: Optional[float] = None
    judge_spent_usd: Optional[float] = None

    def add_verdicts(self, costs: VerdictCosts) -> None:
        """Count what more verdicts on this answer cost (the premise judge's, then the panel's)."""
        if costs.count == 0:
            return
        first = self.verdicts == 0
        self.verdicts += costs.count
        self.judge_cost_usd = costs.made_usd if first else add_cost(self.judge_cost_usd, costs.made_usd)
        self.judge_spent_usd = costs.spent_usd if first else add_cost(self.judge_spent_usd, costs.spent_usd)


@dataclass(slots=True)
class RowRecord:
    """The result of one (system, row) pair.

    Slotted, as its usage: the session keeps every row's record to the end of the run, and where an instance's
    ``__dict__`` is an object of its own (Python 3.10) each of Python's full garbage collections walks it too
    (issue 24 item 2)."""

    row_id: Optional[str]
    system: Optional[str] = None
    paper_id: Optional[str] = None
    family: str = "citation"
    question_type: Optional[str] = None
    domain: Optional[str] = None
    nodeid: Optional[str] = None
    # True for rows answered by a model through litellm: they count towards progress and spend.
    model_system: bool = False
    metrics: dict[str, Optional[float]] = field(default_factory=dict)
    citations: list[CitationVerdict] = field(default_factory=list)
    judge: Optional[JudgeResult] = None
    usage: Usage = field(default_factory=Usage)
    baseline: bool = False
    error: Optional[str] = None
    defect: Optional[str] = None
    # The row's test: "passed", "failed" (below its per-row bar, --researchqa-fail-rows), "below_bar"
    # (below its bar, reported as xfailed: the default), "error", "xfailed" (dataset defect) or "skipped".
    outcome: Optional[str] = None
    # Why the row fell below its bar: the assertions' diagnosis, a few lines (None when it did not).
    diagnosis: Optional[str] = None
    expected_found: Optional[int] = None
    expected_total: Optional[int] = None
    # What a family keeps of the row beyond metrics, as plain data (the rubric family: the answer text,
    # references, word count, the task as given, per-item coverage), for end-of-run steps and saved runs. Typed
    # for its readers by each family (families/rubric/details, families/citation/details) and, for what the
    # report reads of any row, by row_view.RowDetails.
    details: dict[str, Any] = field(default_factory=dict)  # JSON data: Recorder.detail refuses anything else
    # A dataset row that failed validation: an erroring test, but no (system, row) of the selection.
    invalid_row: bool = False
    # Which answer of the row this is under --researchqa-repeats (0: the first, or the only one).
    repeat: int = 0
    version: int = RECORD_VERSION

    def __post_init__(self) -> None:
        # The plain forms are still accepted here (``RowRecord(judge={...})``, as before they were typed).
        if self.judge is not None and not isinstance(self.judge, JudgeResult):
            self.judge = JudgeResult.from_plain(self.judge)
        if any(not isinstance(c, CitationVerdict) for c in self.citations):
            self.citations = [CitationVerdict.from_plain(c, f"citations[{n}]") for n, c in enumerate(self.citations)]

    @property
    def graded(self) -> bool:
        """Averaged into the means: neither errored nor a dataset defect."""
        return not self.error and not self.defect

    @property
    def judge_failures(self) -> list[str]:
        """``judge: reason`` for every judge that could not score this row."""
        return self.judge.failures if self.judge is not None else []

    def junit_properties(self) -> list[tuple[str, str]]:
        """Every measured value as a JUnit ``<property>``: metrics, judge scores, usage."""
        found: list[tuple[str, str]] = [(f"researchqa.{k}", _text(v)) for k, v in self.metrics.items()]
        if self.judge is not None:
            found += [(f"researchqa.judge.{k}", _text(v)) for k, v in self.judge.consensus.items()]
        for name in ("latency_s", "prompt_tokens", "completion_tokens", "cost_usd", "cached"):
            value = getattr(self.usage, name)
            if value is not None and (self.model_system or name == "latency_s"):
                found.append((f"researchqa.{name}", _text(value)))
        return found

    def to_plain(self, *, copy: bool = True) -> dict[str, Any]:
        """Built-in types only: safe for xdist's wire format and for JSON (what ``asdict`` gives, 4x faster).
        ``copy=False`` shares the record's own dicts and lists (to be written out at once, never kept)."""
        take = _plain_copy if copy else _same
        plain = {name: take(getattr(self, name)) if name not in _TYPED_FIELDS else None
                 for name in _RECORD_FIELDS}
        plain["usage"] = {name: getattr(self.usage, name) for name in _USAGE_ORDER
                          if self.usage.verdicts or name not in _VERDICT_USAGE}  # as 0.1.0 wrote a row no judge saw
        plain["citations"] = [c.to_plain() for c in self.citations]
        plain["judge"] = self.judge.to_plain() if self.judge is not None else None
        return plain

    @classmethod
    def from_plain(cls, data: Any) -> "RowRecord":
        """A record from plain data (xdist, saved runs), checked and upgraded to this version; data of the
        wrong shape is a ValueError naming the field, never a record that fails later in a sum or a sort."""
        if not isinstance(data, dict):
            raise ValueError(f"a row record is a JSON object, not {type(data).__name__}")
        data = upgraded(data)
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        _check_plain_fields(values)
        if values.get("judge") is not None:
            values["judge"] = JudgeResult.from_plain(values["judge"])
        values["citations"] = [CitationVerdict.from_plain(c, f"citations[{n}]")
                               for n, c in enumerate(values.get("citations") or [])]
        values["usage"] = _usage_from_plain(values.get("usage") or {})
        values["metrics"] = dict(values.get("metrics") or {})
        values["details"] = dict(values.get("details") or {})
        values["version"] = RECORD_VERSION  # older records are read as this version (fields only added)
        return cls(**values)


def _check_plain_fields(values: dict[str, Any]) -> None:
    """A ValueError naming the first field of a plain record whose value is of the wrong kind."""
    for name in _TEXT_FIELDS:
        if values.get(name) is not None and not isinstance(values[name], str):
            raise ValueError(f"field {name!r}: {type(values[name]).__name__}, not text")
    for name in _FLAG_FIELDS:
        if name in values and not isinstance(values[name], bool):
            raise ValueError(f"field {name!r}: {values[name]!r}, not true or false")
    for name, kind in (("metrics", dict), ("details", dict), ("citations", list)):
        if values.get(name) is not None and not isinstance(values[name], kind):
            raise ValueError(f"field {name!r}: {type(values[name]).__name__}, not {kind.__name__}")
    for name, value in (values.get("metrics") or {}).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"field 'metrics.{name}': {value!r}, not a number")
    for name in ("expected_found", "expected_total", "repeat"):
        if values.get(name) is not None and (isinstance(values[name], bool) or not isinstance(values[name], int)):
            raise ValueError(f"field {name!r}: {values[name]!r}, not a whole number")


def _usage_from_plain(usage: Any) -> "Usage":
    if not isinstance(usage, dict):
        raise ValueError(f"field 'usage': {type(usage).__name__}, not an object")
    for name, value in usage.items():
        if name in USAGE_FIELDS and value is not None and not isinstance(value, _USAGE_TYPES[name]):
            raise ValueError(f"field 'usage.{name}': {value!r} is of the wrong type")
    return Usage(**{k: v for k, v in usage.items() if k in USAGE_FIELDS})

USAGE_FIELDS = frozenset(f.name for f in fields(Usage))
_TEXT_FIELDS = ("row_id", "system", "paper_id", "family", "question_type", "domain", "nodeid", "error", "defect",
                "outcome", "diagnosis")
_FLAG_FIELDS = ("model_system", "baseline", "invalid_row")
_NUMBER = (int, float)
_USAGE_TYPES: dict[str, Any] = {"latency_s": _NUMBER, "queue_s": _NUMBER, "prompt_tokens": int,
                                "completion_tokens": int, "cost_usd": _NUMBER, "cached": bool, "context": str,
                                "prompt_sha": str, "attempts": int, "verdicts": int, "judge_cost_usd": _NUMBER,
                                "judge_spent_usd": _NUMBER}
_USAGE_ORDER = tuple(f.name for f in fields(Usage))  # scalars only
_VERDICT_USAGE = frozenset({"verdicts", "judge_cost_usd", "judge_spent_usd"})
_RECORD_FIELDS = tuple(f.name for f in fields(RowRecord))
_TYPED_FIELDS = frozenset({"usage", "citations", "judge"})  # converted by their own to_plain
_JUDGE_KEYS = ("by_judge", "consensus", "spread", "items", "repeats")
_NOT_DIMENSIONS = frozenset({"error", "justifications", "items"})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_items(items: Any, where: str) -> Any:
    """A judge's or a result's per-item coverage: absent, or a list of numbers (else a ValueError naming it)."""
    if items is not None and (not isinstance(items, list) or not all(_number(v) for v in items)):
        raise ValueError(f"field '{where}.items': {items!r}, not a list of numbers")
    return items


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"field {where!r}: {type(value).__name__}, not an object")
    return value


def _same(value: Any) -> Any:
    return value


def _plain_copy(value: Any) -> Any:
    """A deep copy of plain data (dicts, lists, tuples of scalars): the record may change after it is sent."""
    if isinstance(value, dict):
        return {key: _plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_copy(item) for item in value)
    return value


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class Recorder:
    """Where assertions put what they measure for one row."""

    def __init__(self, record: RowRecord, metric_names: tuple[str, ...]) -> None:
        self.record = record
        self._metric_names = metric_names

    def metric(self, name: str, value: Optional[float]) -> None:
        if name not in self._metric_names:
            raise ValueError(f"unknown metric {name!r}; this family measures {', '.join(self._metric_names)}")
        if value is not None and not _finite(value):
            # One row's NaN would make every mean over it NaN, and a failing gate undecidable.
            raise ValueError(f"metric {name!r}: {value!r} is not a finite number (record None for a row the "
                             "metric does not apply to)")
        self.record.metrics[name] = value

    def detail(self, key: str, value: object) -> None:
        """Keep a plain value on the record's ``details`` (see :attr:`RowRecord.details`): JSON data only,
        refused here by name rather than where the run is saved or crosses to xdist's controller."""
        if (found := _not_json(value)) is not None:
            where, kind = found
            raise ValueError(f"detail {key!r}{where}: {kind} is not JSON data (text, a finite number, "
                             "true/false, null, or lists and objects of them keyed by text)")
        self.record.details[key] = value

    def citations(self, verdicts: Sequence[Union[CitationVerdict, dict[str, Any]]]) -> None:
        """Keep each citation's verdict (plain ``{'verdict', 'grounded', 'pages'}`` dicts are accepted)."""
        self.record.citations = [CitationVerdict.from_plain(v, f"citations[{n}]") for n, v in enumerate(verdicts)]

    def judge(self, result: Union[JudgeResult, dict[str, Any]]) -> None:
        """Keep the judges' result (its plain form, as ``judged`` returns it, is accepted)."""
        self.record.judge = JudgeResult.from_plain(result)
        self.record.usage.add_verdicts(self.record.judge.costs)


def _not_json(value: object) -> Optional[tuple[str, str]]:
    """Where in ``value`` (``[2].text``) the first part that is not JSON data sits, and its type's name. The path
    is put together on the way back from that part only: every row's details are checked, a few hundred values
    a row, and nearly all of them are JSON data."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else ("", repr(value))
    if isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = _not_json(item)
            if found is not None:
                return f"[{n}]{found[0]}", found[1]
        return None
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                return f" key {name!r}", type(name).__name__
            found = _not_json(item)
            if found is not None:
                return f".{name}{found[0]}", found[1]
        return None
    return "", type(value).__name__


def _finite(value: Any) -> bool:
    """A finite real number: int, float, or any number type (numpy's) that Python's math reads as one."""
    try:
        return math.isfinite(value)
    except TypeError:  # a string, a list: not a number at all
        return False


_CURRENT: contextvars.ContextVar[Optional[Recorder]] = contextvars.ContextVar("researchqa_recorder", default=None)


def current_recorder(explicit: Optional[Recorder] = None) -> Optional[Recorder]:
    """The recorder to use: the one passed, else the running researchqa test's, else none."""
    return explicit if explicit is not None else _CURRENT.get()


@contextlib.contextmanager
def recording_into(recorder: Optional[Recorder]) -> Iterator[None]:
    """Make ``recorder`` current for the duration of one test call."""
    token = _CURRENT.set(recorder)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def answers_cost(records: Iterable[RowRecord]) -> Optional[float]:
    """What the model answers of these rows cost: every answer given, also on a row that errored after it
    (a judge that failed it); a row with no answer (its call failed) adds nothing."""
    return total_cost(r.usage.cost_usd for r in records
                      if r.model_system and (not r.error or r.usage.cost_usd is not None))


def verdicts_cost(records: Iterable[RowRecord]) -> Optional[float]:
    """What the model judges' verdicts on these rows cost (None: no verdict, or one of unknown price)."""
    return total_cost(r.usage.judge_cost_usd for r in records if r.usage.verdicts)
