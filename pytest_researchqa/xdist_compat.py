"""Everything that knows about pytest-xdist, in one place.

xdist is optional: without it, ``is_worker`` is always False and no hook here
is registered.

Two xdist internals are used, both here. The first is in ``worker_queue``: the
worker's queue of assigned test indices (``WorkerInteractor.torun``), so
model calls for rows handed to this worker can start before those rows run.
xdist has no public hook that tells a worker which items it was given; the
public ``nextitem`` of ``pytest_runtest_protocol`` looks one item ahead, too
little to keep several calls in flight. If a future xdist changes the queue,
``worker_queue`` returns None and :class:`Lookahead` falls back to ``nextitem``
(slower, still correct).

A second one, on the controller: the by-paper scheduler (a subclass of xdist's public
``LoadScopeScheduling``) overrides its ``_pending_of`` count (:class:`PendingCounts`), which
xdist recomputes over every scope a worker was ever given after every test: rows x papers at the
seed's scale. If a future xdist renames it, the override is never called and xdist's own count
stands (slower, still correct).

A third, on the same scheduler: its ``remove_node``, ``schedule`` and ``_reschedule`` after a worker crash
(:class:`RecoversFromCrashes`), which in xdist 3.8 hang the run (pytest-xdist #1323, #1327, #1378;
fixes merged after 3.8). They read the scheduler's ``assigned_work``, ``workqueue`` and ``collection``,
as its own methods do. Once an xdist release carries the fixes, the override can go.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import pytest


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_queue(config: pytest.Config) -> Optional[Any]:
    """The xdist worker's queue of assigned items (an internal; None when absent or changed)."""
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(queue, "lock"):
            return queue
    return None


def groups_by_paper(config: pytest.Config) -> bool:
    """Whether the controller sends the rows of one paper to one worker: under ``-n`` when the user chose no ``--dist``.

    xdist's own ``loadgroup`` cannot carry it here: it renames items through an attribute
    pytest 9 no longer reads. So the controller makes the scheduler itself through xdist's
    public ``pytest_xdist_make_scheduler`` hook (:class:`ControllerHooks`): xdist's
    ``LoadScopeScheduling`` with each row's scope being its paper. A worker then reads and
    indexes a paper once instead of every worker doing it.
    """
    return (not is_worker(config) and bool(getattr(config.option, "numprocesses", None))
            and getattr(config.option, "dist", "no") == "load" and not _dist_named(config))


def _dist_named(config: pytest.Config) -> bool:
    import os
    import shlex

    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    try:
        words += list(config.getini("addopts"))
    except (ValueError, KeyError):
        pass
    return any(w == "-d" or w == "--distload" or w.startswith("--dist") for w in map(str, words))


class Lookahead:
    """The items a worker was handed since it last looked: amortized O(1) per row.

    xdist appends assigned indices at the queue's end and takes them from its front, so the
    items not seen yet are a run at the end: read backwards up to the first one seen.
    """

    def __init__(self, config: pytest.Config) -> None:
        self._queue = worker_queue(config)
        self._seen: set[int] = set()
        self._position: dict[int, int] = {}  # id(item) -> index in session.items, built once

    def fresh(self, item: pytest.Item, nextitem: Optional[pytest.Item]) -> list[pytest.Item]:
        """``item``, ``nextitem`` and the items queued for this worker, each returned once over the run."""
        items = item.session.items
        if not self._position:
            self._position = {id(each): index for index, each in enumerate(items)}
        queued: list[int] = []
        if self._queue is not None:
            try:
                with self._queue.lock() as pending:
                    for index in reversed(pending):
                        if isinstance(index, int):
                            if index in self._seen:
                                break
                            queued.append(index)
            except Exception:  # an xdist change must cost speed, never the run
                self._queue, queued = None, []
        known = [self._position[id(each)] for each in (item, nextitem)
                 if each is not None and id(each) in self._position]
        found = []
        for index in [*known, *reversed(queued)]:
            if index not in self._seen:
                self._seen.add(index)
                found.append(items[index])
        return found


# A row's reports cross from a worker to the controller as JSON text (issue 24 item 4). execnet
# serializes plain data object by object in Python, on the worker and again on the controller's
# receiving thread: about 200 objects for a row's record, 30-60 for each of its three reports.
# ``json`` writes and reads the same data in C. The record is its own text inside the report's
# (the controller appends it to the run's partial rows file as it came); the report's is unpacked
# before pytest reads it back (``pytest_report_from_serializable``), so pytest and xdist see the
# data they always see, with the tuples pytest's own fields hold put back.
RECORD_TEXT = "researchqa_json"
REPORT_TEXT = "researchqa_report"
ROW_NODEIDS = "researchqa::"  # the built-in test's rows (active_hooks.PROTOCOL_NODEID)
READS_TEXT = "researchqa_reads_text"  # in a worker's workerinput: its controller unpacks the text
SPEND_FOLDER = "researchqa_spend_folder"  # in a worker's workerinput: where the run's workers keep what they spent


