"""The run's state, kept in ``config.stash``: what to run, and the objects that run it.

``RunState`` knows the settings, the benchmark family, the dataset and its
papers, and which cases (row x system) to parametrize; it holds the run's
:class:`~pytest_researchqa.services.Services` (systems and judges) and its
:class:`~pytest_researchqa.session.ResearchSession` (records and outcome).
Heavy modules (pydantic through the loaders, pypdf, numpy) are imported
lazily, on first use, never at plugin import.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import pytest

from .case import Case
from .families import Family, PaperCheck
from .records import Recorder, RowRecord
from .services import Services
from .session import ResearchSession
from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .families.citation.loaders import Dataset
    from .llm.judges import JudgePanel
    from .papers import PaperStore
    from .systems import System


class RunState:
    def __init__(self, settings: Settings, *, sample_after_selection: bool = False) -> None:
        self.settings = settings
        # With -k or -m, --researchqa-sample draws from the rows they keep (see sample_leaves_out);
        # without, it is drawn here, before any item exists (a 6,211-row dataset stays cheap).
        self.sample_after_selection = sample_after_selection and settings.sample is not None
        self.family: Family = settings.benchmark_family
        self.services = Services(settings)
        # (row id, paper id) -> the family's check of the row against its paper (Family.check_paper, in
        # row_setup.paper_of): once a row, however many systems answer it.
        self.row_checks: dict[tuple[str, Optional[str]], Optional[PaperCheck]] = {}
        # An xdist worker handed each paper's rows together, once (xdist_compat.handed_whole_papers): it keeps
        # only the papers and indexes in use, where a serial run keeps every paper it may meet again.
        self.whole_papers = False
        # id(plain data on a report) -> (that plain data, its record): see hand_over.
        self._handed: dict[int, tuple[dict[str, Any], RowRecord, bool]] = {}
        # Where a DatasetWarning is said (one line; new_state gives the terminal): never Python's own display, which
        # names the loader's source line.
        self.say: Callable[[str], None] = lambda text: print(text, file=sys.stderr)
        local: frozenset[str] = frozenset()
        if settings.model_params:  # a run without models never loads llm_params
            from .llm_params import local_models

            local = local_models(settings.model_params)
        self.session = ResearchSession(
            self.family, settings.gates, allow_partial=settings.allow_partial, gates_apply=not settings.audit,
            regressions=settings.regressions, compare_map=settings.compare_map,
            undecidable_fails=settings.undecidable_fails, local_models=local, systems=settings.all_systems)

    @property
    def dataset_path(self) -> Path:
        if self.settings.dataset is not None:
            return self.settings.dataset
        sample = self.family.sample_dataset
        if not sample:
            raise pytest.UsageError(f"researchqa: the {self.family.name} family bundles no sample dataset: name a "
                                    "dataset file with --researchqa-dataset")
        if Path(sample[0]).is_absolute():  # a third-party family's own file
            return Path(*sample)
        from .bundled import bundled_path

        return bundled_path(*sample)

    def _load_saying_warnings(self) -> "Dataset[Any]":
        """The family's load, a DatasetWarning it shows said as one line of the run's (the warning filters still
        decide whether it is shown, and ``error`` still raises it)."""
        import warnings

        from .dataset import DatasetWarning

        with warnings.catch_warnings():
            shown = warnings.showwarning

            def show(message: Any, category: type[Warning], *where: Any, **rest: Any) -> None:
                if issubclass(category, DatasetWarning):
                    self.say(f"researchqa: warning: {message}")
                else:
                    shown(message, category, *where, **rest)

            warnings.showwarning = show
            return self.family.load(self.dataset_path)

    @functools.cached_property
    def dataset(self) -> "Dataset[Any]":
        from .dataset import DatasetError, DatasetWarning

        try:
            dataset: "Dataset[Any]" = self._load_saying_warnings()
        except DatasetError as error:
            said = str(error)
            if (not self.family.loader.startswith("pytest_researchqa.")  # a third party's words: say whose
                    and f"the {self.family.name} family's" not in said):
                said = f"the {self.family.name} family's loader ({self.family.loader}) could not read {said}"
            raise pytest.UsageError(f"researchqa: {self._unrecognized(said)}") from None
        except DatasetWarning as warning:
            # Warning filters made it an exception (filterwarnings = error): stop with its words,
            # never let it escape a collection hook, where pytest would swallow it.
            raise pytest.UsageError(f"researchqa: {warning} (a DatasetWarning, which this project's "
                                    "warning filters make an error)") from None
        except Exception as error:  # noqa: BLE001 -- a family's own loader that raised something else
            raise pytest.UsageError(f"researchqa: the {self.family.name} family's loader ({self.family.loader}) "
                                    f"could not read {self.dataset_path}: {type(error).__name__}: {error} "
                                    "(a loader reports a file it cannot read with dataset.DatasetError)") from None
        if self.settings.unrecognized and not dataset.rows:
            # The default family read none of it: never run a file that may be another family's as its rows.
            found = f"{dataset.problems[0]}" if dataset.problems else "it holds no row"
            problems = f" (and {len(dataset.problems) - 1} more invalid row(s))" if len(dataset.problems) > 1 else ""
            raise pytest.UsageError(f"researchqa: {self._unrecognized(found + problems)}")
        return dataset

    def _unrecognized(self, problem: str) -> str:
        """A problem the default family found in a dataset that may be another family's (Settings.unrecognized),
        said with why and what to do; other problems as they are."""
        if not self.settings.unrecognized:
            return problem
        return (f"{self.settings.unrecognized}; the {self.family.name} family, the default, read no row of it: "
                f"{problem}. Name the dataset's family with --researchqa-family=NAME to have its own reader say "
                "what is wrong with the file")

    def forget_dataset(self) -> None:
        """Let the dataset go (read again if asked for): xdist's controller reads it only to schedule."""
        self.__dict__.pop("dataset", None)

    @functools.cached_property
    def papers(self) -> "PaperStore":
        from .papers import PaperStore, default_cache_dir

        dataset = self.dataset
        store = PaperStore(
            papers_dir=self.settings.papers or dataset.root / "papers",
            cache_dir=self.settings.cache_dir or default_cache_dir(),
            inline=dataset.inline_papers,
            allow_download=self.settings.download_papers,
            allow_private_downloads=self.settings.download_allow_private,
            # A dataset's own papers/ may not lead anywhere else, not even as a symlink; a folder
            # the user names on the command line is theirs to trust.
            confine_to=None if self.settings.papers else dataset.root.resolve() / "papers",
        )
        if self.whole_papers:  # a paper whose rows are done is not met again: keep those in use, trim none
            from .families.citation.bm25 import WHOLE_PAPERS_BYTES, shared_cache
            from .papers import WHOLE_PAPERS_HOT

            store.hot, store.kept_bytes = WHOLE_PAPERS_HOT, 0
            shared_cache().budget_bytes = WHOLE_PAPERS_BYTES
        return store

    @functools.cached_property
    def secrets(self) -> list[str]:
        from .llm_params import known_secrets

        return known_secrets(self.settings.model_params)

    def redact(self, text: str) -> str:
        from .llm_params import redact

        return redact(text, self.secrets)

    def redact_plain(self, plain: dict[str, Any]) -> dict[str, Any]:
        """A record's plain data with every known secret replaced, wherever a provider echoed it
        (an answer, a judge's justification, an error): it goes to the terminal, JUnit and rows.jsonl."""
        if not self.secrets:
            return plain
        import json

        text = json.dumps(plain, ensure_ascii=False)
        cleaned = self.redact(text)
        return plain if cleaned == text else dict(json.loads(cleaned))

    def system(self, name: str) -> "System":
        """The named system; a bad spec is a usage error."""
        from .systems import SystemSpecError

        try:
            return self.services.system(name)
        except SystemSpecError as error:
            raise pytest.UsageError(f"researchqa: {error}") from None

    @functools.cached_property
    def row_positions(self) -> list[int]:
        """Rows to run, in file order; a stratified, evenly spaced sample when sampling (the seed's plain
        evenly spaced one under the paper protocol)."""
        rows = self.dataset.rows
        if self.sample_after_selection:
            return list(range(len(rows)))
        return self._sample(list(range(len(rows))))

    def _sample(self, positions: list[int]) -> list[int]:
        """Indexes into ``positions`` (row positions) of the sample: stratified by question type and spread
        over the rows' papers (a family without papers: by type alone)."""
        from .sampling import paper_sample, stratified_sample

        if self.settings.protocol == "paper" and self.settings.sample is not None:
            return paper_sample(len(positions), self.settings.sample)
        rows = [self.dataset.rows[p] for p in positions]
        papers = [row.paper_id for row in rows] if self.family.uses_papers else None
        return stratified_sample([row.question_type for row in rows], self.settings.sample, papers)

    def sample_leaves_out(self, cases: list[Case]) -> set[int]:
        """Row positions outside the sample when it is drawn from the rows -k / -m kept."""
        positions = sorted({case.position for case in cases if case.kind == "row"})
        kept = self._sample(positions)
        return set(positions) - {positions[i] for i in kept}

    def cases(self, with_systems: bool) -> list[tuple[Case, str, list[str]]]:
        """(case, id, marks) for every selected row, per system when asked."""
        dataset = self.dataset
        systems: list[Optional[str]] = (
            list(self.settings.all_systems) if with_systems and not self.settings.audit else [None])
        found = []
        for system in systems:
            # A model answers each row --researchqa-repeats times; other systems answer the same every time.
            repeats = self.settings.repeats if system is not None and self.services.is_model(system) else 1
            for position in self.row_positions:
                row = dataset.rows[position]
                case_id, marks = self.family.case_id(row, system), self.family.marks(row)
                for repeat in range(repeats):
                    found.append((Case("row", position, system, repeat),
                                  f"{case_id}-r{repeat + 1}" if repeats > 1 else case_id, marks))
        for position, problem in enumerate(dataset.problems):
            label = problem.row_id or problem.location
            found.append((Case("problem", position, None), f"invalid-{label}".replace(" ", "_"), []))
        return found

    def case_keywords(self, case: Case) -> set[str]:
        if case.kind != "row":
            return set()
        words = self.family.keywords(self.dataset.rows[case.position])
        if case.system:
            words.add(case.system)
        return words

    def judges_of(self, case: Case) -> "Optional[JudgePanel]":
        """The LLM judges of a case's answer (``researchqa_judge``); None without judges or a system."""
        if not self.settings.judges or case.system is None:
            return None
        panel: "JudgePanel" = self.services.judges_for(case.system)
        return panel

    def new_record(self, case: Case) -> RowRecord:
        record = RowRecord(row_id=None, system=case.system, family=self.family.name,
                           model_system=self.services.is_model(case.system), repeat=case.repeat)
        if case.kind == "row":
            row = self.dataset.rows[case.position]
            record.row_id, record.paper_id = row.row_id, row.paper_id
            record.question_type, record.domain = row.question_type, row.domain
        return record

    def hand_over(self, plain: dict[str, Any], record: RowRecord, *, final: bool = False) -> None:
        """The record whose plain data a report carries, in the process that will log the report: the session
        takes the record itself (``handed_over``) instead of reading the plain data back (issue 24 item 2).
        ``final``: nothing will change the record after this (no test's fixture holds its recorder), so its
        line of the partial rows file is its line of ``rows.jsonl`` too."""
        self._handed[id(plain)] = (plain, record, final)

    def handed_over(self, plain: dict[str, Any]) -> Optional[tuple[RowRecord, bool]]:
        """The record handed over with this very plain data and whether it is final (then forgotten), or None:
        a worker's report."""
        entry = self._handed.pop(id(plain), None)
        return (entry[1], entry[2]) if entry is not None and entry[0] is plain else None

    def recorder(self, record: RowRecord) -> Recorder:
        return Recorder(record, self.family.metric_names)

    def close(self) -> None:
        self.services.close()
