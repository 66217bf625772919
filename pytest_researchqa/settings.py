"""The run's settings: every option's value, parsed from the command line and the ini file.

Loaded once the plugin is used (an option given, or a test asking for a row); ``options`` holds the
table they are read from.

PYTEST_DONT_REWRITE: it holds no test's asserts, so pytest compiles it as Python does instead of
rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

import pytest

from .options import OPTIONS, Option, given_options

if TYPE_CHECKING:  # pragma: no cover
    from .families import Family
    from .reporting.gates import Gate, RegressionGate

MAX_SAVE_NAME = 100


class Settings(NamedTuple):
    """Everything the plugin was asked to do, as plain values.

    A named tuple, not a dataclass: this module loads at every pytest start-up, and a dataclass of this
    many fields costs 10-17 ms to create (its generated methods are compiled each time), a named tuple
    under 1 ms. Its two mappings are never mutated, so their shared empty defaults are safe.
    """

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
    declaration: Optional["Family"] = None
    models: tuple[str, ...] = ()
    model_params: dict[str, dict[str, Any]] = {}
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
    compare_map: dict[str, str] = {}
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
    # Why the dataset file may be another family's, when no family recognized it and the run fell back to the
    # default one while a third party's family is installed or a family plugin is broken ("": neither). The
    # default family's reader then refuses a file it reads no row of, instead of running it (RunState.dataset).
    unrecognized: str = ""

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
    given = given_options(config)
    resolved = {option.dest: _parse(option, *given.get(option.dest, (None, False)), config=config)
                for option in OPTIONS}
    on_command_line = any(from_cli for _, from_cli in given.values())
    given_any = bool(given)

    # An unused plugin imports no family: the default one is named by Settings' default.
    declaration, unrecognized = _family(config, resolved) if given_any else (None, "")
    family = declaration.name if declaration is not None else Settings._field_defaults["family"]
    models = tuple(dict.fromkeys(resolved["researchqa_model"] or ()))
    default_system = declaration.default_system if declaration is not None else "bm25"
    systems = tuple(resolved["researchqa_system"] or ()) or (() if models or not default_system else (default_system,))
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
            raise pytest.UsageError(f"{setting_name(config, 'researchqa_model_param')} {error}") from None
    gates: tuple["Gate", ...] = ()
    if resolved["researchqa_fail_under"]:
        from .reporting.gates import GateSpecError, parse_gate

        assert declaration is not None  # an option was given
        try:
            gates = tuple(parse_gate(text, declaration) for text in resolved["researchqa_fail_under"])
        except GateSpecError as error:
            raise pytest.UsageError(f"{setting_name(config, 'researchqa_fail_under')} {error}") from None
    regressions: tuple["RegressionGate", ...] = ()
    if resolved["researchqa_fail_on_regression"]:
        from .reporting.gates import GateSpecError, parse_regression_gate

        if not resolved["researchqa_compare"]:
            name = setting_name(config, "researchqa_fail_on_regression")
            raise pytest.UsageError(f"{name} compares with a saved run: "
                                    "add --researchqa-compare=RUN (a saved run's name, folder, or 'last')")
        try:
            assert declaration is not None  # an option was given
            regressions = tuple(parse_regression_gate(text, declaration)
                                for text in resolved["researchqa_fail_on_regression"])
        except GateSpecError as error:
            raise pytest.UsageError(f"{setting_name(config, 'researchqa_fail_on_regression')} {error}") from None
    if len(resolved["researchqa_save"]) > MAX_SAVE_NAME:
        # It names a folder: file systems refuse names of more than 255 bytes.
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_save')}: {len(resolved['researchqa_save'])} "
                                f"characters; a run's name has at most {MAX_SAVE_NAME}")
    compare_map: dict[str, str] = {}
    if resolved["researchqa_compare_map"]:
        from .reporting.compare import parse_mapping

        try:
            compare_map = parse_mapping(resolved["researchqa_compare_map"])
        except ValueError as error:
            raise pytest.UsageError(f"{setting_name(config, 'researchqa_compare_map')} {error}") from None
    computed = dict(
        active=given_any,
        requested=on_command_line,
        systems=tuple(dict.fromkeys(systems)),
        gates=gates,
        family=family,
        declaration=declaration,
        models=models,
        model_params=model_params,
        judges=judges,
        judge_pool=judge_pool,
        flagged_judge=flagged_judge,
        compare_map=compare_map,
        regressions=regressions,
        undecidable_fails=resolved["researchqa_undecidable"] == "fail",
        battles=_battles(resolved["researchqa_battles"], setting_name(config, "researchqa_battles")),
        date_cutoff=resolved["researchqa_date_cutoff"] == "on",
        length_words=resolved["researchqa_length_words"] or None,
        given=frozenset(given),
        unrecognized=unrecognized,
    )
    return Settings(**as_parsed(resolved, exclude=computed), **computed)


# Settings named otherwise than their option (``timeout_s`` is ``--researchqa-timeout``).
RENAMED = {"defect_policy": "dataset_defects", "timeout_s": "timeout", "save_name": "save", "json_summary": "json"}


def as_parsed(resolved: dict[str, Any], exclude: Any = ()) -> dict[str, Any]:
    """Every setting that is its option's value as parsed (the option table's own name, or ``RENAMED``), but
    those in ``exclude``: one line a setting instead of a keyword list of the option table's shape."""
    found = {}
    for field in Settings._fields:
        dest = "researchqa_" + RENAMED.get(field, field)
        if field not in exclude and dest in resolved:
            found[field] = resolved[dest]
    return found


