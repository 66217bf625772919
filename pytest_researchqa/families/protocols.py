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
  call (``Family.call_estimate`` -> :class:`CallEstimate`), a check of the selected rows before any runs
  (``Family.before_rows`` -> :class:`BeforeRows`), a check of each row against its paper
  (``Family.paper_check`` -> :class:`PaperChecker`) and systems named by a word (``Family.systems`` ->
  :class:`NamedSystem`), all optional.

The run holds each target it will use against its Protocol's call before any row (``call_shape_problem``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Protocol, Sequence, Union

from ..dataset import FamilyRow as FamilyRow  # part of a family's interface, defined beside Dataset

if TYPE_CHECKING:  # pragma: no cover
    from ..answers import Answer
    from ..dataset import Dataset
    from ..llm.cache import AnswerCache
    from ..llm.engine import ModelRunner
    from ..llm.system import ModelSpec
    from ..papers import Paper
    from ..records import RowRecord
    from . import Board, Family, PaperCheck

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


class BeforeRows(Protocol):
    """Given the selected rows and the settings before any of them runs: why the run may not start, or None."""

    def __call__(self, rows: "list[Any]", settings: Settings) -> Optional[str]: ...


class PaperChecker(Protocol):
    """Checks a row against its paper once (``Family.paper_check``): a ``PaperCheck``."""

    def __call__(self, row: FamilyRow, paper: "Paper") -> "PaperCheck": ...


class NamedSystem(Protocol):
    """A system a family names by a word (``Family.systems``): answers one of its rows (``paper`` is None for a
    family without papers). A class built with no argument into one is declared as the class."""

    def __call__(self, row: FamilyRow, paper: "Optional[Paper]") -> "Answer": ...


class UserSystem(Protocol):
    """A user's ``module:function`` system (docs/systems.md): called with the question and the paper..."""

    def __call__(self, question: str, paper: "Optional[Paper]") -> Any: ...


class UserSystemWithRow(Protocol):
    """... and with ``row=`` as well when it takes that."""

    def __call__(self, question: str, paper: "Optional[Paper]", *, row: FamilyRow) -> Any: ...


# Each declaration field naming a callable, and the Protocol its target is called as (a named system is
# checked as it is built: systems.named_system).
CALLED_AS: dict[str, type] = {"loader": RowLoader, "after_answers": AfterAnswers, "before_rows": BeforeRows,
                              "renderer": LeaderboardRenderer, "call_estimate": CallEstimate,
                              "paper_check": PaperChecker}


def is_async_callable(found: Any) -> bool:
    """An ``async def`` function, or an instance whose class's ``__call__`` is one."""
    call = getattr(type(found), "__call__", None)  # noqa: B004 -- the method itself, to ask whether it is async
    return inspect.iscoroutinefunction(found) or inspect.iscoroutinefunction(call)


def call_shape_problem(found: Any, protocol: type, *, may_be_async: bool = False) -> Optional[str]:
    """Why ``found`` cannot be called as ``protocol`` says, or None: it is not callable, it is ``async def``
    where the plugin calls it and uses what it returns (every field but a named system, ``may_be_async``), or
    its parameters do not take the protocol's arguments. A signature is read as Python shows it to a caller
    (not through a decorator's ``__wrapped__``, which may supply arguments itself); none (a builtin): trusted."""
    if not callable(found):
        kind = type(found).__name__
        return f"is {'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}, not a callable"
    if not may_be_async and is_async_callable(found):
        return "is async (async def): the plugin calls it and uses what it returns, so it must be a plain def"
    expected = list(inspect.signature(protocol.__call__).parameters.values())[1:]  # after self
    positional = [p.name for p in expected if p.kind is not p.KEYWORD_ONLY]
    keywords = [p.name for p in expected if p.kind is p.KEYWORD_ONLY]
    try:
        signature = _call_signature(found)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*positional, **{name: None for name in keywords})
    except TypeError as error:
        shown = ", ".join([*positional, *(f"{name}=..." for name in keywords)])
        return f"cannot be called as ({shown}): {error}"
    return None


def _call_signature(found: Any) -> inspect.Signature:
    """The parameters a call of ``found`` takes. An instance whose class's ``__call__`` is a staticmethod or a
    classmethod is read from that method as the call gets it: ``inspect.signature`` drops one parameter too many."""
    if not inspect.isroutine(found) and not inspect.isclass(found):
        declared = inspect.getattr_static(type(found), "__call__", None)
        if isinstance(declared, staticmethod):
            return inspect.signature(declared.__func__, follow_wrapped=False)
        if isinstance(declared, classmethod):  # bound to the class, as a call of the instance gets it
            return inspect.signature(declared.__get__(found, type(found)), follow_wrapped=False)
    return inspect.signature(found, follow_wrapped=False)


def returned_awaitable(result: Any, field: str, target: str, family: str) -> Optional[str]:
    """Why a step's result cannot be used when it is awaitable: an ``async def`` behind a decorator passes
    ``call_shape_problem`` (the wrapper is a plain def), and its coroutine must not be read as the result."""
    if not inspect.isawaitable(result):
        return None
    close = getattr(result, "close", None)
    if callable(close):
        close()  # never awaited: closed, so Python does not warn about it at exit
    return (f"the {family} family's {field} ({target}) returned a coroutine: it is async (async def), perhaps "
            "behind a decorator; the plugin calls it and uses what it returns, so it must be a plain def")
