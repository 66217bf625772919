"""``python -m pytest_researchqa``: saved runs, rendered without re-running anything.

    python -m pytest_researchqa show [RUN]                  the leaderboard of a saved run (default: last)
    python -m pytest_researchqa compare BASELINE [RUN]      RUN (default: last) against BASELINE: deltas,
                                                            intervals, p-values, rows in one run only
    python -m pytest_researchqa list                        the saved runs, newest last

compare takes --map NEW=OLD, --fail-on-regression METRIC[:MIN_EFFECT] (exit 1 when one fails)
and --markdown, like the pytest options of the same names.

RUN is a run folder, a folder name, its name suffix (``--researchqa-save=NAME``) or ``last``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .runs import DEFAULT_RUNS_DIR, ROWS_FILE, RunNotFound, SavedRun, load_baseline, load_run, resolve_run

if TYPE_CHECKING:  # pragma: no cover
    from .session import ResearchSession


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_researchqa", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=DEFAULT_RUNS_DIR,
                        help=f"folder of saved runs (default: {DEFAULT_RUNS_DIR})")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print a saved run's leaderboard")
    show.add_argument("run", nargs="?", default="last")
    show.add_argument("--markdown", action="store_true", help="as GitHub-flavoured Markdown")
    compare = commands.add_parser("compare", help="compare a saved run with a baseline run")
    compare.add_argument("baseline", help="the run compared with (old)")
    compare.add_argument("run", nargs="?", default="last", help="the run compared (new; default: last)")
    compare.add_argument("--map", action="append", default=[], metavar="NEW=OLD",
                         help="compare RUN's system NEW with BASELINE's system OLD (repeatable)")
    compare.add_argument("--fail-on-regression", action="append", default=[], metavar="METRIC[:MIN_EFFECT]",
                         help="exit 1 when METRIC dropped significantly (repeatable)")
    compare.add_argument("--markdown", action="store_true", help="as GitHub-flavoured Markdown")
    commands.add_parser("list", help="list saved runs")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list(args.runs)
        if args.command == "compare":
            return _compare(args.baseline, args.run, args.runs, mapping=args.map, regressions=args.fail_on_regression,
                            markdown=args.markdown)
        return _show(args.run, args.runs, markdown=args.markdown)
    except (RunNotFound, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _list(runs_dir: Path) -> int:
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        state = "" if (folder / ROWS_FILE).is_file() else "  (unfinished)"
        print(f"{folder.name}{state}")
    return 0


def _session(saved: SavedRun, **options: Any) -> "ResearchSession":
    """A saved run's records replayed into a session: the same outcome, the same renderers as a live run."""
    from .families import get_family
    from .session import ResearchSession

    session = ResearchSession(get_family(saved.manifest.get("family", "citation")), **options)
    for record in saved.records:
        session.add(record)
    return session


def _print(session: "ResearchSession", title: str, *, markdown: bool) -> None:
    from .reporting import terminal

    outcome = session.outcome()
    if markdown:
        from .reporting.markdown import render

        print(render(outcome, session.family, title=title), end="")
        return
    print(title)
    print(terminal.leaderboard(outcome.records, session.family, outcome.intervals, outcome.comparison))
    if outcome.comparison is not None:
        print(terminal.comparison_text(outcome.comparison, session.family))
    for result in outcome.regressions:
        print(result.describe())


def _show(spec: str, runs_dir: Path, *, markdown: bool) -> int:
    saved = load_run(resolve_run(spec, runs_dir))
    session = _session(saved)
    _print(session, f"researchqa run {saved.name} ({len(saved.records)} rows)", markdown=markdown)
    return 0


def _compare(baseline_spec: str, spec: str, runs_dir: Path, *, mapping: Sequence[str], regressions: Sequence[str],
             markdown: bool) -> int:
    from .families import get_family
    from .reporting.compare import parse_mapping
    from .reporting.gates import parse_regression_gate

    saved = load_run(resolve_run(spec, runs_dir))
    baseline = load_baseline(baseline_spec, runs_dir)
    if baseline.name == saved.name:
        raise ValueError(f"{saved.name} would be compared with itself: name two different runs")
    family = get_family(saved.manifest.get("family", "citation"))
    gates = [parse_regression_gate(text, family) for text in regressions]
    dataset = saved.manifest.get("dataset") or {}
    session = _session(saved, regressions=gates, baseline=baseline, compare_map=parse_mapping(mapping),
                       dataset_sha=dataset.get("sha256") if isinstance(dataset, dict) else None)
    _print(session, f"researchqa run {saved.name} against {baseline.name}", markdown=markdown)
    passed = session.outcome().passed
    return 1 if passed is False else 0


if __name__ == "__main__":
    raise SystemExit(main())
