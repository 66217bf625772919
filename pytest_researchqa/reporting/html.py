"""The run as one self-contained HTML file: leaderboard, gates, every row and why it scored so.

``--researchqa-html=FILE`` writes it at the end of a run; ``python -m pytest_researchqa view``
writes it for a saved run (``--compare OTHER`` adds the rows whose scores changed). Opens from
``file://`` with no network: the script and styles are inlined, the data is embedded as
gzip-compressed JSON that the page inflates with the browser's own ``DecompressionStream``.
Everything from a dataset, a model, a paper or a saved run reaches the page only as data that
the script puts in with ``textContent``: nothing it says can run as script. Renders only.
"""

from __future__ import annotations

import base64
import difflib
import gzip
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, cast

from ..families import Family, Table
from ..records import RowRecord
from ..row_view import CitationView, RowDetails, details_of
from ..text_safety import utf8
from .compare import Baseline, Comparison, compare, coverage_lines, judged_metrics, verdicts
from .json_summary import json_safe
from .summaries import listing_order
from .terminal import comparison_table, leaderboard_notes, leaderboard_tables

if TYPE_CHECKING:  # pragma: no cover
    from .outcome import RunOutcome

LABELS_SCHEMA = "researchqa-labels/1"


def word_diff(quote: str, paper: str) -> list[list[str]]:
    """``[[op, words], ...]`` with op ``=`` (both), ``-`` (the quote only), ``+`` (the paper only) or
    ``>`` (the paper going on past the quote's end: context, not something the quote left out)."""
    a, b = quote.split(), paper.split()
    ops: list[list[str]] = []
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            ops.append(["=", " ".join(a[i1:i2])])
            continue
        if i2 > i1:
            ops.append(["-", " ".join(a[i1:i2])])
        if j2 > j1:
            # Past the quote's last word the paper only goes on: as many words as the quote
            # replaced there are its reading, the rest is context.
            replaced = (i2 - i1) if n == len(opcodes) - 1 else j2 - j1
            if replaced:
                ops.append(["+", " ".join(b[j1:j1 + replaced])])
            if j1 + replaced < j2:
                ops.append([">", " ".join(b[j1 + replaced:j2])])
    return ops


class ShownCitation(CitationView, total=False):
    """A citation as the page shows it: its view, and how the quote departs from the paper word by word."""

    diff: list[list[str]]  # word_diff of the quote against the paper where it departs, or the nearest passage
    diff_page: Optional[int]


def _citations(details: RowDetails) -> list[ShownCitation]:
    out: list[ShownCitation] = []
    # A saved run's details are any JSON: an entry that is not an object is left out, its texts read as text.
    for view in details.get("citations") or []:
        if not isinstance(view, dict):
            continue
        shown = cast(ShownCitation, dict(view))  # a copy: the record keeps its own
        departure, nearest = view.get("departure"), view.get("nearest")
        if isinstance(departure, dict) and departure.get("quote_after") is not None:
            shown["diff"] = word_diff(str(departure.get("quote_before", "")) + " " + str(departure["quote_after"]),
                                      str(departure.get("quote_before", "")) + " " + str(departure.get("paper_after")))
            shown["diff_page"] = departure.get("page")
        elif isinstance(nearest, dict) and nearest.get("text"):
            shown["diff"] = word_diff(str(view.get("quote") or ""), str(nearest["text"]))
            shown["diff_page"] = nearest.get("page")
        out.append(shown)
    return out


def _row(record: RowRecord, key: str) -> dict[str, Any]:
    details = dict(record.details or {})
    citations = _citations(details_of(record)) if record.details else []
    details.pop("citations", None)
    return {
        "key": key, "row_id": record.row_id, "system": record.system or "(dataset)", "paper": record.paper_id,
        "type": record.question_type, "domain": record.domain, "outcome": record.outcome or "",
        "metrics": {k: json_safe(v) for k, v in record.metrics.items()},
        "diagnosis": record.diagnosis, "error": record.error, "defect": record.defect,
        "latency_s": json_safe(record.usage.latency_s), "cost_usd": json_safe(record.usage.cost_usd),
        "judge_cost_usd": json_safe(record.usage.judge_cost_usd) if record.usage.verdicts else None,
        "tokens": [record.usage.prompt_tokens, record.usage.completion_tokens],
        "judge": record.judge.to_plain() if record.judge is not None else None, "citations": citations,
        "details": details,
    }


