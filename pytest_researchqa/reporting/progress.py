"""Live progress for model runs: what is running, rows done / total, errors, spend, speed, ETA.

A run whose only calls are its judges' (a retrieval pipeline or bm25, judged by a model) counts every row
it judges, without the answers' figures; a model beside such a system, all judged, counts every row too.

A run's first line comes when its calls start (what is queued, how many at a time); the next
after ``FIRST_REPORT_S`` seconds, then a line every ``REPORT_EVERY_S`` seconds, also while no
row finishes (a local server can take minutes for its first answer), and one at the end. A row
is done when its test is (its answer and its judges' verdicts in); the lines also say, from the
run's model callers (``engine.Activity``), how many answers are in (from the cache or fresh), how
many verdicts of those asked so far, and how many requests are on the wire now, so a run whose
answers all came from the cache and that waits for its judges says so. The ETA uses the rate at
which fresh answers have arrived, which already reflects concurrency (a run whose answers all come
from the cache: the rate of fresh verdicts); it says "estimating" until enough have arrived for that
rate to mean something.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Optional, Sequence, TextIO

from ..records import RowRecord

REPORT_EVERY_S = 15.0
FIRST_REPORT_S = 5.0  # the first line after the start: what came from the cache, what is on the wire
# Fresh answers (not from the cache) needed before an ETA is shown: with calls pipelined, the
# first answers arrive together and say little about the rate of the rest.
MIN_FRESH_FOR_ETA = 3


def start_line(total: int, models: Sequence[str], slots: int, workers: int = 0, judged_only: bool = False,
               answers: Optional[int] = None) -> str:
    """The line printed as a model run's calls start; ``workers``: xdist's, each making calls of its own
    (whose start-up, litellm's import included, comes first); ``judged_only``: no model answers, the calls
    are the judges' (``models`` names them), asked as each row is answered; ``answers``: of ``total`` rows
    (every one judged), those a model answers."""
    names = ", ".join(models[:3]) + (f" and {len(models) - 3} more" if len(models) > 3 else "")
    if judged_only:  # a row's verdict waits for its answer, given in its test: one row at a time per process
        each = f" in each of the {workers} workers" if workers else ""
        return (f"{total} row(s) queued, graded by {names}; a verdict is asked as each row is answered{each}; "
                f"progress every {REPORT_EVERY_S:.0f}s")
    if answers is not None and answers < total:
        rows = f"{total} row(s) queued, every one judged, {answers} answered by {names}"
    else:
        rows = f"{total} model row(s) queued ({names})"
    if workers:
        return (f"{rows}; calls start as each of the {workers} workers starts, up "
                f"to {slots} at a time per provider in each worker; progress every {REPORT_EVERY_S:.0f}s")
    return (f"{rows}; calls start now, up to {slots} at a time "
            f"per provider; progress every {REPORT_EVERY_S:.0f}s")


def terminal_stream() -> Optional[TextIO]:
    """The terminal pytest writes to, as it is now, outside any test (capture set aside): a stream of its own.

    The ticker writes while a row's test runs, with pytest's output capture on. Setting capture aside from the
    ticker's thread raced the test thread's own suspends and resumes (pytest's capture is not thread-safe): a
    line could land in a passing test's captured output, never seen. A copy of the terminal's descriptor is
    not redirected by capture, so the lines need no capture toggled at all. None where pytest's output is not a
    file descriptor (pytester in-process), which capture does not redirect either.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return os.fdopen(os.dup(fd), "w", encoding=encoding, errors="replace")


class Progress:
    """Counts the rows that make model calls as their records arrive, and writes a line every so often.

    Which rows: a model system's; every row when judges grade rows no model answers (``every_row``: a run
    whose only calls are its judges', ``judged_only``, or a model beside an offline system, both judged).
    ``answers``: the model rows among them (the answers' own figures)."""

    def __init__(self, reporter: Any, total: int, slots: int = 1, activity: Any = None,
                 terminal: Optional[TextIO] = None, workers: int = 0,
                 spent: Callable[[], str] = lambda: "—", every_row: bool = False,
                 answers: Optional[int] = None, verdicts_per_row: int = 0) -> None:
        self.reporter = reporter
        self.every_row = every_row
        self.verdicts_per_row = verdicts_per_row  # each row's verdicts (one a judge): a mixed run's ETA
        self.answers = total if answers is None else answers
        self.judged_only = every_row and self.answers == 0  # a row's calls are its verdicts, whatever its system
        self.activity = activity  # the run's engine.Activity (None where no call is made: xdist's controller)
        self.total = total
        self.slots = max(slots, 1)
        self.workers = workers  # xdist's workers making the calls (0: this process makes them)
        self.done = self.errors = self.cached = 0
        self.judge_errors = 0  # rows a judge gave no verdict on (also said where no caller's counts are: xdist)
        # What the run's calls have cost so far, as its budget counts them (every call paid once, a failed reply
        # and a battle included), as the line says it (costs.Spend.text: "—" once a call's price is unknown).
        self.spent = spent
        self.completion_tokens = 0
        self.fresh_latency_s = 0.0
        self.started = time.monotonic()
        self.last_report = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None
        self._terminal = terminal  # ``terminal_stream()``, closed by ``stop``; None: through the reporter
        self._writing = threading.Lock()

    def start(self, models: Sequence[str]) -> None:
        """The first line, and a ticker that keeps writing while rows are slow to finish."""
        if self.reporter is None or self.total == 0:
            return
        self._write(start_line(self.total, models, self.slots, self.workers, self.judged_only, self.answers))
        self._ticker = threading.Thread(target=self._tick, name="researchqa-progress", daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            now = time.monotonic()
            every = FIRST_REPORT_S if self.last_report == self.started else REPORT_EVERY_S
            if now - self.last_report >= every and self.done < self.total:
                self._report(now)

    def row_done(self, record: RowRecord) -> None:
        if not (record.model_system or self.every_row):
            return
        usage = record.usage
        with self._lock:
            self.done += 1
            self.errors += bool(record.error)
            self.judge_errors += bool(record.judge_failures)
            self.cached += usage.cached
            if not usage.cached and not record.error:
                self.completion_tokens += usage.completion_tokens or 0
                self.fresh_latency_s += usage.latency_s or 0.0
        now = time.monotonic()
        if now - self.last_report >= REPORT_EVERY_S and self.done < self.total:
            self._report(now)

    def _report(self, now: float) -> None:
        self.last_report = now
        self._write(self.line(now))

    def _write(self, text: str) -> None:
        if self.reporter is None:
            return
        with self._writing:  # the ticker's thread and the test thread (a row done) share the stream
            if self._terminal is None:  # pytest writes to a stream of its own (pytester in-process), or stopped
                self.reporter.write_line("")
                self.reporter.write_line(f"researchqa: {text}")
                return
            # Past pytest's terminal writer, which does not know its line ended: the next result starts its own.
            ended = "\n" if self.reporter.config.get_terminal_writer().width_of_current_line else ""
            self.reporter.currentfspath = None
            self._terminal.write(f"{ended}\nresearchqa: {text}\n")
            self._terminal.flush()

    def line(self, now: float, final: bool = False) -> str:
        """The progress line; ``final``: the run's last (no ETA: a run that stops early has none)."""
        with self._lock:
            elapsed = now - self.started
            fresh = self.done - self.cached
            noun = "rows" if self.every_row else "model rows"
            counted = [f"{self.done}/{self.total} {noun}", f"{self.errors} error{'' if self.errors == 1 else 's'}"]
            if self.judge_errors:  # as the board's "judge err" counts them
                counted.append(f"{self.judge_errors} with a judge error")
            if not self.judged_only:
                counted.append(f"{self.cached} from cache")
            parts = [*counted, *self.calls_parts(),
                     f"spend {self.spent()}", f"elapsed {elapsed:.0f}s"]
            if self.completion_tokens and self.fresh_latency_s > 0:
                # Per call, as the server generated them (latency includes the prompt's processing).
                parts.append(f"{self.completion_tokens / self.fresh_latency_s:.1f} tokens/s a call")
            left = self.total - self.done
            if left > 0 and not final:
                parts.append(self._eta(left, fresh, elapsed))
            return ", ".join(parts)

    def _eta(self, left: int, fresh: int, elapsed: float) -> str:
        """From the rate of fresh answers; while answers come from the cache and the rows wait for their judges,
        from the rate of fresh verdicts and the verdicts the rows left will ask for (at the rate asked so far).
        Rows judged alone: from the rate of fresh verdicts where this process asks them (a cached one costs
        nothing), else of rows done."""
        if self.every_row and self.activity is not None:
            asked, judged, cached, _ = self.activity.counts("verdict")
            if not self.judged_only:  # a model's rows and others, at two speeds: the verdicts still to come
                expected = self.total * max(self.verdicts_per_row, 1)
                if judged - cached >= MIN_FRESH_FOR_ETA:
                    return f"ETA {max(expected - judged, 0) * elapsed / (judged - cached):.0f}s"
                return "ETA estimating"
            fresh = min(judged - cached, self.done)
        if fresh >= min(MIN_FRESH_FOR_ETA, left + fresh):
            return f"ETA {left * elapsed / max(fresh, 1):.0f}s"
        if self.activity is not None and not self.every_row:  # with other rows judged, verdicts a row vary
            _, answered, _, _ = self.activity.counts("answer")
            asked, judged, cached, _ = self.activity.counts("verdict")
            if judged - cached >= MIN_FRESH_FOR_ETA and answered:
                expected = asked / answered * self.total  # every row's verdicts, at the rate asked so far
                return f"ETA {max(expected - judged, 0) * elapsed / (judged - cached):.0f}s"
        return "ETA estimating"

    def calls_parts(self) -> list[str]:
        """Answers in (of the rows), verdicts in (of those asked so far), requests on the wire: what the model
        callers of this process have done, whether or not a row's test has finished."""
        if self.activity is None:
            return []
        parts = []
        if not self.judged_only:
            _, answered, cached, failed = self.activity.counts("answer")
            failures = f", {failed} failed" if failed else ""
            parts.append(f"answers {answered}/{self.answers} ({cached} from cache{failures})")
        asked, judged, _, failed = self.activity.counts("verdict")
        if asked:
            parts.append(f"verdicts {judged} of {asked} asked" + (f" ({failed} failed)" if failed else ""))
        sending = self.activity.sending
        parts.append(f"{sending} call{'' if sending == 1 else 's'} in flight")
        return parts

    def stop(self) -> None:
        """Stop the ticker and wait for a line it is writing: nothing may be written once pytest's
        terminal is closed (or inside the summary)."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=5.0)
        with self._writing:
            if self._terminal is not None:
                self._terminal.close()
                self._terminal = None

    def finish(self, reporter: Any) -> None:
        self.stop()
        reporter.write_line(f"researchqa: {self.line(time.monotonic(), final=True)}")
