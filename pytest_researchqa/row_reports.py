"""What a row's test report says: the policy for rows below their bar, and their short diagnosis.

A row that scores below its per-row bar is a measurement, not a crash: by default it is
reported as an expected failure (xfailed) whose reason is its diagnosis, and only errors and
configured gates decide the exit status. With ``--researchqa-fail-rows`` it fails as a test,
and its report is the diagnosis itself (a few lines, no traceback, no argument reprs) unless
``--tb=long`` or ``-v`` asks for pytest's full report. A real exception inside a system keeps
its traceback. Light: imported with the plugin.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, Optional

import pytest

from .text_safety import for_terminal

if TYPE_CHECKING:  # pragma: no cover
    from .records import RowRecord
    from .state import RunState

# A failed row's diagnosis in the terminal: at most this many lines (the rest: --tb=long, saved runs).
DIAGNOSIS_LINES = 8
# A saved row keeps its whole diagnosis (the HTML report shows it), up to this many lines.
SAVED_DIAGNOSIS_LINES = 60
# Within a failed check, the lines a reader needs first, most telling first: the section missed,
# the first quote, where it departs from the paper and what each then says.
_TELLING = tuple(re.compile(p) for p in (
    r"^\s*missed ", r"^\s*\[\d+\]", r"^\s*(departs from|differs from)", r"^\s*the quote goes on",
    r"^\s*the paper goes on"))


def _rank(line: str, later: bool) -> tuple[int, int]:
    """How telling a detail line is: the first quote's lines before any later quote's."""
    found = next((n for n, pattern in enumerate(_TELLING) if pattern.match(line)), len(_TELLING))
    return (1 if later else 0, found)


def _lines(message: str) -> list[str]:
    """A message's non-blank lines, right-stripped (a placeholder when there are none)."""
    return [line.rstrip() for line in message.strip().splitlines() if line.strip()] or ["below the per-row bar"]


def diagnosis_of(message: str) -> str:
    """The assertion's message cut to what a reader needs: every failed check's headline, then its
    most telling lines (the section missed, the quote, where it departs and how quote and paper
    go on), the first check first."""
    lines = _lines(message)
    if len(lines) <= DIAGNOSIS_LINES:
        return "\n".join(lines)
    blocks: list[list[str]] = []
    for line in lines:
        if not line.startswith((" ", "\t")) or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    ranked: list[list[int]] = []
    for _, *details in blocks:
        quotes = 0
        keys = []
        for n, line in enumerate(details):
            quotes += bool(_TELLING[1].match(line))
            keys.append((_rank(line, quotes > 1), n))
        ranked.append([n for rank, n in sorted(keys) if rank[1] < len(_TELLING)])
    budget = max(0, DIAGNOSIS_LINES - 1 - len(blocks))
    chosen: list[set[int]] = [set() for _ in blocks]
    for n, best in enumerate(ranked):  # each check's most telling line, then the first checks' others
        if best and budget:
            chosen[n].add(best[0])
            budget -= 1
    for n, best in enumerate(ranked):
        for detail in best[1:budget + 1]:
            chosen[n].add(detail)
        budget -= len(best[1:budget + 1])
    kept: list[str] = []
    for (head, *details), picked in zip(blocks, chosen):
        kept += [head, *(details[n] for n in sorted(picked))]
    kept = kept[:DIAGNOSIS_LINES - 1]
    return "\n".join([*kept, f"... {len(lines) - len(kept)} more line(s): --tb=long, or the HTML report"])


def saved_diagnosis(message: str) -> str:
    """The whole diagnosis a saved row keeps (blank lines dropped, long ones capped)."""
    lines = _lines(message)
    if len(lines) > SAVED_DIAGNOSIS_LINES:
        lines = [*lines[:SAVED_DIAGNOSIS_LINES - 1], f"... {len(lines) - SAVED_DIAGNOSIS_LINES + 1} more line(s)"]
    return "\n".join(lines)


