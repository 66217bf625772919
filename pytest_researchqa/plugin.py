"""pytest-researchqa's hooks: thin, each delegating to a small module.

Where a row goes: ``state`` decides the cases and ``families`` names them;
``fixtures`` load the row (``loaders``), its paper (``papers``) and the
system's answer (``systems``, ``llm``); assertions grade it (``assertions``,
``metrics``, ``matcher``) into the item's record (``records``); the record
rides the test report to the controller, where ``session`` aggregates,
``reporting`` renders and gates decide the exit status.

Importing this module costs nothing beyond pytest: datasets, papers, the
matcher and the systems are imported only when a run uses them.

PYTEST_DONT_REWRITE: pytest loads this module at every start-up; it holds no test's asserts, so
pytest compiles it as Python does instead of rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Optional

import pytest

from .fixtures import (  # noqa: F401  (fixtures are found as attributes of the plugin)
    researchqa_answer,
    researchqa_case,
    researchqa_dataset,
    researchqa_judge,
    researchqa_paper,
    researchqa_recorder,
    researchqa_row,
    researchqa_settings,
    researchqa_system,
)
from .options import add_options, read_settings
from .stash import RECORD, RECORDER, SETTINGS, STATE_FACTORY, case_of, run_state, started
from .xdist_compat import ControllerHooks, Lookahead, groups_by_paper, is_worker

if TYPE_CHECKING:  # pragma: no cover
    from .records import RowRecord
    from .runs import RunWriter
    from .session import RunOutcome, Selection
    from .state import RunState

PROTOCOL_NODEID = "researchqa"
_WORKER_SELECTION = "researchqa_selection"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hook a benchmark family implements (families/hookspecs.py), as pytest-xdist adds its own."""
    from .families import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    settings = read_settings(config)
    config.stash[SETTINGS] = settings
    selects = bool(config.option.keyword or config.option.markexpr)
    config.stash[STATE_FACTORY] = lambda: _new_state(settings, sample_after_selection=selects)
    if settings.declaration is not None:  # an inactive plugin adds nothing to --markers (nor --strict-markers)
        _register_markers(config, settings.declaration.question_types)
    if settings.models:
        # litellm's own types make pydantic warn as they load; nothing a user can act on.
        config.addinivalue_line("filterwarnings", "ignore:.*using the .ReadOnly. qualifier:UserWarning")
    run_hooks = RunHooks(config)
    config.pluginmanager.register(run_hooks, "researchqa-run")
    if config.pluginmanager.hasplugin("xdist") and not is_worker(config):
        by_paper = settings.active and settings.benchmark_family.uses_papers and groups_by_paper(config)
        config.pluginmanager.register(ControllerHooks(run_hooks.node_collected, run_hooks.node_down,
                                                      run_hooks.papers_by_test_id if by_paper else None),
                                      "researchqa-xdist")
    if settings.models or settings.judges:
        import importlib.util

        if importlib.util.find_spec("litellm") is None:
            raise pytest.UsageError("researchqa: models and LLM judges run through litellm, which is not installed: "
                                    "pip install 'pytest-researchqa[llm]'")
    if settings.active:
        if settings.dataset is not None and not settings.dataset.is_file():
            raise pytest.UsageError(f"--researchqa-dataset: {settings.dataset} is not a file")
        if settings.papers is not None and not settings.papers.is_dir():
            raise pytest.UsageError(f"--researchqa-papers: {settings.papers} is not a folder")
        state = run_state(config)
        for spec in settings.systems:
            state.system(spec)  # a bad spec is a usage error now, not N failing rows
        if settings.compare and not is_worker(config):
            state.session.baseline = _baseline(config, settings)
            if state.session.baseline is None:
                state.session.missing_baseline = settings.compare
        if settings.plots is not None:
            from .reporting.plots import require_matplotlib

            require_matplotlib()


def _runs_dir(config: pytest.Config, settings: Any) -> Path:
    from .runs import DEFAULT_RUNS_DIR

    if settings.results and settings.results != "off":
        return Path(settings.results)
    return config.rootpath / DEFAULT_RUNS_DIR


