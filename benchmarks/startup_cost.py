"""What an installed but unused plugin costs pytest's start-up: the same environment with and without it.

Builds one virtual environment holding pytest and this project (a regular install, as users get
it; ``--keep`` reuses it), runs the same one-test file with the plugin loaded and with
``-p no:researchqa``, alternately, and prints the median CPU time (user + system, the whole
process) and wall time of each and the median of the pairwise differences. It does so twice:
with byte-code caches (as a user runs pytest) and with ``PYTHONDONTWRITEBYTECODE=1`` (some
sandboxes and CI images), where pytest rewrites the asserts of every module it has not been
told to leave alone at every start. Goal (issue 24): at most 10 ms of CPU both ways.

On a machine shared with other work a few milliseconds drown in the noise of a 350 ms process, so
``--instructions`` also counts each variant's instructions once under valgrind's callgrind (exact and
repeatable, whatever the load) and prints the plugin's extra instructions, and what they cost at the
rate the reference run spent its least CPU time.

    python benchmarks/startup_cost.py [--runs 21] [--keep DIR] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TEST_FILE = "def test_one():\n    assert True\n"
GOAL_MS = 10.0
WITH_CACHES = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
WITHOUT_CACHES = {**WITH_CACHES, "PYTHONDONTWRITEBYTECODE": "1"}


def make_env(where: Path) -> Path:
    if not (where / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        subprocess.run([str(where / "bin" / "pip"), "install", "-q", str(PROJECT)], check=True)
    return where / "bin" / "python"


def forget_rewritten(python: Path) -> None:
    """Delete pytest's own caches of the plugin's rewritten modules: without byte-code caches pytest
    would never have written them (Python's own, which pip writes at install, stay)."""
    code = "import pytest_researchqa, os; print(os.path.dirname(pytest_researchqa.__file__))"
    # Run outside the checkout: with it as the working directory, ``-c`` would import the checkout's package
    # and delete its caches, not the measured environment's (tester38 F15).
    site = subprocess.run([str(python), "-c", code], cwd=tempfile.gettempdir(),
                          capture_output=True, text=True, check=True).stdout.strip()
    for cached in Path(site).rglob("*-pytest-*.pyc"):
        cached.unlink()


def timed(python: Path, folder: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(wall, cpu) seconds of one whole pytest process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_one.py"],
                   cwd=folder, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(python: Path, folder: Path, env: dict[str, str],
            runs: int) -> tuple[float, float, float, float, float, float]:
    """Median cpu without / with the plugin, median pairwise cpu and wall differences, the difference of
    the two least cpu times, and the least cpu time without the plugin (ms): on a shared machine the
    least is the run others disturbed least."""
    timed(python, folder, env), timed(python, folder, env, "-p", "no:researchqa")  # warm caches and files
    pairs = []
    for _ in range(runs):
        without = timed(python, folder, env, "-p", "no:researchqa")
        loaded = timed(python, folder, env)
        pairs.append((without, loaded))
    cpu_without = statistics.median(w[1] for w, _ in pairs) * 1000
    cpu_loaded = statistics.median(p[1] for _, p in pairs) * 1000
    cpu_diff = statistics.median(p[1] - w[1] for w, p in pairs) * 1000
    wall_diff = statistics.median(p[0] - w[0] for w, p in pairs) * 1000
    least_without = min(w[1] for w, _ in pairs) * 1000
    least_diff = min(p[1] for _, p in pairs) * 1000 - least_without
    return cpu_without, cpu_loaded, cpu_diff, wall_diff, least_diff, least_without


def instructions(python: Path, folder: Path, env: dict[str, str], *extra: str) -> int:
    """Instructions one whole pytest process executes, counted by valgrind's callgrind."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python), "-m",
                           "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_one.py"],
                          cwd=folder, check=True, capture_output=True, text=True,
                          env={**env, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]


def counted(python: Path, folder: Path, env: dict[str, str], least_cpu_ms: float) -> str:
    """The plugin's extra instructions, and their cost at the rate of the reference run's least CPU time."""
    instructions(python, folder, env, "-p", "no:researchqa")  # the first run under valgrind warms its caches
    reference = instructions(python, folder, env, "-p", "no:researchqa")
    loaded = instructions(python, folder, env)
    extra = loaded - reference
    cost = extra / reference * least_cpu_ms
    verdict = "MET" if cost <= GOAL_MS else "not met"
    return (f"{'':<29}instructions {reference / 1e6:,.1f}M -> {loaded / 1e6:,.1f}M: plugin's own {extra / 1e6:+,.1f}M "
            f"({extra / reference:+.2%}), {cost:+.1f} ms at the reference's least cpu (goal <= {GOAL_MS:g} ms: "
            f"{verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the environment in this folder")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions under valgrind (needs valgrind on PATH)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="researchqa-startup-"))
    root.mkdir(parents=True, exist_ok=True)
    python = make_env(root / "env")
    folder = root / "project"
    folder.mkdir(exist_ok=True)
    (folder / "test_one.py").write_text(TEST_FILE)
    version = subprocess.run([str(python), "-c", "import pytest; print(pytest.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"pytest {version}, one trivial test, {args.runs} alternating pairs: -p no:researchqa, then the plugin")
    for label, env in (("byte-code caches", WITH_CACHES), ("PYTHONDONTWRITEBYTECODE=1", WITHOUT_CACHES)):
        forget_rewritten(python)
        without, loaded, cpu_diff, wall_diff, least_diff, least_without = compare(python, folder, env, args.runs)
        verdict = "MET" if cpu_diff <= GOAL_MS else "not met"
        print(f"  {label:<27} cpu {without:6.1f} -> {loaded:6.1f} ms; plugin's own: cpu {cpu_diff:+5.1f} ms "
              f"(least {least_diff:+5.1f}), wall {wall_diff:+5.1f} ms (goal <= {GOAL_MS:g} ms cpu: {verdict})",
              flush=True)
        if args.instructions:
            print(counted(python, folder, env, least_without), flush=True)


if __name__ == "__main__":
    main()
