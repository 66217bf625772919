"""Command-line options and ini keys, parsed into plain settings.

Every setting is a ``--researchqa-*`` flag backed by an ini key of the same
name with underscores (``researchqa_dataset``...). Parsing is pure: bad values
raise ``pytest.UsageError`` naming the valid choices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from .names import METRICS as METRIC_NAMES
from .names import QUESTION_TYPES as QUESTION_TYPE_NAMES

DEFECT_POLICIES = ("xfail", "grade")
DEFAULT_SYSTEM = "bm25"

# (flag, kind, help) -- kind: "path", "append", "int", "float", "flag", "choice"
_OPTIONS = (
    ("--researchqa-dataset", "path", "Dataset file (.jsonl, .json, .yaml). Default: the bundled sample."),
    ("--researchqa-papers", "path", "Folder of <paper_id>.pdf/.txt/.md. Default: papers/ beside the dataset."),
    ("--researchqa-system", "append", "System under test: oracle, bm25 or package.module:function. Repeatable."),
    ("--researchqa-model", "append",
     "A litellm model as the system under test (gpt-5.4, anthropic/claude-opus-4-7, openai/<alias> ...). Repeatable."),
    ("--researchqa-model-param", "append",
     "MODEL:KEY=VALUE passed to litellm for that model (api_base, temperature, response_format ...; "
     "max_input_tokens and structured_output=auto|json_schema|json_object|off steer the plugin). Repeatable."),
    ("--researchqa-concurrency", "int", "Model calls in flight per provider (default 5)."),
    ("--researchqa-rows-per-minute", "int", "Start at most N model calls per minute per provider."),
    ("--researchqa-timeout", "float", "Seconds before a model call times out (default 120)."),
    ("--researchqa-retries", "int", "Retries of a timed-out, rate-limited, failed or malformed call (default 3)."),
    ("--researchqa-baseline", "flag", "Send question and whole paper with no citation contract: citation metrics are \"—\"."),
    ("--researchqa-refresh", "flag", "Ignore cached model answers (new answers are still cached)."),
    ("--researchqa-judge", "append",
     "An LLM judge (litellm model), or 'auto' for one of another family than each system. Repeatable."),
    ("--researchqa-judge-mode", "choice", "rubric (anchored 1-5, default) or claims (scores computed from claim lists)."),
    ("--researchqa-judge-pool", "append", "Candidates for --researchqa-judge=auto (default: gpt-5.4, claude, gemini)."),
    ("--researchqa-judge-repeats", "int", "Re-judge a sample K more times and report how often scores flip."),
    ("--researchqa-sample", "int", "Run N evenly spaced rows of the dataset."),
    ("--researchqa-fail-under", "append",
     "Gate: METRIC=VALUE or TYPE.METRIC=VALUE (e.g. multi_hop.section_coverage=0.7). "
     "Repeatable. When given, the gates decide the exit status."),
    ("--researchqa-cache-dir", "path", "Where extracted papers and downloads are cached."),
    ("--researchqa-download-papers", "flag", "Download missing papers from paper_s3_url into the cache."),
    ("--researchqa-audit", "flag",
     "Check the dataset against its papers (no system runs): per paper, the share of expected passages found."),
    ("--researchqa-dataset-defects", "choice",
     "Rows with a required section the paper does not contain: xfail (default) or grade."),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("researchqa", "citation-grounded paper QA benchmark (pytest-researchqa)")
    for flag, kind, help_text in _OPTIONS:
        dest = flag[2:].replace("-", "_")
        if kind == "flag":
            group.addoption(flag, action="store_true", default=None, dest=dest, help=help_text)
            parser.addini(dest, help_text, type="bool", default=False)
        elif kind == "append":
            group.addoption(flag, action="append", default=None, dest=dest, metavar="VALUE", help=help_text)
            parser.addini(dest, help_text, type="linelist", default=[])
        else:
            group.addoption(flag, action="store", default=None, dest=dest, metavar="VALUE", help=help_text)
            parser.addini(dest, help_text, type="string", default="")


@dataclass(frozen=True)
class Gate:
    metric: str
    threshold: float
    question_type: Optional[str] = None

    @property
    def label(self) -> str:
        prefix = f"{self.question_type}." if self.question_type else ""
        return f"{prefix}{self.metric}>={self.threshold:g}"


@dataclass(frozen=True)
class Settings:
    """Everything the plugin was asked to do, as plain values."""

    active: bool
    dataset: Optional[Path]
    papers: Optional[Path]
    systems: tuple[str, ...]
    sample: Optional[int]
    gates: tuple[Gate, ...]
    cache_dir: Optional[Path]
    download_papers: bool
    audit: bool
    defect_policy: str
    models: tuple[str, ...] = ()
    model_params: dict = field(default_factory=dict)
    concurrency: int = 5
    rows_per_minute: Optional[int] = None
    timeout_s: float = 120.0
    retries: int = 3
    baseline: bool = False
    refresh: bool = False
    judges: tuple[str, ...] = ()
    judge_mode: str = "rubric"
    judge_pool: tuple[str, ...] = ()
    judge_repeats: int = 0

    @property
    def all_systems(self) -> tuple[str, ...]:
        """Plain systems then models: the systems a run compares."""
        return self.systems + self.models


def parse_gate(text: str) -> Gate:
    name, equals, value = text.partition("=")
    if not equals:
        raise pytest.UsageError(f"--researchqa-fail-under {text!r}: expected METRIC=VALUE, e.g. section_coverage=0.8")
    name = name.strip()
    question_type, _, metric = name.rpartition(".")
    if metric not in METRIC_NAMES:
        raise pytest.UsageError(
            f"--researchqa-fail-under {text!r}: unknown metric {metric!r}; choose from {', '.join(METRIC_NAMES)}"
        )
    if question_type and question_type not in QUESTION_TYPE_NAMES:
        raise pytest.UsageError(
            f"--researchqa-fail-under {text!r}: unknown question type {question_type!r}; "
            f"choose from {', '.join(QUESTION_TYPE_NAMES)}"
        )
    try:
        threshold = float(value)
    except ValueError:
        raise pytest.UsageError(f"--researchqa-fail-under {text!r}: {value!r} is not a number") from None
    if not 0.0 <= threshold <= 1.0:
        raise pytest.UsageError(f"--researchqa-fail-under {text!r}: thresholds are between 0 and 1")
    return Gate(metric, threshold, question_type or None)


def read_settings(config: pytest.Config) -> Settings:
    def value(dest: str):
        given = config.getoption(dest)
        return given if given not in (None, []) else None

    def ini(dest: str):
        return config.getini(dest)

    given_any = False
    resolved = {}
    for flag, kind, _ in _OPTIONS:
        dest = flag[2:].replace("-", "_")
        cli = value(dest)
        configured = ini(dest)
        if cli is not None or configured not in ("", [], False):
            given_any = True
        resolved[dest] = cli if cli is not None else (configured if configured not in ("", []) else None)

    def path(dest: str) -> Optional[Path]:
        raw = resolved[dest]
        if raw is None:
            return None
        candidate = Path(os.path.expanduser(str(raw)))
        if not candidate.is_absolute() and value(dest) is None and config.inipath is not None:
            candidate = config.inipath.parent / candidate  # ini paths are relative to the ini file
        return candidate

    def number(dest: str, kind: type, default, minimum: float):
        raw = resolved[dest]
        if raw is None:
            return default
        flag = "--" + dest.replace("_", "-")
        try:
            parsed = kind(raw)
        except ValueError:
            raise pytest.UsageError(f"{flag}: {raw!r} is not a {'whole ' if kind is int else ''}number") from None
        if parsed < minimum:
            raise pytest.UsageError(f"{flag}: must be at least {minimum:g}")
        return parsed

    sample = number("researchqa_sample", int, None, 1)
    policy = resolved["researchqa_dataset_defects"] or "xfail"
    if policy not in DEFECT_POLICIES:
        raise pytest.UsageError(
            f"--researchqa-dataset-defects: {policy!r} is not one of {', '.join(DEFECT_POLICIES)}"
        )
    models = tuple(dict.fromkeys(resolved["researchqa_model"] or ()))
    systems = tuple(resolved["researchqa_system"] or ()) or (() if models else (DEFAULT_SYSTEM,))
    try:
        from .llm_params import parse_model_params

        judges = tuple(dict.fromkeys(resolved["researchqa_judge"] or ()))
        judge_pool = tuple(resolved["researchqa_judge_pool"] or ())
        named = list(dict.fromkeys([*models, *judges, *judge_pool]))
        model_params = parse_model_params(list(resolved["researchqa_model_param"] or ()), named)
    except ValueError as error:
        raise pytest.UsageError(f"--researchqa-model-param {error}") from None
    return Settings(
        active=given_any,
        dataset=path("researchqa_dataset"),
        papers=path("researchqa_papers"),
        systems=tuple(dict.fromkeys(systems)),
        sample=sample,
        gates=tuple(parse_gate(text) for text in resolved["researchqa_fail_under"] or ()),
        cache_dir=path("researchqa_cache_dir"),
        download_papers=bool(resolved["researchqa_download_papers"]),
        audit=bool(resolved["researchqa_audit"]),
        defect_policy=policy,
        models=models,
        model_params=model_params,
        concurrency=number("researchqa_concurrency", int, 5, 1),
        rows_per_minute=number("researchqa_rows_per_minute", int, None, 1),
        timeout_s=number("researchqa_timeout", float, 120.0, 0.001),
        retries=number("researchqa_retries", int, 3, 0),
        baseline=bool(resolved["researchqa_baseline"]),
        refresh=bool(resolved["researchqa_refresh"]),
        judges=judges,
        judge_mode=_choice("--researchqa-judge-mode", resolved["researchqa_judge_mode"] or "rubric", ("rubric", "claims")),
        judge_pool=judge_pool,
        judge_repeats=number("researchqa_judge_repeats", int, 0, 0),
    )


def _choice(flag: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise pytest.UsageError(f"{flag}: {value!r} is not one of {', '.join(choices)}")
    return value
