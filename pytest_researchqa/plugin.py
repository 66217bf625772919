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

from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Optional

import pytest

from .fixtures import (  # noqa: F401  (fixtures are found as attributes of the plugin)
    researchqa_answer,
    researchqa_case,
    researchqa_dataset,
    researchqa_judge,
    researchqa_paper,
    researchqa_premise_judge,
    researchqa_recorder,
    researchqa_row,
    researchqa_settings,
    researchqa_system,
)
from .options import add_options, read_settings
from .run_hooks import RunHooks, runs_dir
from .stash import GENERATED, RECORD, RECORDER, RUN_STATE, SETTINGS, STATE_FACTORY, case_of, run_state
from .xdist_compat import ControllerHooks, groups_by_paper, is_worker

if TYPE_CHECKING:  # pragma: no cover
    from .records import RowRecord
    from .state import RunState

PROTOCOL_NODEID = "researchqa"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hook a benchmark family implements (families/hookspecs.py), as pytest-xdist adds its own."""
    from .families import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Let the run's state (dataset, records, papers) go before pytest's last garbage collections, which
    otherwise walk every object of it (issue 24 item 2: about 0.3 s at the seed's scale). The session's
    end has closed it and used it for the last time."""
    if config.stash.get(RUN_STATE, None) is not None:
        del config.stash[RUN_STATE]


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
    if settings.models or settings.judges or settings.flagged_judge:
        import importlib.util

        if importlib.util.find_spec("litellm") is None:
            raise pytest.UsageError("researchqa: models and LLM judges run through litellm, which is not installed: "
                                    "pip install 'pytest-researchqa[llm]'")
    if settings.active:
        _check_settings(config, settings)


def _check_settings(config: pytest.Config, settings: Any) -> None:
    """What can be checked before any row runs is a usage error now, not N failing rows."""
    if settings.dataset is not None and not settings.dataset.is_file():
        raise pytest.UsageError(f"--researchqa-dataset: {settings.dataset} is not a file")
    if settings.papers is not None and not settings.papers.is_dir():
        raise pytest.UsageError(f"--researchqa-papers: {settings.papers} is not a folder")
    state = run_state(config)
    for spec in settings.systems:
        state.system(spec)  # a bad spec is a usage error now, not N failing rows
    refused = state.services.refusal()
    if refused:
        raise pytest.UsageError(f"researchqa: {refused}")
    if settings.compare and not is_worker(config):
        state.session.baseline = _baseline(config, settings)
        if state.session.baseline is None:
            state.session.missing_baseline = settings.compare
    if settings.plots is not None:
        from .reporting.plots import require_matplotlib

        require_matplotlib()


def _baseline(config: pytest.Config, settings: Any) -> Any:
    """The saved run to compare with, read now: a wrong name fails before any row runs."""
    from .runs import RunNotFound, load_baseline

    try:
        baseline = load_baseline(settings.compare, runs_dir(config, settings))
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
    config.stash[GENERATED] = generated


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
    if call.when == "teardown":  # the row is done: its record travels on its report, the item keeps none
        del item.stash[RECORD]
        if RECORDER in item.stash:
            del item.stash[RECORDER]
        return report
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        from .row_reports import add_sections, settle

        state = run_state(item.config)
        settle(item, call, report, record, state)
        record.nodeid = item.nodeid
        if record.error:
            record.error = state.redact(record.error)
        if record.judge is not None:
            record.judge = record.judge.redacted(state.redact)
        report.researchqa = state.redact_plain(record.to_plain())
        # JUnit writes the properties of the item (copied onto its teardown report), not of this report.
        item.user_properties.extend(record.junit_properties())
        add_sections(report, record)
        if record.judge_failures:
            item.user_properties.append(("researchqa_judge_errors", "; ".join(record.judge_failures)))
    return report
