"""``python -m pytest_researchqa``: saved runs, rendered without re-running anything.

    python -m pytest_researchqa show [RUN]        the leaderboard of a saved run (default: last)
    python -m pytest_researchqa list              the saved runs, newest last

RUN is a run folder, a folder name, its name suffix (``--researchqa-save=NAME``) or ``last``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from .runs import DEFAULT_RUNS_DIR, ROWS_FILE, RunNotFound, load_run, resolve_run


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_researchqa", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=DEFAULT_RUNS_DIR,
                        help=f"folder of saved runs (default: {DEFAULT_RUNS_DIR})")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print a saved run's leaderboard")
    show.add_argument("run", nargs="?", default="last")
    show.add_argument("--markdown", action="store_true", help="as GitHub-flavoured Markdown")
    commands.add_parser("list", help="list saved runs")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list(args.runs)
        return _show(args.run, args.runs, markdown=args.markdown)
    except RunNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _list(runs_dir: Path) -> int:
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        state = "" if (folder / ROWS_FILE).is_file() else "  (unfinished)"
        print(f"{folder.name}{state}")
    return 0


def _show(spec: str, runs_dir: Path, *, markdown: bool) -> int:
    from .families import get_family
    from .reporting import terminal
    from .session import ResearchSession

    saved = load_run(resolve_run(spec, runs_dir))
    family = get_family(saved.manifest.get("family", "citation"))
    session = ResearchSession(family, family_results=saved.manifest.get("family_results") or {})
    for record in saved.records:
        session.add(record)
    if markdown:
        from .reporting.markdown import render

        print(render(session.outcome(), family, title=f"researchqa run {saved.name}"), end="")
        return 0
    print(f"run {saved.name} ({len(saved.records)} rows)")
    print(terminal.leaderboard(saved.records, family, saved.manifest.get("family_results")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
