"""What a family's declaration names, typed: each ``"module:attribute"`` of a :class:`~.Family` must resolve
to an object of the matching Protocol here, and each row its loader returns must be a :class:`FamilyRow`.

A family provides (docs/extending.md walks through a small one):

- rows and their loader (``Family.loader`` -> :class:`RowLoader`, rows -> :class:`FamilyRow`);
- its default test (``Family.protocol_module``: a module of ordinary pytest tests over the plugin's
  fixtures) and, optionally, the model system for its rows (``Family.model_system`` ->
  :class:`ModelSystemFactory`);
- its metrics (``Family.metrics``: name, label, range, direction; aggregated as means over rows);
- its judges (``Family.judge_dimensions``, ``Family.judge_kinds`` and ``Family.judges``, its own kinds of
  ``llm.judges.ModelJudge``);
- an end-of-run step (``Family.after_answers`` -> :class:`AfterAnswers`), its own leaderboard
  (``Family.renderer`` -> :class:`LeaderboardRenderer`) and the lines printed before the first model
  call (``Family.call_estimate`` -> :class:`CallEstimate`), all optional.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Protocol, Sequence, Union

from ..dataset import FamilyRow as FamilyRow  # part of a family's interface, defined beside Dataset

if TYPE_CHECKING:  # pragma: no cover
    from ..dataset import Dataset
    from ..llm.cache import AnswerCache
    from ..llm.engine import ModelRunner
    from ..llm.system import ModelSpec
    from ..records import RowRecord
    from . import Board, Family

# The run's settings (settings.Settings) and services (services.Services) are typed loosely here: those
# modules sit above the families, which must not import upwards.
Settings = Any
Services = Any


class RowLoader(Protocol):
    """Reads a dataset file: valid rows in file order, and each invalid row as a ``RowProblem``."""

    def __call__(self, path: Path) -> "Dataset[Any]": ...


class ModelSystemFactory(Protocol):
    """Builds the system that answers this family's rows with an LLM (``--researchqa-model``)."""

    def __call__(self, spec: "ModelSpec", runner: "ModelRunner", cache: "AnswerCache", settings: Settings, *,
                 timeout_s: float) -> Any: ...


class AfterAnswers(Protocol):
    """Runs on the controller once every row is answered; returns plain data for the renderer and manifest.
    Data with a ``"failed"`` key (a sentence: why the step has no result to report) fails the run
    (``run::family_step``), as a step that raises does."""

    def __call__(self, records: "list[RowRecord]", services: Services, settings: Settings,
                 say: Callable[[str], None]) -> Optional[dict[str, Any]]: ...


class LeaderboardRenderer(Protocol):
    """The family's leaderboard, given the records and the end-of-run data: lines of text and
    :class:`~.Table` s in reading order, which the terminal, the Markdown and the HTML report each draw
    (``Family.board``); or one text, which every medium shows as it is."""

    def __call__(self, records: "Sequence[RowRecord]", family: "Family",
                 results: Optional[Mapping[str, Any]]) -> "Union[str, Board]": ...


class Estimate(NamedTuple):
    """What a run will ask of models before its first call: the lines printed, and the estimated cost in US
    dollars (None: unknown, a model without a price), which ``--researchqa-max-cost`` refuses above."""

    lines: list[str]
    cost_usd: Optional[float]


class CallEstimate(Protocol):
    """What a run will ask and may cost, given the (system, row) pairs it will answer: an :class:`Estimate`, or
    only the lines to print (a cost nobody estimated: the budget then applies to what calls report)."""

    def __call__(self, answers: "Sequence[tuple[str, Any]]", services: Services,
                 settings: Settings) -> "Union[Estimate, list[str]]": ...
