"""Command-line options and ini keys (``settings`` parses them into plain settings).

The table below (``_TABLE``) is the single source of every option's flag, kind, default,
choices and help. Every setting is a ``--researchqa-*`` flag backed by an ini
key of the same name with underscores (``researchqa_dataset``...), typed, so
pytest 9's native ``[tool.pytest]`` table accepts ``researchqa_sample = 6``.
Bad values raise ``pytest.UsageError`` naming the valid choices (``settings``).

The plugin loads this module at every start-up (``plugin.py``: from its byte-code, past pytest's
rewriter). PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, Literal, Optional

import pytest


class Option:
    """One row of the table. A plain class with slots: a named tuple's class costs more to make at every
    start-up than the table's fifty rows (docs/performance.md)."""

    __slots__ = ("flag", "kind", "help", "default", "choices", "minimum", "dest")

    def __init__(self, flag: str, kind: str, help: str, default: Any = None, choices: tuple[str, ...] = (),
                 minimum: Optional[float] = None) -> None:
        self.flag = flag
        self.kind = kind  # "path", "append", "int", "float", "flag", "choice", "text"
        self.help = help
        self.default = default
        self.choices = choices
        self.minimum = minimum
        self.dest = flag[2:].replace("-", "_")


# The table: a header line per option (flag, kind, then default=, choices= and minimum= when set) and its help
# on the indented lines below it, joined with spaces.
_TABLE = """
--researchqa-run  flag
    Run the benchmark with the settings from the ini file. Any --researchqa-* option on the command line does
    too; ini settings alone never add the benchmark to a run.
--researchqa-dataset  path
    Dataset file (.jsonl, .json, .yaml). Default: the family's bundled sample.
--researchqa-family  text
    Benchmark family: citation (questions about one paper, graded by verbatim citations), rubric (research
    queries judged against rubric items, pairwise battles, Elo), or one an installed plugin provides. Default:
    what the dataset's shape implies (citation without a dataset).
--researchqa-papers  path
    Folder of <paper_id>.pdf/.txt/.md. Default: papers/ beside the dataset.
--researchqa-system  append
    System under test: oracle, bm25 (citation family), rubric-oracle (rubric family) or package.module:function.
    Repeatable.
--researchqa-model  append
    A litellm model as the system under test (gpt-5.4, anthropic/claude-opus-4-7, openai/<alias> ...).
    Repeatable.
--researchqa-model-param  append
    MODEL:KEY=VALUE passed to litellm for that model (api_base, temperature, response_format ...;
    max_input_tokens, structured_output=auto|json_schema|json_object|off, profile=local|remote, concurrency and
    timeout steer the plugin). Repeatable.
--researchqa-concurrency  int  default=5  minimum=1
    Model calls in flight per provider (default 5; 1 for a local server).
--researchqa-rows-per-minute  int  minimum=1
    Start at most N model calls per minute per provider.
--researchqa-repeats  int  default=1  minimum=1
    Answer each model row N times (distinct cache keys; the first is the answer of a run without repeats): the
    report adds each metric's run-to-run spread and per-row spread (docs/models.md).
--researchqa-max-cost  float  minimum=0.0
    Budget in US dollars: refuse to start when the estimated cost is above it, and start no model call once the
    run has spent it (rows not run are errors; no gate passes). docs/models.md.
--researchqa-dry-run  flag
    Print the model calls the run would make (per model: calls, cached answers, tokens, estimated cost) and stop
    before the first.
--researchqa-timeout  float  default=120.0  minimum=0.001
    Seconds before a model call times out (default 120; 900 for a local server).
--researchqa-retries  int  default=3  minimum=0
    Retries of a timed-out, rate-limited or failed call (default 3). A malformed or cut-off reply gets one
    repair call instead; 0 turns both off.
--researchqa-baseline  flag
    Send question and whole paper with no citation contract: citation metrics are "—".
--researchqa-refresh  flag
    Ask every model system again, ignoring its cached answers (new answers are still cached). Verdicts are
    cached by the answer they judge: a changed answer is judged again, the same text by the same judge is not.
--researchqa-judge  append
    An LLM judge (litellm model), or 'auto' for one of another family than each system. Repeatable.
--researchqa-judge-mode  choice  default=rubric  choices=rubric,claims
    rubric (anchored 1-5, default) or claims (scores computed from claim lists).
--researchqa-flagged-judge  text
    A litellm model that decides premise_flagged (does the answer refuse or correct a false premise?) instead of
    the text heuristic: a yes/no verdict with a reason, cached (judges/premise.md; docs/metrics.md).
--researchqa-judge-pool  append
    Candidates for --researchqa-judge=auto (default: gpt-5.4, claude, gemini).
--researchqa-judge-repeats  int  default=0  minimum=0
    Re-judge a sample K more times and report how often scores flip.
--researchqa-protocol  choice  default=project  choices=project,paper
    project (default: this plugin's choices) or paper: each seed's own procedure, to reproduce its tables
    (docs/rubric.md, 'Reproducing the paper').
--researchqa-ensemble  choice  default=eq1  choices=eq1,notebook
    Rubric family: points per direct-judge vote in the ensemble: eq1 (4, the paper's Eq. 1, default) or notebook
    (5, as the notebook behind Table 3).
--researchqa-judge-prompts  path
    Folder of judge prompt files used instead of the bundled ones of the same name (coverage.md, pairwise.md,
    coverage_paper.md, pairwise_paper.md, rubric.md, claims.md, premise.md): e.g. the rubric seed's released
    prompts, to reproduce its tables word for word (docs/rubric.md).
--researchqa-battles  text  default=all
    Rubric family: pairwise battles per pair of systems, N or 'all' (default all queries both answered).
--researchqa-max-judge-calls  int  default=20000  minimum=0
    Rubric family: refuse to start when the pairwise schedule needs more judge calls than N (default 20000; 0:
    no cap).
--researchqa-date-cutoff  choice  default=on  choices=on,off
    Rubric family: tell systems the row's date cutoff (on, default) or not (off).
--researchqa-length-words  int  default=250  minimum=0
    Rubric family: length guidance in words given to systems (default 250; 0: none).
--researchqa-generic-rubric  flag
    Rubric family: judge rows without rubric items against eight generic criteria instead of skipping them.
--researchqa-sample  int  minimum=1
    Run a sample of N rows: stratified by question type (every type present at least once, shares proportional),
    evenly spaced within a type and spread over the papers (each row from the paper sampled least so far); under
    --researchqa-protocol=paper, row int(i*n/N) for i < N (the citation seed's sample). The same on every run
    and worker.
--researchqa-fail-under  append
    Gate: METRIC=VALUE or TYPE.METRIC=VALUE (e.g. multi_hop.section_coverage=0.7). Repeatable. When given, the
    gates decide the exit status.
--researchqa-fail-rows  flag
    Rows below their per-row bar fail as tests. Default: they are reported as xfailed, counted and diagnosed in
    the summary, and only errors and configured gates decide the exit status.
--researchqa-undecidable  choice  default=warn  choices=warn,fail
    A gate that cannot decide (too few papers, a metric undefined or NaN, no baseline): warn (default: shown as
    undecided, exit 0) or fail (exit 1).
--researchqa-only  flag
    Run only the benchmark: the project's own collected tests are deselected.
--researchqa-html  path
    Write one self-contained HTML report to this file: leaderboard, gates, and every row with its question,
    answer, citations (verdict, page, word diff against the paper) and judges; opens offline.
--researchqa-json  path
    Write the run's machine-readable summary (schema researchqa-summary/1: metrics, intervals, counts, errors,
    cost, each gate's state and figures) to this file. Every saved run keeps one as summary.json.
--researchqa-allow-partial  flag
    Let gates decide a run that measured fewer rows than it selected (-x, --maxfail, --lf, --sw).
--researchqa-results  text
    Folder of saved runs (default .researchqa/runs under the rootdir); 'off' saves nothing.
--researchqa-save  text  default=run
    Name of this run's folder of results (default: run).
--researchqa-markdown  path
    Write the leaderboard, slices and gate results as GitHub-flavoured Markdown to this file (also appended to
    $GITHUB_STEP_SUMMARY when set).
--researchqa-compare  text
    Compare with a saved run (its folder, folder name, --researchqa-save name, or 'last' for the most recent
    saved run): the leaderboard gains a delta per metric and a comparison table.
--researchqa-compare-missing  choice  default=error  choices=error,skip
    When --researchqa-compare names no saved run: error (default, a usage error before any row runs) or skip
    (the run says 'no baseline: nothing compared' and its regression gates are undecidable).
--researchqa-compare-map  append
    NEW=OLD: compare this run's system NEW with the baseline's system OLD (default: same name). Repeatable.
--researchqa-fail-on-regression  append
    Gate against --researchqa-compare's run: METRIC[:MIN_EFFECT] or TYPE.METRIC[:MIN_EFFECT] fails when the
    paired, paper-clustered drop is significant at alpha 0.05 and larger than MIN_EFFECT (default 0).
    Repeatable.
--researchqa-plots  path
    Write figures (PNG and SVG) to this folder: quality-latency frontier, per-question-type profile, domain x
    system heatmap, per-paper deltas. Needs pytest-researchqa[plots].
--researchqa-cache-dir  path
    Where extracted papers and downloads are cached.
--researchqa-download-papers  flag
    Download missing papers from paper_s3_url into the cache.
--researchqa-download-allow-private  flag
    Let downloads reach loopback, private and link-local addresses (refused by default).
--researchqa-audit  flag
    Check the dataset against its papers (no system runs): per paper, the share of expected passages found.
--researchqa-dataset-defects  choice  default=xfail  choices=xfail,grade
    Rows with a required section the paper does not contain: xfail (default) or grade.
"""


