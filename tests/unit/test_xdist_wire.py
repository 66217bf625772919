"""What crosses from an xdist worker to the controller: a row's reports as JSON text, read back as pytest
would have read execnet's plain data (issue 24 item 4)."""

from __future__ import annotations

import pytest

from pytest_researchqa.runs import record_line
from pytest_researchqa.xdist_compat import READS_TEXT, RECORD_TEXT, REPORT_TEXT, ControllerHooks, WorkerHooks


def _through(wrapper, *args, inner):
    """A new-style hook wrapper run around ``inner``'s result."""
    step = wrapper(*args)
    next(step)
    try:
        step.send(inner)
    except StopIteration as done:
        return done.value
    raise AssertionError("the wrapper yielded twice")


def _across(config: pytest.Config, report: pytest.TestReport) -> tuple[dict, pytest.TestReport]:
    if not hasattr(config, "workerinput"):
        config.workerinput = {READS_TEXT: True}  # type: ignore[attr-defined]  # a worker of this controller
    data = _through(WorkerHooks().pytest_report_to_serializable, config, report,
                    inner=config.hook.pytest_report_to_serializable(config=config, report=report))
    data["item_index"] = 3  # what xdist adds before sending
    sent = dict(data)
    step = ControllerHooks(lambda ids: None, lambda output: None).pytest_report_from_serializable(config, data)
    next(step)  # unpacks ``data`` in place, before pytest reads it
    try:
        step.send(config.hook.pytest_report_from_serializable(config=config, data=data))
    except StopIteration as done:
        return sent, done.value
    raise AssertionError("the wrapper yielded twice")


def test_a_rows_skipped_report_crosses_as_one_text_and_reads_back_with_its_tuples(pytester):
    config = pytester.parseconfig()
    report = pytest.TestReport("researchqa::test_question[bm25-lookup-r1]", ("protocol.py", 19, "test_question"),
                               {"lookup": 1}, "skipped", ("protocol.py", 20, "Skipped: no paper"), "setup",
                               sections=[("Captured stdout setup", "hello")],
                               user_properties=[("researchqa.citation_accuracy", "1")])
    sent, back = _across(config, report)
    assert set(sent) == {REPORT_TEXT, "item_index"}, "one text, beside what xdist adds"
    assert back.longrepr == ("protocol.py", 20, "Skipped: no paper") and isinstance(back.longrepr, tuple)
    assert back.location == ("protocol.py", 19, "test_question")
    assert back.sections == [("Captured stdout setup", "hello")]
    assert back.user_properties == [("researchqa.citation_accuracy", "1")]
    assert back.outcome == "skipped" and back.when == "setup" and back.keywords == {"lookup": 1}
    assert not hasattr(back, "researchqa")


def test_a_rows_record_reads_back_as_plain_data_with_the_line_the_rows_file_gets(pytester):
    config = pytester.parseconfig()
    report = pytest.TestReport("researchqa::test_question[bm25-lookup-r1]", ("protocol.py", 19, "test_question"),
                               {}, "passed", None, "call")
    record = {"row_id": "r1", "metrics": {"citation_accuracy": 0.5}, "details": {"answer": "é \"quoted\""}}
    report.researchqa = record  # type: ignore[attr-defined]
    _, back = _across(config, report)
    assert back.researchqa == record
    assert getattr(back, RECORD_TEXT) == record_line(record)


def test_a_worker_whose_controller_does_not_say_it_unpacks_sends_reports_as_xdist_does(pytester):
    config = pytester.parseconfig()
    config.workerinput = {}  # type: ignore[attr-defined]
    report = pytest.TestReport("researchqa::test_question[bm25-lookup-r1]", ("protocol.py", 19, "test_question"),
                               {}, "passed", None, "call")
    report.researchqa = {"row_id": "r1"}  # type: ignore[attr-defined]
    sent, back = _across(config, report)
    assert REPORT_TEXT not in sent and sent["researchqa"] == {"row_id": "r1"}
    assert back.researchqa == {"row_id": "r1"}


def test_another_tests_report_travels_as_xdist_sends_it(pytester):
    config = pytester.parseconfig()
    report = pytest.TestReport("tests/test_x.py::test_y", ("tests/test_x.py", 1, "test_y"), {}, "passed", None,
                               "call")
    sent, back = _across(config, report)
    assert REPORT_TEXT not in sent and sent["nodeid"] == "tests/test_x.py::test_y"
    assert back.location == ("tests/test_x.py", 1, "test_y")


def test_a_workers_pending_tests_are_counted_as_xdist_counts_them_as_papers_are_handed_and_finished():
    import random

    from xdist.scheduler import LoadScopeScheduling

    from pytest_researchqa.xdist_compat import PendingCounts

    class Counted(PendingCounts, LoadScopeScheduling):
        def __init__(self) -> None:  # the count needs none of the scheduler's state
            pass

    counted, rng = Counted(), random.Random(4)
    workloads: list[dict[str, dict[str, bool]]] = [{}, {}]
    for step in range(400):
        workload = rng.choice(workloads)
        if rng.random() < 0.1 or not workload:
            workload[f"paper:{step}"] = {f"t{step}-{n}": False for n in range(rng.randint(1, 5))}
        else:
            scope = rng.choice(list(workload.values()))
            scope[rng.choice(list(scope))] = True
        for each in workloads:
            assert counted._pending_of(each) == LoadScopeScheduling._pending_of(counted, each)
    requeued = workloads.pop()  # a worker that went down: its workload given to another, whole
    workloads[0].update(requeued)
    assert counted._pending_of(workloads[0]) == LoadScopeScheduling._pending_of(counted, workloads[0])


def test_a_worker_of_the_by_paper_scheduler_keeps_only_the_papers_and_indexes_in_use(pytester, tmp_path):
    from types import SimpleNamespace

    from pytest_researchqa.families.citation import bm25
    from pytest_researchqa.papers import KEPT_BYTES, WHOLE_PAPERS_HOT
    from pytest_researchqa.state import RunState
    from pytest_researchqa.xdist_compat import WHOLE_PAPERS, handed_whole_papers

    by_paper, by_xdist = SimpleNamespace(workerinput={}), SimpleNamespace(workerinput={})
    ControllerHooks(lambda ids: None, lambda output: None, dict).pytest_configure_node(by_paper)
    ControllerHooks(lambda ids: None, lambda output: None).pytest_configure_node(by_xdist)  # --dist named
    assert by_paper.workerinput[WHOLE_PAPERS] and WHOLE_PAPERS not in by_xdist.workerinput
    assert handed_whole_papers(SimpleNamespace(workerinput=by_paper.workerinput))
    assert not handed_whole_papers(SimpleNamespace()), "not a worker: a serial run keeps what it may meet again"

    from pytest_researchqa.settings import read_settings

    config = pytester.parseconfig(f"--researchqa-papers={tmp_path}", f"--researchqa-cache-dir={tmp_path}")
    settings = read_settings(config)
    serial, worker = RunState(settings), RunState(settings)
    worker.whole_papers = True
    for state in (serial, worker):
        state.__dict__["dataset"] = SimpleNamespace(root=tmp_path, inline_papers={})
    assert serial.papers.kept_bytes == KEPT_BYTES and bm25.shared_cache().budget_bytes == bm25.KEPT_BYTES
    try:
        assert (worker.papers.hot, worker.papers.kept_bytes) == (WHOLE_PAPERS_HOT, 0)
        assert bm25.shared_cache().budget_bytes == bm25.WHOLE_PAPERS_BYTES
    finally:
        bm25.shared_cache().budget_bytes = bm25.KEPT_BYTES  # the process's cache: as other tests expect it
