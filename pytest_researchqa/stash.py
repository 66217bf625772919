"""What the plugin keeps in ``config.stash`` and ``item.stash``, and the case a test runs.

Light on purpose (pytest only): the plugin imports it at start-up, and the run's
state is built on first use, so a project that never runs a row pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from .options import Settings
    from .records import Recorder, RowRecord
    from .state import RunState


@dataclass(frozen=True)
class Case:
    """One parametrized test case: plain values, identical on every worker."""

    kind: str  # "row" or "problem"
    position: int  # index into dataset.rows or dataset.problems
    system: Optional[str]


SETTINGS: pytest.StashKey[Settings] = pytest.StashKey()
RUN_STATE: pytest.StashKey[RunState] = pytest.StashKey()
RECORD: pytest.StashKey[RowRecord] = pytest.StashKey()
RECORDER: pytest.StashKey[Recorder] = pytest.StashKey()


def run_state(config: pytest.Config) -> "RunState":
    """The run's state, built on first use from the settings read at configure time."""
    state = config.stash.get(RUN_STATE, None)
    if state is None:
        from .state import RunState

        state = RunState(config.stash[SETTINGS])
        config.stash[RUN_STATE] = state
    return state


def started(config: pytest.Config) -> Optional["RunState"]:
    """The run's state if anything has used it yet, else None (nothing to report or close)."""
    return config.stash.get(RUN_STATE, None)


def case_of(item: pytest.Item) -> Optional[Case]:
    """The researchqa case an item was parametrized with, if any."""
    callspec: Any = getattr(item, "callspec", None)
    case = callspec.params.get("researchqa_case") if callspec is not None else None
    return case if isinstance(case, Case) else None
