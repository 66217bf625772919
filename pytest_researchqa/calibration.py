"""How far a judge agrees with people: ``python -m pytest_researchqa calibrate LABELS``. Pure.

Reads human labels in the ``researchqa-labels/1`` JSONL format (docs/judges.md; the HTML
report's review marks download in it) and measures the machine's values against them, the way
the rubric benchmark's authors validated their judges (seed 001, section 3.3):

- coverage (0-4 per rubric item) and judge scores (1-5): Pearson correlation, the mean
  difference (judge minus human) and how often each side gives the top level;
- pairwise preferences: accuracy against the people's direction labels, human ties dropped,
  with the paper's partial credit for the judge's ties and order disagreements;
- citation verdicts (grounded / ungrounded / not_evidence): accuracy.

Every kind also gets Cohen's kappa and a confusion table (rows: human, columns: judge), and
every figure a 95% bootstrap interval that resamples rows (a row's labels together).
"""

from __future__ import annotations

import difflib
import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from .row_view import details_of

if TYPE_CHECKING:  # pragma: no cover
    from .records import RowRecord

SCHEMA = "researchqa-labels/1"
KINDS = ("citation", "judge", "coverage", "pairwise")
VALUES: dict[str, tuple[Any, ...]] = {
    "citation": ("grounded", "ungrounded", "not_evidence"),
    "judge": (1, 2, 3, 4, 5),
    "coverage": (0, 1, 2, 3, 4),
    "pairwise": ("a", "b", "tie"),
}
RESAMPLES = 2000
SEED = 20260611


class LabelError(ValueError):
    """A label file that cannot be read; the message names the file, line and field."""


@dataclass(frozen=True)
class Label:
    kind: str
    row_id: str
    system: Optional[str]
    judge: Any
    human: Any
    key: str  # what the label is about within its row: a citation, a dimension, an item, a pair
    judge_orders: Optional[tuple[Any, Any]] = None  # pairwise: the direct judge's verdict in each order
    where: str = ""  # the file and line it was read from
    # Why ``--run`` had no value for it: its row, or its system on that row, is not in the run (None: it was).
    not_in_run: Optional[str] = None


def _value(kind: str, raw: Any, where: str, name: str) -> Any:
    allowed = VALUES[kind]
    if isinstance(raw, bool) or raw not in allowed:
        raise LabelError(f"{where}: field {name!r}: {raw!r} is not one of {', '.join(map(str, allowed))}")
    return raw


