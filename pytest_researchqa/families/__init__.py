"""Benchmark families: what a kind of benchmark declares so the plugin can run it.

A family names its question types (markers), its metrics (name, label, range,
direction and which rows they average over), its judge dimensions, how its
rows load, how its cases are named and selected, and its default test. The
plugin's collection, leaderboard columns and gate validation read these
declarations; nothing else in the plugin knows which benchmark it runs.

Declarations are light: importing a family imports no pydantic, pypdf or
numpy. Heavy modules load when a family's rows are loaded.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class MetricSpec:
    """One per-row metric a family records."""

    name: str
    label: str  # leaderboard column
    low: float = 0.0
    high: float = 1.0
    higher_is_better: bool = True
    rows: str = "all rows"  # which rows it is measured on, for the reader


@dataclass(frozen=True)
class JudgeDimension:
    name: str
    label: str
    low: int = 1
    high: int = 5


@dataclass(frozen=True)
class Family:
    """A benchmark family's declarations (see the module docstring)."""

    name: str
    description: str
    question_types: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    judge_dimensions: tuple[JudgeDimension, ...]
    protocol_module: str  # dotted name of the module holding the default test
    loader: str  # "module:function" taking a path and returning a Dataset
    scope_note: str = ""  # printed under the leaderboard: what the means are over
    judge_kinds: tuple[str, ...] = ("rubric", "claims")  # llm.judges kinds grading its rows; the first by default

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)

    def metric(self, name: str) -> Optional[MetricSpec]:
        return next((m for m in self.metrics if m.name == name), None)

    def load(self, path: Path) -> Any:
        module, _, function = self.loader.partition(":")
        load: Callable[[Path], Any] = getattr(importlib.import_module(module), function)
        return load(path)

    def case_id(self, row: Any, system: Optional[str]) -> str:
        parts = [system, row.question_type, row.row_id] if system else [row.question_type, row.row_id]
        return "-".join(re.sub(r"\s+", "_", str(p)) for p in parts)

    def keywords(self, row: Any) -> set[str]:
        """Extra words ``-k`` matches on a row's test (besides its id)."""
        words = {row.paper_id, row.row_id, row.domain, (row.domain or "").replace(" ", "_")}
        return {w for w in words if w}

    def marks(self, row: Any) -> list[str]:
        return [row.question_type]


def get_family(name: str) -> Family:
    from .citation import CITATION

    families = {CITATION.name: CITATION}
    if name not in families:
        raise ValueError(f"unknown benchmark family {name!r}; choose from {', '.join(families)}")
    return families[name]
