"""The plugin's cost per row in CPU seconds: this tree, another tree of the plugin, and bare pytest, interleaved.

On a machine shared with other work, wall time carries the neighbours' load; the CPU time of the
pytest process tree (user + system) carries much less of it. For collection only and for a whole
oracle run (the two "per-row cost near bare pytest" figures of ``benchmarks/full_scale.py``), this
runs the plugin as installed here, the same plugin from another checkout (``--base``, put first on
``PYTHONPATH``: e.g. ``git archive main | tar -x -C /tmp/base``) and bare pytest with as many trivial
params, in turn, ``--triples`` times after one unmeasured warm-up of each, and prints the median CPU
time of each beside the median ratio to bare pytest and the load average seen.

``--instructions`` counts instead the instructions of one run of each under valgrind's callgrind (exact
and repeatable whatever the load; a collection at the seed's scale takes about ten minutes a run under
valgrind, a whole oracle run hours): each beside its ratio to bare pytest's, and the share of the
garbage collector (``gc_collect_main``, read from callgrind's own output).

    python benchmarks/full_scale.py --scale 0.3 --pairs 1 --only collect --keep /tmp/rc03   # the data
    python benchmarks/row_cost.py --data /tmp/rc03 [--base /tmp/base] [--triples 3] [--only collect,oracle]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import full_scale  # noqa: E402  (the dataset writer and the runner it measures with)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a folder written by full_scale.py --keep")
    parser.add_argument("--base", type=Path, help="another checkout of the plugin to measure beside this one")
    parser.add_argument("--triples", type=int, default=3)
    parser.add_argument("--only", default="collect,oracle")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind, one run each, instead of CPU time")
    args = parser.parse_args()
    folder = args.data
    with open(folder / "shuffled.jsonl", encoding="utf-8") as stream:
        n_rows = sum(1 for _ in stream)

    def ours(*extra: str) -> list[str]:
        return ["-q", "--tb=no", "-p", "no:randomly", "--researchqa-run",
                "--researchqa-dataset", str(folder / "shuffled.jsonl"), "--researchqa-papers", str(folder / "papers"),
                "--researchqa-results", str(folder / "runs"), "--researchqa-cache-dir", str(folder / "cache"),
                "--researchqa-system", "oracle", *extra]

    def bare(*extra: str) -> list[str]:
        return ["-q", "--tb=no", "-p", "no:randomly", "-p", "no:researchqa", *extra, "test_bare.py"]

    for what in filter(None, args.only.split(",")):
        extra = ("--collect-only",) if what == "collect" else ()
        kinds: dict[str, tuple[list[str], Path, dict[str, str] | None]] = {
            "ours": (ours(*extra), folder / "project", None),
            "bare": (bare(*extra), folder / "bare", None),
        }
        if args.base is not None:
            kinds["base"] = (ours(*extra), folder / "project", {**full_scale.BASE_ENV, "PYTHONPATH": str(args.base)})
        if args.instructions:
            counted = {kind: instructions(argv, cwd, env) for kind, (argv, cwd, env) in kinds.items()}
            bare_total = counted["bare"][0]
            for kind, (total, collector) in counted.items():
                name = {"ours": "this tree", "bare": "bare"}.get(kind, f"base {args.base}")
                print(f"{what:8s} {n_rows} rows  {name}: {total / 1e6:,.1f}M instructions, {total / bare_total:.3f}x "
                      f"bare (+{(total - bare_total) / n_rows:,.0f} a row), garbage collector {collector / 1e6:,.1f}M",
                      flush=True)
            continue
        for argv, cwd, env in kinds.values():
            full_scale.run(argv, cwd, env)  # warm-up
        runs: dict[str, list[full_scale.Run]] = {kind: [] for kind in kinds}
        loads = []
        for _ in range(args.triples):
            loads.append(os.getloadavg()[0])
            for kind, (argv, cwd, env) in kinds.items():
                runs[kind].append(full_scale.run(argv, cwd, env))
        cpu_bare = statistics.median(r.cpu for r in runs["bare"])
        for kind in kinds:
            if kind == "bare":
                continue
            cpu = statistics.median(r.cpu for r in runs[kind])
            ratio = statistics.median(x.cpu / y.cpu for x, y in zip(runs[kind], runs["bare"]))
            name = "this tree" if kind == "ours" else f"base {args.base}"
            print(f"{what:8s} {n_rows} rows  {name}: CPU {cpu:.2f} s, bare {cpu_bare:.2f} s, {ratio:.2f}x "
                  f"(+{(cpu - cpu_bare) / n_rows * 1000:.3f} ms/row)  load {min(loads):.1f}-{max(loads):.1f}  "
                  f"[{runs[kind][-1].tail}]", flush=True)
    return 0


def instructions(argv: list[str], cwd: Path, env: dict[str, str] | None) -> tuple[int, int]:
    """Instructions of one whole pytest run under callgrind, and those of Python's garbage collector in it."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                               "pytest", "-p", "no:cacheprovider", *argv], cwd=cwd, env=env or full_scale.BASE_ENV,
                              capture_output=True, text=True)
        total = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if total is None:
            raise SystemExit(f"valgrind printed no instruction count: {done.stderr[-500:]}")
        annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)], capture_output=True,
                                   text=True).stdout
        collector = max((int(m.group(1).replace(",", "")) for m in
                         re.finditer(r"^\s*([\d,]+) .*gcmodule\.c:gc_collect_main ", annotated, re.M)), default=0)
    return int(total.group(1).replace(",", "")), collector


if __name__ == "__main__":
    sys.exit(main())
