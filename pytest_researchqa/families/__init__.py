"""Benchmark families: what a kind of benchmark declares so the plugin can run it.

A family names its question types (markers), its metrics (name, label, range,
direction and which rows they average over), its judge dimensions, how its
rows load, how its cases are named and selected, and its default test. The
plugin's collection, leaderboard columns and gate validation read these
declarations; nothing else in the plugin knows which benchmark it runs.

A family is a plug-in: a package implements the ``pytest_researchqa_families``
hook (``hookspecs``) in a module it names under the ``pytest_researchqa.families``
entry point (``registry``), as the two built-in families do; ``protocols`` types
what the dotted paths of a declaration must name. See docs/extending.md.

Declarations are light: importing a family imports no pydantic, pypdf or
numpy. Heavy modules load when a family's rows are loaded.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union, cast

if TYPE_CHECKING:  # pragma: no cover
    import pluggy

    from ..dataset import Dataset, FamilyRow
    from ..papers import Paper
    from ..records import RowRecord
    from .protocols import RowLoader


# A family's check of a row against its paper (Family.paper_check): expected passages found in the text, of
# how many, the sections none of whose passages are there, and why that makes the row a dataset defect ("" if not).
PaperCheck = tuple[int, int, tuple[str, ...], str]


class DeclarationError(ValueError):
    """A part of a family's declaration a run needs that does not load (a usage error naming the field)."""


@dataclass(frozen=True)
class MetricSpec:
    """One per-row metric a family records.

    Aggregation is the same for every metric: the mean over the rows that have a value (a row the
    metric does not apply to records None), with an interval clustered by the family's unit.
    """

    name: str
    label: str  # leaderboard column
    low: float = 0.0
    high: float = 1.0
    higher_is_better: bool = True
    rows: str = "all rows"  # which rows it is measured on, for the reader
    # The question types it is defined on (empty: every type): a gate on another type could never decide.
    question_types: tuple[str, ...] = ()
    # What of a run's judging its value depends on (manifest keys among runs.JUDGING_KEYS: judges, judge_mode,
    # protocol, flagged_judge): a baseline that differs in one measured something else, so a regression gate
    # against it is undecidable. Empty: the metric is deterministic.
    measured_by: tuple[str, ...] = ()
    # Measured by the run's judges alone (--researchqa-judge): without one no row has a value, and a gate on it
    # could never decide.
    needs_judge: bool = False
    # The column of a family's own board that shows it, where that is not ``label`` (the rubric family's
    # "Coverage %"): the HTML report marks that cell for a gate on the metric.
    board_label: str = ""

    def score(self, value: float) -> float:
        """``value`` on one scale for every metric: 0 the worst its range allows, 1 the best."""
        scaled = (value - self.low) / (self.high - self.low) if self.high > self.low else 0.0
        return scaled if self.higher_is_better else 1.0 - scaled


@dataclass(frozen=True)
class Table:
    """A table of a leaderboard: what a family's renderer returns among its lines of text, and what the
    default leaderboard is made of. Each medium draws it its own way (terminal and Markdown as GitHub
    tables, the HTML report as a table)."""

    title: str  # its heading ("" for none); the default breakdowns are headed "by <title>"
    headers: Sequence[str]
    rows: Sequence[Sequence[object]]


