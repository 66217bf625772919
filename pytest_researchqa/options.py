"""Command-line options and ini keys, parsed into plain settings.

The table below is the single source of every option's flag, kind, default,
choices and help. Every setting is a ``--researchqa-*`` flag backed by an ini
key of the same name with underscores (``researchqa_dataset``...), typed, so
pytest 9's native ``[tool.pytest]`` table accepts ``researchqa_sample = 6``.
Bad values raise ``pytest.UsageError`` naming the valid choices.

PYTEST_DONT_REWRITE: pytest loads this module at every start-up; it holds no test's asserts, so
pytest compiles it as Python does instead of rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from .families import Family
    from .reporting.gates import Gate, RegressionGate

MAX_SAVE_NAME = 100


@dataclass(frozen=True)
class Option:
    flag: str
    kind: str  # "path", "append", "int", "float", "flag", "choice", "text"
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: Optional[float] = None

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("--researchqa-run", "flag",
           "Run the benchmark with the settings from the ini file. Any --researchqa-* option on the command line "
           "does too; ini settings alone never add the benchmark to a run."),
    Option("--researchqa-dataset", "path",
           "Dataset file (.jsonl, .json, .yaml). Default: the family's bundled sample."),
    Option("--researchqa-family", "text",
           "Benchmark family: citation (questions about one paper, graded by verbatim citations), rubric "
           "(research queries judged against rubric items, pairwise battles, Elo), or one an installed plugin "
           "provides. Default: what the dataset's shape implies (citation without a dataset)."),
    Option("--researchqa-papers", "path", "Folder of <paper_id>.pdf/.txt/.md. Default: papers/ beside the dataset."),
    Option("--researchqa-system", "append",
           "System under test: oracle, bm25 (citation family), rubric-oracle (rubric family) or "
           "package.module:function. Repeatable."),
    Option("--researchqa-model", "append",
           "A litellm model as the system under test (gpt-5.4, anthropic/claude-opus-4-7, openai/<alias> ...). "
           "Repeatable."),
    Option("--researchqa-model-param", "append",
           "MODEL:KEY=VALUE passed to litellm for that model (api_base, temperature, response_format ...; "
           "max_input_tokens, structured_output=auto|json_schema|json_object|off, profile=local|remote, "
           "concurrency and timeout steer the plugin). Repeatable."),
    Option("--researchqa-concurrency", "int", "Model calls in flight per provider (default 5; 1 for a local server).",
           5, minimum=1),
    Option("--researchqa-rows-per-minute", "int", "Start at most N model calls per minute per provider.", minimum=1),
    Option("--researchqa-repeats", "int",
           "Answer each model row N times (distinct cache keys; the first is the answer of a run without "
           "repeats): the report adds each metric's run-to-run spread and per-row spread (docs/models.md).",
           1, minimum=1),
    Option("--researchqa-max-cost", "float",
           "Budget in US dollars: refuse to start when the estimated cost is above it, and start no model call "
           "once the run has spent it (rows not run are errors; no gate passes). docs/models.md.", minimum=0.0),
    Option("--researchqa-dry-run", "flag",
           "Print the model calls the run would make (per model: calls, cached answers, tokens, estimated cost) "
           "and stop before the first."),
    Option("--researchqa-timeout", "float",
           "Seconds before a model call times out (default 120; 900 for a local server).", 120.0, minimum=0.001),
    Option("--researchqa-retries", "int",
           "Retries of a timed-out, rate-limited or failed call (default 3). A malformed or cut-off reply gets one "
           "repair call instead; 0 turns both off.", 3, minimum=0),
    Option("--researchqa-baseline", "flag",
           "Send question and whole paper with no citation contract: citation metrics are \"—\"."),
    Option("--researchqa-refresh", "flag", "Ignore cached model answers (new answers are still cached)."),
    Option("--researchqa-judge", "append",
           "An LLM judge (litellm model), or 'auto' for one of another family than each system. Repeatable."),
    Option("--researchqa-judge-mode", "choice",
           "rubric (anchored 1-5, default) or claims (scores computed from claim lists).", "rubric",
           ("rubric", "claims")),
    Option("--researchqa-flagged-judge", "text",
           "A litellm model that decides premise_flagged (does the answer refuse or correct a false premise?) "
           "instead of the text heuristic: a yes/no verdict with a reason, cached (judges/premise.md; "
           "docs/metrics.md)."),
    Option("--researchqa-judge-pool", "append",
           "Candidates for --researchqa-judge=auto (default: gpt-5.4, claude, gemini)."),
    Option("--researchqa-judge-repeats", "int", "Re-judge a sample K more times and report how often scores flip.", 0,
           minimum=0),
    Option("--researchqa-protocol", "choice",
           "project (default: this plugin's choices) or paper: each seed's own procedure, to reproduce its "
           "tables (docs/rubric.md, 'Reproducing the paper').", "project", ("project", "paper")),
    Option("--researchqa-ensemble", "choice",
           "Rubric family: points per direct-judge vote in the ensemble: eq1 (4, the paper's Eq. 1, default) or "
           "notebook (5, as the notebook behind Table 3).", "eq1", ("eq1", "notebook")),
    Option("--researchqa-judge-prompts", "path",
           "Folder of judge prompt files used instead of the bundled ones of the same name (coverage.md, "
           "pairwise.md, coverage_paper.md, pairwise_paper.md, rubric.md, claims.md, premise.md): e.g. the rubric "
           "seed's released prompts, to reproduce its tables word for word (docs/rubric.md)."),
    Option("--researchqa-battles", "text",
           "Rubric family: pairwise battles per pair of systems, N or 'all' (default all queries both answered).",
           "all"),
    Option("--researchqa-max-judge-calls", "int",
           "Rubric family: refuse to start when the pairwise schedule needs more judge calls than N "
           "(default 20000; 0: no cap).", 20000, minimum=0),
    Option("--researchqa-date-cutoff", "choice",
           "Rubric family: tell systems the row's date cutoff (on, default) or not (off).", "on", ("on", "off")),
    Option("--researchqa-length-words", "int",
           "Rubric family: length guidance in words given to systems (default 250; 0: none).", 250, minimum=0),
    Option("--researchqa-generic-rubric", "flag",
           "Rubric family: judge rows without rubric items against eight generic criteria instead of skipping them."),
    Option("--researchqa-sample", "int",
           "Run a sample of N rows: stratified by question type (every type present at least once, shares "
           "proportional), evenly spaced within a type; under --researchqa-protocol=paper, row int(i*n/N) for "
           "i < N (the citation seed's sample). The same on every run and worker.", minimum=1),
    Option("--researchqa-fail-under", "append",
           "Gate: METRIC=VALUE or TYPE.METRIC=VALUE (e.g. multi_hop.section_coverage=0.7). "
           "Repeatable. When given, the gates decide the exit status."),
    Option("--researchqa-fail-rows", "flag",
           "Rows below their per-row bar fail as tests. Default: they are reported as xfailed, counted and "
           "diagnosed in the summary, and only errors and configured gates decide the exit status."),
    Option("--researchqa-undecidable", "choice",
           "A gate that cannot decide (too few papers, a metric undefined or NaN, no baseline): warn (default: "
           "shown as undecided, exit 0) or fail (exit 1).", "warn", ("warn", "fail")),
    Option("--researchqa-only", "flag",
           "Run only the benchmark: the project's own collected tests are deselected."),
    Option("--researchqa-html", "path",
           "Write one self-contained HTML report to this file: leaderboard, gates, and every row with its question, "
           "answer, citations (verdict, page, word diff against the paper) and judges; opens offline."),
    Option("--researchqa-json", "path",
           "Write the run's machine-readable summary (schema researchqa-summary/1: metrics, intervals, counts, "
           "errors, cost, each gate's state and figures) to this file. Every saved run keeps one as summary.json."),
    Option("--researchqa-allow-partial", "flag",
           "Let gates decide a run that measured fewer rows than it selected (-x, --maxfail, --lf, --sw)."),
    Option("--researchqa-results", "text",
           "Folder of saved runs (default .researchqa/runs under the rootdir); 'off' saves nothing."),
    Option("--researchqa-save", "text", "Name of this run's folder of results (default: run).", "run"),
    Option("--researchqa-markdown", "path",
           "Write the leaderboard, slices and gate results as GitHub-flavoured Markdown to this file "
           "(also appended to $GITHUB_STEP_SUMMARY when set)."),
    Option("--researchqa-compare", "text",
           "Compare with a saved run (its folder, folder name, --researchqa-save name, or 'last' for the most recent "
           "saved run): the leaderboard gains a delta per metric and a comparison table."),
    Option("--researchqa-compare-missing", "choice",
           "When --researchqa-compare names no saved run: error (default, a usage error before any row runs) or "
           "skip (the run says 'no baseline: nothing compared' and its regression gates are undecidable).",
           "error", ("error", "skip")),
    Option("--researchqa-compare-map", "append",
           "NEW=OLD: compare this run's system NEW with the baseline's system OLD (default: same name). Repeatable."),
    Option("--researchqa-fail-on-regression", "append",
           "Gate against --researchqa-compare's run: METRIC[:MIN_EFFECT] or TYPE.METRIC[:MIN_EFFECT] fails when the "
           "paired, paper-clustered drop is significant at alpha 0.05 and larger than MIN_EFFECT (default 0). "
           "Repeatable."),
    Option("--researchqa-plots", "path",
           "Write figures (PNG and SVG) to this folder: quality-latency frontier, per-question-type profile, "
           "domain x system heatmap, per-paper deltas. Needs pytest-researchqa[plots]."),
    Option("--researchqa-cache-dir", "path", "Where extracted papers and downloads are cached."),
    Option("--researchqa-download-papers", "flag", "Download missing papers from paper_s3_url into the cache."),
    Option("--researchqa-download-allow-private", "flag",
           "Let downloads reach loopback, private and link-local addresses (refused by default)."),
    Option("--researchqa-audit", "flag",
           "Check the dataset against its papers (no system runs): per paper, the share of expected passages found."),
    Option("--researchqa-dataset-defects", "choice",
           "Rows with a required section the paper does not contain: xfail (default) or grade.", "xfail",
           ("xfail", "grade")),
)
_INI_TYPES: dict[str, Literal["int", "float"]] = {"int": "int", "float": "float"}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("researchqa", "citation-grounded paper QA benchmark (pytest-researchqa)")
    for option in OPTIONS:
        help_text = option.help
        if option.choices:
            help_text += f" Choices: {', '.join(option.choices)}."
        if option.kind == "flag":
            group.addoption(option.flag, action="store_true", default=None, dest=option.dest, help=help_text)
            parser.addini(option.dest, help_text, type="bool", default=False)
        elif option.kind == "append":
            group.addoption(option.flag, action="append", default=None, dest=option.dest, metavar="VALUE",
                            help=help_text)
            parser.addini(option.dest, help_text, type="linelist", default=[])
        else:
            group.addoption(option.flag, action="store", default=None, dest=option.dest, metavar="VALUE",
                            help=help_text)
            parser.addini(option.dest, help_text, type=_INI_TYPES.get(option.kind, "string"), default=None)


@dataclass(frozen=True)
class Settings:
    """Everything the plugin was asked to do, as plain values."""

    active: bool  # any researchqa option given, on the command line or in an ini file
    requested: bool  # a researchqa option given on the command line: run the benchmark
    dataset: Optional[Path]
    papers: Optional[Path]
    systems: tuple[str, ...]
    sample: Optional[int]
    gates: tuple["Gate", ...]
    cache_dir: Optional[Path]
    download_papers: bool
    audit: bool
    defect_policy: str
    family: str = "citation"  # families.DEFAULT_FAMILY, named here so an unused plugin imports no family
    judge_prompts: Optional[Path] = None  # a folder of prompt files overriding the bundled judges/ ones
    # The family's declaration, found through the family plug-ins when the benchmark is active (see
    # families.registry); None in a run that never uses it, which then pays nothing to discover families.
    declaration: Optional["Family"] = field(default=None, repr=False, compare=False)
    models: tuple[str, ...] = ()
    model_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    concurrency: int = 5
    rows_per_minute: Optional[int] = None
    max_cost: Optional[float] = None
    repeats: int = 1
    dry_run: bool = False
    timeout_s: float = 120.0
    retries: int = 3
    baseline: bool = False
    refresh: bool = False
    judges: tuple[str, ...] = ()
    judge_mode: str = "rubric"
    judge_pool: tuple[str, ...] = ()
    judge_repeats: int = 0
    flagged_judge: Optional[str] = None  # a model deciding premise_flagged instead of the heuristic
    allow_partial: bool = False
    results: Optional[str] = None  # None: the default folder; "off": save nothing
    save_name: str = "run"
    markdown: Optional[Path] = None
    download_allow_private: bool = False
    compare: Optional[str] = None  # a saved run's spec, resolved at configure
    compare_map: dict[str, str] = field(default_factory=dict)
    regressions: tuple["RegressionGate", ...] = ()
    plots: Optional[Path] = None
    fail_rows: bool = False
    undecidable_fails: bool = False
    only: bool = False
    json_summary: Optional[Path] = None
    html: Optional[Path] = None
    compare_missing: str = "error"
    battles: Optional[int] = None  # per pair of systems; None: every query both answered
    max_judge_calls: int = 20000  # the pairwise schedule's cap (0: none)
    date_cutoff: bool = True
    length_words: Optional[int] = 250
    generic_rubric: bool = False
    protocol: str = "project"  # or "paper": each seed's own procedure
    ensemble: str = "eq1"  # or "notebook": 5 points per direct vote
    # The options given on the command line or in an ini file (their dests): a profile's defaults
    # (the local-server profile's concurrency and deadline) yield to what the user chose.
    given: frozenset[str] = frozenset()

    @property
    def all_systems(self) -> tuple[str, ...]:
        """Plain systems then models: the systems a run compares."""
        return self.systems + self.models

    @property
    def benchmark_family(self) -> "Family":
        if self.declaration is not None:
            return self.declaration
        from .families import get_family

        return get_family(self.family)


def read_settings(config: pytest.Config) -> Settings:
    resolved: dict[str, Any] = {}
    on_command_line = False
    given_any = False
    given: set[str] = set()
    for option in OPTIONS:
        cli = config.getoption(option.dest)
        cli = cli if cli not in (None, []) else None
        configured = config.getini(option.dest)
        configured = configured if configured not in (None, "", [], False) else None
        on_command_line |= cli is not None
        given_any |= cli is not None or configured is not None
        if cli is not None or configured is not None:
            given.add(option.dest)
        value = cli if cli is not None else configured
        resolved[option.dest] = _parse(option, value, from_ini=cli is None, config=config)

    # An unused plugin imports no family: the default one is named by Settings' default.
    declaration = _family(config, resolved) if given_any else None
    family = declaration.name if declaration is not None else Settings.family
    models = tuple(dict.fromkeys(resolved["researchqa_model"] or ()))
    default_system = declaration.default_system if declaration is not None else "bm25"
    systems = tuple(resolved["researchqa_system"] or ()) or (() if models else (default_system,))
    judges = tuple(dict.fromkeys(resolved["researchqa_judge"] or ()))
    judge_pool = tuple(resolved["researchqa_judge_pool"] or ())
    flagged_judge = (resolved["researchqa_flagged_judge"] or "").strip() or None
    named = list(dict.fromkeys([*models, *judges, *judge_pool, *([flagged_judge] if flagged_judge else [])]))
    model_params: dict[str, dict[str, Any]] = {}
    if named or resolved["researchqa_model_param"]:  # a run without models never loads llm_params
        from .llm_params import parse_model_params

        try:
            model_params = parse_model_params(list(resolved["researchqa_model_param"] or ()), named)
        except ValueError as error:
            raise pytest.UsageError(f"--researchqa-model-param {error}") from None
    gates: tuple["Gate", ...] = ()
    if resolved["researchqa_fail_under"]:
        from .reporting.gates import GateSpecError, parse_gate

        assert declaration is not None  # an option was given
        try:
            gates = tuple(parse_gate(text, declaration) for text in resolved["researchqa_fail_under"])
        except GateSpecError as error:
            raise pytest.UsageError(f"--researchqa-fail-under {error}") from None
    regressions: tuple["RegressionGate", ...] = ()
    if resolved["researchqa_fail_on_regression"]:
        from .reporting.gates import GateSpecError, parse_regression_gate

        if not resolved["researchqa_compare"]:
            raise pytest.UsageError("--researchqa-fail-on-regression compares with a saved run: "
                                    "add --researchqa-compare=RUN (a saved run's name, folder, or 'last')")
        try:
            assert declaration is not None  # an option was given
            regressions = tuple(parse_regression_gate(text, declaration)
                                for text in resolved["researchqa_fail_on_regression"])
        except GateSpecError as error:
            raise pytest.UsageError(f"--researchqa-fail-on-regression {error}") from None
    if len(resolved["researchqa_save"]) > MAX_SAVE_NAME:
        # It names a folder: file systems refuse names of more than 255 bytes.
        raise pytest.UsageError(f"--researchqa-save: {len(resolved['researchqa_save'])} characters; a run's name "
                                f"has at most {MAX_SAVE_NAME}")
    compare_map: dict[str, str] = {}
    if resolved["researchqa_compare_map"]:
        from .reporting.compare import parse_mapping

        try:
            compare_map = parse_mapping(resolved["researchqa_compare_map"])
        except ValueError as error:
            raise pytest.UsageError(f"--researchqa-compare-map {error}") from None
    return Settings(
        active=given_any,
        requested=on_command_line,
        dataset=resolved["researchqa_dataset"],
        papers=resolved["researchqa_papers"],
        systems=tuple(dict.fromkeys(systems)),
        sample=resolved["researchqa_sample"],
        gates=gates,
        cache_dir=resolved["researchqa_cache_dir"],
        judge_prompts=resolved["researchqa_judge_prompts"],
        download_papers=resolved["researchqa_download_papers"],
        audit=resolved["researchqa_audit"],
        defect_policy=resolved["researchqa_dataset_defects"],
        family=family,
        declaration=declaration,
        models=models,
        model_params=model_params,
        concurrency=resolved["researchqa_concurrency"],
        rows_per_minute=resolved["researchqa_rows_per_minute"],
        max_cost=resolved["researchqa_max_cost"],
        repeats=resolved["researchqa_repeats"],
        dry_run=resolved["researchqa_dry_run"],
        timeout_s=resolved["researchqa_timeout"],
        retries=resolved["researchqa_retries"],
        baseline=resolved["researchqa_baseline"],
        refresh=resolved["researchqa_refresh"],
        judges=judges,
        judge_mode=resolved["researchqa_judge_mode"],
        judge_pool=judge_pool,
        judge_repeats=resolved["researchqa_judge_repeats"],
        flagged_judge=flagged_judge,
        allow_partial=resolved["researchqa_allow_partial"],
        results=resolved["researchqa_results"],
        save_name=resolved["researchqa_save"],
        markdown=resolved["researchqa_markdown"],
        download_allow_private=resolved["researchqa_download_allow_private"],
        compare=resolved["researchqa_compare"],
        compare_map=compare_map,
        regressions=regressions,
        plots=resolved["researchqa_plots"],
        fail_rows=resolved["researchqa_fail_rows"],
        undecidable_fails=resolved["researchqa_undecidable"] == "fail",
        only=resolved["researchqa_only"],
        json_summary=resolved["researchqa_json"],
        html=resolved["researchqa_html"],
        compare_missing=resolved["researchqa_compare_missing"],
        battles=_battles(resolved["researchqa_battles"]),
        max_judge_calls=resolved["researchqa_max_judge_calls"],
        date_cutoff=resolved["researchqa_date_cutoff"] == "on",
        length_words=resolved["researchqa_length_words"] or None,
        generic_rubric=resolved["researchqa_generic_rubric"],
        protocol=resolved["researchqa_protocol"],
        ensemble=resolved["researchqa_ensemble"],
        given=frozenset(given),
    )


def _family(config: pytest.Config, resolved: dict[str, Any]) -> "Family":
    """The run's family: the one named, else the first that recognizes the dataset, else the default."""
    from .families import DEFAULT_FAMILY, sniff_family
    from .families.registry import FamilyError, available_families, find_family

    try:
        families = available_families(config.pluginmanager)
        name = (resolved["researchqa_family"] or sniff_family(resolved["researchqa_dataset"], families)
                or DEFAULT_FAMILY)
        return find_family(name, families)
    except FamilyError as error:
        raise pytest.UsageError(f"--researchqa-family: {error}") from None


