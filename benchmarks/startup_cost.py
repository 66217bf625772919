"""What installing the plugin costs a project that does not use it: pytest start-up, plain vs plugin.

Builds two virtual environments next to each other (plain pytest; pytest plus this
checkout and its dependencies), runs the same one-test file in each, alternately, and
prints the median wall and CPU time of each, their difference and ratio. Target: the
plugin environment within 20 ms of plain pytest.

    python benchmarks/startup_cost.py [--runs 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TEST_FILE = "def test_one():\n    assert True\n"
# As a user runs pytest: bytecode caches written and reused (some sandboxes disable them).
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def make_env(where: Path, packages: list[str]) -> Path:
    if not (where / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        subprocess.run([str(where / "bin" / "pip"), "install", "-q", *packages], check=True)
    return where / "bin" / "python"


def pytest_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import pytest; print(pytest.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def timed(python: Path, folder: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"], cwd=folder,
                   check=True, capture_output=True, env=USER_ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the environments in this folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="researchqa-startup-"))
    root.mkdir(parents=True, exist_ok=True)
    plain = make_env(root / "plain", ["pytest"])
    plugin = make_env(root / "plugin", [str(PROJECT)])
    # The same pytest in both, so only the plugin and what it pulls in differ.
    subprocess.run([str(plain.parent / "pip"), "install", "-q", f"pytest=={pytest_version(plugin)}"], check=True)
    folder = root / "project"
    folder.mkdir(exist_ok=True)
    (folder / "test_one.py").write_text(TEST_FILE)
    timed(plain, folder), timed(plugin, folder)  # warm the file cache
    runs: dict[str, list[tuple[float, float]]] = {"plain": [], "plugin": []}
    for _ in range(args.runs):
        runs["plain"].append(timed(plain, folder))
        runs["plugin"].append(timed(plugin, folder))
    medians = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
               for name, r in runs.items()}
    print(f"pytest {pytest_version(plugin)}, {args.runs} alternating runs each, one trivial test")
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<7} median wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:7.1f} ms")
    wall_diff = (medians["plugin"][0] - medians["plain"][0]) * 1000
    cpu_diff = (medians["plugin"][1] - medians["plain"][1]) * 1000
    ratio = medians["plugin"][0] / medians["plain"][0]
    verdict = "MET" if wall_diff <= 20 else "NOT MET"
    print(f"  plugin - plain: wall {wall_diff:+.1f} ms, cpu {cpu_diff:+.1f} ms; wall ratio {ratio:.3f} "
          f"(target <= +20 ms: {verdict})")
    pairwise = [p[0] - q[0] for p, q in zip(runs["plugin"], runs["plain"])]
    print(f"  pairwise wall difference: median {statistics.median(pairwise) * 1000:+.1f} ms, "
          f"min {min(pairwise) * 1000:+.1f}, max {max(pairwise) * 1000:+.1f}")


if __name__ == "__main__":
    main()
