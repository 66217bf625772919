"""pytest-researchqa's hooks: thin, each delegating to a small module.

Importing this module costs nothing beyond pytest: datasets, papers, the
matcher and the systems are imported only when a run uses them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from . import leaderboard
from .fixtures import (  # noqa: F401  (fixtures are found as attributes of the plugin)
    researchqa_answer,
    researchqa_case,
    researchqa_dataset,
    researchqa_judge,
    researchqa_paper,
    researchqa_row,
    researchqa_system,
)
from .options import QUESTION_TYPE_NAMES, add_options, read_settings
from .state import RECORD, RUN_STATE, Case, RunState

PROTOCOL_NODEID = "researchqa"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for question_type in QUESTION_TYPE_NAMES:
        config.addinivalue_line("markers", f"{question_type}: researchqa rows of question type {question_type}")
    settings = read_settings(config)
    if settings.models:
        raise pytest.UsageError(
            "--researchqa-model is not available yet: LLM systems through litellm arrive in a later release. "
            "Use --researchqa-system=oracle, bm25 or package.module:function for now."
        )
    state = RunState(config, settings)
    config.stash[RUN_STATE] = state
    config.pluginmanager.register(RunHooks(state), "researchqa-run")
    if settings.active:
        if settings.dataset is not None and not settings.dataset.is_file():
            raise pytest.UsageError(f"--researchqa-dataset: {settings.dataset} is not a file")
        if settings.papers is not None and not settings.papers.is_dir():
            raise pytest.UsageError(f"--researchqa-papers: {settings.papers} is not a folder")
        for spec in settings.systems:
            state.system(spec)  # a bad spec is a usage error now, not N failing rows


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "researchqa_case" not in metafunc.fixturenames:
        return
    state = metafunc.config.stash[RUN_STATE]
    with_systems = bool({"researchqa_answer", "researchqa_system"} & set(metafunc.fixturenames))
    metafunc.parametrize(
        "researchqa_case",
        [
            pytest.param(case, id=case_id, marks=[getattr(pytest.mark, m) for m in marks])
            for case, case_id, marks in state.cases(with_systems)
        ],
        indirect=True,
    )


class _ProtocolModule(pytest.Module):
    """The built-in protocol test module, imported by name rather than by path."""

    def _getobj(self):
        return importlib.import_module("pytest_researchqa.protocol")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Add the protocol test when asked to run rows and no collected test does; set keywords."""
    state = config.stash[RUN_STATE]
    uses_rows = any("researchqa_case" in getattr(item, "fixturenames", ()) for item in items)
    if state.settings.active and not uses_rows:
        items.extend(_collect_protocol(session))
    for item in items:
        case = getattr(getattr(item, "callspec", None), "params", {}).get("researchqa_case")
        if isinstance(case, Case) and case.kind == "row":
            row = state.dataset.rows[case.position]
            words = {row.paper_id, row.row_id, row.domain, row.domain.replace(" ", "_")}
            item.extra_keyword_matches.update(w for w in words if w)
            if case.system:
                item.extra_keyword_matches.add(case.system)


def _collect_protocol(session: pytest.Session) -> list:
    from . import protocol

    module = _ProtocolModule.from_parent(session, path=Path(protocol.__file__), nodeid=PROTOCOL_NODEID)
    collected = [node for node in module.collect() if isinstance(node, pytest.Item)]
    session.ihook.pytest_collectreport(report=pytest.CollectReport(module.nodeid, "passed", None, collected))
    for item in collected:
        session.ihook.pytest_itemcollected(item=item)
    return collected


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Carry the row's record on its report: plain data, so it crosses xdist."""
    report = yield
    record = item.stash.get(RECORD, None)
    if record is None:
        return report
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        if call.when == "call" and call.excinfo is not None and not record.get("error"):
            if not call.excinfo.errisinstance((AssertionError, pytest.xfail.Exception, pytest.skip.Exception)):
                record["error"] = f"{call.excinfo.typename}: {call.excinfo.value}"
        report.researchqa = dict(record, metrics=dict(record["metrics"]), nodeid=item.nodeid)
    return report


class RunHooks:
    """Hooks that need the run's state; registered per config, so no module globals."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect records on the process that prints (the controller under xdist)."""
        record = getattr(report, "researchqa", None)
        if record is not None:
            self.state.records.append(record)
        elif report.failed:
            self.state.foreign_failures += 1

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With gates, the gates decide the exit status (see docs/gating.md)."""
        state = self.state
        if not state.settings.gates or hasattr(session.config, "workerinput"):
            return
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        ok = _gates_hold(state)
        session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        state = self.state
        if not state.records or hasattr(config, "workerinput"):
            return
        write = terminalreporter.write_line
        if state.settings.audit:
            terminalreporter.write_sep("=", "researchqa dataset audit")
            for line in leaderboard.render_audit(state.records).splitlines():
                write(line)
            return
        terminalreporter.write_sep("=", "researchqa leaderboard")
        for line in leaderboard.render(state.records).splitlines():
            write(line)
        if state.settings.gates:
            terminalreporter.write_sep("-", "researchqa gates")
            for result in leaderboard.evaluate_gates(state.settings.gates, state.records):
                write(result.describe(), red=not result.passed, green=result.passed)
            errors = sum(1 for r in state.records if r.get("error"))
            if errors:
                write(f"{errors} row(s) errored: the gates cannot pass while rows error", red=True)
            if state.foreign_failures:
                write(f"{state.foreign_failures} other test(s) failed: the gates do not excuse them", red=True)


def _gates_hold(state: RunState) -> bool:
    results = leaderboard.evaluate_gates(state.settings.gates, state.records)
    errors = sum(1 for r in state.records if r.get("error"))
    return bool(results) and all(r.passed for r in results) and errors == 0 and state.foreign_failures == 0
