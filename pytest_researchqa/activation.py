"""What the plugin does when it is first used (an option given, xdist workers reporting, or a test asking
for a row): read the settings, register the run's hooks, and check before any row runs what can be checked.
A project that never uses the plugin never loads this module.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pytest

from .stash import SETTINGS, run_state
from .xdist_compat import is_worker

if TYPE_CHECKING:  # pragma: no cover
    from .families import Family
    from .settings import Settings
    from .state import RunState

CHECKED: pytest.StashKey[bool] = pytest.StashKey()  # check_settings ran (at activation, or at the first row)


def activate(config: pytest.Config) -> "Settings":
    """Read the settings and register the run's hooks, once."""
    settings = config.stash.get(SETTINGS, None)
    if settings is not None:
        return settings
    from .run_hooks import RunHooks
    from .settings import read_settings
    from .xdist_compat import ControllerHooks, WorkerHooks, add_controller_system_paths, groups_by_paper

    settings = read_settings(config)
    config.stash[SETTINGS] = settings
    _quick_exit()
    if settings.declaration is not None:  # an inactive plugin adds nothing to --markers (nor --strict-markers)
        register_markers(config, settings.declaration.question_types)
    if settings.models:
        # litellm's own types make pydantic warn as they load; nothing a user can act on.
        config.addinivalue_line("filterwarnings", "ignore:.*using the .ReadOnly. qualifier:UserWarning")
    from . import active_hooks

    config.pluginmanager.register(active_hooks, "researchqa-active")
    run_hooks = RunHooks(config, baseline_after_rows=lambda: baseline_after_rows(config, settings))
    config.pluginmanager.register(run_hooks, "researchqa-run")
    if config.pluginmanager.hasplugin("xdist") and not is_worker(config):
        by_paper = settings.active and settings.benchmark_family.uses_papers and groups_by_paper(config)
        config.pluginmanager.register(ControllerHooks(run_hooks.node_collected, run_hooks.node_down,
                                                      run_hooks.papers_by_test_id if by_paper else None),
                                      "researchqa-xdist")
    elif is_worker(config):
        config.pluginmanager.register(WorkerHooks(), "researchqa-xdist")
        add_controller_system_paths(config)
    if settings.models or settings.judges or settings.flagged_judge:
        import importlib.util

        if importlib.util.find_spec("litellm") is None:
            raise pytest.UsageError("researchqa: models and LLM judges run through litellm, which is not installed: "
                                    "pip install 'pytest-researchqa[llm]'")
    if settings.requested:  # ini settings alone: checked where a row test is first parametrized, if ever
        check_settings(config, settings)
    return settings


def _quick_exit() -> None:
    """At the interpreter's exit, after every atexit step registered later (litellm's own clean-up among them),
    freeze what is alive so that Python's last garbage collections skip it: they walk every object left (a run's
    rows, papers and records; litellm's modules and types), about a second after litellm alone, and free nothing
    the exiting process needs. Objects still alive at exit are not promised their ``__del__`` by Python; what the
    run writes is written and closed before (``pytest_sessionfinish``). Registered once a process."""
    import atexit
    import gc

    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def parametrize(metafunc: pytest.Metafunc, name: str) -> None:
    """Parametrize a test asking for ``name`` (researchqa_case, or the built-in test's researchqa_answered)
    over the run's cases, activating the plugin if nothing has yet."""
    with_systems = bool({"researchqa_answer", "researchqa_system", "researchqa_answered"} & set(metafunc.fixturenames))
    try:
        check_on_first_row(metafunc.config)  # ini settings alone: checked here, not in every plain unit run
        state = run_state(metafunc.config)
        cases = state.cases(with_systems)
    except pytest.UsageError as error:  # pytest shows a collector's CollectError as its message alone
        raise pytest.Collector.CollectError(str(error)) from None
    register_markers(metafunc.config, state.family.question_types)  # a project's own row test, no option
    known: dict[str, pytest.MarkDecorator] = {}  # one lookup per mark name, not per row
    metafunc.parametrize(
        name,
        [pytest.param(case, id=case_id, marks=[known.get(m) or known.setdefault(m, getattr(pytest.mark, m))
                                               for m in marks])
         for case, case_id, marks in cases],
        indirect=True,
    )


