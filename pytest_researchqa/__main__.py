"""``python -m pytest_researchqa``: saved runs shown, compared and viewed without re-running anything; judges
calibrated; rows generated.

    python -m pytest_researchqa show [RUN]                  the leaderboard of a saved run (default: last)
    python -m pytest_researchqa compare BASELINE [RUN]      RUN (default: last) against BASELINE: deltas,
                                                            intervals, p-values, rows in one run only
    python -m pytest_researchqa view [RUN] [--compare OTHER] -o report.html
                                                            the run as one HTML page: every row, why it
                                                            scored what it did, the rows that changed
    python -m pytest_researchqa calibrate LABELS.jsonl      how far the run's judge agrees with human labels
    python -m pytest_researchqa list                        the saved runs, newest last
    python -m pytest_researchqa generate PAPERS_DIR --model MODEL --out rows.yaml
                                                            benchmark rows from your own papers, every
                                                            expected passage verified verbatim

compare takes --map NEW=OLD, --fail-on-regression METRIC[:MIN_EFFECT] (exit 1 when one fails),
--undecidable warn|fail and --markdown, like the pytest options of the same names; view --compare takes --map
too. Without --map, a run against its own baseline is paired as the run paired it (--researchqa-compare-map).

RUN is a run folder, a folder name, its name suffix (``--researchqa-save=NAME``) or ``last``.
"""

from __future__ import annotations

import argparse
import builtins
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .runs import (
    DEFAULT_RUNS_DIR,
    RunNotFound,
    SavedRun,
    cut_short,
    judging_of,
    load_baseline,
    load_run,
    resolve_run,
)

if TYPE_CHECKING:  # pragma: no cover
    from .families import Family
    from .reporting.outcome import Selection
    from .session import ResearchSession

