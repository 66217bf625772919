"""Systems under test: built-in baselines and the user's own function.

A system receives the row's question and its paper and returns an
:class:`~pytest_researchqa.families.citation.answers.Answer`. Specs name them on the command
line: ``oracle``, ``bm25``, or ``package.module:function`` for your own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from ..answers import Answer, coerce_answer

if TYPE_CHECKING:  # pragma: no cover
    from typing import Iterable

    from ..dataset import FamilyRow
    from ..families import Family
    from ..papers import Paper



def _call_key(row: "FamilyRow", paper: "Optional[Paper]") -> tuple[str, Optional[str]]:
    """A row's call: its row and paper (a family without papers: the row alone)."""
    return row.row_id, paper.paper_id if paper is not None else None


class SystemSpecError(ValueError):
    """A --researchqa-system value that cannot be turned into a system."""


@dataclass
class System:
    """A named callable ``(row, paper) -> Answer`` (sync or async).

    Async systems run on one long-lived event loop for the whole run (the model
    runner's), bounded by ``--researchqa-concurrency`` and pipelined: their calls
    for upcoming rows start before those rows' tests do, as model calls do. So a
    system may keep one client session (aiohttp, httpx) for every row. Sync
    systems are called in the row's own test, one at a time.
    """

    name: str
    call: Callable[..., Any]
    is_async: bool = False
    runner: Optional[Any] = None  # the shared ModelRunner, set by the services for async systems
    _pending: dict[tuple[str, Optional[str]], concurrent.futures.Future[Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def pipelined(self) -> bool:
        return self.runner is not None

    def prefetch(self, row: "FamilyRow", paper: "Optional[Paper]") -> bool:
        """Start this row's call now on the shared loop; the row's test will wait for it. True when the answer is
        to come (always, for a system that is pipelined)."""
        if self.runner is None:
            return False
        key = _call_key(row, paper)
        with self._lock:
            if key not in self._pending:
                self._pending[key] = self._submit(row, paper)
        return True

    def when_answered(self, row: "FamilyRow", paper: "Optional[Paper]", callback: Callable[[Answer], Any]) -> None:
        """Call ``callback(answer)`` as soon as this row's prefetched answer arrives (its judges start then, as
        they do on a model's answer); an answer that fails or is of the wrong shape calls nothing (the row's
        own test reports it)."""
        with self._lock:
            future = self._pending.get(_call_key(row, paper))
        if future is None:
            return

        def done(finished: concurrent.futures.Future[Any]) -> None:
            if finished.cancelled() or finished.exception() is not None:
                return
            try:
                answer = coerce_answer(finished.result(), f"system {self.name!r}")
            except (TypeError, ValueError):
                return
            callback(answer)

        future.add_done_callback(done)

    def answer(self, row: "FamilyRow", paper: "Optional[Paper]") -> Answer:
        if self.runner is not None:
            with self._lock:
                future = self._pending.pop(_call_key(row, paper), None)
            result = (future or self._submit(row, paper)).result()
        else:
            result = self.call(row, paper)
            if inspect.isawaitable(result):  # a sync function that returned an awaitable
                result = _run_coroutine(result)
        return coerce_answer(result, f"system {self.name!r}")

    def _submit(self, row: "FamilyRow", paper: "Optional[Paper]") -> concurrent.futures.Future[Any]:
        assert self.runner is not None

        async def job() -> Any:
            return await self.call(row, paper)

        future: concurrent.futures.Future[Any] = self.runner.submit(self.name, job)
        return future


def _run_coroutine(awaitable: Any) -> Any:
    async def wait() -> Any:
        return await awaitable

    return asyncio.run(wait())


def user_frames(error: BaseException) -> str:
    """The traceback of an exception from a user's system, without the plugin's or asyncio's frames."""
    here = Path(__file__).resolve().parent.parent
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not _is_machinery(Path(frame.filename), here)]
    return "".join(traceback.format_list(frames)).rstrip()


def _is_machinery(path: Path, package: Path) -> bool:
    try:
        path.resolve().relative_to(package)
        return True
    except (ValueError, OSError):
        return path.parent.name == "asyncio" or path.parent.parts[-2:] == ("concurrent", "futures")


def named_system(name: str, target: str, family: "Family") -> System:
    """A system a family names by a word (``Family.systems``): ``target`` is "module:attribute" of a callable
    ``(row, paper) -> Answer`` (sync or async), or of a class built with no argument into one. One that does
    not load, cannot be built or cannot take a row and a paper is a :class:`SystemSpecError` naming the family."""
    from ..families import resolve
    from ..families.protocols import NamedSystem, call_shape_problem, is_async_callable

    where = f"the {family.name} family's system {name!r} ({target})"
    try:
        found: Any = resolve(target)
        if inspect.isclass(found):  # e.g. bm25's system, which keeps its indexes
            found = found()
    except Exception as error:  # noqa: BLE001 -- a third party's declaration: said with its name
        raise SystemSpecError(f"{where} cannot be loaded: {type(error).__name__}: {error}") from None
    problem = call_shape_problem(found, NamedSystem, may_be_async=True)
    if problem:
        raise SystemSpecError(f"{where} {problem}")
    return System(name, found, is_async=is_async_callable(found))


def unknown_system(name: str, family: "Family", families: "Iterable[Family]") -> str:
    """Why ``name``, neither a family's system nor ``module:function``, does not answer ``family``'s rows."""
    own = list(dict.fromkeys([*(system for system, _ in family.systems), *filter(None, [family.default_system])]))
    owner = next((other for other in families if any(system == name for system, _ in other.systems)), None)
    if owner is not None:
        instead = f"{' or '.join(own)}, or your own" if own else "your own"
        return (f"system {name!r} answers the {owner.name} family's rows, not the {family.name} family's: use "
                f"{instead} package.module:function")
    choices = f"{', '.join(own)} or " if own else ""
    return f"unknown system {name!r}: for the {family.name} family's rows use {choices}package.module:function"


def load_system(spec: str) -> System:
    """Build the system a ``module:function`` spec names; raise :class:`SystemSpecError` when it can't."""
    if ":" not in spec:
        raise SystemSpecError(f"unknown system {spec!r}: use package.module:function")
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        hint = ""
        if isinstance(error, ModuleNotFoundError) and error.name == module_name.split(".")[0]:
            hint = (f"; if {module_name.split('.')[0]!r} is a module of your project, run with it on the path: "
                    "PYTHONPATH=. pytest ...")
        raise SystemSpecError(f"system {spec!r}: cannot import {module_name!r}: {error}{hint}") from None
    function: Any = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise SystemSpecError(f"system {spec!r}: {module_name!r} has no attribute {attribute!r}")
    from ..families.protocols import UserSystem, UserSystemWithRow, call_shape_problem, is_async_callable

    # Said once before any row, not as each row's TypeError.
    problem = call_shape_problem(function, UserSystem, may_be_async=True)
    if problem and call_shape_problem(function, UserSystemWithRow, may_be_async=True) is not None:
        raise SystemSpecError(f"system {spec!r}: {attribute!r} {problem}")
    return System(spec, _user_adapter(function), is_async=is_async_callable(function))


def import_roots(specs: Sequence[str]) -> list[str]:
    """The ``sys.path`` entries the user's systems (``module:function``) were imported from in this process:
    an xdist worker adds those it lacks (a local worker gets the path xdist saw when it was imported, which
    a path added later, as pytester's ``syspathinsert``, is not on; tester44 MED-3)."""
    import sys

    roots = []
    for spec in specs:
        module_name = spec.partition(":")[0] if ":" in spec else ""
        module = sys.modules.get(module_name) if module_name else None
        found = getattr(module, "__file__", None)
        if not found:
            continue
        root = Path(found).resolve().parent
        # a package's __init__ stands for its folder; each dotted part above the module is one folder up
        for _ in range(module_name.count(".") + (Path(found).name == "__init__.py")):
            root = root.parent
        if str(root) not in roots:
            roots.append(str(root))
    return roots


def _user_adapter(function: Callable[..., Any]) -> Callable[..., Any]:
    """Call a user function as ``f(question, paper)``, adding ``row=`` if it takes it."""
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        parameters = {}
    # A generic wrapper's (*args, **kwargs) says nothing of what it passes on (a decorator without functools.wraps
    # over f(question, paper)): row= goes to a parameter named row, or to **kwargs beside named parameters.
    named = [p for p in parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    wants_row = "row" in parameters or (bool(named) and any(p.kind is p.VAR_KEYWORD for p in parameters.values()))

    def call(row: "FamilyRow", paper: "Optional[Paper]") -> Any:
        if wants_row:
            return function(row.question, paper, row=row)
        return function(row.question, paper)

    return call
