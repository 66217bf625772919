"""What the plugin keeps in ``config.stash`` and ``item.stash``.

Light on purpose (pytest only): everything imports it, and the run's state is built on
first use, so a project that never runs a row pays nothing. Not loaded at start-up: the
plugin's start-up modules import it inside the hooks and fixtures that use it.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import pytest

from .case import Case

if TYPE_CHECKING:  # pragma: no cover
    from .records import Recorder, RowRecord
    from .settings import Settings
    from .state import RunState


SETTINGS: pytest.StashKey[Settings] = pytest.StashKey()  # set when the plugin is first used (``settings_of``)
# The run's state, built by ``activation`` when first asked for (named for the type checker only: this module,
# imported by everything, imports nothing above it at run time).
RUN_STATE: pytest.StashKey[RunState] = pytest.StashKey()
RECORD: pytest.StashKey[RowRecord] = pytest.StashKey()
RECORDER: pytest.StashKey[Recorder] = pytest.StashKey()
GENERATED: pytest.StashKey[int] = pytest.StashKey()  # rows parametrized, before -k/-m and sampling
DRY_RUN: pytest.StashKey[bool] = pytest.StashKey()  # --researchqa-dry-run printed its plan: nothing runs
# On xdist's controller: the folder where the workers keep what their calls cost (costs.SpendLedger).
WORKERS_SPEND: pytest.StashKey[str] = pytest.StashKey()


def settings_of(config: pytest.Config) -> "Settings":
    """The run's settings, read on first use: a project that never uses the plugin never reads them."""
    settings = config.stash.get(SETTINGS, None)
    if settings is None:
        settings = config.hook.pytest_researchqa_activate(config=config)  # startup_hooks.py: activation, once
    return settings


def run_state(config: pytest.Config) -> RunState:
    """The run's state (a :class:`~pytest_researchqa.state.RunState`), built on first use."""
    state = config.stash.get(RUN_STATE, None)
    if state is None:
        state = config.stash[RUN_STATE] = config.hook.pytest_researchqa_run_state(config=config)
    return state


def started(config: pytest.Config) -> Optional[RunState]:
    """The run's state if anything has used it yet, else None (nothing to report or close)."""
    return config.stash.get(RUN_STATE, None)


# The fixtures the plugin parametrizes with a Case: researchqa_case, or the built-in test's researchqa_answered.
CASE_FIXTURES = ("researchqa_case", "researchqa_answered")


def case_of(item: pytest.Item) -> Optional[Case]:
    """The researchqa case an item was parametrized with, if any."""
    callspec: Any = getattr(item, "callspec", None)
    if callspec is None:
        return None
    params = callspec.params
    case = params.get("researchqa_case")
    if case is None:
        case = params.get("researchqa_answered")
    return case if isinstance(case, Case) else None