def spend_ledger(config: pytest.Config) -> Optional[tuple[str, str]]:
    """On a worker of a run that calls models: the folder its controller made for what the workers spend, and this
    worker's name in it. From xdist's workerinput, never the environment: a pytester run inside a worker of an
    outer ``pytest -n N`` is serial, with the whole budget to itself (tester44 LOW-4)."""
    workerinput = getattr(config, "workerinput", {})
    folder = workerinput.get(SPEND_FOLDER)
    return (str(folder), str(workerinput.get("workerid", "worker"))) if folder else None


SYSTEM_PATHS = "researchqa_system_paths"  # in a worker's workerinput: where the controller imported user systems


def add_controller_system_paths(config: pytest.Config) -> None:
    """On a worker: put the folders the controller imported the user's systems from on ``sys.path`` (at its
    end, so nothing the worker finds already changes), as the controller found them."""
    import sys

    for path in getattr(config, "workerinput", {}).get(SYSTEM_PATHS, ()):
        if path not in sys.path:
            sys.path.append(path)
# In a worker's workerinput: the controller hands it each paper's rows together, once (the by-paper scheduler).
WHOLE_PAPERS = "researchqa_whole_papers"


def handed_whole_papers(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker handed each paper's rows together and never again: a paper
    whose rows are done is not needed again here, so there is no point keeping it (or its index)."""
    return bool(getattr(config, "workerinput", {}).get(WHOLE_PAPERS))


class WorkerHooks:
    """Hooks that exist only under xdist, registered on a worker."""

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, config: pytest.Config, report: Any) -> Any:
        data = yield
        if (not isinstance(data, dict) or data.get("$report_type") != "TestReport"
                or not getattr(config, "workerinput", {}).get(READS_TEXT)):
            return data  # not a test's report, or a controller that does not unpack the text
        plain = data.get("researchqa")
        if not isinstance(plain, dict) and not str(data.get("nodeid", "")).startswith(ROW_NODEIDS):
            return data  # another test's report: as xdist sends it
        import json

        from .runs import record_line

        try:
            text = json.dumps({**data, "researchqa": None, RECORD_TEXT: record_line(plain)}
                              if isinstance(plain, dict) else data, ensure_ascii=False)
        except (TypeError, ValueError):
            return data  # not JSON (a plugin's own attribute): it travels as execnet's plain data
        return {REPORT_TEXT: text}


def unpack_report(data: dict[str, Any]) -> None:
    """A worker's report as pytest serialized it (in place), from its JSON text."""
    import json

    data.update(json.loads(data.pop(REPORT_TEXT)))
    if data.get("researchqa", False) is None:
        del data["researchqa"]
    for name in ("location", "longrepr"):  # a location and a skip's (path, line, reason) are tuples
        if isinstance(data.get(name), list):
            data[name] = tuple(data[name])
    for name in ("sections", "user_properties"):  # lists of (name, text) pairs
        if isinstance(data.get(name), list):
            data[name] = [tuple(pair) if isinstance(pair, list) else pair for pair in data[name]]


class PendingCounts:
    """xdist's count of a worker's pending tests (``LoadScopeScheduling._pending_of``) without rescanning the
    papers the worker has finished.

    xdist counts a worker's pending tests over every scope it was ever handed, after every test and, once
    every paper is handed out (``tests_finished``), for every worker after every event the controller reads:
    with a scope a paper, the controller's work grows as rows x papers (issue 24 item 4). A worker's workload only
    gains scopes, and a test once done stays done, so a finished paper is counted once and left out after.
    A workload of another shape is counted by xdist's own method.
    """

    def _pending_of(self, workload: Any) -> int:
        memo: dict[int, list[Any]] = self.__dict__.setdefault("_researchqa_open", {})
        entry = memo.get(id(workload))
        if entry is None or entry[0] is not workload:
            entry = memo[id(workload)] = [workload, 0, []]  # the workload, scopes seen, scopes not finished
        if not isinstance(workload, dict) or len(workload) < entry[1]:
            del memo[id(workload)]
            return int(super()._pending_of(workload))  # type: ignore[misc]
        if len(workload) > entry[1]:
            import itertools

            entry[2].extend(itertools.islice(workload.values(), entry[1], None))
            entry[1] = len(workload)
        pending, still = 0, []
        for scope in entry[2]:
            left = sum(1 for done in scope.values() if not done)
            if left:
                pending += left
                still.append(scope)
        entry[2] = still
        return pending


class RecoversFromCrashes:
    """xdist 3.8's ``LoadScopeScheduling`` hangs a run whose worker crashed (killed by the OOM killer, a
    segfault in a system's native code): it puts the dead worker's finished papers back on the queue as
    empty work, which no worker ever reports done, and hands a replacement a single test, which a worker
    never runs until it gets a second or is told to stop (pytest-xdist #1323, #1327, #1378). It also hands
    the test that crashed to the next worker, which it may crash too (#1371). Here only the dead worker's
    unfinished rows go back, without the one it crashed on (xdist reports that one failed), and a worker
    given work after the start gets a second unit or is told that none is left.
    """

    def remove_node(self, node: Any) -> Optional[str]:
        workload = self.assigned_work.pop(node)  # type: ignore[attr-defined]
        unfinished = {scope: unit for scope, unit in workload.items() if not all(unit.values())}
        if not unfinished:
            return None
        unit, crashed = next((unit, nodeid) for unit in unfinished.values()
                             for nodeid, done in unit.items() if not done)
        unit[crashed] = True
        self.workqueue.update((s, u) for s, u in unfinished.items() if not all(u.values()))  # type: ignore[attr-defined]
        for other in self.assigned_work:  # type: ignore[attr-defined]
            self._reschedule(other)
        return str(crashed)

    def _reschedule(self, node: Any) -> None:
        if node not in self.registered_collections:  # type: ignore[attr-defined]
            return  # a replacement still collecting: schedule() hands it work once it is done (xdist #1189)
        super()._reschedule(node)  # type: ignore[misc]

    def schedule(self) -> None:
        if self.collection is None:  # type: ignore[attr-defined]
            super().schedule()  # type: ignore[misc]
            return
        for node in self.nodes:  # type: ignore[attr-defined]  # a replacement joined: as at the start, two units
            self._reschedule(node)
            self._reschedule(node)  # or, with none left, the stop it waits for


class ControllerHooks:
    """Hooks that exist only under xdist, registered on the controller."""

    def __init__(self, on_collection: Callable[[list[str]], None],
                 on_node_down: Callable[[dict[str, Any]], None],
                 papers_by_test_id: Optional[Callable[[], dict[str, str]]] = None) -> None:
        self._on_collection = on_collection
        self._on_node_down = on_node_down
        self._papers_by_test_id = papers_by_test_id
        self._spent: Optional[str] = None  # the folder of what the workers spent (--researchqa-max-cost)

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Rows of one paper to one worker (see :func:`groups_by_paper`); None leaves xdist's choice."""
        if self._papers_by_test_id is None:
            return None
        from xdist.scheduler import LoadScopeScheduling

        papers = self._papers_by_test_id()

        class ByPaper(RecoversFromCrashes, PendingCounts, LoadScopeScheduling):  # type: ignore[misc]  # no hints
            def _split_scope(self, nodeid: str) -> str:
                test_id = nodeid.rpartition("[")[2].rstrip("]")
                paper = papers.get(test_id)
                return f"paper:{paper}" if paper is not None else nodeid

        return ByPaper(config, log)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, config: pytest.Config, data: Any) -> Any:
        """A worker's report: unpacked for pytest, its record back as plain data (``report.researchqa``),
        the record's text kept for the rows file."""
        if isinstance(data, dict) and REPORT_TEXT in data:
            unpack_report(data)
        report = yield
        text = getattr(report, RECORD_TEXT, None)
        if isinstance(text, str):
            import json

            report.researchqa = json.loads(text)
        return report

    def pytest_configure_node(self, node: Any) -> None:
        """Tell each worker this controller unpacks reports sent as JSON text, and whether it hands each paper's
        rows together (:func:`handed_whole_papers`)."""
        node.workerinput[READS_TEXT] = True
        if self._papers_by_test_id is not None:
            node.workerinput[WHOLE_PAPERS] = True
        from .stash import SETTINGS
        from .systems import import_roots

        config = getattr(node, "config", None)  # xdist's WorkerController has it; a test's stand-in may not
        settings = config.stash.get(SETTINGS, None) if config is not None else None
        node.workerinput[SYSTEM_PATHS] = import_roots(settings.systems) if settings is not None else []
        if config is not None and settings is not None and (settings.models or settings.judges
                                                             or settings.flagged_judge):
            node.workerinput[SPEND_FOLDER] = self._spend_folder(config)

    def _spend_folder(self, config: pytest.Config) -> str:
        """One folder for the run's workers to keep what each spent (:class:`~.costs.SpendLedger`: one budget
        over them, and the controller's progress lines), removed when the run ends; a replacement worker
        reads what its crashed predecessor spent."""
        if self._spent is None:
            import shutil
            import tempfile

            from .stash import WORKERS_SPEND

            self._spent = config.stash[WORKERS_SPEND] = tempfile.mkdtemp(prefix="researchqa-spent-")
            config.add_cleanup(functools.partial(shutil.rmtree, self._spent, ignore_errors=True))
        return self._spent

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._on_collection(ids)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A crashed worker sends no output: read defensively.
        self._on_node_down(dict(getattr(node, "workeroutput", None) or {}))