def _keyed(records: Sequence[RowRecord]) -> dict[str, RowRecord]:
    return {f"{r.system}\u241f{r.row_id}": r for r in records}


def _changes(records: Sequence[RowRecord], other: Sequence[RowRecord], metrics: Sequence[str],
             compare_map: Mapping[str, str], judged: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Rows both runs measured whose metrics moved, largest total change first; ``compare_map``: this run's
    system -> the other run's system it is paired with (a system not named: the same name). A metric in
    ``judged`` moves only where the same judges gave the row a verdict in both runs, as the comparison has it
    (tester44 MED-2: rows it left out were listed as changed)."""
    mine, theirs = _keyed(records), _keyed(other)
    changed = []
    for key, record in mine.items():
        old = theirs.get(f"{compare_map.get(record.system or '', record.system)}\u241f{record.row_id}")
        if old is None:
            continue
        same_judges = verdicts(record) == verdicts(old)
        deltas = {m: new - was for m in metrics
                  if isinstance(new := record.metrics.get(m), (int, float)) and isinstance(was := old.metrics.get(m),
                                                                                           (int, float))
                  and new != was and (same_judges or m not in judged)}
        if deltas:
            changed.append({"key": key, "deltas": deltas, "size": sum(abs(d) for d in deltas.values()),
                            "old": _row(old, key)})
    return sorted(changed, key=lambda c: (-c["size"], c["key"]))


def _gate_cells(outcome: "RunOutcome", family: Family) -> list[dict[str, Any]]:
    """The board cells a check that did not pass is about: on the leaderboard, a threshold's value and a
    regression's Δ; for a gate on one question type (``type``), that type's value in the by-type table."""
    from .gates import gate_of_check

    labels = {m.name: m.board_label or m.label for m in family.metrics}
    cells = []
    for check in outcome.checks:
        gate = gate_of_check(check.name) if check.state != "passed" else None
        if gate is not None and gate[2] in labels:
            kind, question_type, metric, system = gate
            cells.append({"system": system, "label": labels[metric], "type": question_type,
                          "delta": kind == "regression" and question_type is None,
                          "state": "failed" if check.fails_run else check.state, "message": check.message})
    return cells


def page_data(outcome: "RunOutcome", family: Family, title: str, *, run_name: str = "",
              other: Optional[tuple[str, Sequence[RowRecord]]] = None, compare_map: Optional[Mapping[str, str]] = None,
              figures: Sequence[Path] = ()) -> dict[str, Any]:
    """Everything the page shows, as plain data (tested without a browser)."""
    # A family with its own leaderboard (the rubric family's Elo, battles and win matrix) gives the page the
    # board the terminal and the Markdown draw, in order; the others, the default leaderboard table.
    own, failed = family.board(outcome.records, outcome.family_results)
    tables = leaderboard_tables(outcome.records, family, outcome.intervals, outcome.comparison)
    board = own if own is not None else [  # the table and the notes the terminal prints under it
        tables[0], *leaderboard_notes(outcome.records, family, outcome.intervals, outcome.comparison)]
    # One order however the page is made (a live serial run, -n 2's arrival order, view of the saved run): the
    # terminal's and the Markdown's listing order.
    listed = sorted([*outcome.records, *outcome.invalid_rows], key=listing_order)
    rows = [_row(r, key) for key, r in _keyed(listed).items()]
    data: dict[str, Any] = {
        "title": title, "run": run_name or title,  # the run a review mark names (calibrate --run)
        "family": family.name, "verdict": outcome.verdict, "gated": outcome.gated,
        "headline": outcome.headline,
        "coverage": outcome.coverage_line,
        "notes": [n for n in (failed, *outcome.notes) if n],
        "board": [_table(part) if isinstance(part, Table) else {"text": part}
                  for part in board if part is not None and part != ""],
        # The terminal's "by question type", "by domain" (and repeats) tables; a family with its own board has
        # its breakdowns in it, as in the Markdown.
        "breakdowns": [_table(t) for t in tables[1:]] if own is None else [],
        # Against the run's own baseline: the Markdown's "Against" section, its table and what was not paired.
        "comparison": _against(outcome.comparison, family) if outcome.comparison is not None else None,
        "judge_scales": {d.name: [d.low, d.high] for d in family.judge_dimensions},
        "guards": [{"severity": g.severity, "message": g.message} for g in outcome.guards],  # as the terminal's
        "checks": [{"state": c.state, "fails_run": c.fails_run, "mark": c.mark, "message": c.message}
                   for c in outcome.checks],
        "gate_cells": _gate_cells(outcome, family),
        # A family's battles as judged (the rubric family's), shown on the row pages of the answers in them.
        "battles": list((outcome.family_results or {}).get("judged") or []),
        "metrics": [{"name": m.name, "label": m.label} for m in family.metrics],
        "rows": rows, "labels_schema": LABELS_SCHEMA,
        "figures": [{"name": f.stem, "svg": f.read_text(encoding="utf-8")} for f in figures if f.suffix == ".svg"],
    }
    if other is not None:
        name, other_records = other
        paired = dict(compare_map or {})  # this run's system -> the other run's (--map NEW=OLD)
        against = compare(outcome.records, Baseline(name, tuple(other_records)), family, paired)
        said = data["comparison"]["lines"] if data["comparison"] is not None else []
        data["compare"] = {"baseline": name, "changed": _changes(outcome.records, other_records,
                                                                 family.metric_names, paired, judged_metrics(family)),
                           # What was paired and what was not (rows and systems only one run has: said, not
                           # silently left out), as coverage_lines says it, where the "Against" section (the
                           # run's own baseline) has not said it already.
                           "lines": [line for line in coverage_lines(against) if line not in said]}
    return data


def _table(table: Table) -> dict[str, Any]:
    return {"title": table.title, "headers": [str(h) for h in table.headers],
            "rows": [[str(c) for c in row] for row in table.rows]}


def _against(comparison: Comparison, family: Family) -> dict[str, Any]:
    """The comparison with the run's own baseline as the terminal and the Markdown give it: the table (this run,
    baseline, Δ, its interval and p per system and metric), then the rows only one run has and the notes."""
    return {"baseline": comparison.baseline, "table": _table(comparison_table(comparison, family)),
            "lines": coverage_lines(comparison)}


def render(outcome: "RunOutcome", family: Family, title: str = "researchqa", *, run_name: str = "",
           other: Optional[tuple[str, Sequence[RowRecord]]] = None, compare_map: Optional[Mapping[str, str]] = None,
           figures: Sequence[Path] = ()) -> str:
    data = page_data(outcome, family, title, run_name=run_name, other=other, compare_map=compare_map,
                     figures=figures)
    packed = base64.b64encode(gzip.compress(utf8(json.dumps(data, ensure_ascii=False)), 6, mtime=0))
    assets = resources.files("pytest_researchqa.reporting") / "html_assets"
    template = (assets / "report.html").read_text(encoding="utf-8")
    return (template.replace("/*STYLE*/", (assets / "report.css").read_text(encoding="utf-8"))
            .replace("/*SCRIPT*/", (assets / "report.js").read_text(encoding="utf-8"))
            .replace("@@TITLE@@", _html_text(title))
            .replace("@@DATA@@", packed.decode("ascii")))


def _html_text(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def write_html(path: Path, text: str) -> None:
    from ..papers import atomic_write

    atomic_write(path, utf8(text))
