"""The hooks that need the run's state (``RunHooks``, registered per config by the plugin):
collection counts and look-ahead, records arriving, the exit status, the terminal summary and
the files a run writes. Each hook collects and hands over to a small module below it.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Optional, TypeVar

import pytest

from .stash import DRY_RUN, GENERATED, SETTINGS, WORKERS_SPEND, case_of, run_state, started
from .xdist_compat import RECORD_TEXT, Lookahead, is_worker

if TYPE_CHECKING:  # pragma: no cover
    from .costs import Spend
    from .llm.judges import ModelJudge
    from .runs import RunWriter
    from .session import RunOutcome, Selection
    from .settings import Settings
    from .state import RunState

WORKER_SELECTION = "researchqa_selection"
WORKER_CACHE_NOTE = "researchqa_cache_note"
WORKER_PLAN = "researchqa_plan"  # the call plan's lines (--researchqa-dry-run, --researchqa-max-cost)
WORKER_REFUSAL = "researchqa_refusal"  # the usage error that ended the run before any row
_T = TypeVar("_T")


def runs_dir(config: pytest.Config, settings: Any) -> Path:
    from .runs import DEFAULT_RUNS_DIR

    if settings.results and settings.results != "off":
        return Path(settings.results)
    return config.rootpath / DEFAULT_RUNS_DIR



class RunHooks:
    """Hooks that need the run's state; registered per config, so no module globals."""

    def __init__(self, config: pytest.Config, baseline_after_rows: Callable[[], None] = lambda: None) -> None:
        self.config = config
        # Reads the saved run to compare with once rows came back, where nothing read it before (an xdist
        # controller with ini settings alone): activation's, handed over so this layer imports nothing above it.
        self.baseline_after_rows = baseline_after_rows
        self.progress: Optional[Any] = None
        self.selected: Optional[int] = None
        self.generated: Optional[int] = None
        self.foreign_failures = 0
        self.crashed: list[str] = []  # node ids whose xdist worker died running them (pytest_handlecrashitem)
        self.started_at = datetime.datetime.now(datetime.timezone.utc)
        self.writer: Optional["RunWriter"] = None
        self.plots: list[Path] = []
        self.lookahead: Optional[Lookahead] = None
        self.pipelines: Optional[bool] = None
        self.estimated: Optional[list[str]] = None  # the call estimate's lines, once printed
        self.worker_notes: list[str] = []  # the answer cache turned off on a worker (a full disk)
        self.spills: Optional[bool] = None  # whether saved records let go of their details (_spills_details)
        self.unwritten: dict[str, str] = {}  # path -> why a full disk (or a bad path) kept it from being written
        self.keyboard_interrupt = False  # pytest met a Ctrl-C (see pytest_sessionfinish: a second one hides it)
        self.plan_to_print: list[str] = []  # the call plan an xdist worker handed over, for the summary
        self.refused = False  # this process ended the run before any row (_refuse)
        self.refusal: Optional[str] = None  # the usage error an xdist worker ended the run with (_refuse)
        self.frozen = False  # whether this run moved the objects alive at its start out of Python's collections

    @property
    def state(self) -> "RunState":
        state: "RunState" = run_state(self.config)
        return state

    def _results_writer(self) -> Optional["RunWriter"]:
        """This run's results folder, opened with the first record (None when saving is off)."""
        settings = self.config.stash[SETTINGS]
        if self.writer is None and settings.results != "off" and not settings.audit:  # an audit answers nothing
            from .runs import RunWriter, new_run_folder

            self.writer = RunWriter(new_run_folder(runs_dir(self.config, settings), settings.save_name,
                                                   self.started_at))
        return self.writer

    # -- collection ----------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """The dataset read at configure lives to the end of the run: out of Python's collections (_freeze)."""
        run = started(self.config)
        if run is not None and "dataset" in run.__dict__:
            self._freeze()

    def _freeze(self) -> None:
        """Move every object alive now out of the garbage collector's generations (``gc.freeze``) until the run
        ends (``pytest_unconfigure``): the dataset's rows, pytest's items and the modules live to the end of the
        run, and each full collection of the run would otherwise walk them all again, several times a run
        (issue 24 item 2). Objects made later (papers, answers, records) are collected as before; a frozen
        object still goes when nothing refers to it. A process that froze objects itself (a test suite running
        pytest in-process) keeps its own freeze: the run leaves it alone."""
        import gc

        if self.frozen or not gc.get_freeze_count():
            gc.freeze()
            self.frozen = True

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.refusal is not None:  # where pytest prints a usage error: last, on stderr
            sys.stderr.write(f"ERROR: {self.refusal}\n\n")
        if self.frozen:
            import gc

            gc.unfreeze()  # an in-process run (pytester) hands the collector back what it found
            self.frozen = False
        if "importlib_metadata" in sys.modules:  # loaded by litellm (a model's run) or a user's system
            _give_back_the_standard_distribution_finder()

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
        self._check_selection(config, items)  # first: a dry run of a selection that matches nothing is refused too
        if not self.refused:
            self._check_budget(config, items)

    def _check_budget(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """--researchqa-dry-run and --researchqa-max-cost: the call plan, before any call is made. Under xdist
        each worker collects every item, so its plan is the run's: it hands the plan (and a refusal) to the
        controller, which collects nothing and prints them (:meth:`_refuse`)."""
        settings = config.stash[SETTINGS]
        if (not (settings.models or settings.judges or settings.flagged_judge)
                or not (settings.dry_run or settings.max_cost is not None)):
            return  # no model to call: no plan
        cases = [c for i in items if (c := case_of(i)) is not None]
        if not cases:
            return  # only tests of the project's own selected (-k): no call to plan
        from .costs import spend_text

        estimate = self._plan(cases)
        if is_worker(config):
            config.workeroutput[WORKER_PLAN] = self.estimated  # type: ignore[attr-defined]
        # The priced calls' sum decides (a floor when some calls have no price: a local judge beside a priced model).
        if settings.max_cost is not None and estimate is not None and estimate.usd > settings.max_cost:
            self._refuse(items, f"researchqa: the run's estimated cost {estimate.text()} is above "
                                f"--researchqa-max-cost={spend_text(settings.max_cost)}: select fewer rows "
                                "(--researchqa-sample, -k) or raise the budget")
            return
        if settings.dry_run:  # every benchmark row is deselected: nothing runs, nothing is called
            rows = [i for i in items if case_of(i) is not None]
            config.hook.pytest_deselected(items=rows)
            items[:] = [i for i in items if case_of(i) is None]
            config.stash[DRY_RUN] = True

    def _plan(self, cases: list[Any]) -> "Optional[Spend]":
        """The call plan of these cases (or the family's own estimate), printed: its lines are ``self.estimated``.
        Returns the estimated cost (None: the family's estimate knows none)."""
        from .costs import Spend

        if self.state.family.call_estimate:  # a family that counts its own calls (the rubric family's battles)
            cost = self._print_estimate(cases)
            return Spend(cost) if cost is not None else None
        from .budget import plan_calls, plan_lines, planned_spend

        plans = plan_calls(self.state, cases)
        self.estimated = ["", *(f"researchqa plan: {line}" for line in plan_lines(plans))]
        self._write_lines(self.estimated)
        return planned_spend(plans)

    def _write_lines(self, lines: list[str]) -> None:
        """Lines for the terminal; a worker's have no terminal (its controller prints what it hands over)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not is_worker(self.config):
            for line in lines:
                reporter.write_line(line)

    def _refuse(self, items: list[pytest.Item], message: str) -> None:
        """End the run before any row with a usage error (exit 4). An xdist worker must not raise it: its controller
        would hand it tests it never runs (INTERNALERROR) and the message would be lost. The worker keeps no test
        and hands the message over; the controller ends the run with it (``pytest_sessionfinish``)."""
        self.refused = True
        if not is_worker(self.config):
            raise pytest.UsageError(message)
        self.config.hook.pytest_deselected(items=list(items))
        items.clear()
        self.config.workeroutput[WORKER_REFUSAL] = message  # type: ignore[attr-defined]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the selected rows; put every selected model row's call in flight now."""
        if self.config.stash.get(DRY_RUN, False):
            return  # the plan is printed; nothing is counted, nothing is called
        row_items = [i for i in session.items if (c := case_of(i)) is not None and c.kind == "row"]
        self.selected = len(row_items)
        self.generated = self.config.stash.get(GENERATED, self.selected)
        if not row_items or session.config.option.collectonly or self.refused:
            return  # no row to start (--collect-only must never spend money; pytest calls this after a refusal)
        self._freeze()  # the items, as the dataset at the start of collection
        self._start_rows(row_items)

    def _check_selection(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Before any row: the family's check of the selected rows, and a requested benchmark that selected no row
        is a usage error, unless pytest's own error says more or the selection kept other tests (``-k test_plain``:
        they run, and the summary says no row was selected). Decided here, before xdist's workers send what they
        collected, so that the exit status and every medium read the same with ``-n`` as without it."""
        if config.stash.get(DRY_RUN, False) or config.option.collectonly or self.refused:
            return  # nothing runs: the plan is printed, the rows listed, or the run refused already
        cases = [c for i in items if (c := case_of(i)) is not None]
        rows = [c for c in cases if c.kind == "row"]
        if rows:
            self._check_the_family_may_start(items, rows)
            return
        if not config.stash[SETTINGS].requested or any(c.kind == "problem" for c in cases):
            return  # the benchmark was not asked for, or invalid rows' own errors say why nothing runs
        from .row_reports import first_missing_path

        if not config.option.pyargs and first_missing_path(config) is not None:
            return  # pytest's own "file or directory not found" follows; ours would replace it
        if config.stash.get(GENERATED, 0) == 0:
            _ = self.state.dataset  # a load error raised during collection: its own message stands
            broken = self._why_the_dataset_gave_no_row()
            if broken is not None:
                self._refuse(items, broken)
            elif not items:  # the rows' tests were not collected (--lf after a test of one's own failed): fine
                family = self.state.family
                self._refuse(items, f"researchqa: the dataset {self.state.dataset_path} has "
                                    f"{len(self.state.dataset.rows)} row(s), but no collected test takes them: none "
                                    f"has a researchqa_row argument (the {family.name} family's default tests, in "
                                    f"its protocol_module {family.protocol_module}, have none)")
        elif not items:  # other tests kept by the selection run; the summary says no row was selected
            self._refuse(items, f"researchqa: no row of {self.state.dataset_path} matches the selection "
                                f"({self._selection().slice_description or 'deselected'})")

    def _check_the_family_may_start(self, items: list[pytest.Item], cases: list[Any]) -> None:
        """The family's check of the selected rows before any of them (``Family.before_rows``)."""
        state = self.state
        if state.family.before_rows:
            from .families import resolve

            rows = {id(row): row for row in (state.dataset.rows[case.position] for case in cases)}
            from .families.protocols import returned_awaitable

            family = state.family
            try:
                refusal = resolve(family.before_rows)(list(rows.values()), state.settings)
            except (Exception, SystemExit) as error:  # noqa: BLE001 -- a third party's check: a usage error naming it
                refusal = (f"researchqa: the {family.name} family's before_rows ({family.before_rows}) "
                           f"raised {type(error).__name__}: {error}")
            awaited = returned_awaitable(refusal, "before_rows", family.before_rows, family.name)
            refusal = f"researchqa: {awaited}" if awaited else refusal
            if refusal:
                self._refuse(items, str(refusal))

    def _why_the_dataset_gave_no_row(self) -> Optional[str]:
        """Why a run generated no row, when something is broken: the dataset has none, or the family's default test
        module did not import (said as collection said it). None when the rows are there and the family's tests
        load: none was collected (``--lf`` after a test of one's own failed, a path given), or none takes a row."""
        from .families import DeclarationError

        rows, family = self.state.dataset.rows, self.state.family
        if not rows:
            return f"researchqa: the dataset {self.state.dataset_path} has no rows to run"
        try:
            family.protocol_file()
        except DeclarationError as error:
            return f"researchqa: {error}"
        return None

    def _start_rows(self, row_items: list[pytest.Item]) -> None:
        """The estimate and progress, and the model calls set in flight."""
        state = self.state
        if not is_worker(self.config):
            if self.estimated is None:  # not printed with the plan of --researchqa-max-cost
                self._print_estimate([c for i in row_items if (c := case_of(i)) is not None])
            # The answer calls set in flight first: the first fresh one imports litellm (seconds) before the progress
            # clock starts, and a run whose every answer and verdict is on disk never imports it. The judges are
            # readied (a local server asked its window: seconds more) and chained once the clock runs.
            started = _prefetch_answers(state, row_items)
            self.progress = self._new_progress(
                [case.system for i in row_items if (case := case_of(i)) is not None and case.kind == "row"])
            _chain_judges(state, started)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Optional[pytest.Item]) -> Generator[None, Any, Any]:
        """Under xdist, a worker learns its rows as they are handed over: start their calls then. After a row
        that stops the run (-x, --maxfail), no call not yet sent is sent."""
        if is_worker(item.config) and case_of(item) is not None and self._pipelines():
            if self.lookahead is None:
                self.lookahead = Lookahead(item.config)
            _chain_judges(self.state, _prefetch_answers(self.state, self.lookahead.fresh(item, nextitem)))
        try:
            return (yield)
        finally:
            if item.session.shouldstop or item.session.shouldfail:
                self._stop_new_calls()

    def _pipelines(self) -> bool:
        """Whether any system of the run starts calls ahead of its rows (decided once)."""
        if self.pipelines is None:
            state = self.state
            self.pipelines = any(state.services.pipelined(name) for name in state.settings.all_systems)
        return self.pipelines

    # -- xdist controller ----------------------------------------------------------------
    def node_collected(self, ids: list[str]) -> None:
        settings = self.config.stash[SETTINGS]
        calls = bool(settings.models or settings.judges) and not settings.dry_run
        # The family's estimate, before xdist hands out the first row. The call plan of --researchqa-max-cost
        # is the workers' (it prices calls with litellm, seconds to import on a controller that makes no call
        # and holds the workers' first rows meanwhile): printed as the first worker ends (node_down), as is a
        # dry run's, whose workers keep no row.
        plans = calls and self.estimated is None and settings.active and bool(settings.benchmark_family.call_estimate)
        counts = self.progress is None and (calls or bool(settings.flagged_judge) and not settings.dry_run)
        if not (plans or counts):
            return
        by_id = {case_id: case for case, case_id, _ in self.state.cases(with_systems=True)}
        cases = [case for nodeid in dict.fromkeys(ids) if (case := by_id.get(nodeid.rpartition("[")[2][:-1]))]
        if plans and any(case.kind == "row" for case in cases):
            self._plan(cases)
        if counts:  # the workers make the calls
            self.progress = self._new_progress([c.system for c in cases if c.kind == "row"], calls_here=False)

    def node_down(self, workeroutput: dict[str, Any]) -> None:
        counts = workeroutput.get(WORKER_SELECTION)
        if counts:  # every worker collects the same items: any one's counts will do
            self.generated, self.selected = counts
        note = workeroutput.get(WORKER_CACHE_NOTE)
        if note:
            self.worker_notes.append(note)
        plan = workeroutput.get(WORKER_PLAN)
        if plan is not None and self.estimated is None:  # every worker plans the same rows: the first one's
            self.estimated = self.plan_to_print = list(plan)  # in the summary: other workers may still be running
            if self.config.stash[SETTINGS].dry_run:
                self.config.stash[DRY_RUN] = True
        self.refusal = self.refusal or workeroutput.get(WORKER_REFUSAL)

    def papers_by_test_id(self) -> dict[str, str]:
        """The paper of each row's test id, for the controller's scheduler. The dataset is read here once and,
        unless a model's call estimate will read the rows again, let go: the workers hold the rows, and the
        controller's memory at the end of the run is the records (the rows of a 6,211-row dataset are ~22 MiB)."""
        state = self.state
        papers = {case_id: state.dataset.rows[case.position].paper_id
                  for case, case_id, _ in state.cases(with_systems=True) if case.kind == "row"}
        settings = self.config.stash[SETTINGS]
        if not (settings.models or settings.judges):
            state.forget_dataset()
        return papers

    def _print_estimate(self, cases: list[Any]) -> Optional[float]:
        """The family's call and cost estimate (``Family.call_estimate``), printed once before the first call;
        returns the estimated cost, when the family estimated one."""
        state = self.state
        settings = state.settings
        self.estimated = []
        if not state.family.call_estimate or not (settings.models or settings.judges) or settings.audit:
            return None
        from .families import resolve
        from .families.protocols import Estimate

        rows = state.dataset.rows
        answers = [(case.system, rows[case.position]) for case in cases if case.kind == "row" and case.system]
        estimate = resolve(state.family.call_estimate)(answers, state.services, settings)
        if not isinstance(estimate, Estimate):  # a family that prints lines and estimates no cost
            estimate = Estimate(list(estimate), None)
        self.estimated = estimate.lines
        self._write_lines(self.estimated)
        return estimate.cost_usd

    def _new_progress(self, systems: list[Optional[str]], calls_here: bool = True) -> Any:
        """The run's progress lines over the rows of ``systems`` (one a row), None when none of them makes a call;
        ``calls_here``: this process makes the model calls (not xdist's controller), so the lines can say what its
        callers have done."""
        settings = self.config.stash[SETTINGS]
        total, answers, every_row = _progress_counts(settings, self.state.services.is_model, systems)
        if not total:
            return None
        from .llm_params import call_limits
        from .reporting.progress import Progress, terminal_stream

        # Judges alone: the run's calls are their verdicts.
        callers = settings.models or settings.judges or tuple(filter(None, [settings.flagged_judge]))
        slots = min((call_limits(settings.model_params.get(m, {}), concurrency=settings.concurrency,
                                 timeout_s=settings.timeout_s, given=settings.given)[0] for m in callers),
                    default=settings.concurrency)
        activity = self.state.services.runner().activity if calls_here else None
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        workers = 0 if calls_here else getattr(self.config.option, "numprocesses", 0)  # xdist resolves "auto"
        progress = Progress(reporter, total, slots, activity, terminal=terminal_stream() if reporter else None,
                            workers=workers if isinstance(workers, int) else 0,
                            spent=self._spent_so_far if not _calls_a_local_server(settings) else lambda: "—",
                            every_row=every_row, answers=answers, verdicts_per_row=len(settings.judges))
        progress.start(callers)
        return progress

    def _spent_so_far(self) -> str:
        """What the run's model calls have cost so far, as the progress line says it: this process's, and each
        xdist worker's."""
        spend = self.state.services.spend()
        folder = self.config.stash.get(WORKERS_SPEND, None)
        if folder is not None:
            from .costs import SpendLedger

            spend = spend.plus(SpendLedger(Path(folder)).others())
        budget = self.config.stash[SETTINGS].max_cost
        if budget is not None and spend.usd > budget:  # the calls in flight when it was reached finished
            from .costs import spend_text

            return f"{spend.text()} (above --researchqa-max-cost={spend_text(budget)}: calls already sent finish)"
        return spend.text()

    # -- results -------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)  # before --report-log and the like: the record's wire text is gone by then
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect records on the process that prints (the controller under xdist)."""
        if is_worker(self.config):
            return  # a worker's reports reach the controller, which records (and saves) them once
        if hasattr(report, "researchqa_check"):
            return  # a gate's own testcase (pytest_sessionfinish): already counted in the outcome
        plain = getattr(report, "researchqa", None)
        text = report.__dict__.pop(RECORD_TEXT, None)  # an xdist worker's record as it came: for the rows file
        if plain is not None:
            handed = self.state.handed_over(plain)  # this process's own row: its record, not read back
            if handed is None:  # from an xdist worker
                from .records import RowRecord

                record, final = RowRecord.from_plain(plain), False
            else:
                record, final = handed
            self.state.session.add(record)
            writer = self._results_writer()
            if writer is not None:  # on disk at once: a killed run keeps its finished rows
                writer.add(record, plain, text, final=final and not self.state.family.after_answers,
                           spill=self._spills_details())
            if self.progress is not None:
                self.progress.row_done(record)
        elif report.failed and report.nodeid not in self.crashed:
            self.foreign_failures += 1

    @pytest.hookimpl(optionalhook=True)  # xdist's, before the crash's failure report reaches logreport
    def pytest_handlecrashitem(self, crashitem: str) -> None:
        self.crashed.append(crashitem)

    def _spills_details(self) -> bool:
        """Whether a saved record's ``details`` can wait on disk (``RunWriter``'s spill) instead of in memory: when
        nothing of this run reads them before the saved rows are written, i.e. no HTML report and no family
        renderer or end-of-run step (the rubric family's read the answers). Decided once."""
        if self.spills is None:
            family, settings = self.state.family, self.config.stash[SETTINGS]
            self.spills = not (family.renderer or family.after_answers or settings.html is not None)
        return self.spills

    @pytest.hookimpl(wrapper=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_shed(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """Once every plugin has seen a row's report, it sheds its record (issue 24 item 3): pytest's terminal
        reporter keeps every report to the end of the run, and the record is already in the session and on
        disk here, or sent to the controller from a worker. What stays is what pytest itself reads."""
        try:
            return (yield)
        finally:
            report.__dict__.pop("researchqa", None)
            report.__dict__.pop(RECORD_TEXT, None)

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

    @pytest.hookimpl(tryfirst=True)  # first: before the terminal's report, where a second Ctrl-C often lands
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.keyboard_interrupt = isinstance(excinfo.value, KeyboardInterrupt)  # not pytest.exit(), also sent here
        self._stop_new_calls()

    def _stop_new_calls(self) -> None:
        """No model call not yet sent is sent: answers still arriving would start verdicts nobody reads."""
        state = started(self.config)
        if state is not None:
            state.services.stop_new_calls()

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file: the gates' testcases go in it
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With gates, the run's outcome decides the exit status (see docs/gating.md)."""
        exitstatus = session.exitstatus = self._exit_status_so_far(exitstatus)
        if self.progress is not None:
            self.progress.stop()  # every row is done; a run that ends early has no summary to stop it
        state = started(self.config)
        if state is None:
            return  # the benchmark never ran: nothing to close, nothing to decide
        if (state.family.after_answers and not is_worker(self.config) and state.session.records
                and not session.config.option.collectonly and exitstatus != pytest.ExitCode.INTERRUPTED):
            if self._after_answers(state):  # Ctrl-C in the step: the run is interrupted, as during rows
                self.keyboard_interrupt = True
                exitstatus = session.exitstatus = pytest.ExitCode.INTERRUPTED
                session.shouldstop = f"KeyboardInterrupt during the {state.family.name} family's end-of-run step"
        state.close()
        if is_worker(self.config):
            self.config.workeroutput[WORKER_SELECTION] = (self.generated, self.selected)  # type: ignore[attr-defined]
            self.config.workeroutput[WORKER_CACHE_NOTE] = state.services.cache_note()  # type: ignore[attr-defined]
        elif not (session.config.option.collectonly or self.refused or self.refusal  # no outcome, no file: listed,
                  or self.config.stash.get(DRY_RUN, False)) and (  # refused, or planned (a dry run measures nothing)
                state.settings.requested or self.generated or state.session.records):  # else: ini settings alone
            passed = self._conclude(state, session, exitstatus)
            if passed is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                session.exitstatus = pytest.ExitCode.OK if passed else pytest.ExitCode.TESTS_FAILED

    def _exit_status_so_far(self, exitstatus: int) -> int:
        """pytest's exit status, read as this run ended: still interrupted, refused, or a dry run's success."""
        if exitstatus != pytest.ExitCode.INTERRUPTED and (
                self.keyboard_interrupt or isinstance(sys.exc_info()[1], KeyboardInterrupt)):
            # A second Ctrl-C (an impatient user, GNU timeout signalling the group) cut pytest's own handling of
            # the first short, before it set exit status 2: the run is still interrupted, never a finished one.
            return pytest.ExitCode.INTERRUPTED
        if self.refusal is not None:  # as pytest ends a run whose collection raised a usage error
            return pytest.ExitCode.USAGE_ERROR
        if self.config.stash.get(DRY_RUN, False) and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            return pytest.ExitCode.OK  # a dry run that printed its plan did what was asked
        return exitstatus

    def _conclude(self, state: "RunState", session: pytest.Session, exitstatus: int) -> Optional[bool]:
        """The controller's close: the run's outcome, its files, its checks as reports; the gates' verdict."""
        state.session.run_notes += [n for n in (*self.worker_notes, state.services.cache_note(),
                                                 self._systems_unused(state)) if n]
        state.session.selection = self._selection()
        state.session.foreign_failures = self.foreign_failures
        state.session.crashed = tuple(self.crashed)
        # xdist ends a run that -x / --maxfail stopped as "interrupted" (exit 2): it stopped early all the same.
        maxfail = session.config.option.maxfail
        stopped_early = bool(maxfail) and session.testsfailed >= maxfail
        state.session.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED and not stopped_early
        if state.session.records:
            self.baseline_after_rows()
        if state.session.baseline is not None:
            from .runs import file_sha256, judging_of, run_judging

            state.session.dataset_sha = file_sha256(state.dataset_path)
            state.session.judging = judging_of(run_judging(state))
        outcome = state.session.outcome()
        self._write_files(state, outcome)
        from .row_reports import check_reports

        # JUnit and pytest's counts carry each gate as a testcase; -x's "stopping after N failures" counts the rows,
        # not the gates (pytest stops at --maxfail as a failure is reported, and a stop once set cannot be unset).
        maxfail, self.config.option.maxfail = self.config.option.maxfail, 0
        try:
            for report in check_reports(outcome):
                self.config.hook.pytest_runtest_logreport(report=report)
        finally:
            self.config.option.maxfail = maxfail
        return outcome.passed

    def _systems_unused(self, state: "RunState") -> Optional[str]:
        """A note when systems were named but no collected test asked for an answer: none of them ran."""
        records = state.session.records
        if not records or any(r.system for r in records) or all(r.invalid_row for r in records):
            return None  # every row invalid: no row could be answered, which the invalid rows say
        if state.settings.audit:
            return None  # an audit runs no system, and its headline says so
        named = [f"--{dest.replace('_', '-')}" for dest in ("researchqa_system", "researchqa_model")
                 if dest in state.settings.given]
        if not named:
            return None
        return (f"{' and '.join(named)} named systems, but no collected test asks for an answer (researchqa_answer, "
                "researchqa_system or researchqa_answered): no system ran, and the rows are the dataset's alone")

    def _write_files(self, state: "RunState", outcome: "RunOutcome") -> None:
        """The saved run, the JSON summary, Markdown, figures and the HTML report, as asked."""
        from .reporting.json_summary import summary
        from .runs import run_manifest

        manifest = run_manifest(self.state, outcome, started_at=self.started_at,
                                command=self.config.invocation_params.args, rootpath=self.config.rootpath)
        data = summary(outcome, state.family, manifest)
        if self.writer is not None:
            self.writer.finish(outcome.records + outcome.invalid_rows, manifest, data)
        settings = state.settings
        if (json_path := settings.json_summary) is not None:
            from .reporting.json_summary import write_json

            self._output("the JSON summary", json_path, lambda: write_json(json_path, data))
        self._write_markdown(outcome)
        if (plots_dir := settings.plots) is not None and outcome.records:
            from .reporting.plots import write_plots

            self.plots = self._output("the figures", plots_dir,
                                      lambda: write_plots(outcome, state.family, plots_dir)) or []
        if (html_path := settings.html) is not None:
            from .reporting.html import render, write_html

            baseline = state.session.baseline  # the rows that changed against it, as `view --compare` shows
            other = (baseline.name, baseline.records) if baseline is not None else None
            self._output("the HTML report", html_path, lambda: write_html(html_path, render(
                outcome, state.family, f"researchqa {settings.save_name}", run_name=settings.save_name,
                figures=self.plots, other=other,
                compare_map=settings.compare_map)))

    def _after_answers(self, state: "RunState") -> bool:
        """The family's end-of-run step (the rubric family's pairwise battles), once every row is answered:
        on the controller, through the run's model runner, with progress lines. A step that raises, or returns
        its data with a ``failed`` reason (the rubric family: too few battles judged), fails the run
        (``run::family_step``); one stopped by Ctrl-C too, and True is returned: the run is then interrupted,
        its reports written as for an interrupt during the rows (tester41 T1: a raw traceback, no report)."""
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

        step_name = f"the {state.family.name} family's end-of-run step ({state.family.after_answers})"
        try:
            step = resolve(state.family.after_answers)
            results = step(list(state.session.records), state.services, state.settings, say)
        except KeyboardInterrupt as stop:  # what the step says it lost (the rubric family: its battles so far)
            lost = str(stop) or "its results are missing"
            state.session.family_step_error = f"{step_name} was interrupted (Ctrl-C): {lost}"
            return True
        except Exception as error:  # noqa: BLE001 -- a family's code, after every row ran: the reports still come
            state.session.family_step_error = (f"{step_name} raised {type(error).__name__}: {error}; "
                                               "its results are missing")
            return False
        from .families.protocols import returned_awaitable

        awaited = returned_awaitable(results, "after_answers", state.family.after_answers, state.family.name)
        if awaited:  # its coroutine is no result: the step did not run
            state.session.family_step_error = f"{awaited}; its results are missing"
            return False
        state.session.family_results = results or {}
        if isinstance(results, dict) and results.get("failed"):  # it ran, and says its result is not there
            state.session.family_step_error = f"{step_name} failed: {results['failed']}"
        return False

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.progress is not None:
            self.progress.stop()  # no progress line inside the summary
        for line in self.plan_to_print:  # an xdist worker's plan (node_down)
            terminalreporter.write_line(line)
        state = started(config)
        if state is None or is_worker(config):
            return
        if self.progress is not None:  # also when no row finished (Ctrl-C early): what was spent is said
            self.progress.finish(terminalreporter)
        # Decided with no row finished (interrupted at once): its verdict is printed all the same.
        if not (state.session.records or state.session.decided):
            return
        from .reporting.terminal_summary import write_audit, write_summary, write_verdict

        outcome = state.session.outcome()
        if not state.session.records:  # decided with no row finished (interrupted at once): the verdict alone
            write_verdict(terminalreporter, outcome, coverage=True)
            return
        if state.settings.audit:
            write_audit(terminalreporter, outcome, state.family)
            return
        write_summary(terminalreporter, outcome, state.family, state.settings, writer=self.writer,
                      unwritten=self.unwritten, plots=self.plots)

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
            from .text_safety import utf8

            self._output("the Markdown summary", target, lambda: atomic_write(target, utf8(text)))
        if summary:
            def append() -> None:
                with open(summary, "a", encoding="utf-8", errors="backslashreplace") as stream:
                    stream.write(text + "\n")

            self._output("the GitHub step summary", summary, append)

    def _output(self, what: str, where: Any, write: Callable[[], _T]) -> Optional[_T]:
        """One output file written, or one line saying why it was not (a full disk): never the run's end."""
        try:
            return write()
        except OSError as error:
            self.unwritten[str(where)] = f"researchqa: could not write {what} to {where}: {error.strerror or error}"
            return None


_Started = tuple[Any, Any, Any, dict[str, int], str, bool]  # system, row, paper, repeat, system's name, to come


def _prefetch_answers(state: "RunState", items: list[pytest.Item]) -> list[_Started]:
    """Submit the calls of pipelined systems (models, async systems) of these rows; what :func:`_chain_judges`
    chains the verdicts on."""
    from .papers import PaperUnavailable

    started: list[_Started] = []
    for item in items:
        case = case_of(item)
        if case is None or case.kind != "row" or not state.services.pipelined(case.system):
            continue
        assert case.system is not None
        row = state.dataset.rows[case.position]
        try:
            paper = state.papers.for_row(row) if state.family.uses_papers else None
        except PaperUnavailable:
            continue  # the row's own setup reports it
        system: Any = state.services.system(case.system)
        repeat = {"repeat": case.repeat} if case.repeat else {}  # only model systems are repeated
        started.append((system, row, paper, repeat, case.system, system.prefetch(row, paper, **repeat)))
    return started


def _chain_judges(state: "RunState", started: list[_Started]) -> None:
    """The judge calls of these answers, each asked the moment its answer arrives."""
    premise = state.services.premise_judge()  # it judges only answers to false-premise questions (its subject)
    if not (state.settings.judges or premise is not None):
        return
    panels: "dict[str, list[ModelJudge]]" = {}  # a model system's judges, built once for these rows
    for name in dict.fromkeys(name for *_, name, _ in started):
        panels[name] = [*(state.services.judges_for(name) if state.settings.judges else []),
                        *([premise] if premise is not None else [])]
    # A fresh answer's verdicts are asked on the event loop's thread as it arrives: its judges are made ready here,
    # once every call is in flight (litellm imported, a local server's window asked: seconds), never there.
    for name in dict.fromkeys(name for *_, name, to_come in started if to_come):
        for judge in panels[name]:
            judge.ready()
    for system, row, paper, repeat, name, _ in started:
        # Judge each answer the moment it arrives; the row's test then finds the verdict in flight.
        system.when_answered(row, paper, lambda answer, row=row, panel=panels[name]: [
            judge.prefetch(*subject) for judge in panel if (subject := judge.subject(row, answer))], **repeat)


def _progress_counts(settings: "Settings", is_model: Callable[[Optional[str]], bool],
                     systems: list[Optional[str]]) -> tuple[int, int, bool]:
    """What the progress lines count of rows answered by ``systems`` (one a row): (rows, model rows among them,
    every row). Judges grading rows that no model answers count every row (a verdict is a call); else the
    model rows alone. No judge judges in an audit."""
    answers = sum(1 for system in systems if is_model(system))
    judged = bool(settings.judges or settings.flagged_judge) and not settings.audit
    every_row = judged and answers < len(systems)
    return (len(systems) if every_row else answers), answers, every_row


def _calls_a_local_server(settings: "Settings") -> bool:
    """Whether every model and judge of the run is served on this machine: their calls have no price, so what the
    run spends is not known ("—"), from its first progress line on. (Beside a priced one, the line says the priced
    calls' sum and how many had no price: Spend.text.)"""
    from .llm_params import is_local

    named = {*settings.models, *settings.judges, *settings.judge_pool, settings.flagged_judge} - {None, "", "auto"}
    return bool(named) and all(is_local(settings.model_params.get(name, {})) for name in named if name)


def _give_back_the_standard_distribution_finder() -> None:
    """The ``importlib_metadata`` backport takes the standard library's distribution finder off the import
    system for the whole interpreter, adding its own. An in-process run (pytester's ``runpytest``) then drops
    the backport and its finder, and every later run finds no installed package: no plugin loads, not even
    this one (tester43 HIGH-3). Putting the standard finder back lists each distribution twice while the
    backport stays loaded, which every reader of entry points takes in its stride."""
    from importlib.machinery import PathFinder

    if "find_distributions" not in vars(PathFinder):
        PathFinder.find_distributions = staticmethod(_find_distributions)  # type: ignore[method-assign]


def _find_distributions(*args: Any, **kwargs: Any) -> Any:
    """The standard library's ``PathFinder.find_distributions``, as Python defines it."""
    from importlib.metadata import MetadataPathFinder

    return MetadataPathFinder.find_distributions(*args, **kwargs)