def setting_name(config: pytest.Config, dest: str) -> str:
    """How the user gave a setting, for its error message: the flag when on the command line (or not given),
    else the ini key and its file (``researchqa_max_cost in pytest.ini``), so the message points where the value
    is. Error paths only: it asks ``given_options`` again."""
    flag = "--" + dest.replace("_", "-")
    given = given_options(config).get(dest)
    if given is None or given[1]:
        return flag
    return f"{dest} in {config.inipath.name}" if config.inipath is not None else dest


def _family(config: pytest.Config, resolved: dict[str, Any]) -> "tuple[Family, str]":
    """The run's family: the one named, else the first that recognizes the dataset, else the default; and,
    for the default, why the dataset may be another family's (``Settings.unrecognized``)."""
    from .families import DEFAULT_FAMILY, sniff_family
    from .families.registry import FamilyError, available_families, find_family, unrecognized_note

    try:
        families = available_families(config.pluginmanager)
        named = resolved["researchqa_family"] or sniff_family(resolved["researchqa_dataset"], families)
        family = find_family(named or DEFAULT_FAMILY, families, config.pluginmanager)
        dataset = resolved["researchqa_dataset"]
        note = "" if named or dataset is None else unrecognized_note(dataset, families, config.pluginmanager)
        return family, note
    except FamilyError as error:
        raise pytest.UsageError(f"{setting_name(config, 'researchqa_family')}: {error}") from None


def _battles(text: str, name: str) -> Optional[int]:
    if str(text).strip().lower() == "all":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"{name}: {text!r} is not 'all' or a whole number of at least 1")
    return count


def _named(option: Option, from_cli: bool, config: pytest.Config) -> str:
    return option.flag if from_cli else setting_name(config, option.dest)


def _parse(option: Option, raw: Any, from_cli: bool, *, config: pytest.Config) -> Any:
    """One option's value from its raw text, with the table's default, choices and bounds."""
    if option.kind == "flag":
        return bool(raw)
    if option.kind == "append":
        return list(raw) if raw else []
    if raw is None:
        return option.default
    if option.kind == "path":
        candidate = Path(os.path.expanduser(str(raw)))
        if not candidate.is_absolute() and not from_cli and config.inipath is not None:
            candidate = config.inipath.parent / candidate  # ini paths are relative to the ini file
        return candidate
    if option.kind == "text":
        return str(raw)
    if option.kind == "choice":
        if raw not in option.choices:
            choices = ", ".join(option.choices)
            raise pytest.UsageError(f"{_named(option, from_cli, config)}: {raw!r} is not one of {choices}")
        return raw
    kind = int if option.kind == "int" else float
    try:
        parsed = kind(raw)
    except (TypeError, ValueError):
        whole = "whole " if kind is int else ""
        raise pytest.UsageError(f"{_named(option, from_cli, config)}: {raw!r} is not a {whole}number") from None
    if option.minimum is not None and parsed < option.minimum:
        raise pytest.UsageError(f"{_named(option, from_cli, config)}: must be at least {option.minimum:g}")
    return parsed