def _baseline(config: pytest.Config, settings: Any) -> Any:
    """The saved run to compare with, read now: a wrong name fails before any row runs."""
    from .runs import RunNotFound, load_baseline

    try:
        baseline = load_baseline(settings.compare, _runs_dir(config, settings))
    except RunNotFound as error:
        if settings.compare_missing == "skip":
            return None  # the run says "no baseline: nothing compared"; its regression gates cannot decide
        raise pytest.UsageError(f"--researchqa-compare: {error}") from None
    except (ValueError, OSError) as error:
        raise pytest.UsageError(f"--researchqa-compare: {error}") from None
    if baseline.family != settings.family:
        raise pytest.UsageError(f"--researchqa-compare: {baseline.name} is a run of the {baseline.family} family; "
                                f"this run is of the {settings.family} family, whose rows it cannot be paired with")
    return baseline


def _register_markers(config: pytest.Config, question_types: tuple[str, ...]) -> None:
    known = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    for question_type in question_types:
        if question_type not in known:
            config.addinivalue_line("markers", f"{question_type}: researchqa rows of question type {question_type}")


def _new_state(settings: Any, sample_after_selection: bool) -> "RunState":
    from .state import RunState  # on first use: a project that never runs a row never loads it

    return RunState(settings, sample_after_selection=sample_after_selection)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "researchqa_case" not in metafunc.fixturenames:
        return
    state = run_state(metafunc.config)
    _register_markers(metafunc.config, state.family.question_types)  # a project's own row test, no option
    with_systems = bool({"researchqa_answer", "researchqa_system"} & set(metafunc.fixturenames))
    known: dict[str, pytest.MarkDecorator] = {}  # one lookup per mark name, not per row
    metafunc.parametrize(
        "researchqa_case",
        [pytest.param(case, id=case_id, marks=[known.get(m) or known.setdefault(m, getattr(pytest.mark, m))
                                               for m in marks])
         for case, case_id, marks in state.cases(with_systems)],
        indirect=True,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the built-in test when the benchmark is asked for and no collected test runs rows; set keywords."""
    settings = config.stash[SETTINGS]
    uses_rows = any("researchqa_case" in getattr(item, "fixturenames", ()) for item in items)
    if settings.requested and not uses_rows:
        items.extend(_collect_protocol(session, run_state(config)))
    if settings.only:
        others = [item for item in items if case_of(item) is None]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if case_of(item) is not None]
    generated = 0
    for item in items:
        case = case_of(item)
        if case is not None:
            generated += case.kind == "row"
            item.extra_keyword_matches.update(run_state(config).case_keywords(case))
    config.stash[_GENERATED] = generated


def _collect_protocol(session: pytest.Session, state: "RunState") -> list[pytest.Item]:
    """The family's default test module, collected through pytest's own Module node.

    Its node id is ``researchqa`` (``researchqa::test_question[bm25-lookup-<row_id>]``).
    ``Session.genitems`` collects it as pytest collects any module, firing the collection hooks
    itself, so terminal counts, collection errors and xdist agree.
    """
    import importlib

    module_file = importlib.import_module(state.family.protocol_module).__file__
    assert module_file is not None
    module = pytest.Module.from_parent(session, path=Path(module_file), nodeid=PROTOCOL_NODEID)
    return list(session.genitems(module))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Assertions inside a researchqa test record into the row's own recorder."""
    recorder = item.stash.get(RECORDER, None)
    if recorder is None:
        return (yield)
    from .records import recording_into

    with recording_into(recorder):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Carry the row's record on its report: plain data, so it crosses xdist."""
    report = yield
    record: Optional["RowRecord"] = item.stash.get(RECORD, None)
    if record is None:
        return report
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        from .row_reports import add_sections, settle

        state = run_state(item.config)
        settle(item, call, report, record, state)
        record.nodeid = item.nodeid
        if record.error:
            record.error = state.redact(record.error)
        for scores in ((record.judge or {}).get("by_judge") or {}).values():
            if isinstance(scores, dict) and scores.get("error"):
                scores["error"] = state.redact(str(scores["error"]))
        report.researchqa = state.redact_plain(record.to_plain())
        # JUnit writes the properties of the item (copied onto its teardown report), not of this report.
        item.user_properties.extend(record.junit_properties())
        add_sections(report, record)
        if record.judge_failures:
            item.user_properties.append(("researchqa_judge_errors", "; ".join(record.judge_failures)))
    return report


_GENERATED = pytest.StashKey[int]()
DRY_RUN = pytest.StashKey[bool]()


class RunHooks:
    """Hooks that need the run's state; registered per config, so no module globals."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.progress: Optional[Any] = None
        self.selected: Optional[int] = None
        self.generated: Optional[int] = None
        self.foreign_failures = 0
        self.started_at = datetime.datetime.now(datetime.timezone.utc)
        self.writer: Optional["RunWriter"] = None
        self.plots: list[Path] = []
        self.lookahead: Optional[Lookahead] = None
        self.pipelines: Optional[bool] = None

    @property
    def state(self) -> "RunState":
        state: "RunState" = run_state(self.config)
        return state

    def _results_writer(self) -> Optional["RunWriter"]:
        """This run's results folder, opened with the first record (None when saving is off)."""
        settings = self.config.stash[SETTINGS]
        if self.writer is None and settings.results != "off" and not settings.audit:  # an audit answers nothing
            from .runs import RunWriter, new_run_folder

            self.writer = RunWriter(new_run_folder(_runs_dir(self.config, settings), settings.save_name,
                                                   self.started_at))
        return self.writer

    # -- collection ----------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """``--researchqa-sample`` with ``-k``/``-m``: sample the rows they kept (runs after their deselection)."""
        state = started(config)
        if state is None:
            return
        left_out = (state.sample_leaves_out([c for i in items if (c := case_of(i)) is not None])
                    if state.sample_after_selection else None)
        if left_out:
            deselected = [i for i in items
                          if (c := case_of(i)) is not None and c.kind == "row" and c.position in left_out]
            config.hook.pytest_deselected(items=deselected)
            dropped = set(map(id, deselected))
            items[:] = [i for i in items if id(i) not in dropped]
        self._check_budget(config, items)

    def _check_budget(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """--researchqa-dry-run and --researchqa-max-cost: the call plan, before any call is made (under
        xdist the controller collects nothing: the plan is each worker's, so it is not printed there)."""
        settings = config.stash[SETTINGS]
        if not settings.models or not (settings.dry_run or settings.max_cost is not None) or is_worker(config):
            return
        from .budget import plan_calls, plan_lines, total_cost

        state = run_state(config)
        plans = plan_calls(state, [c for i in items if (c := case_of(i)) is not None])
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            for line in plan_lines(plans):
                reporter.write_line(f"researchqa plan: {line}")
        estimate = total_cost(plans)
        if settings.max_cost is not None and estimate is not None and estimate > settings.max_cost:
            raise pytest.UsageError(f"researchqa: the run's estimated cost ${estimate:.2f} is above "
                                    f"--researchqa-max-cost=${settings.max_cost:.2f}: select fewer rows "
                                    "(--researchqa-sample, -k) or raise the budget")
        if settings.dry_run:  # every benchmark row is deselected: nothing runs, nothing is called
            rows = [i for i in items if case_of(i) is not None]
            config.hook.pytest_deselected(items=rows)
            items[:] = [i for i in items if case_of(i) is None]
            config.stash[DRY_RUN] = True

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the selected rows; put every selected model row's call in flight now."""
        if self.config.stash.get(DRY_RUN, False):
            return  # the plan is printed; nothing is counted, nothing is called
        row_items = [i for i in session.items if (c := case_of(i)) is not None and c.kind == "row"]
        self.selected = len(row_items)
        self.generated = self.config.stash.get(_GENERATED, self.selected)
        settings = self.config.stash[SETTINGS]
        if not row_items and not settings.requested:
            return  # a run without the benchmark: nothing to count, nothing to start
        invalid_rows = any((c := case_of(i)) is not None and c.kind == "problem" for i in session.items)
        if settings.requested and self.selected == 0 and not invalid_rows and not session.config.option.collectonly:
            from .row_reports import first_missing_path

            if not session.config.option.pyargs and first_missing_path(session.config) is not None:
                return  # pytest's own "file or directory not found" follows; ours would replace it
            if self.generated == 0:
                # pytest calls this hook from a `finally`: a load error raised during collection would
                # be replaced by ours, so load again here and let its own message stand.
                _ = self.state.dataset
                raise pytest.UsageError(f"researchqa: the dataset {self.state.dataset_path} has no rows to run")
            raise pytest.UsageError(f"researchqa: no row of {self.state.dataset_path} matches the selection "
                                    f"({self._selection().slice_description or 'deselected'})")
        if session.config.option.collectonly:
            return  # --collect-only must never spend money
        services = self.state.services
        if not is_worker(self.config):
            if settings.models:
                models = [i for i in row_items if services.is_model(case_of(i).system)]  # type: ignore[union-attr]
                self.progress = self._new_progress(len(models))
            _prefetch(self.state, row_items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Optional[pytest.Item]) -> None:
        """Under xdist, a worker learns its rows as they are handed over: start their calls then."""
        if is_worker(item.config) and case_of(item) is not None and self._pipelines():
            if self.lookahead is None:
                self.lookahead = Lookahead(item.config)
            _prefetch(self.state, self.lookahead.fresh(item, nextitem))

    def _pipelines(self) -> bool:
        """Whether any system of the run starts calls ahead of its rows (decided once)."""
        if self.pipelines is None:
            state = self.state
            self.pipelines = any(state.services.pipelined(name) for name in state.settings.all_systems)
        return self.pipelines

    # -- xdist controller ----------------------------------------------------------------
    def node_collected(self, ids: list[str]) -> None:
        models = self.config.stash[SETTINGS].models
        if self.progress is None and models:
            total = sum(1 for nodeid in ids if any(f"[{model}-" in nodeid for model in models))
            self.progress = self._new_progress(total)

    def node_down(self, workeroutput: dict[str, Any]) -> None:
        counts = workeroutput.get(_WORKER_SELECTION)
        if counts:  # every worker collects the same items: any one's counts will do
            self.generated, self.selected = counts

    def papers_by_test_id(self) -> dict[str, str]:
        """The paper of each row's test id, for the controller's scheduler (the dataset is read here once)."""
        state = self.state
        return {case_id: state.dataset.rows[case.position].paper_id
                for case, case_id, _ in state.cases(with_systems=True) if case.kind == "row"}

    def _new_progress(self, total: int) -> Any:
        from .llm_params import call_limits
        from .reporting.progress import Progress

        settings = self.config.stash[SETTINGS]
        slots = min((call_limits(settings.model_params.get(m, {}), concurrency=settings.concurrency,
                                 timeout_s=settings.timeout_s, given=settings.given)[0] for m in settings.models),
                    default=settings.concurrency)
        progress = Progress(self.config.pluginmanager.get_plugin("terminalreporter"), total, slots)
        progress.start(settings.models)
        return progress

    # -- results -------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect records on the process that prints (the controller under xdist)."""
        if is_worker(self.config):
            return  # a worker's reports reach the controller, which records (and saves) them once
        if hasattr(report, "researchqa_check"):
            return  # a gate's own testcase (pytest_sessionfinish): already counted in the outcome
        plain = getattr(report, "researchqa", None)
        if plain is not None:
            from .records import RowRecord

            record = RowRecord.from_plain(plain)
            self.state.session.add(record)
            writer = self._results_writer()
            if writer is not None:
                writer.add(record)  # on disk at once: a killed run keeps its finished rows
            if self.progress is not None:
                self.progress.row_done(record)
        elif report.failed:
            self.foreign_failures += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Optional[tuple[str, str, str]]:
        """A gate's testcase is counted (the final line agrees with JUnit) but draws no progress letter."""
        if not hasattr(report, "researchqa_check"):
            return None
        category = report.outcome if report.when == "call" else ""
        if not getattr(report, "researchqa_counted", False):
            report.researchqa_counted = True  # type: ignore[attr-defined]
            return (category, "", "")  # the live progress line: nothing
        return (category, "", report.outcome.upper())  # the short summary's word (FAILED, SKIPPED)

    def _selection(self) -> "Selection":
        from .session import Selection

        option = self.config.option
        rerun = None
        if self.generated is not None and self.selected is not None and self.selected < self.generated:
            if getattr(option, "lf", False):
                rerun = "--lf"
            elif getattr(option, "stepwise", False):
                rerun = "--sw"
        return Selection(rows=self.selected, keyword=getattr(option, "keyword", "") or "",
                         markexpr=getattr(option, "markexpr", "") or "", sample=self.state.settings.sample,
                         rerun_subset=rerun)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file: the gates' testcases go in it
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With gates, the run's outcome decides the exit status (see docs/gating.md)."""
        if self.config.stash.get(DRY_RUN, False) and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # a dry run that printed its plan did what was asked
        state = started(self.config)
        if state is None:
            return  # the benchmark never ran: nothing to close, nothing to decide
        if (state.family.after_answers and not is_worker(self.config) and state.session.records
                and not session.config.option.collectonly and exitstatus != pytest.ExitCode.INTERRUPTED):
            self._after_answers(state)
        state.close()
        if is_worker(self.config):
            self.config.workeroutput[_WORKER_SELECTION] = (self.generated, self.selected)  # type: ignore[attr-defined]
            return
        state.session.selection = self._selection()
        state.session.foreign_failures = self.foreign_failures
        state.session.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        if state.session.baseline is not None:
            from .runs import file_sha256

            state.session.dataset_sha = file_sha256(state.dataset_path)
        outcome = state.session.outcome()
        from .reporting.json_summary import summary
        from .row_reports import check_reports

        manifest = self._manifest(outcome)
        data = summary(outcome, state.family, manifest)
        if self.writer is not None:
            self.writer.finish(outcome.records + outcome.invalid_rows, manifest, data)
        if state.settings.json_summary is not None:
            from .reporting.json_summary import write_json

            write_json(state.settings.json_summary, data)
        self._write_markdown(outcome)
        if state.settings.plots is not None and outcome.records:
            from .reporting.plots import write_plots

            self.plots = write_plots(outcome, state.family, state.settings.plots)
        if state.settings.html is not None:
            from .reporting.html import render, write_html

            write_html(state.settings.html, render(outcome, state.family, f"researchqa {state.settings.save_name}",
                                                   figures=self.plots))
        for report in check_reports(outcome):  # JUnit and pytest's counts carry each gate as a testcase
            self.config.hook.pytest_runtest_logreport(report=report)
        if outcome.passed is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        session.exitstatus = pytest.ExitCode.OK if outcome.passed else pytest.ExitCode.TESTS_FAILED

    def _after_answers(self, state: "RunState") -> None:
        """The family's end-of-run step (the rubric family's pairwise battles), once every row is answered:
        on the controller, through the run's model runner, with progress lines."""
        from .families import resolve

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        started_lines = False

        def say(line: str) -> None:
            nonlocal started_lines
            if reporter is None:
                return
            if not started_lines and getattr(reporter, "currentfspath", None) is None:
                reporter.line("")  # xdist's progress leaves the cursor at the end of its line
            started_lines = True
            reporter.write_line(line)

        step = resolve(state.family.after_answers)
        state.session.family_results = step(list(state.session.records), state.services, state.settings, say)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.progress is not None:
            self.progress.stop()  # no progress line inside the summary
        state = started(config)
        if state is None or not state.session.records or is_worker(config):
            return
        from .reporting import terminal
        from .row_reports import short_list
        from .text_safety import for_terminal

        outcome = state.session.outcome()

        def write(line: str, **markup: bool) -> None:  # data never steers the terminal (escape sequences)
            terminalreporter.write_line(for_terminal(line), **markup)

        if state.settings.audit:
            terminalreporter.write_sep("=", "researchqa dataset audit")
            audit = (terminal.audit(outcome.records) if state.family.uses_papers
                     else terminal.leaderboard(outcome.records, state.family))  # no papers to check
            for line in audit.splitlines():
                write(line)
            if outcome.invalid_rows:
                write(f"{len(outcome.invalid_rows)} invalid dataset row(s): each is an erroring test naming its file, "
                      "row and field", red=True)
            for note in outcome.notes:
                write(note, yellow=True)
            return
        if self.progress is not None:
            self.progress.finish(terminalreporter)
        if self.writer is not None:
            write(f"researchqa: results saved in {self.writer.folder}")
        terminalreporter.write_sep("=", "researchqa leaderboard")
        for line in terminal.leaderboard(outcome.records, state.family, outcome.intervals, outcome.comparison,
                                         outcome.family_results).splitlines():
            write(line)
        write(outcome.coverage_line)
        if outcome.comparison is not None:
            terminalreporter.write_sep("-", "researchqa comparison")
            for line in terminal.comparison_text(outcome.comparison, state.family).splitlines():
                write(line)
        if state.settings.html is not None:
            write(f"researchqa: HTML report in {state.settings.html}")
        if self.plots:
            figures = sorted({p.stem for p in self.plots})
            write(f"researchqa: figures (PNG and SVG) in {state.settings.plots}: {', '.join(figures)}")
        if outcome.guards:
            terminalreporter.write_sep("-", "researchqa judge guards")
            for guard in outcome.guards:
                write(guard.message, yellow=guard.severity == "warning")
        below = short_list(list(outcome.records))
        if below:
            count = outcome.below_bar + outcome.failed_rows
            terminalreporter.write_sep("-", f"researchqa rows below their bar ({count})")
            for line in below:
                write(line)
        terminalreporter.write_sep("-", "researchqa verdict")
        for check in outcome.checks:
            write(f"{check.mark} {check.message}", red=check.fails_run, green=check.state == "passed",
                  yellow=check.state == "undecidable" and not check.fails_run)
        verdict = outcome.verdict
        write(f"researchqa: {outcome.headline}", bold=True, red=verdict == "failed", green=verdict == "passed",
              yellow=verdict == "undecidable")
        for note in outcome.notes:
            write(note, yellow=True)


    def _manifest(self, outcome: "RunOutcome") -> dict[str, Any]:
        from .bundled import bundled_path
        from .runs import environment, file_sha256, folder_hashes, git_commit, redact_params

        state, settings = self.state, self.config.stash[SETTINGS]
        selection = outcome.selection
        return {
            "name": settings.save_name,
            "family": state.family.name,
            "started": self.started_at.isoformat(timespec="seconds"),
            "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": [state.redact(str(arg)) for arg in self.config.invocation_params.args],
            "environment": environment(),
            "git_commit": git_commit(self.config.rootpath),
            "dataset": {"path": str(state.dataset_path), "sha256": file_sha256(state.dataset_path)},
            "systems": list(settings.systems),
            "models": list(settings.models),
            "model_params": redact_params(settings.model_params),
            "judges": list(settings.judges),
            "judge_mode": state.services.judge_kind(),
            "prompt_sha": sorted({r.usage.prompt_sha for r in outcome.records if r.usage.prompt_sha}),
            "judge_prompts": ({**folder_hashes(bundled_path("judges")),
                               **(folder_hashes(settings.judge_prompts) if settings.judge_prompts else {})}
                              if settings.judges else {}),
            "baseline": settings.baseline,
            "family_results": outcome.family_results,
            "selection": {"rows": selection.rows, "keyword": selection.keyword, "markexpr": selection.markexpr,
                          "sample": selection.sample, "rerun_subset": selection.rerun_subset},
            "outcome": {"measured": outcome.measured, "errors": outcome.errors, "passed": outcome.passed,
                        "verdict": outcome.verdict,
                        "gates": [{"gate": g.gate.label, "system": g.system, "value": g.value, "passed": g.passed,
                                   "state": g.state}
                                  for g in outcome.gates],
                        "partial_reasons": list(outcome.partial_reasons),
                        "compared_with": outcome.comparison.baseline if outcome.comparison else None,
                        "regressions": [{"gate": r.gate.label, "metric": r.gate.metric, "system": r.system,
                                         "baseline_system": r.baseline_system, "passed": r.passed,
                                         "state": r.state,
                                         "delta": r.test.delta if r.test else None,
                                         "p_worse": r.test.p_worse(r.gate.higher_is_better) if r.test else None}
                                        for r in outcome.regressions]},
        }

    def _write_markdown(self, outcome: "RunOutcome") -> None:
        import os

        settings = self.config.stash[SETTINGS]
        target = settings.markdown
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if target is None and not summary:
            return
        from .reporting.markdown import render

        text = render(outcome, self.state.family)
        if target is not None:
            from .papers import atomic_write

            atomic_write(target, text.encode("utf-8"))
        if summary:
            with open(summary, "a", encoding="utf-8") as stream:
                stream.write(text + "\n")


def _prefetch(state: "RunState", items: list[pytest.Item]) -> None:
    """Submit the calls of pipelined systems (and, chained on model answers, the judge calls) of these rows."""
    from .papers import PaperUnavailable

    for item in items:
        case = case_of(item)
        if case is None or case.kind != "row" or not state.services.pipelined(case.system):
            continue
        assert case.system is not None
        row = state.dataset.rows[case.position]
        try:
            paper = state.papers.get(row.paper_id, row.paper_s3_url) if state.family.uses_papers else None
        except PaperUnavailable:
            continue  # the row's own setup reports it
        system: Any = state.services.system(case.system)
        system.prefetch(row, paper)
        if state.settings.judges and state.services.is_model(case.system):
            # Judge each answer the moment it arrives; the row's test then finds the verdict in flight.
            panel = state.services.judges_for(case.system)
            system.when_answered(row, paper, lambda answer, row=row, panel=panel: [
                judge.submit(*subject) for judge in panel if (subject := judge.subject(row, answer))])