def read_labels(path: Path) -> tuple[list[Label], list[str]]:
    """The labels, and a problem line for each label that cannot count (other lines still count)."""
    labels: list[Label] = []
    problems: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LabelError(f"{path}: cannot be read ({error})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            labels.append(_label(json.loads(line), where))
        except json.JSONDecodeError as error:
            problems.append(f"{where}: not JSON ({error.msg})")
        except LabelError as error:
            problems.append(str(error))
    return labels, problems


# Every field of a label (docs/judges.md; the HTML report's review marks also carry the run's name).
LABEL_FIELDS = ("schema", "kind", "row_id", "system", "run", "human", "judge", "note", "citation_index", "quote",
                "dimension", "item_index", "item", "system_a", "system_b", "judge_orders")


def _label(data: Any, where: str) -> Label:
    if not isinstance(data, dict):
        raise LabelError(f"{where}: a label is a JSON object, not {type(data).__name__}")
    for name in data:  # a field of one's own is kept out of the way; a misspelt one would be read as missing
        close = difflib.get_close_matches(str(name), LABEL_FIELDS, n=1, cutoff=0.75) if name not in LABEL_FIELDS else []
        if close:
            raise LabelError(f"{where}: field {name!r} is not a label field: did you mean {close[0]!r}?")
    if data.get("schema", SCHEMA) != SCHEMA:
        raise LabelError(f"{where}: field 'schema': {data.get('schema')!r}; this version reads {SCHEMA!r}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise LabelError(f"{where}: field 'kind': {kind!r} is not one of {', '.join(KINDS)}")
    row_id = data.get("row_id")
    if not isinstance(row_id, str) or not row_id:
        raise LabelError(f"{where}: field 'row_id' is missing")
    if "human" not in data:
        raise LabelError(f"{where}: field 'human' is missing")
    human = _value(kind, data["human"], where, "human")
    judge = None if data.get("judge") is None else _value(kind, data["judge"], where, "judge")
    orders = data.get("judge_orders")
    if orders is not None:
        if kind != "pairwise" or not isinstance(orders, list) or len(orders) != 2:
            raise LabelError(f"{where}: field 'judge_orders' is a pairwise label's two verdicts, [first, reversed]")
        orders = tuple(_value(kind, v, where, "judge_orders") for v in orders)
    key = {"citation": str(data.get("citation_index", data.get("quote", ""))),
           "judge": str(data.get("dimension", "")), "coverage": str(data.get("item_index", data.get("item", ""))),
           "pairwise": f"{data.get('system_a', '')}|{data.get('system_b', '')}"}[kind]
    system = data.get("system") if isinstance(data.get("system"), str) else None
    return Label(kind, row_id, system, judge, human, key, orders, where)


def fill_from_run(labels: Sequence[Label], records: Sequence["RowRecord"],
                  battles: Sequence[Any] = ()) -> list[Label]:
    """Labels without a judge value take it from a saved run's records (the cached verdicts): free. One whose
    row, or whose system on that row, the run does not have says so (``not_in_run``): a typo, not a missing value.
    A pairwise label takes the direct judge's verdicts in both orders from the run's judged battles (``battles``:
    the rubric family's ``family_results["judged"]``)."""
    by_row = {(r.system, r.row_id): r for r in records}
    systems: dict[Optional[str], list[str]] = {}
    for r in records:
        if r.system:
            systems.setdefault(r.row_id, []).append(r.system)
    battles_of: dict[Any, list[Any]] = {}  # row id -> its judged battles, read once for every label
    for battle in battles:
        if isinstance(battle, dict):
            battles_of.setdefault(battle.get("row_id"), []).append(battle)
    filled = []
    for label in labels:
        if label.kind == "pairwise":
            filled.append(label if label.judge is not None else
                          _pairwise_from_run(label, battles_of.get(label.row_id, ())))
            continue
        record = by_row.get((label.system, label.row_id))
        value = label.judge
        missing = None
        if value is None and record is not None:
            value = _recorded(label, record)
        elif value is None and label.kind != "pairwise":
            missing = (f"row {label.row_id!r} is not in the run" if label.row_id not in systems else
                       f"row {label.row_id!r} has no system {label.system!r} in the run (it has "
                       f"{', '.join(map(repr, sorted(set(systems[label.row_id]))))})")
        filled.append(replace(label, judge=value, not_in_run=missing))
    return filled


def _pairwise_from_run(label: Label, battles: Sequence[dict[str, Any]]) -> Label:
    """The direct judge's verdicts on the labelled pair's battle (``battles``: those of the label's row), as
    the label reads them (``a`` is system_a), in both orders; the judge's value is theirs when they agree, a
    tie when they do not."""
    system_a, _, system_b = label.key.partition("|")
    for battle in battles:
        pair = (battle.get("first"), battle.get("second"))
        orders = battle.get("orders")
        if pair not in ((system_a, system_b), (system_b, system_a)) or not isinstance(orders, list) or len(orders) != 2:
            continue
        a_first = pair[0] == system_a
        # orders[0] shows `first` as A, orders[1] shows `second` as A
        first, reversed_ = _as_label(orders[0], a_shown_as_a=a_first), _as_label(orders[1], a_shown_as_a=not a_first)
        if first is None or reversed_ is None:
            continue
        return replace(label, judge=first if first == reversed_ else "tie", judge_orders=(first, reversed_))
    return replace(label, not_in_run=f"row {label.row_id!r} has no judged battle of {system_a!r} and {system_b!r} "
                                      "in the run")


def _as_label(choice: Any, *, a_shown_as_a: bool) -> Optional[str]:
    if choice == "tie":
        return "tie"
    if choice not in ("A", "B"):
        return None
    return "a" if (choice == "A") == a_shown_as_a else "b"


def _recorded(label: Label, record: "RowRecord") -> Any:
    details = record.details or {}
    try:
        if label.kind == "citation":
            view = (details_of(record).get("citations") or [])[int(label.key)]
            return "grounded" if view.get("grounded") else ("ungrounded" if view.get("evidence", True)
                                                             else "not_evidence")
        if label.kind == "coverage":
            return (details.get("items") or [])[int(label.key)].get("coverage")
        if label.kind == "judge":
            value = record.judge.consensus.get(label.key) if record.judge is not None else None
            return round(value) if isinstance(value, (int, float)) else None
    except (IndexError, ValueError, AttributeError):
        return None
    return None


# ---------------------------------------------------------------- agreement


def pairwise_credit(label: Label) -> Optional[float]:
    """The paper's credit for one pairwise label (None when it does not count: a human tie).

    1 when the judge gives the people's direction, 0 for the other; a tie from the judge is
    half right; with both orders of the direct judge, order disagreement is half right and one
    correct order beside a tie three quarters right (seed 001, footnote 6)."""
    if label.human == "tie":
        return None
    if label.judge_orders is not None:
        first, second = label.judge_orders
        if first == second:
            return 0.5 if first == "tie" else float(first == label.human)
        if "tie" in (first, second):
            other = second if first == "tie" else first
            return 0.75 if other == label.human else 0.25
        return 0.5
    if label.judge is None:
        return None
    return 0.5 if label.judge == "tie" else float(label.judge == label.human)


def cohens_kappa(pairs: Sequence[tuple[Any, Any]], categories: Sequence[Any]) -> Optional[float]:
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for h, j in pairs if h == j) / n
    expected = sum((sum(1 for h, _ in pairs if h == c) / n) * (sum(1 for _, j in pairs if j == c) / n)
                   for c in categories)
    if expected >= 1.0:
        return None  # every label one category on both sides: agreement by chance explains it all
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Figure:
    value: Optional[float]
    low: Optional[float] = None
    high: Optional[float] = None

    def text(self, digits: int = 3) -> str:
        if self.value is None:
            return "—"
        spread = (f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
                  if self.low is not None and self.high is not None else "")
        return f"{self.value:.{digits}f}{spread}"


@dataclass
class Agreement:
    kind: str
    labels: int  # counted
    skipped: int  # no judge value, or a human tie (pairwise)
    figures: dict[str, Figure] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    # Of the skipped, those --run had no value for: the run lacks their row or system ("FILE, line N: why").
    not_in_run: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # a judge whose scores no gate should rest on, and why

    def as_plain(self) -> dict[str, Any]:
        return {"kind": self.kind, "labels": self.labels, "skipped": self.skipped, "not_in_run": self.not_in_run,
                "figures": {k: {"value": f.value, "low": f.low, "high": f.high} for k, f in self.figures.items()},
                "confusion": self.confusion, "warnings": self.warnings}


def _bootstrap(labels: Sequence[Label], statistic: Callable[[Sequence[Label]], Optional[float]]) -> Figure:
    """The statistic with a 95% interval from resampling rows (a row's labels stay together)."""
    value = statistic(labels)
    rows: dict[str, list[Label]] = {}
    for label in labels:
        rows.setdefault(label.row_id, []).append(label)
    groups = list(rows.values())
    if value is None or len(groups) < 2:
        return Figure(value)
    rng = random.Random(SEED)
    draws = []
    for _ in range(RESAMPLES):
        sample = [label for _ in groups for label in rng.choice(groups)]
        found = statistic(sample)
        if found is not None:
            draws.append(found)
    if not draws:
        return Figure(value)
    draws.sort()
    low, high = draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]
    return Figure(value, min(low, value), max(high, value))


