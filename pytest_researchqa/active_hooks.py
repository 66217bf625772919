"""The plugin's hooks that matter only once it is used: activation registers this module as a plugin
(``researchqa-active``), so an installed but unused plugin neither loads nor runs them; and what
``startup_hooks.pytest_generate_tests`` does for a test that asks for a row.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Optional

import pytest

from .stash import CASE_FIXTURES, GENERATED, RECORD, RECORDER, RUN_STATE, SETTINGS, case_of, run_state

if TYPE_CHECKING:  # pragma: no cover
    from .records import RowRecord
    from .state import RunState

PROTOCOL_NODEID = "researchqa"


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Let the run's state (dataset, records, papers) go before pytest's last garbage collections, which
    otherwise walk every object of it (issue 24 item 2: about 0.3 s at the seed's scale). The session's
    end has closed it and used it for the last time."""
    if config.stash.get(RUN_STATE, None) is not None:
        del config.stash[RUN_STATE]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the built-in test when the benchmark is asked for and no collected test runs rows; set keywords."""
    settings = config.stash[SETTINGS]
    uses_rows = any(not set(CASE_FIXTURES).isdisjoint(getattr(item, "fixturenames", ())) for item in items)
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
    from .families import DeclarationError

    try:
        module_file = state.family.protocol_file()
    except DeclarationError as error:  # said again where pytest's `finally` would replace it (run_hooks)
        raise pytest.UsageError(f"researchqa: {error}") from None
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
    record: Optional["RowRecord"] = item.stash.get(RECORD, None)
    if record is None:
        return (yield)
    if call.when == "call" and call.excinfo is not None:
        from .row_reports import spare_traceback

        spare_traceback(item, call, record)
    report = yield
    if call.when == "teardown":  # the row is done: its record travels on its report, the item keeps none
        del item.stash[RECORD]
        if RECORDER in item.stash:
            del item.stash[RECORDER]
        return report
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        from .row_reports import carry_record

        carry_record(item, call, report, record, run_state(item.config))
    return report
