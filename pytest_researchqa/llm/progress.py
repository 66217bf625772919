"""Live progress for model runs: rows done / total, errors, spend, ETA."""

from __future__ import annotations

import time
from typing import Optional

import pytest

REPORT_EVERY_S = 15.0


class Progress:
    def __init__(self, config: pytest.Config, total: int) -> None:
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.total = total
        self.done = self.errors = self.cached = 0
        self.spend: Optional[float] = 0.0
        self.started = time.monotonic()
        self.last_report = self.started

    def row_done(self, record: dict) -> None:
        if not record.get("system") or "cost_usd" not in record and not record.get("error"):
            return
        self.done += 1
        self.errors += bool(record.get("error"))
        self.cached += bool(record.get("cached"))
        if self.spend is not None and not record.get("cached"):
            cost = record.get("cost_usd")
            self.spend = None if cost is None and not record.get("error") else self.spend + (cost or 0.0)
        now = time.monotonic()
        if self.reporter is not None and now - self.last_report >= REPORT_EVERY_S and self.done < self.total:
            self.last_report = now
            self.reporter.write_line("")
            self.reporter.write_line(f"researchqa: {self.line(now)}")

    def line(self, now: float) -> str:
        elapsed = now - self.started
        fresh = max(self.done - self.cached, 1)
        eta = (self.total - self.done) * elapsed / fresh if self.done else float("nan")
        spend = "—" if self.spend is None else f"${self.spend:.4f}"
        return (f"{self.done}/{self.total} model rows, {self.errors} errors, {self.cached} from cache, "
                f"spend {spend}, elapsed {elapsed:.0f}s, ETA {eta:.0f}s")

    def finish(self, reporter) -> None:
        reporter.write_line(f"researchqa: {self.line(time.monotonic())}".replace(", ETA 0s", ""))