def _battles(text: str) -> Optional[int]:
    if str(text).strip().lower() == "all":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"--researchqa-battles: {text!r} is not 'all' or a whole number of at least 1")
    return count


def _parse(option: Option, raw: Any, *, from_ini: bool, config: pytest.Config) -> Any:
    """One option's value from its raw text, with the table's default, choices and bounds."""
    if option.kind == "flag":
        return bool(raw)
    if option.kind == "append":
        return list(raw) if raw else []
    if raw is None:
        return option.default
    if option.kind == "path":
        candidate = Path(os.path.expanduser(str(raw)))
        if not candidate.is_absolute() and from_ini and config.inipath is not None:
            candidate = config.inipath.parent / candidate  # ini paths are relative to the ini file
        return candidate
    if option.kind == "text":
        return str(raw)
    if option.kind == "choice":
        if raw not in option.choices:
            raise pytest.UsageError(f"{option.flag}: {raw!r} is not one of {', '.join(option.choices)}")
        return raw
    kind = int if option.kind == "int" else float
    try:
        parsed = kind(raw)
    except (TypeError, ValueError):
        whole = "whole " if kind is int else ""
        raise pytest.UsageError(f"{option.flag}: {raw!r} is not a {whole}number") from None
    if option.minimum is not None and parsed < option.minimum:
        raise pytest.UsageError(f"{option.flag}: must be at least {option.minimum:g}")
    return parsed