def _table_options(table: str) -> tuple[Option, ...]:
    options = []
    for entry in table.split("\n--")[1:]:
        header, help_text = entry.split("\n", 1)
        flag, kind, *fields = header.split()
        extra = dict(field.split("=", 1) for field in fields)
        number = {"int": int, "float": float}.get(kind, str)
        options.append(Option(f"--{flag}", kind, " ".join(help_text.split()),
                              number(extra["default"]) if "default" in extra else None,
                              tuple(extra["choices"].split(",")) if "choices" in extra else (),
                              number(extra["minimum"]) if "minimum" in extra else None))
    return tuple(options)


OPTIONS = _table_options(_TABLE)
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


def given_options(config: pytest.Config) -> dict[str, tuple[Any, bool]]:
    """Each option given on the command line or in an ini file: its raw value, and whether from the command
    line. Empty for a project that never uses the plugin, which then loads nothing more."""
    given: dict[str, tuple[Any, bool]] = {}
    for option in OPTIONS:
        cli = config.getoption(option.dest)
        if cli not in (None, []):
            given[option.dest] = (cli, True)
            continue
        try:
            configured = config.getini(option.dest)
        except (ValueError, pytest.UsageError) as error:  # pytest's own reading of a typed ini value names no key
            where = f" in {config.inipath.name}" if config.inipath is not None else ""
            kind = {"int": "a whole number", "float": "a number"}.get(option.kind, "valid")
            raise pytest.UsageError(f"{option.dest}{where}: not {kind} ({error})") from None
        # An ini 0 is a value (``researchqa_max_cost = 0``); an unset key reads None, "", [] or False.
        if not (configured is None or configured is False or configured == "" or configured == []):
            given[option.dest] = (configured, False)
    return given


def __getattr__(name: str) -> Any:
    if name in ("Settings", "read_settings"):
        from .moved_names import moved_name

        return moved_name(__name__, "pytest_researchqa.settings", name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