def release_frames(call: pytest.CallInfo[None]) -> None:
    """Drop the locals of a graded failure's frames once its report is made (issue 24 item 3).

    The traceback and its frames form reference cycles (a frame holds the exception info that holds
    the traceback), so whatever the test's frames held -- the row's paper and its match index, the
    answer -- stayed alive until Python's rare full collection: at the seed's scale, hundreds of
    prepared papers evicted from :class:`~pytest_researchqa.papers.PaperStore` but not freed. The
    report is already made (its text rendered); only ``--pdb`` still reads the frames, and it is
    never called for this failure without it (an xfailed row is never debugged).
    """
    import traceback

    if call.excinfo is not None:
        traceback.clear_frames(call.excinfo.tb)


def wants_full_report(config: pytest.Config) -> bool:
    return bool(config.option.tbstyle == "long" or config.getoption("verbose") > 0)


def graded_failure(call: pytest.CallInfo[None], record: "RowRecord") -> bool:
    """The test's call fell below the row's bar: an assertion failed, and no system error was recorded."""
    return (call.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
            and not record.error)


def spare_traceback(item: pytest.Item, call: pytest.CallInfo[None], record: "RowRecord") -> None:
    """Before pytest renders a graded failure whose rendering :func:`settle` replaces by the diagnosis: keep
    only its last traceback entry (issue 24 items 4 and 5). pytest walks and renders every frame of a failure
    (a few ms a row, the pluggy frames included); a row below its bar shows its diagnosis instead, so only
    ``--tb=long``, ``-v`` and ``--pdb`` keep the whole traceback."""
    if (graded_failure(call, record) and not wants_full_report(item.config)
            and not item.config.getoption("usepdb", False)):
        assert call.excinfo is not None
        call.excinfo.traceback = call.excinfo.traceback[-1:]


def settle(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, record: "RowRecord",
           state: "RunState") -> None:
    """Decide the row's outcome on its report and record: error, below its bar, or the test's own."""
    failed_call = call.when == "call" and call.excinfo is not None
    graded = graded_failure(call, record)
    if failed_call and not record.error and not graded:
        if not call.excinfo.errisinstance((pytest.xfail.Exception, pytest.skip.Exception)):  # type: ignore[union-attr]
            record.error = f"{call.excinfo.typename}: {call.excinfo.value}"  # type: ignore[union-attr]
    if graded and call.excinfo is not None:
        record.diagnosis = state.redact(saved_diagnosis(str(call.excinfo.value)))  # a provider may echo a key
        if not wants_full_report(item.config):  # an expected failure's too: it crosses xdist, pytest shows none
            report.longrepr = for_terminal(f"{record.system} · {record.row_id}: {diagnosis_of(record.diagnosis)}")
        if not state.settings.fail_rows:
            first_line = record.diagnosis.splitlines()[0]
            report.outcome = "skipped"
            report.wasxfail = for_terminal(f"below the per-row bar: {first_line}")
            record.outcome = "below_bar"
            release_frames(call)
            return
        if not item.config.getoption("usepdb", False):
            release_frames(call)
    record.outcome = "error" if record.error else ("xfailed" if hasattr(report, "wasxfail") else report.outcome)


