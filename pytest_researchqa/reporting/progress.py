"""Live progress for model runs: rows done / total, errors, spend, ETA."""

from __future__ import annotations

import time
from typing import Any, Optional

from ..costs import add_cost, spend_text
from ..records import RowRecord

REPORT_EVERY_S = 15.0


class Progress:
    """Counts model-system rows as their records arrive; writes a line every so often."""

    def __init__(self, reporter: Any, total: int) -> None:
        self.reporter = reporter
        self.total = total
        self.done = self.errors = self.cached = 0
        self.spend: Optional[float] = 0.0
        self.started = time.monotonic()
        self.last_report = self.started

    def row_done(self, record: RowRecord) -> None:
        if not record.model_system:
            return
        self.done += 1
        self.errors += bool(record.error)
        self.cached += record.usage.cached
        if self.spend is not None and not record.usage.cached and not record.error:
            self.spend = add_cost(self.spend, record.usage.cost_usd)
        now = time.monotonic()
        if self.reporter is not None and now - self.last_report >= REPORT_EVERY_S and self.done < self.total:
            self.last_report = now
            self.reporter.write_line("")
            self.reporter.write_line(f"researchqa: {self.line(now)}")

    def line(self, now: float) -> str:
        elapsed = now - self.started
        fresh = max(self.done - self.cached, 1)
        eta = (self.total - self.done) * elapsed / fresh if self.done else float("nan")
        spend = spend_text(self.spend)
        return (f"{self.done}/{self.total} model rows, {self.errors} errors, {self.cached} from cache, "
                f"spend {spend}, elapsed {elapsed:.0f}s, ETA {eta:.0f}s")

    def finish(self, reporter: Any) -> None:
        reporter.write_line(f"researchqa: {self.line(time.monotonic())}".replace(", ETA 0s", ""))