# What a family's renderer returns: lines of text and tables, in order (or one text, drawn as it is).
Board = list[Union[str, Table]]


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
    judge_kinds: tuple[str, ...] = ()  # the kinds grading its rows (--researchqa-judge); the first by default
    # "module:attribute" naming the family's judge kinds, {kind: ModelJudge subclass}; empty: it has none.
    judges: str = ""
    uses_papers: bool = True  # rows are about a paper the plugin reads (researchqa_paper is None otherwise)
    # --researchqa-audit without papers to check: its default test describes a row when researchqa_answer is
    # None (the rubric family's). False: such an audit is a usage error (a family with papers always audits).
    audits: bool = False
    # The rows a run without --researchqa-dataset uses: a path under the plugin's bundled files, or (a third
    # party's) an absolute path as its parts; empty: the family bundles none.
    sample_dataset: tuple[str, ...] = ()
    # "module:Class" of the model system for this family's rows (--researchqa-model): a llm.system.ModelSystem
    # subclass, built with its for_run; or "module:function" called as (spec, runner, cache, settings,
    # timeout_s=...). Empty: a model cannot answer the family's rows.
    model_system: str = ""
    # "module:function" run on the controller once every row is answered (e.g. pairwise battles), given
    # (records, services, settings, say); what it returns (plain data) reaches the renderer.
    after_answers: str = ""
    # "module:function" given (selected rows, settings) before any row runs: why the run may not start, or None
    # (e.g. a pairwise schedule over the judge-call cap).
    before_rows: str = ""
    # "module:function" rendering the leaderboard, given (records, family, results); empty: the default tables.
    renderer: str = ""
    # "module:function" giving the lines printed before a run's first model call (its calls and their
    # estimated cost), given ([(system, row), ...], services, settings); empty: nothing printed.
    call_estimate: str = ""
    # The system a run without --researchqa-system/--researchqa-model answers with; empty: such a run is a usage
    # error asking for one (a third party's family that names none must not run bm25, the citation family's).
    default_system: str = ""
    # The systems named by a word that answer the family's rows (--researchqa-system=NAME): (name,
    # "module:attribute") of a callable (row, paper) -> Answer, or of a class built with no argument into one.
    systems: tuple[tuple[str, str], ...] = ()
    # "module:function" checking a row against its paper once, given (row, paper): a PaperCheck (the citation
    # family's: are the expected passages in the text?). Empty: rows are not checked against their papers.
    paper_check: str = ""
    # What --researchqa-protocol=paper follows of the family's seed, and what stays the project's: said in
    # every run under that protocol (terminal, Markdown, HTML, JSON notes). Empty: the protocol changes nothing.
    paper_protocol: str = ""

    def __post_init__(self) -> None:
        """A malformed ``systems`` is said where the family is declared (its plugin is then reported broken)."""
        if not isinstance(self.systems, tuple):
            raise DeclarationError(f"the {self.name} family's systems are {self.systems!r}: a tuple of (name, "
                                   "'module:attribute') pairs")
        names = []
        for entry in self.systems:
            module, _, attribute = entry[1].partition(":") if _is_pair(entry) else ("", "", "")
            if not _is_pair(entry) or not entry[0] or ":" in entry[0] or not module or not attribute:
                raise DeclarationError(f"the {self.name} family's systems hold {entry!r}: each is a (name, "
                                       "'module:attribute') pair of strings, the name a word without ':'")
            names.append(entry[0])
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise DeclarationError(f"the {self.name} family's systems name {', '.join(map(repr, repeated))} more "
                                   "than once")

    @property
    def cluster_unit(self) -> str:
        """What intervals and paired tests resample together: a paper's rows, or (no papers) each query."""
        return "papers" if self.uses_papers else "queries"

    @functools.cached_property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)  # read once a row: made once a family

    def check_paper(self, row: "FamilyRow", paper: "Paper") -> Optional["PaperCheck"]:
        """The family's check of a row against its paper (``paper_check``), or None when it declares none."""
        return self._paper_checker(row, paper) if self._paper_checker is not None else None

    @functools.cached_property
    def _paper_checker(self) -> "Optional[Callable[[FamilyRow, Paper], PaperCheck]]":
        return cast("Callable[[FamilyRow, Paper], PaperCheck]", resolve(self.paper_check)) if self.paper_check else None

    def metric(self, name: str) -> Optional[MetricSpec]:
        return next((m for m in self.metrics if m.name == name), None)

    def load(self, path: Path) -> "Dataset[Any]":
        """The loader's dataset, checked to be of the shape the plugin reads: a ``DatasetError`` naming
        the family and its loader when it returns something else (a list, plain dicts, rows missing a
        ``FamilyRow`` field)."""
        from ..dataset import Dataset, DatasetError

        load = cast("RowLoader", resolve(self.loader))
        dataset = load(path)
        wrong = (f"returned {type(dataset).__name__}, not a pytest_researchqa.dataset.Dataset"
                 if not isinstance(dataset, Dataset) else _row_shape_problem(dataset.rows))
        if wrong:
            raise DatasetError(f"the {self.name} family's loader ({self.loader}) {wrong} (reading {path}; "
                               "docs/extending.md, section 2)")
        return _checked_rows(dataset, self)

    def protocol_file(self) -> str:
        """The file of the default test module (``protocol_module``); a DeclarationError when it does not load."""
        try:
            module_file = importlib.import_module(self.protocol_module).__file__
        except Exception as error:  # noqa: BLE001 -- a third party's declaration: named with its field
            raise DeclarationError(f"the {self.name} family's protocol_module ({self.protocol_module}) cannot be "
                                   f"loaded: {type(error).__name__}: {error}") from None
        if module_file is None:
            raise DeclarationError(f"the {self.name} family's protocol_module ({self.protocol_module}) is not a "
                                   "module file")
        return module_file

    def recognizes(self, path: Path, head: str) -> bool:
        """Whether a dataset file is this family's, from its suffix and its first 64 KB (``head``);
        a run without ``--researchqa-family`` uses the first family that recognizes its dataset."""
        return False

    def case_id(self, row: "FamilyRow", system: Optional[str]) -> str:
        parts = [system, row.question_type, row.row_id] if system else [row.question_type, row.row_id]
        return "-".join(_id_part(str(p)) for p in parts)

    def board(self, records: "Sequence[RowRecord]", results: Optional[dict[str, Any]]) -> tuple[Optional[Board], str]:
        """The family's own leaderboard (``renderer``) as lines of text and tables, or (None, why) when it has
        none or it failed: the caller then draws the default tables and says why, so a renderer that raises at
        the end of a run costs its look, never the run's verdict, JUnit or JSON. A renderer returning one text
        gives a board of that text alone."""
        if not self.renderer:
            return None, ""
        try:
            made = resolve(self.renderer)(records, self, results)
            if isinstance(made, str):
                return [made], ""
            board: Board = [part if isinstance(part, Table) else str(part) for part in made]
            return board, ""
        except Exception as error:  # noqa: BLE001 -- a third party's code, after every row ran
            return None, (f"warning: the {self.name} family's renderer ({self.renderer}) raised "
                          f"{type(error).__name__}: {error}; its leaderboard is shown in the default tables")

    def render(self, records: "Sequence[RowRecord]", results: Optional[dict[str, Any]]) -> tuple[Optional[str], str]:
        """The family's own leaderboard as text (terminal, Markdown): ``board`` with each table as a GitHub
        table under its heading; (None, why) as ``board``."""
        board, failed = self.board(records, results)
        if board is None:
            return None, failed
        from tabulate import tabulate

        parts: list[str] = []
        for part in board:
            if isinstance(part, Table):
                if part.title:
                    parts.append(f"{part.title}:")
                parts.append(str(tabulate(part.rows, headers=part.headers, tablefmt="github", disable_numparse=True)))
            elif part:
                parts.append(part)
        return "\n".join(parts), ""

    def keywords(self, row: "FamilyRow") -> set[str]:
        """Extra words ``-k`` matches on a row's test (besides its id): the citation family's by default."""
        words = {row.paper_id, row.row_id, row.domain, (row.domain or "").replace(" ", "_")}
        return {w for w in words if w}

    def marks(self, row: "FamilyRow") -> list[str]:
        return [row.question_type]