def agreement(labels: Sequence[Label], kind: str) -> Agreement:
    mine = [label for label in labels if label.kind == kind]
    if kind == "pairwise":
        counted = [label for label in mine if pairwise_credit(label) is not None]
    else:
        counted = [label for label in mine if label.judge is not None]
    result = Agreement(kind, len(counted), len(mine) - len(counted),
                       not_in_run=[f"{x.where}: {x.not_in_run}" for x in mine if x.not_in_run])
    if not counted:
        return result
    categories = VALUES[kind]
    if kind == "pairwise":
        result.figures["accuracy"] = _bootstrap(
            counted, lambda ls: sum(pairwise_credit(x) or 0.0 for x in ls) / len(ls) if ls else None)
    else:
        result.figures["accuracy"] = _bootstrap(
            counted, lambda ls: sum(1 for x in ls if x.judge == x.human) / len(ls) if ls else None)
    direct = [x for x in counted if x.judge is not None]
    result.figures["kappa"] = _bootstrap(direct, lambda ls: cohens_kappa([(x.human, x.judge) for x in ls],
                                                                          categories))
    if kind in ("coverage", "judge"):
        from .stats import pearson

        result.figures["pearson"] = _bootstrap(direct, lambda ls: pearson([float(x.human) for x in ls],
                                                                          [float(x.judge) for x in ls]))
        result.figures["mean difference (judge - human)"] = _bootstrap(
            direct, lambda ls: sum(float(x.judge) - float(x.human) for x in ls) / len(ls) if ls else None)
        top = categories[-1]
        result.figures[f"human gives {top}"] = Figure(sum(1 for x in direct if x.human == top) / len(direct))
        result.figures[f"judge gives {top}"] = Figure(sum(1 for x in direct if x.judge == top) / len(direct))
    result.confusion = {str(h): {str(j): sum(1 for x in direct if x.human == h and x.judge == j)
                                 for j in categories} for h in categories}
    result.warnings = _untrustworthy(result, direct)
    return result