# One call writes a paper's questions: more than this per type outgrows any reply.
MAX_QUESTIONS_PER_TYPE = 50


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_researchqa", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    runs_help = f"folder of saved runs (default: {DEFAULT_RUNS_DIR})"
    run_help = ("the saved run: a run folder, a folder name, its name suffix (--researchqa-save=NAME) or 'last' "
                "(default: last)")
    parser.add_argument("--runs", type=Path, default=DEFAULT_RUNS_DIR, help=runs_help)
    # --runs is also taken after the command (`show last --runs DIR`); SUPPRESS keeps the first value otherwise.
    with_runs = argparse.ArgumentParser(add_help=False)
    with_runs.add_argument("--runs", type=Path, default=argparse.SUPPRESS, help=runs_help)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print a saved run's leaderboard", parents=[with_runs])
    show.add_argument("run", nargs="?", default="last", metavar="RUN", help=run_help)
    show.add_argument("--markdown", action="store_true", help="as GitHub-flavoured Markdown")
    show.add_argument("--json", action="store_true",
                      help="the run's machine-readable summary (schema researchqa-summary/1, docs/json.md)")
    compare = commands.add_parser("compare", help="compare a saved run with a baseline run", parents=[with_runs])
    compare.add_argument("baseline", help="the run compared with (old)")
    compare.add_argument("run", nargs="?", default="last", help="the run compared (new; default: last)")
    compare.add_argument("--map", action="append", default=[], metavar="NEW=OLD",
                         help="compare RUN's system NEW with BASELINE's system OLD (repeatable)")
    compare.add_argument("--fail-on-regression", action="append", default=[], metavar="METRIC[:MIN_EFFECT]",
                         help="exit 1 when METRIC dropped significantly (repeatable)")
    compare.add_argument("--undecidable", choices=("warn", "fail"), default="warn",
                         help="a gate the data cannot decide: shown (warn, exit 0) or failing (exit 1), as "
                              "--researchqa-undecidable")
    compare.add_argument("--markdown", action="store_true", help="as GitHub-flavoured Markdown")
    view = commands.add_parser("view", help="write a saved run as one self-contained HTML report",
                               parents=[with_runs])
    view.add_argument("run", nargs="?", default="last", metavar="RUN", help=run_help)
    view.add_argument("--compare", metavar="OTHER", help="also show the rows whose scores changed against OTHER")
    view.add_argument("--map", action="append", default=[], metavar="NEW=OLD",
                      help="with --compare: pair RUN's system NEW with OTHER's system OLD (repeatable)")
    view.add_argument("-o", "--output", type=Path, metavar="FILE",
                      help="where to write it (default: report.html in the run's folder)")
    view.add_argument("--open", action="store_true", help="open it in a browser (only where a display is available)")
    calibrate = commands.add_parser(
        "calibrate", parents=[with_runs],
        help="how far a judge agrees with human labels (researchqa-labels/1 JSONL, docs/judges.md)")
    calibrate.add_argument("labels", type=Path, help="the labels file (the HTML report's review marks download it), "
                                                     "or 'sample': the shipped hand-labelled set")
    calibrate.add_argument("--run", metavar="RUN",
                           help="take missing judge values from this saved run's (cached) verdicts")
    calibrate.add_argument("--json", action="store_true", help="the figures as JSON")
    commands.add_parser("list", help="list saved runs", parents=[with_runs])
    _add_generate(commands)
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            return _generate(args, parser)
        if args.command == "list":
            return _list(args.runs)
        if args.command == "calibrate":
            return _calibrate(args.labels, args.runs, run=args.run, as_json=args.json)
        if args.command == "view":
            return _view(args.run, args.runs, compare=args.compare, output=args.output, open_it=args.open,
                         mapping=args.map)
        if args.command == "compare":
            return _compare(args.baseline, args.run, args.runs, mapping=args.map, regressions=args.fail_on_regression,
                            undecidable_fails=args.undecidable == "fail",
                            markdown=args.markdown)
        return _show(args.run, args.runs, markdown=args.markdown, as_json=args.json)
    except (RunNotFound, ValueError) as error:  # LabelError is a ValueError: it names file, line, field
        print(f"error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `show last | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _list(runs_dir: Path) -> int:
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        state = cut_short(folder)  # `last` skips these
        print(f"{folder.name}{f'  ({state})' if state else ''}")
    return 0


def _family(saved: SavedRun) -> "Family":
    """The saved run's family: the installed one, else the declaration the run kept (a family a conftest.py
    declares, or a package since uninstalled), said on stderr; a ValueError saying what to do without either."""
    from .families import get_family, resolve, saved_family
    from .families.registry import FamilyError, broken_plugins, family_plugins

    name = str(saved.manifest.get("family") or "citation")
    manager = family_plugins()
    try:
        return get_family(name, manager)
    except FamilyError:
        pass
    # A family plugin that failed to load may be this family's: "not installed" would send its author astray.
    broken = "; ".join(map(str, broken_plugins(manager)))
    why = (f"which is not installed here or failed to load ({broken})" if broken else
           "which is not installed here (a family a project's conftest.py declares, or a package since uninstalled)")
    kept = saved_family(saved.manifest.get("family_declaration"))
    if kept is None or kept.name != name:
        raise ValueError(f"{saved.name} is a run of the {name} benchmark family, {why}, and the run "
                         "keeps no copy of its declaration (saved by an earlier version): install the family's "
                         f"package, or compare from the project with pytest --researchqa-compare={saved.name}; "
                         f"'show {saved.name} --json' prints the summary the run saved")
    note = ""
    if kept.renderer:
        try:
            resolve(kept.renderer)
        except Exception:  # noqa: BLE001 -- its module is gone with the family: the default tables stand in
            note = f", in the default tables (its renderer {kept.renderer} does not load)"
            kept = replace(kept, renderer="")
    print(f"note: {saved.name} is a run of the {name} family, {why}: it is shown from the declaration it "
          f"saved{note}", file=sys.stderr)
    return kept


def _session(saved: SavedRun, family: "Optional[Family]" = None, **options: Any) -> "ResearchSession":
    """A saved run's records replayed into a session: the same outcome, the same renderers as a live run."""
    from .llm_params import local_models
    from .session import ResearchSession

    params = saved.manifest.get("model_params")
    session = ResearchSession(family or _family(saved), family_results=saved.manifest.get("family_results") or {},
                              local_models=local_models(params if isinstance(params, dict) else {}), **options)
    for record in saved.records:
        session.add(record)
    return session


def _for_text(spec: str, runs_dir: Path) -> tuple[SavedRun, bool]:
    """A saved run for ``show`` and ``compare``, and whether its rows' details (most of their bytes) were read:
    only when the run's family's own board reads them (its baseline's are read alike)."""
    from .runs import read_manifest, reads_details

    folder = resolve_run(spec, runs_dir)
    details = reads_details(read_manifest(folder))
    return load_run(folder, details=details), details


def _pairing_with_own_baseline(saved: SavedRun, baseline: str, compared_with: Optional[str] = None) -> dict[str, str]:
    """The run's --researchqa-compare-map when ``baseline`` is the run it was compared with (``compared_with``, else
    as its summary.json names it); else none: another run is paired by system name."""
    if compared_with is None:
        import json

        from .runs import SUMMARY_FILE

        try:
            compared_with = json.loads((saved.folder / SUMMARY_FILE).read_text(encoding="utf-8")).get("compared_with")
        except (OSError, ValueError, AttributeError):
            return {}
    made_with = saved.manifest.get("compare_map")
    if compared_with != baseline or not isinstance(made_with, dict):
        return {}
    return {str(new): str(old) for new, old in made_with.items()}


def _replayed(saved: SavedRun, runs_dir: Path, *, details: bool = True) -> "ResearchSession":
    """A saved run as its own run decided it: the verdict and checks from its summary.json, and
    its baseline (when still saved) for the changes against it. Without a summary (an older or an
    unfinished run) the records alone decide, as a run without gates."""
    import json

    from .reporting.json_summary import recorded_checks
    from .runs import SUMMARY_FILE, RunNotFound, load_baseline

    options: dict[str, Any] = {}
    try:
        summary = json.loads((saved.folder / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = None
    recorded = recorded_checks(summary)
    if recorded is not None and isinstance(summary, dict):
        options["recorded"] = recorded
        compared_with = summary.get("compared_with")
        if isinstance(compared_with, str) and compared_with != saved.name:
            try:
                options["baseline"] = load_baseline(compared_with, runs_dir, details=details)
            except (RunNotFound, ValueError, OSError):
                pass  # the baseline is gone: the verdict stands, the changes cannot be shown
            options["compare_map"] = _pairing_with_own_baseline(saved, compared_with, compared_with)
    dataset = saved.manifest.get("dataset")
    if isinstance(dataset, dict) and isinstance(dataset.get("sha256"), str):
        options["dataset_sha"] = dataset["sha256"]
    options["judging"] = judging_of(saved.manifest)
    # What the run selected, as its manifest keeps it: "27 of 27 selected rows measured", as the run printed.
    # A killed run wrote no manifest: how many rows it selected is unknown, not the rows it saved.
    options["selection"] = _saved_selection(saved.manifest.get("selection"))
    # The headline says it, with how much of the selection was measured (a crashed run's own checks say that).
    if saved.cut_short in ("unfinished", "interrupted"):
        options.update(interrupted=True, unfinished=saved.cut_short == "unfinished")
    session = _session(saved, **options)
    if not saved.finished:
        session.run_notes.append(f"this run did not finish (killed or stopped before its end): the "
                                 f"{len(saved.records)} row(s) it saved are shown, and it decided no verdict")
    return session


def _saved_selection(kept: Any) -> "Selection":
    """The selection a run's manifest records (``run_hooks``'s ``selection``); unknown parts stay unknown."""
    from .reporting.outcome import Selection

    kept = kept if isinstance(kept, dict) else {}

    def text(key: str) -> str:
        return kept[key] if isinstance(kept.get(key), str) else ""

    def count(key: str) -> Optional[int]:
        value = kept.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    rerun = kept.get("rerun_subset")
    return Selection(rows=count("rows"), keyword=text("keyword"), markexpr=text("markexpr"), sample=count("sample"),
                     rerun_subset=rerun if isinstance(rerun, str) else None)


def _print(session: "ResearchSession", title: str, *, markdown: bool) -> None:
    from .reporting import terminal
    from .text_safety import for_terminal

    def print(text: str = "", end: str = "\n") -> None:  # a saved run's data never steers the terminal
        builtins.print(text if markdown else for_terminal(text), end=end)

    outcome = session.outcome()
    if markdown:
        from .reporting.markdown import render

        print(render(outcome, session.family, title=title), end="")
        return
    print(title)
    print(terminal.leaderboard(outcome.records, session.family, outcome.intervals, outcome.comparison,
                               outcome.family_results))
    if outcome.comparison is not None:
        print(terminal.comparison_text(outcome.comparison, session.family))
    if outcome.guards:  # the judge guards, as the live run's terminal and the Markdown say them
        print("judge guards:")
        for guard in outcome.guards:
            print(guard.message)
    print(outcome.coverage_line)  # as the run's own summary says it
    for check in outcome.checks:
        print(f"{check.mark} {check.message}")
    print(f"researchqa: {outcome.headline}")
    for note in outcome.notes:  # as the run's own terminal summary ends
        print(note)


def _show(spec: str, runs_dir: Path, *, markdown: bool, as_json: bool = False) -> int:
    saved, details = _for_text(spec, runs_dir)
    if as_json:
        import json

        from .reporting.json_summary import summary
        from .runs import SUMMARY_FILE

        kept = saved.folder / SUMMARY_FILE  # written by the run itself: it knows the run's gates (and needs no family)
        if kept.is_file():
            data = json.loads(kept.read_text(encoding="utf-8"))
        else:
            session = _replayed(saved, runs_dir, details=details)
            data = summary(session.outcome(), session.family, saved.manifest)
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    session = _replayed(saved, runs_dir, details=details)
    count = len(saved.records)
    _print(session, f"researchqa run {saved.name} ({count} row{'' if count == 1 else 's'})", markdown=markdown)
    return 0


def _calibrate(path: Path, runs_dir: Path, *, run: Optional[str], as_json: bool) -> int:
    from .calibration import fill_from_run, read_labels, render, report

    if str(path) == "sample" and not path.exists():  # the shipped set, wherever pip put it
        from .bundled import bundled_path

        path = bundled_path("datasets", "sample", "labels.jsonl")
    labels, problems = read_labels(path)
    if run is not None:
        saved = load_run(resolve_run(run, runs_dir))
        judged = (saved.manifest.get("family_results") or {}).get("judged") or ()
        labels = fill_from_run(labels, saved.records, judged)
    found = report(labels)
    if as_json:
        import json

        print(json.dumps({"labels": str(path), "agreement": [a.as_plain() for a in found],
                          "not_read": problems}, indent=2))
    else:
        print(render(found, problems))
    if not labels:
        print(f"error: {path}: no label could be read", file=sys.stderr)
        return 2
    return 0


def _view(spec: str, runs_dir: Path, *, compare: Optional[str], output: Optional[Path], open_it: bool,
          mapping: Sequence[str] = ()) -> int:
    from .reporting.compare import parse_mapping
    from .reporting.html import render, write_html

    saved = load_run(resolve_run(spec, runs_dir))
    session = _replayed(saved, runs_dir)
    other = None
    pairing = parse_mapping(mapping)
    if compare is not None:
        baseline = load_run(resolve_run(compare, runs_dir))
        other = (baseline.name, baseline.records)
        pairing = pairing or _pairing_with_own_baseline(saved, baseline.name)
    target = output or saved.folder / "report.html"
    write_html(target, render(session.outcome(), session.family, f"researchqa {saved.name}", run_name=saved.name,
                              other=other, compare_map=pairing))
    print(f"researchqa: HTML report of {saved.name} in {target}")
    if open_it and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin"):
        import webbrowser

        webbrowser.open(target.resolve().as_uri())
    return 0


def _add_generate(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    generate = commands.add_parser(
        "generate", help="write benchmark rows from a folder of papers (every expected passage verified verbatim)",
        description="One structured model call per paper writes lookup, comprehension, multi-hop and false-premise "
                    "questions with verbatim evidence; the citation matcher checks every passage against the "
                    "paper's extracted text, a passage that is not verbatim is re-asked once with the matcher's "
                    "diagnosis and dropped if still wrong. Replies are cached: a re-run makes no call. Exit status: "
                    "0, or 1 when a paper failed (the others are written), 2 for a usage error.")
    generate.add_argument("papers", type=Path, metavar="PAPERS_DIR", help="folder of <paper_id>.pdf/.txt/.md")
    generate.add_argument("--model", required=True, help="a litellm model (gpt-5.4, openai/<alias> with api_base ...)")
    generate.add_argument("--out", required=True, type=Path, help="the rows file: .yaml, .jsonl or .json")
    generate.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                          help="passed to litellm (api_base, temperature ...; values parse as JSON when they can; "
                               "max_input_tokens and structured_output=auto|json_schema|json_object|off steer the "
                               "call). Repeatable.")
    generate.add_argument("--count", action="append", default=[], metavar="TYPE=N",
                          help="questions per paper of a type: lookup, comprehension, multi_hop, adversarial "
                               "(default lookup=4 comprehension=4 multi_hop=2 adversarial=2; 0 leaves a type out). "
                               "Repeatable.")
    generate.add_argument("--domain", help="the rows' domain (default: the model names the paper's field)")
    generate.add_argument("--report", type=Path, help="the JSON report (default: beside --out, <name>.report.json)")
    generate.add_argument("--concurrency", type=int, help="calls in flight per provider (default 5; 1 for a local "
                                                           "server, docs/models.md)")
    generate.add_argument("--rows-per-minute", type=int, help="start at most N calls per minute per provider")
    generate.add_argument("--timeout", type=float, help="seconds per call (default 600; 900 for a local server)")
    generate.add_argument("--retries", type=int, default=3,
                          help="retries of a failed, rate-limited or malformed call (default 3)")
    generate.add_argument("--cache-dir", type=Path, help="cache of extracted papers and replies "
                                                         "(default: the plugin's, as --researchqa-cache-dir)")
    generate.add_argument("--refresh", action="store_true", help="ignore cached replies (new ones are still cached)")


def _generate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import importlib.util

    from .llm_params import parse_model_params

    if importlib.util.find_spec("litellm") is None:
        print("error: generate calls models through litellm: pip install 'pytest-researchqa[llm]'", file=sys.stderr)
        return 2
    from .generation import GenerateError, GenerateOptions, generate
    from .generation.checking import DEFAULT_COUNTS

    try:
        params = parse_model_params([f"{args.model}:{entry}" for entry in args.param], [args.model])[args.model]
    except ValueError:
        parser.error(f"--param: expected KEY=VALUE, e.g. api_base=http://127.0.0.1:8000/v1; got {args.param}")
    counts = dict(DEFAULT_COUNTS)
    for entry in args.count:
        kind, _, number = entry.partition("=")
        if not number.strip().isdigit():
            parser.error(f"--count {entry!r}: expected TYPE=N, e.g. multi_hop=3")
        counts[kind.strip()] = int(number)
        if int(number) > MAX_QUESTIONS_PER_TYPE:
            parser.error(f"--count {entry!r}: at most {MAX_QUESTIONS_PER_TYPE} questions of a type per paper")
    if not any(counts.values()):
        parser.error("--count: every question type is 0; ask for at least one question")
    for name in ("concurrency", "retries", "rows_per_minute"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "retries" else 1):
            parser.error(f"--{name.replace('_', '-')} must be at least {0 if name == 'retries' else 1}")
    if args.timeout is not None and args.timeout <= 0:
        parser.error("--timeout must be positive")
    options = GenerateOptions(model=args.model, params=params, counts=counts, domain=args.domain,
                              concurrency=args.concurrency, rows_per_minute=args.rows_per_minute,
                              timeout_s=args.timeout, retries=args.retries, cache_dir=args.cache_dir,
                              refresh=args.refresh)
    try:
        return generate(args.papers, args.out, options, report=args.report)
    except GenerateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _compare(baseline_spec: str, spec: str, runs_dir: Path, *, mapping: Sequence[str], regressions: Sequence[str],
             undecidable_fails: bool = False,
             markdown: bool) -> int:
    from .reporting.compare import parse_mapping
    from .reporting.gates import parse_regression_gate

    saved, details = _for_text(spec, runs_dir)
    baseline = load_baseline(baseline_spec, runs_dir, details=details)
    if baseline.name == saved.name:
        raise ValueError(f"{saved.name} would be compared with itself: name two different runs")
    family = _family(saved)
    if baseline.family != family.name:
        raise ValueError(f"{baseline.name} is a run of the {baseline.family} family and {saved.name} of the "
                         f"{family.name} family: their rows cannot be paired")
    gates = [parse_regression_gate(text, family) for text in regressions]
    dataset = saved.manifest.get("dataset") or {}
    pairing = parse_mapping(mapping) or _pairing_with_own_baseline(saved, baseline.name)
    session = _session(saved, family, regressions=gates, baseline=baseline, compare_map=pairing,
                       undecidable_fails=undecidable_fails,
                       dataset_sha=dataset.get("sha256") if isinstance(dataset, dict) else None,
                       judging=judging_of(saved.manifest), selection=_saved_selection(saved.manifest.get("selection")))
    _print(session, f"researchqa run {saved.name} against {baseline.name}", markdown=markdown)
    passed = session.outcome().passed
    return 1 if passed is False else 0


if __name__ == "__main__":
    raise SystemExit(main())