ROW_FIELDS = ("row_id", "question", "question_type", "domain", "paper_id")  # what FamilyRow promises


def _checked_rows(dataset: "Dataset[Any]", family: "Family") -> "Dataset[Any]":
    """What any loader's rows must be, whatever the family; a row that is not is an invalid row, and the
    others run (the built-in loaders already report theirs with the file's line):

    * a row id is a row's name in saved runs, comparisons and reports: a second row of one id would be
      merged with the first when runs are compared;
    * a question type is a marker: one the family does not declare is an unknown mark (every row lost
      behind a collection error under ``--strict-markers``)."""
    from ..dataset import RowProblem

    first: dict[str, int] = {}
    kept, problems = [], []
    for number, row in enumerate(dataset.rows, 1):
        seen = first.setdefault(str(row.row_id), number)
        if seen != number:
            problems.append(RowProblem(str(dataset.path), f"row {number}", "row_id",
                                       f"duplicate of row {seen} ({row.row_id!r})", row_id=str(row.row_id)))
        elif row.question_type not in family.question_types:
            problems.append(RowProblem(str(dataset.path), f"row {number}", "question_type",
                                       f"{row.question_type!r} is not one of the {family.name} family's question "
                                       f"types ({', '.join(family.question_types)})", row_id=str(row.row_id)))
        else:
            kept.append(row)
    if not problems:
        return dataset
    return replace(dataset, rows=kept, problems=[*dataset.problems, *problems])


def _row_shape_problem(rows: Any) -> Optional[str]:
    """What is wrong with a loader's rows, or None: each must have FamilyRow's attributes."""
    if not isinstance(rows, list):
        return f"returned a Dataset whose rows are a {type(rows).__name__}, not a list"
    for position, row in enumerate(rows, 1):
        missing = [name for name in ROW_FIELDS if not hasattr(row, name)]
        if missing:
            return (f"returned rows that are not FamilyRow: row {position} (a {type(row).__name__}) has no "
                    f"{', '.join(repr(m) for m in missing)} attribute")
    return None