def _untrustworthy(result: Agreement, direct: Sequence[Label]) -> list[str]:
    """Why a gate should not rest on this judge's scores: it gives one value to everything, rates against the
    people, or agrees with them no better than chance (a few labels say little: the intervals say how little)."""
    found = []
    given = {x.judge for x in direct}
    if len(direct) >= 2 and len(given) == 1:
        found.append(f"the judge gave every label {next(iter(given))!r}: it cannot tell answers apart (no "
                     "correlation can be computed)")
    pearson = result.figures.get("pearson")
    if pearson is not None and pearson.value is not None and pearson.value < 0:
        found.append(f"pearson {pearson.value:.3f}: the judge rates against the people")
    kappa = result.figures.get("kappa")
    if kappa is not None and kappa.value is not None and kappa.value <= 0 and len(given) > 1:
        found.append(f"kappa {round(kappa.value, 3) + 0.0:.3f}: the judge agrees with the people no more than "
                     "chance would")
    accuracy = result.figures.get("accuracy")
    if result.kind == "pairwise" and accuracy is not None and accuracy.value is not None and accuracy.value < 0.5:
        found.append(f"accuracy {accuracy.value:.3f}: the judge prefers the answer the people did not more often "
                     "than the one they did")
    return found


def report(labels: Sequence[Label]) -> list[Agreement]:
    return [agreement(labels, kind) for kind in KINDS if any(label.kind == kind for label in labels)]


def render(agreements: Sequence[Agreement], problems: Sequence[str]) -> str:
    from tabulate import tabulate

    lines = []
    for found in agreements:
        absent = len(found.not_in_run)
        other = found.skipped - absent
        parts = (f"{other} no judge value, or a human tie" if other else "",
                 f"{absent} whose row or system is not in the run, below" if absent else "")
        why = ", ".join(part for part in parts if part)
        if found.skipped:  # of how many: "4 label(s), 2 not counted" read as 2 of the 4 (tester40 H8)
            lines.append(f"{found.kind}: {found.labels + found.skipped} label(s), {found.labels} counted, "
                         f"{found.skipped} not counted ({why})")
        else:
            lines.append(f"{found.kind}: {found.labels} label(s)")
        lines += [f"  not counted: {entry}" for entry in found.not_in_run]
        for name, figure in found.figures.items():
            lines.append(f"  {name}: {figure.text()}")
        if found.kind == "coverage" and found.figures:  # what the seed's own judges reached, to read these against
            lines.append("  the rubric paper's judges against its experts (seed 001, section 3.3): pearson 0.48 to "
                         "0.63; gpt-4.1-mini's mean difference 0.11, 'Completely' 26.0% vs the experts' 12.3%")
        lines += [f"  warning: {why}: gating on its scores is not advised" for why in found.warnings]
        if found.confusion:
            header = ["human \\ judge", *next(iter(found.confusion.values())).keys()]
            body = [[h, *row.values()] for h, row in found.confusion.items()]
            lines += ["  " + line for line in tabulate(body, headers=header, tablefmt="github").splitlines()]
    if agreements:
        lines.append("[low, high]: 95% bootstrap interval over rows (2,000 resamples, fixed seed)")
    lines += [f"not read: {problem}" for problem in problems]
    return "\n".join(lines)