def carry_record(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, record: "RowRecord",
                 state: "RunState") -> None:
    """Settle a row's record and put it on its report as plain data (redacted), so it crosses xdist."""
    settle(item, call, report, record, state)
    record.nodeid = item.nodeid
    if record.error:
        record.error = state.redact(record.error)
    if record.judge is not None:
        record.judge = record.judge.redacted(state.redact)
    # Plain data on the report: an extra attribute xdist serializes. In the process that logs the report (no
    # xdist worker) the record itself goes to the session (RunState.hand_over), so the plain data need not be a
    # copy: it is written to the partial rows file and dropped from the report as soon as the report is logged.
    from .xdist_compat import is_worker

    here = not is_worker(item.config)
    plain = record.to_plain(copy=not here)
    redacted = state.redact_plain(plain)
    report.researchqa = redacted  # type: ignore[attr-defined]
    if here and redacted is plain:  # nothing was redacted: the record says what its plain data says
        # Final unless a test's own fixture may hold the row's recorder and record into it later (teardown).
        exposed = any(name in _RECORDER_FIXTURES for name in getattr(item, "fixturenames", ()))
        state.hand_over(plain, record, final=not exposed)
    # JUnit writes the properties of the item (copied onto its teardown report), not of this report.
    item.user_properties.extend(record.junit_properties())
    add_sections(report, record)
    if record.judge_failures:
        item.user_properties.append(("researchqa_judge_errors", "; ".join(record.judge_failures)))


# The fixtures that give a test the row's recorder (researchqa_case's test may take researchqa_recorder too).
_RECORDER_FIXTURES = frozenset({"researchqa_recorder", "researchqa_case"})


def add_sections(report: pytest.TestReport, record: "RowRecord") -> None:
    """The model input and judge reasons of a row that did not simply pass."""
    if report.outcome != "passed" and record.usage.context:
        usage = record.usage
        tokens = (f", {usage.prompt_tokens} tokens in, {usage.completion_tokens} out"
                  if usage.prompt_tokens is not None else "")
        cached = ", from the cache" if usage.cached else ""
        report.sections.append(("researchqa model input", f"context: {usage.context}{tokens}{cached}"))
    if record.judge and (report.outcome != "passed" or record.outcome == "below_bar"):
        report.sections.append(("researchqa judges", "\n".join(record.judge.reason_lines())))
    failures = record.judge_failures
    if failures:
        report.sections.append(("researchqa judge errors", "\n".join(failures)))


_OWN_TESTCASE_UNGATED = frozenset({"run::family_step"})


def check_reports(outcome: Any) -> list[pytest.TestReport]:
    """The gates as test reports (setup, call, teardown each), so JUnit and pytest's own counts carry
    every gate as a testcase of its own: ``researchqa.gates.<kind>`` / ``<metric>[<system>]``."""
    reports: list[pytest.TestReport] = []
    # Without gates, a row in error, a crashed or a failing test is its own testcase already; a family's failed
    # end-of-run step (the rubric family's tournament) is a test of none, so it is one of its own.
    checks = outcome.checks if outcome.gated else [c for c in outcome.checks if c.name in _OWN_TESTCASE_UNGATED]
    for check in checks:
        nodeid = f"researchqa::gates::{check.name}"
        location = ("researchqa", None, f"gates::{check.name}")
        properties = [("researchqa.gate_state", check.state)]
        call_outcome: Literal["passed", "failed", "skipped"]
        longrepr: Any
        if check.fails_run:
            call_outcome, longrepr = "failed", check.message
        elif check.state == "undecidable":
            said = check.message if "UNDECIDABLE" in check.message else f"UNDECIDABLE: {check.message}"  # once
            call_outcome, longrepr = "skipped", ("researchqa", None, said)
        else:
            call_outcome, longrepr = "passed", None
        phases: tuple[tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed", "skipped"], Any], ...]
        phases = (("setup", "passed", None), ("call", call_outcome, longrepr), ("teardown", "passed", None))
        for when, result, text in phases:
            report = pytest.TestReport(nodeid, location, {}, result, text, when, user_properties=properties)
            report.researchqa_check = check.message  # type: ignore[attr-defined]
            reports.append(report)
    return reports


def first_missing_path(config: pytest.Config) -> Optional[str]:
    """A path argument that does not exist: pytest's own 'file or directory not found' must stand."""
    from pathlib import Path

    for arg in config.args:
        path = arg.split("::", 1)[0]
        if path and not (config.invocation_params.dir / path).exists() and not Path(path).exists():
            return arg
    return None
