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
    uses_papers: bool = True  # rows are about a paper the plugin reads (researchqa_paper is None otherwise)
    sample_dataset: tuple[str, ...] = ("datasets", "sample", "sample.yaml")  # the bundled rows, under bundled_path
    # "module:Class" of the model system for this family's rows, built as Class(spec, runner, cache, settings);
    # empty: llm.system.LlmSystem.
    model_system: str = ""
    # "module:function" run on the controller once every row is answered (e.g. pairwise battles), given
    # (records, services, settings, say); what it returns (plain data) reaches the renderer.
    after_answers: str = ""
    # "module:function" given (selected rows, settings) before any row runs: why the run may not start, or None
    # (e.g. a pairwise schedule over the judge-call cap).
    before_rows: str = ""
    # "module:function" rendering the leaderboard, given (records, family, results); empty: the default tables.
    renderer: str = ""

    @property
    def cluster_unit(self) -> str:
        """What intervals and paired tests resample together: a paper's rows, or (no papers) each query."""
        return "papers" if self.uses_papers else "queries"

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)

    def metric(self, name: str) -> Optional[MetricSpec]:
        return next((m for m in self.metrics if m.name == name), None)

    def load(self, path: Path) -> Any:
        load: Callable[[Path], Any] = resolve(self.loader)
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


def resolve(target: str) -> Any:
    """The object a ``module:attribute`` declaration names (imported on first use)."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


FAMILY_NAMES = ("citation", "rubric")


def get_family(name: str) -> Family:
    from .citation import CITATION
    from .rubric import RUBRIC

    families = {CITATION.name: CITATION, RUBRIC.name: RUBRIC}
    if name not in families:
        raise ValueError(f"unknown benchmark family {name!r}; choose from {', '.join(families)}")
    return families[name]


def sniff_family(path: Optional[Path]) -> str:
    """The family a dataset file's shape implies: rubric rows carry a ``query`` or ``rubric`` (or, in the
    50-query JSONL shape, a ``task_id`` with ``general_domain`` metadata); anything else is citation.

    Reads the file's first 64 KB only; an unreadable file is left to the loader to report.
    """
    if path is None:
        return "citation"
    try:
        with open(path, "rb") as stream:
            head = stream.read(65536).decode("utf-8-sig", errors="replace")
    except OSError:
        return "citation"
    if path.suffix.lower() in (".yaml", ".yml"):
        return "rubric" if re.search(r"^\s*(?:-\s+)?(?:query|rubric)\s*:", head, re.MULTILINE) else "citation"
    start = head.lstrip()[:1]
    if start == "[":  # a JSON list: look at the keys of its first row
        window = head[: head.find("}") + 1] if "}" in head else head
    else:
        window = head.split("\n", 1)[0]
    keys = set(re.findall(r'"([A-Za-z_]+)"\s*:', window))
    if {"query", "rubric"} & keys or ("task_id" in keys and "general_domain" in head[:4096]):
        return "rubric"
    return "citation"