def check_on_first_row(config: pytest.Config) -> None:
    """Check the settings where the first row is generated, when ini settings alone made the plugin active:
    a plain unit run of a project with ``researchqa_*`` ini keys never imports its systems."""
    settings = activate(config)
    if settings.active and not config.stash.get(CHECKED, False):
        check_settings(config, settings)


def check_settings(config: pytest.Config, settings: "Settings") -> None:
    """What can be checked before any row runs is a usage error now, not N failing rows."""
    from .settings import setting_name

    config.stash[CHECKED] = True
    if settings.dataset is not None and not settings.dataset.is_file():
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_dataset')}: {settings.dataset} is not a file")
    if settings.papers is not None and not settings.papers.is_dir():
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_papers')}: {settings.papers} is not a folder")
    prompt_notes = _judge_prompt_notes(config, settings) if settings.judge_prompts is not None else []
    family = settings.benchmark_family
    _gates_a_judge_decides(config, settings)
    if settings.audit and not family.uses_papers and not family.audits:
        raise pytest.UsageError(f"--researchqa-audit: the {family.name} family's rows have no papers to check "
                                "and its test does not describe rows without an answer (Family.audits); run it "
                                "with a system instead")
    state = run_state(config)
    state.session.run_notes.extend(_family_notes(config, settings))
    state.session.run_notes.extend(prompt_notes)
    _ = state.dataset  # a file that cannot be read is a usage error now, before any hook collects its rows
    for spec in settings.systems:
        try:
            state.system(spec)  # a bad spec is a usage error now, not N failing rows
        except pytest.UsageError as error:
            name = setting_name(config, "researchqa_system")
            if name.startswith("--"):
                raise
            raise pytest.UsageError(f"{name}: {str(error).removeprefix('researchqa: ')}") from None
    refused = state.services.refusal()
    if refused:
        raise pytest.UsageError(f"researchqa: {refused}")
    if not is_worker(config):
        _load_baseline(config, settings)
    if settings.plots is not None:
        from .reporting.plots import require_matplotlib

        require_matplotlib()


def _gates_a_judge_decides(config: pytest.Config, settings: "Settings") -> None:
    """A gate on a metric only judges measure (the rubric family's coverage) in a run without a judge could never
    decide: a usage error. Checked for a run that uses the plugin (ini gates with the judge given on the command
    line in CI leave a plain ``pytest`` of the project's own tests alone)."""
    from .settings import setting_name

    if settings.judges:
        return
    family = settings.benchmark_family
    for dest, checked in (("researchqa_fail_under", settings.gates),
                          ("researchqa_fail_on_regression", settings.regressions)):
        for gate in checked:
            spec = family.metric(gate.metric)
            if spec is not None and spec.needs_judge:
                raise pytest.UsageError(
                    f"{setting_name(config, dest)} {gate.metric}: measured by the run's judges, and the run has "
                    "none: such a gate could never decide (add --researchqa-judge=MODEL)")


def _judge_prompt_notes(config: pytest.Config, settings: "Settings") -> list[str]:
    """--researchqa-judge-prompts checked against the judge kinds of every installed family: a usage error for a
    missing folder or a file without a placeholder its bundled prompt has; a warning for a file that replaces none."""
    from .families.registry import available_families, judge_kinds
    from .llm.judges import check_prompt_folder
    from .settings import setting_name

    assert settings.judge_prompts is not None
    kinds = judge_kinds(available_families(config.pluginmanager).values())
    try:
        return check_prompt_folder(settings.judge_prompts, kinds.values())
    except ValueError as error:
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_judge_prompts')}: {error}") from None


def _family_notes(config: pytest.Config, settings: "Settings") -> list[str]:
    """What the run says of its family and the others: what the paper protocol follows of the family's seed, a
    broken family plugin (this run goes on), and the other families that recognize its dataset when none was
    named."""
    from .families import recognizing
    from .families.registry import available_families, broken_plugins

    notes = [f"warning: {broken}; its families cannot run" for broken in broken_plugins(config.pluginmanager)]
    family = settings.benchmark_family
    if settings.protocol == "paper":
        notes.append("protocol: paper: " + (family.paper_protocol or f"the {family.name} family follows no seed's "
                                                                      "procedure of its own: the project's is used"))
    if settings.dataset is not None and "researchqa_family" not in settings.given:
        found = recognizing(settings.dataset, available_families(config.pluginmanager))
        if len(found) > 1:
            notes.append(f"note: {len(found)} families recognize {settings.dataset.name}: {', '.join(found)}; "
                         f"this run used {settings.family} (name one with --researchqa-family)")
    return notes