_SPACES = re.compile(r"\s+")  # in a test id, each run of white space is one "_"


def _id_part(text: str) -> str:
    """``text`` with each run of white space as one "_". Text without a space that is all printable has no
    white space (every other character ``\\s`` matches is not printable): most ids, kept without a regex."""
    return text if " " not in text and text.isprintable() else _SPACES.sub("_", text)

DEFAULT_FAMILY = "citation"  # a run without a dataset that no family recognizes: the bundled sample's family


def _is_pair(entry: Any) -> bool:
    return isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(part, str) for part in entry)


def resolve(target: str) -> Any:
    """The object a ``module:attribute`` declaration names (imported on first use); the attribute may be
    dotted (``module:Class.method``)."""
    module, _, attribute = target.partition(":")
    found: Any = importlib.import_module(module)
    for name in attribute.split("."):
        found = getattr(found, name)
    return found


def get_family(name: str, pluginmanager: "Optional[pluggy.PluginManager]" = None) -> Family:
    """The family of that name among those installed (see ``registry``); ValueError for an unknown one."""
    from .registry import available_families, family_plugins, find_family

    manager = family_plugins(pluginmanager)
    return find_family(name, available_families(manager), manager)


def declaration_data(family: Family) -> dict[str, Any]:
    """What a saved run keeps of its family's declaration (plain data): enough for ``python -m
    pytest_researchqa show/view/compare`` to render the run where the family is not installed (a family
    a conftest.py declares, or a package since uninstalled)."""
    return {"name": family.name, "description": family.description, "question_types": list(family.question_types),
            "metrics": [asdict(m) for m in family.metrics],
            "judge_dimensions": [asdict(d) for d in family.judge_dimensions],
            "uses_papers": family.uses_papers, "scope_note": family.scope_note, "renderer": family.renderer}


def saved_family(data: Any) -> Optional[Family]:
    """The declaration a saved run kept (``declaration_data``) as a Family that renders the run but loads no
    rows; None when there is none or it is malformed."""
    if not isinstance(data, dict):
        return None
    try:
        return Family(name=str(data["name"]), description=str(data.get("description", "")),
                      question_types=tuple(str(t) for t in data.get("question_types", ())),
                      metrics=tuple(MetricSpec(**{**m, "question_types": tuple(m.get("question_types") or ()),
                                                  "measured_by": tuple(m.get("measured_by") or ())})
                                    for m in data["metrics"]),
                      judge_dimensions=tuple(JudgeDimension(**d) for d in data.get("judge_dimensions", ())),
                      protocol_module="", loader="", uses_papers=bool(data.get("uses_papers", True)),
                      scope_note=str(data.get("scope_note", "")), renderer=str(data.get("renderer") or ""))
    except (KeyError, TypeError, ValueError):
        return None


def sniff_family(path: Optional[Path], families: dict[str, Family]) -> Optional[str]:
    """The first family (in name order) that recognizes the dataset file; None when none does or there is
    no file. Reads the file's first 64 KB only; an unreadable file is left to the loader to report."""
    return next(iter(recognizing(path, families)), None)


def recognizing(path: Optional[Path], families: dict[str, Family]) -> list[str]:
    """The families (in name order) that recognize the dataset file, from its first 64 KB."""
    if path is None:
        return []
    try:
        with open(path, "rb") as stream:
            head = stream.read(65536).decode("utf-8-sig", errors="replace")
    except OSError:
        return []
    found = []
    for name, family in families.items():
        try:
            if family.recognizes(path, head):
                found.append(name)
        except Exception as error:  # noqa: BLE001 -- a third party's reader that fell over on this file
            from .registry import FamilyError

            raise FamilyError(f"the {name} family's recognizes() raised {type(error).__name__}: {error} reading "
                              f"{path} (is the file that family's, and broken? Name the dataset's family with "
                              "--researchqa-family=NAME to have its own reader say)") from None
    return found


def first_row_keys(head: str) -> set[str]:
    """The keys of a JSON/JSONL file's first row, from its first bytes (for ``Family.recognizes``)."""
    if head.lstrip()[:1] == "[":  # a JSON list: look at the keys of its first row
        window = head[: head.find("}") + 1] if "}" in head else head
    else:  # a JSONL file's first row: its first line that is not blank
        window = head.lstrip().split("\n", 1)[0]
    return set(re.findall(r'"([A-Za-z_]+)"\s*:', window))
