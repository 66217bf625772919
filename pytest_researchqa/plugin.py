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
        # litellm's own types make pydantic warn as they load; nothing a user can act on.
        config.addinivalue_line("filterwarnings", "ignore:.*using the .ReadOnly. qualifier:UserWarning")
    state = RunState(config, settings)
    config.stash[RUN_STATE] = state
    run_hooks = RunHooks(state)
    config.pluginmanager.register(run_hooks, "researchqa-run")
    if config.pluginmanager.hasplugin("xdist") and settings.models:
        config.pluginmanager.register(XdistControllerHooks(run_hooks), "researchqa-xdist")
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
        judge_errors = [f"{name}: {scores['error']}" for name, scores in
                        ((record.get("judge") or {}).get("by_judge") or {}).items() if "error" in scores]
        if judge_errors:
            report.sections.append(("researchqa judge errors", "\n".join(judge_errors)))
            report.user_properties.append(("researchqa_judge_errors", "; ".join(judge_errors)))
    return report


class RunHooks:
    """Hooks that need the run's state; registered per config, so no module globals."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.progress = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect records on the process that prints (the controller under xdist)."""
        record = getattr(report, "researchqa", None)
        if record is not None:
            self.state.records.append(record)
            if self.progress is not None:
                self.progress.row_done(record)
        elif report.failed:
            self.state.foreign_failures += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Put every selected row's model call in flight now; each test then waits for its own."""
        if not self.state.settings.models or session.config.option.collectonly:
            return  # --collect-only must never spend money
        from .llm.progress import Progress

        items = [i for i in session.items if _model_case(i, self.state) is not None]
        if not hasattr(session.config, "workerinput"):
            self.progress = Progress(session.config, total=len(items))
        if _xdist_queue(session.config) is None and not hasattr(session.config, "workerinput"):
            _prefetch(self.state, items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        """Under xdist, a worker learns its rows as they are handed over: start their calls then."""
        if not self.state.settings.models:
            return
        queue = _xdist_queue(item.config)
        if queue is not None:
            with queue.lock() as pending:
                upcoming = [item.session.items[i] for i in pending if isinstance(i, int)]
            _prefetch(self.state, [item, *upcoming])

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With gates, the gates decide the exit status (see docs/gating.md)."""
        state = self.state
        state.close()
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
        if self.progress is not None:
            self.progress.finish(terminalreporter)
        terminalreporter.write_sep("=", "researchqa leaderboard")
        for line in leaderboard.render(state.records).splitlines():
            write(line)
        guards = leaderboard.render_guards(state.records)
        if guards:
            terminalreporter.write_sep("-", "researchqa judge guards")
            for line in guards:
                write(line, yellow=line.startswith(("warning", "saturation", "contradiction")))
        if state.settings.gates:
            terminalreporter.write_sep("-", "researchqa gates")
            for result in leaderboard.evaluate_gates(state.settings.gates, state.records):
                write(result.describe(), red=not result.passed, green=result.passed)
            errors = sum(1 for r in state.records if r.get("error"))
            if errors:
                write(f"{errors} row(s) errored: the gates cannot pass while rows error", red=True)
            if state.foreign_failures:
                write(f"{state.foreign_failures} other test(s) failed: the gates do not excuse them", red=True)


class XdistControllerHooks:
    """Hooks that exist only under xdist: the controller learns the collection from a worker."""

    def __init__(self, run_hooks: RunHooks) -> None:
        self.run_hooks = run_hooks

    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        if self.run_hooks.progress is None:
            from .llm.progress import Progress

            models = self.run_hooks.state.settings.models
            total = sum(1 for nodeid in ids if any(f"[{model}-" in nodeid for model in models))
            self.run_hooks.progress = Progress(self.run_hooks.state.config, total=total)


def _model_case(item: pytest.Item, state: RunState):
    case = getattr(getattr(item, "callspec", None), "params", {}).get("researchqa_case")
    if isinstance(case, Case) and case.kind == "row" and case.system in state.settings.models:
        return case
    return None


def _prefetch(state: RunState, items: list) -> None:
    from .papers import PaperUnavailable

    for item in items:
        case = _model_case(item, state)
        if case is None:
            continue
        row = state.dataset.rows[case.position]
        try:
            paper = state.papers.get(row.paper_id, row.paper_s3_url)
        except PaperUnavailable:
            continue  # the row's own setup reports it
        system = state.system(case.system)
        system.prefetch(row, paper)
        if state.settings.judges:
            # Judge each answer the moment it arrives; the row's test then finds the verdict in flight.
            panel = state.judges_for(case.system)
            system.when_answered(row, paper, lambda answer, row=row, panel=panel: [
                judge.submit(row, answer) for judge in panel])


def _xdist_queue(config: pytest.Config):
    """The xdist worker's queue of assigned items (an internal; None when absent or changed)."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(queue, "lock"):
            return queue
    return None


def _gates_hold(state: RunState) -> bool:
    results = leaderboard.evaluate_gates(state.settings.gates, state.records)
    errors = sum(1 for r in state.records if r.get("error"))
    return bool(results) and all(r.passed for r in results) and errors == 0 and state.foreign_failures == 0