def baseline_after_rows(config: pytest.Config, settings: "Settings") -> None:
    """The saved run to compare with, read by an xdist controller when ini settings alone made the plugin
    active and rows came back: it collects no row, so nothing checked the settings there. A wrong name can
    no longer stop a run whose rows are done: its regression gates cannot decide, and the run says why."""
    if config.stash.get(CHECKED, False) or not settings.compare:
        return
    config.stash[CHECKED] = True
    try:
        _load_baseline(config, settings)
    except pytest.UsageError as error:
        session = run_state(config).session
        session.missing_baseline = settings.compare
        session.run_notes.append(str(error))


def _load_baseline(config: pytest.Config, settings: "Settings") -> None:
    """Put the saved run to compare with on the run's session (once; a run without ``compare`` has none)."""
    state = run_state(config)
    if not settings.compare or state.session.baseline is not None or state.session.missing_baseline:
        return
    state.session.baseline = saved_baseline(config, settings)
    if state.session.baseline is None:
        state.session.missing_baseline = settings.compare


def saved_baseline(config: pytest.Config, settings: "Settings") -> Any:
    """The saved run to compare with (``settings.compare``), read now: a wrong name fails before any row runs."""
    from .run_hooks import runs_dir
    from .runs import RunNotFound, load_baseline
    from .settings import setting_name

    assert settings.compare is not None
    try:
        baseline = load_baseline(settings.compare, runs_dir(config, settings))
    except RunNotFound as error:
        if settings.compare_missing == "skip":
            return None  # the run says "no baseline: nothing compared"; its regression gates cannot decide
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_compare')}: {error}") from None
    except (ValueError, OSError) as error:
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_compare')}: {error}") from None
    if baseline.family != settings.family:
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_compare')}: {baseline.name} is a run of the "
                                f"{baseline.family} family; "
                                f"this run is of the {settings.family} family, whose rows it cannot be paired with")
    return baseline


def register_markers(config: pytest.Config, question_types: tuple[str, ...]) -> None:
    """A marker per question type (``-m adversarial``), unless the project declares its own."""
    known = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    for question_type in question_types:
        if question_type not in known:
            config.addinivalue_line("markers", f"{question_type}: researchqa rows of question type {question_type}")


def register_installed_families_markers(config: pytest.Config) -> None:
    """Every installed family's question-type markers, registered at configure under ``--strict-markers``: a
    project's own test marked ``lookup`` (or a third-party family's type) is then accepted whether or not a
    row test was collected first."""
    from .families.registry import FamilyError, available_families

    try:
        families = available_families(config.pluginmanager)
    except FamilyError as clash:  # a run that uses no benchmark must not die of it; one that does says so
        config.issue_config_time_warning(pytest.PytestConfigWarning(f"researchqa: {clash}"), stacklevel=2)
        return
    for family in families.values():
        register_markers(config, family.question_types)


def new_state(config: pytest.Config) -> "RunState":
    """The run's state (``stash.run_state`` builds it on first use)."""
    from .state import RunState
    from .xdist_compat import handed_whole_papers, spend_ledger

    selects = bool(config.option.keyword or config.option.markexpr)
    state = RunState(activate(config), sample_after_selection=selects)
    state.whole_papers = handed_whole_papers(config)
    state.services.spend_ledger = spend_ledger(config)
    state.services.families = lambda: _installed_families(config)
    state.say = functools.partial(_say, config)
    return state


def _say(config: pytest.Config, text: str) -> None:
    """A line of the run's own, before any row: on the terminal (stderr while it has none yet); an xdist worker's
    lines are its controller's to say."""
    if is_worker(config):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text)
    else:
        import sys

        print(text, file=sys.stderr)


def _installed_families(config: pytest.Config) -> "list[Family]":
    from .families.registry import available_families

    return list(available_families(config.pluginmanager).values())


