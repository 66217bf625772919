"""The run's state, kept in ``config.stash``: settings, dataset, papers, systems, records.

Heavy modules (pydantic through the loaders, pypdf, rank_bm25) are imported
here lazily, on first use, never at plugin import.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from .options import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .loaders import Dataset
    from .papers import PaperStore
    from .systems import System


@dataclass(frozen=True)
class Case:
    """One parametrized test case: plain values, identical on every worker."""

    kind: str  # "row" or "problem"
    position: int  # index into dataset.rows or dataset.problems
    system: Optional[str]


class RunState:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.records: list[dict] = []
        self.foreign_failures = 0
        self._systems: dict[str, "System"] = {}
        self._runner = None
        self._judges: dict = {}

    @property
    def dataset_path(self) -> Path:
        if self.settings.dataset is not None:
            return self.settings.dataset
        from .bundled import sample_dataset

        return sample_dataset()

    @functools.cached_property
    def dataset(self) -> "Dataset":
        from .loaders import DatasetError, load_dataset

        try:
            return load_dataset(self.dataset_path)
        except DatasetError as error:
            raise pytest.UsageError(f"researchqa: {error}") from None

    @functools.cached_property
    def papers(self) -> "PaperStore":
        from .papers import PaperStore, default_cache_dir

        dataset = self.dataset
        return PaperStore(
            papers_dir=self.settings.papers or dataset.root / "papers",
            cache_dir=self.settings.cache_dir or default_cache_dir(),
            inline=dataset.inline_papers,
            allow_download=self.settings.download_papers,
        )

    def system(self, name: str) -> "System":
        if name not in self._systems and name in self.settings.models:
            self._systems[name] = self._model_system(name)
        if name not in self._systems:
            from .systems import SystemSpecError, load_system

            try:
                self._systems[name] = load_system(name)
            except SystemSpecError as error:
                raise pytest.UsageError(f"researchqa: {error}") from None
        return self._systems[name]

    def _model_system(self, name: str):
        from .llm.cache import AnswerCache
        from .llm.engine import ModelRunner
        from .llm.system import LlmSystem, ModelSpec
        from .papers import default_cache_dir

        settings = self.settings
        if self._runner is None:
            self._runner = ModelRunner(settings.concurrency, settings.rows_per_minute)
        return LlmSystem(
            ModelSpec(name, dict(settings.model_params.get(name, {}))),
            self._runner,
            AnswerCache(settings.cache_dir or default_cache_dir()),
            baseline=settings.baseline,
            refresh=settings.refresh,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
        )

    def judges_for(self, system: str) -> list:
        """The judges of one system's rows ('auto' resolved to another family than the system)."""
        from .llm.judges import DEFAULT_POOL, model_family

        names = []
        for name in self.settings.judges:
            if name == "auto":
                family = model_family(system) if system in self.settings.models else None
                pool = self.settings.judge_pool or DEFAULT_POOL
                name = next((c for c in pool if model_family(c) != family), pool[0])
            names.append(name)
        from .llm.judges import JudgePanel

        return JudgePanel([self._judge(name) for name in dict.fromkeys(names)], self.settings.judge_repeats)

    def _judge(self, name: str):
        if name not in self._judges:
            from .llm.cache import AnswerCache
            from .llm.engine import ModelRunner
            from .llm.judges import LlmJudge
            from .llm.system import ModelSpec
            from .papers import default_cache_dir

            settings = self.settings
            if self._runner is None:
                self._runner = ModelRunner(settings.concurrency, settings.rows_per_minute)
            self._judges[name] = LlmJudge(
                ModelSpec(name, dict(settings.model_params.get(name, {}))), self._runner,
                AnswerCache(settings.cache_dir or default_cache_dir()), mode=settings.judge_mode,
                timeout_s=settings.timeout_s, retries=settings.retries)
        return self._judges[name]

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()

    @functools.cached_property
    def row_positions(self) -> list[int]:
        """Rows to run, in file order; evenly spaced when sampling."""
        total = len(self.dataset.rows)
        sample = self.settings.sample
        if sample is None or sample >= total:
            return list(range(total))
        return [i * total // sample for i in range(sample)]

    def cases(self, with_systems: bool) -> list[tuple[Case, str, list[str]]]:
        """(case, id, marks) for every selected row, per system when asked."""
        dataset = self.dataset
        systems: list[Optional[str]] = list(self.settings.all_systems) if with_systems and not self.settings.audit else [None]
        found = []
        for system in systems:
            for position in self.row_positions:
                row = dataset.rows[position]
                parts = [system, row.question_type, row.row_id] if system else [row.question_type, row.row_id]
                found.append((Case("row", position, system), _id(parts), [row.question_type]))
        for position, problem in enumerate(dataset.problems):
            label = problem.row_id or problem.location
            found.append((Case("problem", position, None), _id(["invalid", label]), []))
        return found


def _id(parts: list) -> str:
    return "-".join(re.sub(r"\s+", "_", str(p)) for p in parts)


RUN_STATE = pytest.StashKey[RunState]()
RECORD = pytest.StashKey[dict]()
